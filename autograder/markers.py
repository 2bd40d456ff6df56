"""Solution and hidden-test markers: the one place they are parsed.

Solution notebooks (``solutions/``) mark what a learner must write:

* CUDA inside a Python raw string: inline ``/*BEGIN SOLUTION*/ expr /*END SOLUTION*/`` and line regions
  ``// BEGIN SOLUTION [todo text]`` ... ``// END SOLUTION``;
* Python: nbgrader's ``### BEGIN SOLUTION`` ... ``### END SOLUTION``;
* test cells: ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``.

``fill`` gives the instructor's filled-in source (markers dropped, contents kept); ``blank_cuda`` gives the
released CUDA (what ``ClearCudaSolutions`` writes during ``nbgrader generate_assignment``). The released
notebook as a whole always comes from nbgrader's own pipeline (``autograder.judge.template``), never from an
approximation here.
"""
from __future__ import annotations

import re
from typing import Tuple

BLANK = "______"                      # what a blank looks like in a released notebook
BLANK_RE = re.compile(re.escape(BLANK))
DEFAULT_TODO = "在此补全代码"

INLINE = re.compile(r"/\*\s*BEGIN SOLUTION\s*\*/(.*?)/\*\s*END SOLUTION\s*\*/", re.S)
_INLINE_PART = re.compile(r"/\*\s*(BEGIN|END) SOLUTION\s*\*/")
_CUDA_BEGIN = re.compile(r"^(?P<indent>\s*)//\s*BEGIN SOLUTION\b[:：]?\s*(?P<text>.*?)\s*$")
_CUDA_END = re.compile(r"^\s*//\s*END SOLUTION\b")
_ANY_MARKER_LINE = re.compile(r"^[ \t]*(?://|###|#|<!--)\s*(BEGIN|END) SOLUTION[^\n]*(\n|$)", re.M)
_HIDDEN_LINE = re.compile(r"^[ \t]*###\s*(BEGIN|END) HIDDEN TESTS[^\n]*(\n|$)", re.M)
_HIDDEN_BLOCK = re.compile(r"^[ \t]*###\s*BEGIN HIDDEN TESTS[^\n]*\n(.*?)^[ \t]*###\s*END HIDDEN TESTS[^\n]*(\n|$)",
                           re.S | re.M)


class MarkerError(ValueError):
    """Unbalanced or nested solution markers; the message names the line."""


def has_solution(text: str) -> bool:
    return "BEGIN SOLUTION" in (text or "")


def fill(text: str) -> str:
    """Solution source with every marker removed and its contents kept (an instructor's filled-in cell)."""
    text = INLINE.sub(lambda m: m.group(1).strip(), text or "")
    text = _ANY_MARKER_LINE.sub("", text)
    return _HIDDEN_LINE.sub("", text)


def hidden_tests(text: str) -> str:
    """The code between ``### BEGIN/END HIDDEN TESTS`` (empty when none)."""
    return "\n".join(m.group(1).rstrip() for m in _HIDDEN_BLOCK.finditer(text or ""))


def strip_hidden_tests(text: str) -> str:
    return _HIDDEN_BLOCK.sub("", text or "")


def blank_cuda(source: str, todo_text: str = DEFAULT_TODO) -> Tuple[str, bool]:
    """CUDA markers in a code cell -> blanks: ``(released source, whether a marker was replaced)``.

    Inline regions become ``______`` (plus ``// TODO`` when the line has no comment); a line region becomes
    ``// TODO: text`` and ``______;`` at its indentation. Raises ``MarkerError`` on unbalanced or nested
    markers. Python ``### BEGIN SOLUTION`` regions are left for nbgrader's ClearSolutions.
    """
    out = []
    replaced = in_region = False
    for line in source.split("\n"):
        begin = _CUDA_BEGIN.match(line)
        if begin:
            if in_region:
                raise MarkerError("encountered nested '// BEGIN SOLUTION' regions")
            in_region = replaced = True
            indent = begin.group("indent")
            out.append(f"{indent}// TODO: {begin.group('text') or todo_text}")
            out.append(f"{indent}{BLANK};")
            continue
        if _CUDA_END.match(line):
            if not in_region:
                raise MarkerError("'// END SOLUTION' without a matching '// BEGIN SOLUTION'")
            in_region = False
            continue
        if in_region:
            continue
        if _INLINE_PART.search(line):
            new = INLINE.sub(BLANK, line)
            if _INLINE_PART.search(new):
                raise MarkerError(f"unbalanced /*BEGIN SOLUTION*/ ... /*END SOLUTION*/ on line: {line!r}")
            if "//" not in new:
                new = new.rstrip() + "  // TODO"
            line = new
            replaced = True
        out.append(line)
    if in_region:
        raise MarkerError("no '// END SOLUTION' for a '// BEGIN SOLUTION' region")
    return "\n".join(out), replaced


def solution_fragments(text: str):
    """Contents of the inline CUDA regions of ``text`` (for leak checks)."""
    return [m.group(1) for m in INLINE.finditer(text or "")]

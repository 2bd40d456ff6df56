"""Reading lesson notebooks: cells by nbgrader grade_id, CUDA sources,
written answers, solution/hidden-test markers, machine-readable outputs.
"""
from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import nbformat

LESSON_MIME = "application/vnd.autograder.lesson+json"
GRADE_MIME = "application/vnd.autograder.grade+json"
HINT_MIME = "application/vnd.autograder.hint+json"
BLANK = "______"

_INLINE_SOL = re.compile(r"/\*\s*BEGIN SOLUTION\s*\*/(.*?)/\*\s*END SOLUTION\s*\*/", re.S)
_LINE_SOL = re.compile(r"^[ \t]*(?://|###|#)\s*BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*(?://|###|#)\s*END SOLUTION[^\n]*(\n|$)",
                       re.S | re.M)
_HIDDEN = re.compile(r"^[ \t]*###\s*(BEGIN|END) HIDDEN TESTS[^\n]*(\n|$)", re.M)
_HIDDEN_BLOCK = re.compile(r"^[ \t]*###\s*BEGIN HIDDEN TESTS[^\n]*\n(.*?)^[ \t]*###\s*END HIDDEN TESTS[^\n]*(\n|$)",
                           re.S | re.M)
_MARKER_LINE = re.compile(r"^[ \t]*(?://|###|#)\s*(BEGIN|END) SOLUTION[^\n]*(\n|$)", re.M)


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def grade_id(cell) -> Optional[str]:
    return ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")


def nbgrader_meta(cell) -> Dict[str, Any]:
    return (cell.get("metadata") or {}).get("nbgrader") or {}


def cells_by_grade_id(nb) -> Dict[str, Any]:
    return {gid: c for c in nb.cells if (gid := grade_id(c))}


def is_solution_notebook(nb) -> bool:
    return any("BEGIN SOLUTION" in c.source for c in nb.cells)


def _fill(text: str) -> str:
    """Solution source with markers removed (what an instructor's filled-in cell runs)."""
    text = _INLINE_SOL.sub(lambda m: m.group(1).strip(), text)
    text = _MARKER_LINE.sub("", text)
    return _HIDDEN.sub("", text)


def _blank(text: str, code: bool = True) -> str:
    """Released form of a solution cell: solution regions become ``______``; hidden tests removed."""
    text = _HIDDEN_BLOCK.sub("", text)
    text = _INLINE_SOL.sub(BLANK, text)

    def region(m):
        indent = re.match(r"[ \t]*", m.group(0)).group(0)
        return f"{indent}{BLANK}\n"
    return _LINE_SOL.sub(region, text)


def filled(nb) -> nbformat.NotebookNode:
    """A solutions/ notebook with markers stripped, i.e. a fully answered submission."""
    out = copy.deepcopy(nb)
    for c in out.cells:
        c.source = _fill(c.source)
    return out


def released(nb) -> nbformat.NotebookNode:
    """Approximation of the released template generated from a solutions/ notebook."""
    out = copy.deepcopy(nb)
    for c in out.cells:
        c.source = _blank(c.source, c.cell_type == "code")
    return out


def hidden_tests(cell_source: str) -> str:
    """The code between ### BEGIN/END HIDDEN TESTS (empty when none)."""
    return "\n".join(m.group(1).rstrip() for m in _HIDDEN_BLOCK.finditer(cell_source))


# ----------------------------------------------------------------------------- sources and answers

def python_string_var(source: str, var: str) -> Optional[str]:
    """The string literal assigned to ``var`` in a code cell (``VAR = r\"\"\"...\"\"\"``)."""
    try:
        tree = ast.parse(_strip_magics(source))
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, str):
                if any(isinstance(t, ast.Name) and t.id == var for t in node.targets):
                    return node.value.value
    m = re.search(rf"\b{re.escape(var)}\s*=\s*[rRuU]?(\"\"\"|''')(.*?)\1", source, re.S)
    return m.group(2) if m else None


def _strip_magics(source: str) -> str:
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())


_ANSWER_NOISE = re.compile(r"YOUR ANSWER HERE|[（(]?请在此作答[）)]?|\*\*你的答案[:：]?\*\*|你的答案[:：]", re.I)


def answer_text(cell) -> str:
    """A written answer with template boilerplate removed."""
    text = _fill(cell.source)
    return _ANSWER_NOISE.sub("", text).strip()


# ----------------------------------------------------------------------------- outputs

def outputs_with_mime(nb, mime: str) -> Iterator[tuple]:
    """``(cell, data)`` for each display output carrying ``mime``."""
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        for o in c.get("outputs") or []:
            data = o.get("data") or {}
            if mime in data:
                yield c, data[mime]


def cell_error(cell) -> Optional[Dict[str, str]]:
    """The first error output of an executed cell: ``{ename, evalue}`` or None."""
    for o in cell.get("outputs") or []:
        if o.get("output_type") == "error":
            return {"ename": o.get("ename", ""), "evalue": o.get("evalue", "")}
    return None


def lesson_id_of(nb, path=None) -> Optional[str]:
    for _, data in outputs_with_mime(nb, LESSON_MIME):
        if isinstance(data, dict) and data.get("lesson"):
            return data["lesson"]
    meta = (nb.get("metadata") or {}).get("autograder") or {}
    if meta.get("lesson"):
        return meta["lesson"]
    for c in nb.cells:
        m = re.search(r"lesson\.load\(\s*['\"]([^'\"]+)['\"]", c.source)
        if c.cell_type == "code" and m:
            return m.group(1)
    if path is not None:
        return Path(path).stem
    return None


def recorded_backend(nb) -> Optional[Dict[str, Any]]:
    """The ``{lesson, backend, device}`` record lesson.load wrote, if the notebook ran."""
    for _, data in outputs_with_mime(nb, LESSON_MIME):
        if isinstance(data, dict):
            return data
    return None


def markdown_answers(nb) -> Dict[str, str]:
    return {grade_id(c): answer_text(c) for c in nb.cells if c.cell_type == "markdown" and grade_id(c)}


def code_cells(nb) -> List[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


# public names for the solution-marker transforms (lesson tests and the nbgrader glue use them)
fill_source = _fill
blank_source = _blank

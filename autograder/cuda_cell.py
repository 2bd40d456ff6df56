"""The CUDA cell form: a code cell whose first line is ``%%cuda VAR``.

    %%cuda RMSNORM_CU
    #include <cuda_fp16.h>
    __global__ void k(...) { ... float inv_rms = ______; ... }

The rest of the cell is plain CUDA C++: JupyterLab highlights it as C++ with line
numbers and the blanks marked (the course's lab extension, ``autograder/labextension``),
nbgrader's solution markers (``/*BEGIN SOLUTION*/ ... /*END SOLUTION*/``, ``// BEGIN
SOLUTION`` regions) work unchanged, and the grader reads the source from the cell
text without running anything (``source_of``).

Running the cell stores the source in ``VAR`` (a ``str``); the magic line counts as
line 1, so line ``k`` in a compiler message is line ``k`` of the cell as the student
sees it (the same numbering the older ``VAR = r\"\"\"`` + newline form had).
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

MAGIC = "cuda"
BLANK = "______"
_HEAD = re.compile(r"^[ \t]*%%cuda[ \t]+([A-Za-z_]\w*)[ \t]*(?:\r?\n|$)")


def parse(cell_source: str) -> Optional[Tuple[str, str]]:
    """``(VAR, CUDA text)`` of a ``%%cuda VAR`` cell, else None.

    The text keeps one empty first line in place of the magic line, so line numbers
    of the text and of the cell agree.
    """
    m = _HEAD.match(cell_source or "")
    if not m:
        return None
    return m.group(1), "\n" + cell_source[m.end():]


def source_of(cell_source: str, var: str) -> Optional[str]:
    """The CUDA text a ``%%cuda var`` cell defines (None when the cell is not one for ``var``)."""
    got = parse(cell_source)
    return got[1] if got and got[0] == var else None


def is_cuda_cell(cell_source: str) -> bool:
    return parse(cell_source) is not None


def blanks(text: str) -> List[Tuple[int, int]]:
    """``(line, column)`` (1-based line, 0-based column) of every untouched ``______``."""
    out = []
    for i, line in enumerate((text or "").splitlines(), start=1):
        for m in re.finditer(re.escape(BLANK) + "+", line):
            out.append((i, m.start()))
    return out


def register(ip) -> None:
    """Register the ``%%cuda VAR`` cell magic in IPython shell ``ip`` (idempotent)."""
    if ip is None or getattr(ip, "_autograder_cuda_magic", False):
        return

    def cuda(line, cell):
        var = (line or "").strip()
        if not re.fullmatch(r"[A-Za-z_]\w*", var):
            from .display import StudentError
            raise StudentError("CUDA 单元格的第一行应是 `%%cuda 变量名`，例如 `%%cuda RMSNORM_CU`；"
                               "不要改动这一行。")
        text = "\n" + cell
        ip.user_ns[var] = text
        from . import display
        display.cuda_cell_summary(var, text)

    ip.register_magic_function(cuda, magic_kind="cell", magic_name=MAGIC)
    ip._autograder_cuda_magic = True


__all__ = ["parse", "source_of", "is_cuda_cell", "blanks", "register", "MAGIC", "BLANK"]

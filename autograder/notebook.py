"""Reading lesson notebooks: cells by nbgrader grade_id, CUDA sources,
written answers, solution/hidden-test markers, machine-readable outputs.
"""
from __future__ import annotations

import ast
import copy
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from . import markers

# nbformat is imported where it is used: importing it costs ~2 s (jsonschema's format checkers), and
# every notebook kernel imports this module through ``autograder.lesson``.

LESSON_MIME = "application/vnd.autograder.lesson+json"
GRADE_MIME = "application/vnd.autograder.grade+json"
HINT_MIME = "application/vnd.autograder.hint+json"
BLANK = markers.BLANK


class NotebookReadError(ValueError):
    """A submitted file that is not a readable notebook; ``str(exc)`` is the Chinese explanation."""


def read(path):
    """Read a notebook (any nbformat 4.x, with or without cell ids, BOM, CRLF).

    Raises ``NotebookReadError`` (a ValueError) with a Chinese, actionable
    message for an empty file, a non-JSON file or JSON that is not a notebook.
    """
    import nbformat
    p = Path(path)
    raw = p.read_bytes()            # FileNotFoundError / IsADirectoryError go to the caller
    if not raw.strip():
        raise NotebookReadError(f"{p.name}：文件是空的（{len(raw)} 字节），不是笔记本。请在 Jupyter 中保存（Ctrl+S）"
                                "后重新提交 .ipynb 文件。")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotebookReadError(f"{p.name}：不是 UTF-8 文本，不是 Jupyter 笔记本（.ipynb）。请提交笔记本文件本身。") from None
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:
        head = text.lstrip()[:1]
        what = "不是 JSON" if head not in ("{", "[") else "JSON 损坏或不是笔记本结构"
        raise NotebookReadError(
            f"{p.name}：不是有效的 Jupyter 笔记本（{what}；{type(exc).__name__}: {str(exc)[:120]}）。"
            "请提交在 Jupyter 中保存的 .ipynb 文件本身（不是导出的 .py/.html/.pdf，也不是复制的文本）。") from None
    if not isinstance(nb.get("cells"), list):
        raise NotebookReadError(f"{p.name}：笔记本里没有 cells 列表，不是有效的 Jupyter 笔记本。")
    for c in nb.cells:
        if not isinstance(c.get("source", ""), str):
            c.source = "".join(c.source) if isinstance(c.source, list) else str(c.source)
        c.setdefault("metadata", nbformat.NotebookNode())
    return nb


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text or "")


def restore_grade_ids(nb, template) -> List[str]:
    """Give cells whose nbgrader metadata was stripped (VS Code, Google Colab, copy/paste into a
    new notebook) their metadata back from ``template`` (the released notebook).

    A template cell with a grade_id that the learner's notebook lacks is matched to an
    unlabelled learner cell of the same type by (1) the same cell id, (2) the same source
    (whitespace ignored; locked cells), (3) the cell right after the learner's copy of
    the template's preceding cell (answer and source cells follow their question).
    Returns the restored grade ids (in template order).
    """
    if template is None:
        return []
    have = set(cells_by_grade_id(nb))
    used = set()
    restored = []
    cells = list(nb.cells)

    def free(c, ctype):
        return c is not None and id(c) not in used and not grade_id(c) and c.cell_type == ctype

    for ti, tc in enumerate(template.cells):
        g = grade_id(tc)
        if not g or g in have:
            continue
        cand = None
        tid = tc.get("id")
        if tid:
            cand = next((c for c in cells if c.get("id") == tid and free(c, tc.cell_type)), None)
        sq = _squash(tc.source)
        by_source = lambda: next((c for c in cells if free(c, tc.cell_type) and _squash(c.source) == sq), None)  # noqa: E731
        editable = bool(nbgrader_meta(tc).get("solution"))
        if cand is None and not editable:      # locked cells: same source; answer cells share a placeholder
            cand = by_source()
        if cand is None and ti > 0:
            prev = template.cells[ti - 1]
            psq = _squash(prev.source)
            for k, c in enumerate(cells[:-1]):
                if c.cell_type == prev.cell_type and psq and _squash(c.source) == psq:
                    nxt = cells[k + 1]
                    # an answer cell whose type the learner changed (markdown -> raw/code) still counts
                    if free(nxt, tc.cell_type) or (tc.cell_type == "markdown" and free(nxt, nxt.cell_type)):
                        cand = nxt
                    break
        if cand is None and ti + 1 < len(template.cells):
            # the question's text may have changed since the learner's copy was released: the locked cell
            # right after the answer (``L.check("q1")``) identifies it as well
            nxt_t = template.cells[ti + 1]
            nsq = _squash(nxt_t.source)
            same = [k for k, c in enumerate(cells) if k > 0 and c.cell_type == nxt_t.cell_type and nsq
                    and _squash(c.source) == nsq]
            if len(same) == 1 and not nbgrader_meta(nxt_t).get("solution"):
                prv = cells[same[0] - 1]
                if free(prv, tc.cell_type) or (tc.cell_type == "markdown" and free(prv, prv.cell_type)
                                               and prv.cell_type != "code"):
                    cand = prv
        if cand is None and editable:
            cand = by_source()
        if cand is not None:
            from nbformat import NotebookNode
            cand.setdefault("metadata", NotebookNode())
            cand.metadata["nbgrader"] = copy.deepcopy(nbgrader_meta(tc))
            used.add(id(cand))
            restored.append(g)
    return restored


def question_cell(nb, gid: str):
    """The markdown cell that asks the question answered in cell ``gid``: the nearest non-empty ungraded
    markdown cell right before it (None when there is none)."""
    cells = nb.cells
    for i, c in enumerate(cells):
        if grade_id(c) == gid:
            j = i - 1
            while j >= 0 and cells[j].cell_type == "markdown" and not grade_id(cells[j]):
                if _squash(cells[j].source):
                    return cells[j]
                j -= 1
            return None
    return None


def template_prompt(template, gid: str) -> str:
    """The question text shown right before the answer cell ``gid`` in the template."""
    cell = question_cell(template, gid) if template is not None else None
    return cell.source if cell is not None else ""


def stray_answer(nb, template, gid: str) -> str:
    """Text a learner wrote OUTSIDE the answer cell ``gid``: new markdown cells right after it,
    or text appended to the question cell above it.  Empty when none."""
    if template is None:
        return ""
    tsq = {_squash(c.source) for c in template.cells}
    cells = nb.cells
    idx = next((i for i, c in enumerate(cells) if grade_id(c) == gid), None)
    if idx is None:
        return ""
    heads = [_squash(c.source) for c in template.cells if c.cell_type == "markdown" and len(_squash(c.source)) > 20]
    parts = []
    j = idx + 1
    while j < len(cells) and cells[j].cell_type in ("markdown", "raw") and not grade_id(cells[j]) \
            and _squash(cells[j].source) not in tsq \
            and not any(_squash(cells[j].source).startswith(h) for h in heads):   # the next question, edited
        parts.append(cells[j].source)
        j += 1
    prompt = template_prompt(template, gid)
    if idx > 0 and prompt and cells[idx - 1].cell_type == "markdown" and not grade_id(cells[idx - 1]):
        src = cells[idx - 1].source
        if _squash(src) != _squash(prompt) and src.strip().startswith(prompt.strip()):
            parts.insert(0, src.strip()[len(prompt.strip()):])
    return _ANSWER_NOISE.sub("", "\n\n".join(p for p in parts if p.strip())).strip()


def grade_id(cell) -> Optional[str]:
    return ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")


def nbgrader_meta(cell) -> Dict[str, Any]:
    return (cell.get("metadata") or {}).get("nbgrader") or {}


def cells_by_grade_id(nb) -> Dict[str, Any]:
    return {gid: c for c in nb.cells if (gid := grade_id(c))}


def is_solution_notebook(nb) -> bool:
    return any(markers.has_solution(c.source) for c in nb.cells)


def _fill(text: str) -> str:
    """Solution source with markers removed (what an instructor's filled-in cell runs)."""
    return markers.fill(text)


def _blank(text: str, code: bool = True) -> str:
    """One cell's released text, for comparing a locked cell with what the learner received: hidden tests
    removed, CUDA regions blanked as ClearCudaSolutions does. Whole notebooks: ``released``."""
    text = markers.strip_hidden_tests(text)
    try:
        return markers.blank_cuda(text)[0] if code else text
    except markers.MarkerError:
        return text


def filled(nb):
    """A solutions/ notebook with markers stripped, i.e. a fully answered submission."""
    out = copy.deepcopy(nb)
    for c in out.cells:
        c.source = _fill(c.source)
    return out


def released(nb):
    """The notebook nbgrader generate_assignment releases for the solutions/ notebook ``nb``
    (nbgrader's own preprocessors, run in-process; see ``autograder.judge.template``)."""
    from .judge.template import release
    return release(nb)


def hidden_tests(cell_source: str) -> str:
    """The code between ### BEGIN/END HIDDEN TESTS (empty when none)."""
    return markers.hidden_tests(cell_source)


# ----------------------------------------------------------------------------- sources and answers

def python_string_var(source: str, var: str) -> Optional[str]:
    """The CUDA text a code cell defines for ``var``: a ``%%cuda var`` cell (``autograder.cuda_cell``)
    or the string literal assigned to ``var`` (``VAR = r\"\"\"...\"\"\"``)."""
    from .cuda_cell import parse as _cuda_cell
    magic = _cuda_cell(source)
    if magic is not None:
        return magic[1] if magic[0] == var else None
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
    if source.lstrip().startswith("%%"):   # a cell magic (e.g. %%cuda): the body is not Python
        return ""
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

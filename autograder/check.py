"""Grade one notebook file: ``autograder check NOTEBOOK`` and ``L.self_check()``.

A thin front of the judge (``autograder.judge``): read the file, find its lesson, pick up the hint record
next to it and return the one ``Verdict`` instructor grading gives the same submission. Nothing of the
notebook is executed to decide the verdict.

Also the helpers the judge and the feedback run share: the wrong-lesson check, the notebook prepared for a
run (locked cells and hidden tests restored, as nbgrader autograde does) and Chinese explanations of the
errors a run leaves in its cells.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Dict, List, Optional

import nbformat

from . import config, hints
from . import notebook as nbio
from .settings import CourseLayout, GradingSettings
from .verdict import Verdict


def lesson_root(layout: Optional[CourseLayout] = None) -> Path:
    """Folder holding solutions/ and lessons/."""
    return (layout or CourseLayout.resolve()).root


def solution_notebook(cfg, layout: Optional[CourseLayout] = None) -> Optional[nbformat.NotebookNode]:
    p = (layout or CourseLayout.resolve()).solution(cfg)
    return nbio.read(p) if p.exists() else None


def template_notebook(cfg, layout: Optional[CourseLayout] = None) -> Optional[nbformat.NotebookNode]:
    """The released notebook, from nbgrader's pipeline on solutions/<nb> (never the learner's lessons/ copy)."""
    from .judge.template import released_from_file
    return released_from_file((layout or CourseLayout.resolve()).solution(cfg))


def test_grade_id(item_id: str, item) -> str:
    from .judge.scorers import grade_id
    return grade_id(item_id, item)


def prepare_for_run(nb, cfg, solution=None, notes: Optional[List[str]] = None) -> nbformat.NotebookNode:
    """The notebook to execute: solutions are filled in; a learner's test cells get the hidden tests back,
    and locked (read-only) cells the learner edited get their source back, as nbgrader autograde does."""
    if nbio.is_solution_notebook(nb):
        return nbio.filled(nb)
    if isinstance(solution, CourseLayout):
        solution = solution_notebook(cfg, solution)
    run_nb = copy.deepcopy(nb)
    cells = nbio.cells_by_grade_id(run_nb)
    sol_cells = nbio.cells_by_grade_id(solution) if solution is not None else {}
    edited = []
    for gid, cell in cells.items():
        sol = sol_cells.get(gid)
        meta = nbio.nbgrader_meta(sol) if sol is not None else {}
        if sol is None or not meta.get("locked") or meta.get("solution"):
            continue
        want = nbio.fill_source(sol.source)
        hidden = nbio.hidden_tests(sol.source)
        visible = nbio.blank_source(sol.source)
        if cell.source.strip() != want.strip() and cell.source.strip() != visible.strip():
            edited.append(gid)
        cell.source = want if hidden else visible
        if cell.cell_type != sol.cell_type and sol.cell_type == "code":
            cell.cell_type = "code"
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
            cell.pop("attachments", None)
    if edited and notes is not None:
        notes.append(f"只读单元格 {'、'.join(edited)} 被修改过；评分时已恢复原样（与 nbgrader 评分相同），你的修改不参与评分。")
    from .judge.scorers import get as scorer
    for iid, item in cfg["items"].items():      # test cells get their hidden tests back, locked or not
        if not scorer(item["kind"]).code:
            continue
        gid = test_grade_id(iid, item)
        if gid in cells and gid in sol_cells:
            cells[gid].source = nbio.fill_source(sol_cells[gid].source)
    return run_nb


def lesson_of(path: Path, nb, lesson_id: Optional[str], layout: CourseLayout) -> tuple:
    """``(lesson id, notes)`` for a notebook file: ``--lesson``, else what the notebook loads, else its name."""
    notes: List[str] = []
    known = config.load(layout.rubric).get("lessons", {})
    content = nbio.lesson_id_of(nb)
    if lesson_id is None:
        lesson_id = content or path.stem
        if content and path.stem != content and path.stem in known:
            notes.append(f"文件名是「{path.stem}」，但笔记本内容是「{content}」课（lesson.load），按「{content}」评分。")
    if lesson_id not in known:
        raise config.RubricError(f"无法确定 {path.name} 属于哪一课：笔记本里没有 lesson.load(\"...\")，"
                                 f"文件名「{path.stem}」也不是已知的课程 id；请用 --lesson 指定。")
    return lesson_id, notes


def grade_notebook(path, lesson_id: Optional[str] = None, *, seed: Optional[int] = None, execute: bool = False,
                   timeout: Optional[float] = None, settings: Optional[GradingSettings] = None,
                   layout: Optional[CourseLayout] = None) -> Verdict:
    """The verdict on the notebook file at ``path`` (a learner's copy or a solutions/ notebook).

    ``execute`` and ``timeout`` are accepted for old callers; the verdict never depends on running the
    notebook (``test`` items run in the sandbox, limited by ``settings.time_limit_s``)."""
    path = Path(path)
    layout = layout or CourseLayout.resolve()
    nb = nbio.read(path)
    lesson_id, notes = lesson_of(path, nb, lesson_id, layout)
    cfg = config.lesson(lesson_id, layout.rubric)
    settings = settings or GradingSettings.resolve(cfg["settings"])
    if timeout:
        settings = settings.with_(time_limit_s=float(timeout))
    from .judge import judge
    return judge(nb, lesson_id, seed=seed, settings=settings, layout=layout, hints_used=hints.read_sidecar(path),
                 notes=notes)


def wrong_lesson_message(nb, lesson_id: str, layout: Optional[CourseLayout] = None) -> Optional[str]:
    """Chinese explanation when ``nb`` is another lesson's notebook (its lesson.load names a different lesson)."""
    content = nbio.lesson_id_of(nb)
    if not content or content == lesson_id:
        return None
    lessons = config.load((layout or CourseLayout.resolve()).rubric).get("lessons", {})
    if content not in lessons:
        return None
    title = lessons[content].get("title", content)
    want = lessons.get(lesson_id, {})
    return (f"提交错了笔记本：这份笔记本是「{title}」（{content}），不是本次要评分的"
            f"「{want.get('title', lesson_id)}」（{lesson_id}）。请提交 {want.get('notebook', lesson_id + '.ipynb')}。")


def repair(nb, template) -> List[str]:
    """Fix what editors do to a notebook without the learner meaning it (in place); Chinese notes.

    VS Code / Google Colab / copying cells into a new notebook drop the nbgrader
    cell metadata (and change cell ids): the graded cells are found again by
    id, by source or by position after their question (``nbio.restore_grade_ids``).
    """
    restored = nbio.restore_grade_ids(nb, template)
    if not restored:
        return []
    return [f"笔记本缺少 nbgrader 单元格元数据（可能用 VS Code / Google Colab 打开保存过，或把单元格复制到了新笔记本），"
            f"已按模板找回 {len(restored)} 个评分单元格：{'、'.join(restored)}。"]


# kernels.errors class name -> messages._WHAT kind (test cells that call the kernel directly
# raise these before L.grade can report its per-family table)
_KERNEL_ERRORS = {"CompileError": "compile", "ArgumentError": "argument", "KernelNotFoundError": "not_found",
                  "LaunchError": "launch", "DeadlockError": "deadlock", "ShuffleMaskError": "shuffle_mask",
                  "OutOfBoundsError": "out_of_bounds", "RaceError": "race", "KernelTimeout": "timeout",
                  "DeviceAssertError": "device_assert", "KernelError": "error"}


def _error_message(err: Dict[str, str]) -> str:
    ename, evalue = err.get("ename", ""), err.get("evalue", "")
    if ename == "AssertionError":
        return evalue or "断言失败"
    kind = _KERNEL_ERRORS.get(ename)
    if kind:
        from .messages import _WHAT
        title, advice = _WHAT.get(kind, _WHAT["error"])
        return f"{title}：{evalue}"[:400] + (f"。建议：{advice}" if advice else "")
    if ename == "MemoryError":
        return "内存不足（MemoryError）：数组太大或内存泄漏。"
    return f"运行出错（{ename}）：{evalue}"[:500]


def _cell_label(nb, cell) -> str:
    idx = next((i for i, c in enumerate(nb.cells) if c is cell), None)
    gid = nbio.grade_id(cell)
    first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "")[:60]
    where = f"第 {idx + 1} 个单元格" if idx is not None else "单元格"
    return f"{where}" + (f"「{gid}」" if gid else "") + (f"（{first}）" if first else "")


def explain_cell_error(nb, cell, err: Dict[str, str]) -> str:
    """The test cell's error, plus its root cause when an earlier cell failed first
    (a broken CUDA source cell leaves ``layernorm`` undefined; a compile error leaves it None)."""
    msg = _error_message(err)
    earlier = []
    for c in nb.cells:
        if c is cell:
            break
        if c.cell_type == "code" and (e := nbio.cell_error(c)) is not None:
            earlier.append((c, e))
    if err.get("ename") == "NameError" and earlier:
        c, e = earlier[0]
        why = _error_message(e)
        if e.get("ename") in ("SyntaxError", "IndentationError", "TokenError"):
            why += "（Python 语法错误：多半是 CUDA 源码外面的三引号 r\"\"\" … \"\"\" 或引号被改坏了）"
        return f"前面的{_cell_label(nb, c)}运行出错，所以后面用到的变量没有定义：{why}"[:600]
    compile_out = [ln.strip() for c in nb.cells if c.cell_type == "code" for o in c.get("outputs") or []
                   if o.get("output_type") == "stream" for ln in str(o.get("text", "")).splitlines()
                   if ln.strip()]
    start = next((i for i, ln in enumerate(compile_out) if ln.startswith("❌")), None)
    if start is not None and ("编译" in msg or "compile" in msg.lower()):
        msg = "CUDA 源码编译失败（见编译单元格的输出）：" + " / ".join(compile_out[start:start + 4]).lstrip("❌ ")
    return msg[:800]


_explain_cell_error = explain_cell_error   # old name

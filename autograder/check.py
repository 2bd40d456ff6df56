"""Grade one notebook: execute it (own process, time limit), score code items
from their test cells, written answers with the rubric, apply hint penalties
and vetoes.  Same engine for ``autograder check``, ``L.self_check()`` and the
instructor's batch grading (``grade_executed`` after ``nbgrader autograde``).
"""
from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import nbformat

from . import cases, config, hints, rubric, vetoes
from . import execute as executor
from . import notebook as nbio


@dataclass
class Result:
    score: float
    max_score: float
    passed: bool
    vetoes: List[Dict[str, str]] = field(default_factory=list)
    items: List[Dict[str, Any]] = field(default_factory=list)
    seed: Optional[int] = None
    backend: Optional[str] = None
    hints_used: Dict[str, int] = field(default_factory=dict)
    errors: List[str] = field(default_factory=list)
    lesson: Optional[str] = None
    pass_score: Optional[float] = None
    notes: List[str] = field(default_factory=list)      # Chinese notes on repairs made before grading

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kw)


def lesson_root() -> Path:
    """Folder holding solutions/ and lessons/: next to the rubric file in use."""
    return config.rubric_path().resolve().parent


def solution_notebook(cfg) -> Optional[nbformat.NotebookNode]:
    p = lesson_root() / "solutions" / cfg["notebook"]
    return nbio.read(p) if p.exists() else None


def template_notebook(cfg) -> Optional[nbformat.NotebookNode]:
    """The released notebook: lessons/<nb>, else generated on the fly from solutions/<nb>."""
    p = lesson_root() / "lessons" / cfg["notebook"]
    if p.exists():
        return nbio.read(p)
    sol = solution_notebook(cfg)
    return nbio.released(sol) if sol is not None else None


def test_grade_id(item_id: str, item: Dict[str, Any]) -> str:
    return item.get("grade_id") or f"test_{item_id}"


def prepare_for_run(nb, cfg, solution=None, notes: Optional[List[str]] = None) -> nbformat.NotebookNode:
    """The notebook to execute: solutions are filled in; a learner's test cells get the hidden tests back,
    and locked (read-only) cells the learner edited get their source back, as nbgrader autograde does."""
    if nbio.is_solution_notebook(nb):
        return nbio.filled(nb)
    run_nb = copy.deepcopy(nb)
    cells = nbio.cells_by_grade_id(run_nb)
    sol_cells = nbio.cells_by_grade_id(solution) if solution is not None else {}
    edited = []
    for gid, cell in cells.items():
        sol = sol_cells.get(gid)
        meta = nbio.nbgrader_meta(sol) if sol is not None else {}
        if sol is None or not meta.get("locked") or meta.get("solution"):
            continue
        want = nbio._fill(sol.source)
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
    for iid, item in cfg["items"].items():
        if item["kind"] not in ("cases", "test"):
            continue
        gid = test_grade_id(iid, item)
        if gid not in cells:
            continue
        if gid in sol_cells:
            cells[gid].source = nbio._fill(sol_cells[gid].source)
        elif item["kind"] == "cases" and f'L.grade("{iid}")' not in cells[gid].source \
                and f"L.grade('{iid}')" not in cells[gid].source:
            cells[gid].source = cells[gid].source.rstrip() + f'\nL.grade("{iid}")\n'
    return run_nb


def grade_notebook(path, lesson_id: Optional[str] = None, *, seed: Optional[int] = None,
                   execute: bool = True, timeout: Optional[float] = None) -> Result:
    """Grade the notebook file at ``path`` (a learner's lessons/ copy or a solutions/ notebook)."""
    path = Path(path)
    nb = nbio.read(path)
    notes: List[str] = []
    content_lesson = nbio.lesson_id_of(nb)
    if lesson_id is None:
        lesson_id = content_lesson or path.stem
        stem = path.stem
        if content_lesson and stem != content_lesson and stem in config.load().get("lessons", {}):
            notes.append(f"文件名是「{stem}」，但笔记本内容是「{content_lesson}」课（lesson.load），按「{content_lesson}」评分。")
    if lesson_id not in config.load().get("lessons", {}) and content_lesson is None:
        raise config.RubricError(f"无法确定 {path.name} 属于哪一课：笔记本里没有 lesson.load(\"...\")，"
                                 f"文件名「{path.stem}」也不是已知的课程 id；请用 --lesson 指定。")
    cfg = config.lesson(lesson_id)
    settings = cfg["settings"]
    seed = cases.new_seed() if seed is None else int(seed)
    wrong = wrong_lesson_message(nb, lesson_id)
    if wrong:
        return wrong_lesson_result(cfg, lesson_id, wrong, seed)
    solution = solution_notebook(cfg)
    template = template_notebook(cfg)
    if not nbio.is_solution_notebook(nb):
        notes += repair(nb, template)
    errors: List[str] = []
    executed = nb
    if execute:
        run_nb = prepare_for_run(nb, cfg, solution, notes)
        env = {"AUTOGRADER_SEED": str(seed), "KERNELS_CHECK": ",".join(settings.get("checks") or [])}
        ex = executor.run(run_nb, cwd=path.parent, time_limit_s=timeout or settings["time_limit_s"],
                          cell_timeout_s=settings["cell_timeout_s"], env=env)
        executed = ex.nb
        if ex.error:
            errors.append(ex.error)
    elif not any(c.get("execution_count") for c in nb.cells if c.cell_type == "code"):
        notes.append("笔记本里没有运行过的输出（--no-execute 只评已保存的输出），代码项按未运行计 0 分；"
                     "去掉 --no-execute 重新评分，或在 Jupyter 里“运行全部”并保存后再检查。")
    usage = hints.read_sidecar(path)
    if nbio.is_solution_notebook(nb):
        student_view = nbio.filled(nb)
    else:
        student_view = nb
    result = grade_executed(executed, lesson_id, seed=seed, template=template, student_nb=student_view,
                            hints_used=usage, errors=errors)
    result.notes = notes + [n for n in result.notes if n not in notes]
    return result


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


def wrong_lesson_message(nb, lesson_id: str) -> Optional[str]:
    """Chinese explanation when ``nb`` is another lesson's notebook (its lesson.load names a different lesson)."""
    content = nbio.lesson_id_of(nb)
    if not content or content == lesson_id:
        return None
    lessons = config.load().get("lessons", {})
    if content not in lessons:
        return None
    title = lessons[content].get("title", content)
    want = lessons.get(lesson_id, {})
    return (f"提交错了笔记本：这份笔记本是「{title}」（{content}），不是本次要评分的"
            f"「{want.get('title', lesson_id)}」（{lesson_id}）。请提交 {want.get('notebook', lesson_id + '.ipynb')}。")


def wrong_lesson_result(cfg, lesson_id: str, message: str, seed=None) -> "Result":
    items = [{"id": iid, "kind": it["kind"], "points": 0.0, "max_points": float(it["points"]),
              "message": "未评分：提交的是另一课的笔记本", "families": []} for iid, it in cfg["items"].items()]
    return Result(score=0.0, max_score=float(sum(e["max_points"] for e in items)), passed=False, items=items,
                  seed=seed, errors=[message], lesson=lesson_id, pass_score=float(cfg["settings"]["pass_score"]))


def grade_executed(nb, lesson_id: Optional[str] = None, *, seed: Optional[int] = None, template=None,
                   student_nb=None, hints_used: Optional[Dict[str, int]] = None,
                   errors: Optional[List[str]] = None) -> Result:
    """Score an ALREADY executed notebook (e.g. after ``nbgrader autograde``); runs nothing.

    ``template``: the released notebook for the template-edit / assert vetoes
    (default: lessons/ or generated from solutions/).  ``student_nb``: the
    learner's cells as submitted when ``nb`` had tests re-inserted (default ``nb``).
    """
    lesson_id = lesson_id or nbio.lesson_id_of(nb)
    cfg = config.lesson(lesson_id)
    settings = cfg["settings"]
    if template is None:
        template = template_notebook(cfg)
    if nbio.is_solution_notebook(nb):
        nb = nbio.filled(nb)
    student_nb = student_nb if student_nb is not None else nb
    errors = list(errors or [])
    rec = nbio.recorded_backend(nb) or {}
    backend = rec.get("backend")
    grade_data = {d.get("item"): d for _, d in nbio.outputs_with_mime(nb, nbio.GRADE_MIME) if isinstance(d, dict)}
    if seed is None:
        seed = next((d.get("seed") for d in grade_data.values() if d.get("seed") is not None), None)
    cells = nbio.cells_by_grade_id(nb)
    answers = {}
    rubric_results = {}
    items = []
    for iid, item in cfg["items"].items():
        pts = float(item["points"])
        entry = {"id": iid, "kind": item["kind"], "points": 0.0, "max_points": pts, "message": "", "families": []}
        if item["kind"] == "rubric":
            gid = item.get("grade_id") or iid
            cell = nbio.cells_by_grade_id(student_nb).get(gid) or cells.get(gid)
            if cell is None:
                entry["message"] = f"找不到答题单元格「{gid}」：它被删除了；请从原始课程笔记本把答题单元格复制回来，把答案写在里面"
            else:
                text, note = nbio.answer_text(cell), ""
                if not rubric.is_blank(text):
                    pass
                elif (stray := nbio.stray_answer(student_nb, template, gid)):
                    text = stray
                    note = (f"（答案没有写在「{gid}」答题单元格里，而是写在了旁边新建的单元格或题目单元格中；"
                            f"已按本题计分，下次请写在答题单元格内）")
                answers[gid] = text
                rr = rubric.score(text, item["rubric"], pts, prompt=nbio.template_prompt(template, gid))
                rubric_results[iid] = rr
                entry.update(points=rr.points, message=rr.message + note, rubric=rr.to_dict())
        else:
            gid = test_grade_id(iid, item)
            cell = cells.get(gid)
            data = grade_data.get(iid)
            if data:
                entry["families"] = data.get("families", [])
            if cell is None:
                entry["message"] = (f"找不到测试单元格「{gid}」：它被删除了（或改成了别的单元格）。测试单元格不能删除，"
                                    f"请从原始课程笔记本把它复制回来再提交")
            elif cell.get("execution_count") is None and not cell.get("outputs"):
                entry["message"] = "测试单元格没有运行（执行中断、超时或前面的单元格出错导致内核退出）"
            elif (err := nbio.cell_error(cell)) is not None:
                bad = [f.get("reason", "") for f in entry["families"] if not f.get("passed")]
                entry["message"] = "；".join(bad) if bad else _explain_cell_error(nb, cell, err)
            else:
                entry.update(points=pts, message="通过" + (f"（{len(entry['families'])} 个用例族）"
                                                          if entry["families"] else ""))
        items.append(entry)
    usage = hints.merge_usage(hints.usage_from_notebook(nb), hints.usage_from_notebook(student_nb), hints_used or {})
    for iid, d in hints.penalties(cfg, usage, settings["hint_penalty"]).items():
        for e in items:
            if e["id"] == iid and d > 0:
                taken = min(d, e["points"])
                e["points"] -= taken
                e["message"] += f"（使用了提示，扣 {taken:g} 分）"
    found = vetoes.all_vetoes(student_nb, template, cfg, answers, backend, rubric_results)
    wrong = wrong_lesson_message(student_nb, lesson_id)
    if wrong and wrong not in errors:
        errors.append(wrong)
    score = round(sum(e["points"] for e in items), 3)
    max_score = float(sum(e["max_points"] for e in items))
    passed = score >= float(settings["pass_score"]) and not found and not errors
    return Result(score=score, max_score=max_score, passed=passed, vetoes=[v.to_dict() for v in found],
                  items=items, seed=seed, backend=backend, hints_used=usage, errors=errors,
                  lesson=lesson_id, pass_score=float(settings["pass_score"]))


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


def _explain_cell_error(nb, cell, err: Dict[str, str]) -> str:
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

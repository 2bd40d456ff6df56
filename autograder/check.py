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


def prepare_for_run(nb, cfg, solution=None) -> nbformat.NotebookNode:
    """The notebook to execute: solutions are filled in; a learner's test cells get the hidden tests back."""
    if nbio.is_solution_notebook(nb):
        return nbio.filled(nb)
    run_nb = copy.deepcopy(nb)
    cells = nbio.cells_by_grade_id(run_nb)
    sol_cells = nbio.cells_by_grade_id(solution) if solution is not None else {}
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
    lesson_id = lesson_id or nbio.lesson_id_of(nb, path)
    cfg = config.lesson(lesson_id)
    settings = cfg["settings"]
    seed = cases.new_seed() if seed is None else int(seed)
    solution = solution_notebook(cfg)
    errors: List[str] = []
    executed = nb
    if execute:
        run_nb = prepare_for_run(nb, cfg, solution)
        env = {"AUTOGRADER_SEED": str(seed), "KERNELS_CHECK": ",".join(settings.get("checks") or [])}
        ex = executor.run(run_nb, cwd=path.parent, time_limit_s=timeout or settings["time_limit_s"],
                          cell_timeout_s=settings["cell_timeout_s"], env=env)
        executed = ex.nb
        if ex.error:
            errors.append(ex.error)
    usage = hints.read_sidecar(path)
    template = template_notebook(cfg)
    if nbio.is_solution_notebook(nb):
        student_view = nbio.filled(nb)
    else:
        student_view = nb
    return grade_executed(executed, lesson_id, seed=seed, template=template, student_nb=student_view,
                          hints_used=usage, errors=errors)


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
                entry["message"] = f"找不到答题单元格「{gid}」"
            else:
                answers[gid] = nbio.answer_text(cell)
                rr = rubric.score(answers[gid], item["rubric"], pts)
                rubric_results[iid] = rr
                entry.update(points=rr.points, message=rr.message, rubric=rr.to_dict())
        else:
            gid = test_grade_id(iid, item)
            cell = cells.get(gid)
            data = grade_data.get(iid)
            if data:
                entry["families"] = data.get("families", [])
            if cell is None:
                entry["message"] = f"找不到测试单元格「{gid}」"
            elif cell.get("execution_count") is None and not cell.get("outputs"):
                entry["message"] = "测试单元格没有运行（执行中断、超时或前面的单元格出错导致内核退出）"
            elif (err := nbio.cell_error(cell)) is not None:
                bad = [f.get("reason", "") for f in entry["families"] if not f.get("passed")]
                entry["message"] = "；".join(bad) if bad else _error_message(err)
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
    score = round(sum(e["points"] for e in items), 3)
    max_score = float(sum(e["max_points"] for e in items))
    passed = score >= float(settings["pass_score"]) and not found and not errors
    return Result(score=score, max_score=max_score, passed=passed, vetoes=[v.to_dict() for v in found],
                  items=items, seed=seed, backend=backend, hints_used=usage, errors=errors,
                  lesson=lesson_id, pass_score=float(settings["pass_score"]))


def _error_message(err: Dict[str, str]) -> str:
    ename, evalue = err.get("ename", ""), err.get("evalue", "")
    if ename == "AssertionError":
        return evalue or "断言失败"
    return f"{ename}: {evalue}"[:500]

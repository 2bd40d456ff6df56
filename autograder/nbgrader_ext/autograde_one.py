"""Grade one student in its own process: ``nbgrader autograde`` then the rubric.

Run by ``autograder.batch`` as ``python -m autograder.nbgrader_ext.autograde_one
...`` in a fresh session, so the batch can kill a hanging submission together
with its Jupyter kernel.  The outcome is written as JSON to ``--out``; gradebook
writes other than nbgrader's own happen in the parent (one writer).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

from .config import make_config, prepare_environment

LOCK_RETRIES = 5


def _api(course: Path, cell_timeout_s: int):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = make_config(course, cell_timeout_s=cell_timeout_s)
    # Quiet: the batch shows a progress bar; the log comes back in the JSON.
    config.NbGraderAPI.log_level = "WARN"
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def _failure_reason(text: str) -> str:
    """The most telling line of an nbgrader failure log, for the gradebook."""
    for pat in (r"DeadKernelError[^\n]*", r"Kernel died[^\n]*", r"CellTimeoutError[^\n]*",
                r"database is locked", r"\w+Error: [^\n]+"):
        m = re.findall(pat, text)
        if m:
            return m[-1].strip()[:300]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "nbgrader autograde failed"


def autograde(api, assignment: str, student: str) -> dict:
    """nbgrader autograde with retries when another worker holds the SQLite lock."""
    for attempt in range(LOCK_RETRIES):
        res = api.autograde(assignment, student, force=True, create=True)
        text = (res.get("error") or "") + (res.get("log") or "")
        if res.get("success") or "database is locked" not in text:
            return res
        time.sleep(0.5 * (attempt + 1))
    return res


def _timed_out_cells(notebook: Path) -> int:
    import nbformat

    if not notebook.exists():
        return 0
    nb = nbformat.read(str(notebook), as_version=4)
    return sum(1 for c in nb.cells for o in c.get("outputs", [])
               if o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError")


def rubric(notebook: Path, submitted: Path, lesson: str, seed):
    """The engine's scoring of the autograded (executed) notebook.  The submitted
    notebook is passed too: autograde cleared its outputs (hint records) and
    restored locked/test cells (the veto checks need the learner's own)."""
    import nbformat
    from autograder import hints
    from autograder.check import grade_executed

    nb = nbformat.read(str(notebook), as_version=4)
    student_nb = nbformat.read(str(submitted), as_version=4)
    result = grade_executed(nb, lesson, seed=seed, student_nb=student_nb,
                            hints_used=hints.read_sidecar(submitted))
    data = result.to_json() if hasattr(result, "to_json") else result
    return json.loads(data) if isinstance(data, str) else data


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--course", required=True, type=Path)
    p.add_argument("--assignment", required=True)
    p.add_argument("--notebook", required=True, help="notebook name without .ipynb")
    p.add_argument("--student", required=True)
    p.add_argument("--lesson", required=True)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--cell-timeout", type=int, default=120)
    p.add_argument("--phase", choices=["autograde", "feedback"], default="autograde")
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)

    prepare_environment()
    os.chdir(args.course)
    out = {"student": args.student, "phase": args.phase, "status": "graded", "reason": "",
           "rubric": None, "log": ""}
    started = time.monotonic()
    try:
        api = _api(args.course, args.cell_timeout)
        if args.phase == "feedback":
            res = api.generate_feedback(args.assignment, args.student, force=True)
        else:
            res = autograde(api, args.assignment, args.student)
        out["log"] = ((res.get("log") or "") + (res.get("error") or ""))[-6000:]
        if not res.get("success"):
            out["status"] = "crashed"
            out["reason"] = _failure_reason(out["log"])
        elif args.phase == "autograde":
            nb = args.course / "autograded" / args.student / args.assignment / f"{args.notebook}.ipynb"
            if _timed_out_cells(nb):
                # nbgrader interrupted a hanging cell and went on; the run still fails.
                out["status"] = "timeout"
                out["reason"] = (f"有 {_timed_out_cells(nb)} 个单元格超过 {args.cell_timeout} 秒未结束，"
                                 "已被中断")
            try:
                submitted = args.course / "submitted" / args.student / args.assignment / f"{args.notebook}.ipynb"
                out["rubric"] = rubric(nb, submitted, args.lesson, args.seed)
            except Exception as exc:  # engine failure: the autograde scores still stand
                out["status"] = "error"
                out["reason"] = f"rubric: {type(exc).__name__}: {exc}"[:300]
                out["log"] += "\n" + traceback.format_exc()[-3000:]
    except Exception as exc:
        out["status"] = "crashed"
        out["reason"] = f"{type(exc).__name__}: {exc}"[:300]
        out["log"] += "\n" + traceback.format_exc()[-3000:]
    out["seconds"] = round(time.monotonic() - started, 2)
    args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

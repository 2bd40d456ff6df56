"""Grade one student: ``nbgrader autograde``, the rubric, the gradebook suggestions
and nbgrader's feedback HTML.

``autograder.batch`` runs :func:`main` in a child process per student (forked
from a parent that has nbgrader imported already, or as ``python -m
autograder.nbgrader_ext.autograde_one ...``), in its own session, so a hanging
submission is killed together with its Jupyter kernel.  The outcome is written
as JSON to ``--out``.  Failures of the machinery rather than the submission are
retried (see TRANSIENT).
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

RETRIES = 5
# Failures that say nothing about the submission, so autograde is run again:
# - another worker holds the gradebook's SQLite lock;
# - the Jupyter kernel died before running a cell. jupyter_client picks free TCP ports and closes them before
#   the kernel binds them; a kernel started at the same moment by another worker can take one first
#   (seen in a parallel batch: "ZMQError: Address already in use", then "Kernel died before replying to
#   kernel_info"). A retry draws new ports.
TRANSIENT = ("database is locked", "Kernel died before replying to kernel_info")


def _api(course: Path, cell_timeout_s: int):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = make_config(course, cell_timeout_s=cell_timeout_s)
    config.NbGraderAPI.log_level = "WARN"  # the batch shows a progress bar; the log comes back in the JSON
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
    """nbgrader autograde, run again after a TRANSIENT failure (at most RETRIES runs)."""
    for attempt in range(RETRIES):
        res = api.autograde(assignment, student, force=True, create=True)
        text = (res.get("error") or "") + (res.get("log") or "")
        if res.get("success") or not any(t in text for t in TRANSIENT):
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


def grade_one(args) -> dict:
    from autograder import config as rubric_config
    from autograder.gradebook import record_rubric

    out = {"student": args.student, "status": "graded", "reason": "", "rubric": None, "log": "",
           "feedback": False}
    api = _api(args.course, args.cell_timeout)
    res = autograde(api, args.assignment, args.student)
    out["log"] = ((res.get("log") or "") + (res.get("error") or ""))[-6000:]
    if not res.get("success"):
        reason = _failure_reason(out["log"])
        if "CellTimeoutError" in reason:  # the kernel did not even answer the interrupt
            out["status"] = "timeout"
            out["reason"] = f"某个单元格超过 {args.cell_timeout} 秒未结束，且无法中断"
        else:
            out["status"] = "crashed"
            out["reason"] = reason
        return out
    where = Path(args.student) / args.assignment / f"{args.notebook}.ipynb"
    autograded = args.course / "autograded" / where
    n_timeouts = _timed_out_cells(autograded)
    if n_timeouts:  # nbgrader interrupted a hanging cell and went on; the run still fails
        out["status"] = "timeout"
        out["reason"] = f"有 {n_timeouts} 个单元格超过 {args.cell_timeout} 秒未结束，已被中断"
    try:
        out["rubric"] = rubric(autograded, args.course / "submitted" / where, args.lesson, args.seed)
    except Exception as exc:  # engine failure: nbgrader's own scores still stand
        out["status"] = "error"
        out["reason"] = f"rubric: {type(exc).__name__}: {exc}"[:300]
        out["log"] += "\n" + traceback.format_exc()[-3000:]
        return out
    record_rubric(f"sqlite:///{args.course / 'gradebook.db'}", args.assignment, args.notebook,
                  rubric_config.lesson(args.lesson), args.student, out["rubric"])
    if args.feedback:
        fb = api.generate_feedback(args.assignment, args.student, force=True)
        out["feedback"] = bool(fb.get("success"))
        if not fb.get("success"):
            out["log"] += "\n[feedback] " + (fb.get("error") or "")[-2000:]
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--course", required=True, type=Path)
    p.add_argument("--assignment", required=True)
    p.add_argument("--notebook", required=True, help="notebook name without .ipynb")
    p.add_argument("--student", required=True)
    p.add_argument("--lesson", required=True)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--cell-timeout", type=int, default=120)
    p.add_argument("--feedback", action="store_true", help="also run nbgrader generate_feedback")
    p.add_argument("--out", required=True, type=Path)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    prepare_environment()
    os.chdir(args.course)
    started = time.monotonic()
    try:
        out = grade_one(args)
    except Exception as exc:
        out = {"student": args.student, "status": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:300],
               "rubric": None, "log": traceback.format_exc()[-3000:]}
    out["seconds"] = round(time.monotonic() - started, 2)
    args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``autograder grade`` and ``autograder export``: flags resolved here, once, into the settings and the
layout every later step receives."""
from __future__ import annotations

import argparse
import os
import signal
import sys


def grade_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autograder grade", description=(
        "Batch-grade a folder of submissions (<student>.ipynb or <student>/<notebook>.ipynb) or an nbgrader "
        "course directory (submitted/<student>/<lesson>/): every submission in its own sandbox, the verdict "
        "recorded through nbgrader's autograde pipeline; resumable (re-run to continue, --force to regrade)."))
    p.add_argument("source", help="submissions folder or nbgrader course directory")
    p.add_argument("--lesson", required=True, help="lesson id, e.g. 05_layernorm")
    p.add_argument("--out", default="out/grades", help="output folder (grades-<lesson>.csv, gradebook.csv, "
                                                       "feedback/, results/, course/)")
    p.add_argument("--student", action="append", default=None, metavar="ID",
                   help="grade only this student (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="regrade students whose stored result is current; replace an edited source/ notebook")
    p.add_argument("--workers", type=int, default=2, help="local grading processes (default 2)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                   help="grade on a Dask cluster instead of local processes (dask-scheduler address)")
    p.add_argument("--seed", type=int, default=None,
                   help="one seed for every student (default: per student, fixed by the course's secret salt)")
    p.add_argument("--time-limit", type=float, default=None, help="seconds for one notebook's feedback run")
    p.add_argument("--course-root", default=None, help="folder with grading_rubric.yaml and solutions/")
    p.add_argument("--no-feedback", action="store_true", help="no HTML feedback (nbgrader's and ours)")
    p.add_argument("--no-execute", action="store_true",
                   help="do not run the notebooks for feedback (the verdict never needs the run)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="grade without bubblewrap isolation (only for trusted submissions)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--formgrader", action="store_true",
                   help="afterwards, open nbgrader's formgrader on the course dir to review/override scores")
    return p


class _Stop(BaseException):
    def __init__(self, signum):
        self.signum = signum


def _raise_stop(signum, _frame):
    raise _Stop(signum)


def grade_main(argv=None) -> int:
    from .. import config, sandbox
    from ..settings import CourseLayout, GradingSettings, LayoutError
    from .course import CourseError
    from .run import grade_batch
    a = grade_parser().parse_args(argv)
    try:
        layout = CourseLayout.resolve(a.course_root)
        cfg = config.lesson(a.lesson, layout.rubric)
    except (LayoutError, config.RubricError) as exc:
        print(f"autograder grade: {exc}", file=sys.stderr)
        return 2
    flags = {"sandbox": "off" if a.no_sandbox else "require", "time_limit_s": a.time_limit,
             "execute": False if (a.no_execute or a.no_feedback) else None}
    settings = GradingSettings.resolve(cfg["settings"], flags=flags)
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        result = grade_batch(a.source, a.lesson, a.out, workers=a.workers, seed=a.seed, students=a.student,
                             force=a.force, scheduler=a.scheduler, settings=settings, layout=layout,
                             feedback=not a.no_feedback, progress=not a.no_progress)
    except _Stop as stop:
        from .store import ResultStore
        n = len(ResultStore(a.out, a.lesson).load_all())
        name = "SIGTERM" if stop.signum == signal.SIGTERM else "Ctrl-C"
        print(f"autograder grade: stopped by {name}; every worker stopped, {n} result(s) kept in "
              f"{os.path.join(a.out, 'results', a.lesson)}; run the same command again to continue.", file=sys.stderr)
        return 128 + stop.signum
    except sandbox.SandboxUnavailable as exc:
        print(f"autograder grade: {exc}", file=sys.stderr)
        return 2
    except (CourseError, FileNotFoundError) as exc:
        print(f"autograder grade: {exc}", file=sys.stderr)
        return 2
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if a.formgrader:
        cmd = [os.path.join(os.path.dirname(sys.executable), "jupyter"), "lab", f"--ServerApp.root_dir={result.course_dir}"]
        os.chdir(result.course_dir)
        os.execv(cmd[0], cmd)
    return 0


def export_main(argv=None) -> int:
    from .export import FORMATS, export
    p = argparse.ArgumentParser(prog="autograder export", description=(
        "Write the merged gradebook of `autograder grade` as a CSV a course website imports."))
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--out", default="out/grades", help="the folder `autograder grade --out` wrote")
    p.add_argument("--to", default=None, help="CSV file to write (default <out>/<format>.csv)")
    a = p.parse_args(argv)
    try:
        dest = export(a.out, a.format, a.to)
    except FileNotFoundError as exc:
        print(f"autograder export: {exc}", file=sys.stderr)
        return 2
    print(dest)
    return 0

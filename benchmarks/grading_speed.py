"""Grading speed: one submission on one core, and the batch speed-up with 2 workers.

    python benchmarks/grading_speed.py            # N = 6 copies of the perfect lesson-5 example
    python benchmarks/grading_speed.py -n 50      # the course target: 50 submissions

Goals: <= 15 s to autograde one submission (nbgrader autograde + rubric, one
core); 2 workers over N submissions in <= 0.6x the sequential wall time.
Prints a table; asserts nothing (speed targets are not unit tests).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.batch import grade_batch  # noqa: E402

LESSON = "05_layernorm"
EXAMPLE = ROOT / "examples" / "submissions" / "perfect.ipynb"


def _copies(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        shutil.copyfile(EXAMPLE, folder / f"s{i:03d}.ipynb")
    return folder


def _run(src: Path, out: Path, workers: int, cpus=None):
    """grade_batch with the worker processes (and their kernels) confined to ``cpus``."""
    saved = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if cpus is not None and saved is not None:
        os.sched_setaffinity(0, cpus)  # inherited by the workers and their Jupyter kernels
    try:
        t0 = time.monotonic()
        res = grade_batch(src, LESSON, out, workers=workers, seed=1, feedback=False, show=False, progress=True)
        return time.monotonic() - t0, res
    finally:
        if cpus is not None and saved is not None:
            os.sched_setaffinity(0, saved)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=6, help="submissions in the batch comparison (default 6)")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    with tempfile.TemporaryDirectory(prefix="grading-speed-") as tmp:
        tmp = Path(tmp)
        one_core = {cpus[0]} if cpus else None
        wall1, res1 = _run(_copies(tmp / "one", 1), tmp / "out1", 1, one_core)
        per_sub = res1.rows[0].seconds
        src = _copies(tmp / "many", args.n)
        wall_seq, res_seq = _run(src, tmp / "seq", 1)
        wall_par, res_par = _run(src, tmp / "par", args.workers)
    ok = all(r.status == "graded" and r.passed for r in res_seq.rows + res_par.rows + res1.rows)
    ratio = wall_par / wall_seq
    g_seq, g_par = res_seq.phases["grading"], res_par.phases["grading"]
    rows = [
        ("one submission, 1 core (worker time)", 1, 1, per_sub, per_sub, "", "<= 15 s", per_sub <= 15),
        ("one submission, 1 core (whole batch)", 1, 1, wall1, wall1, "", "", None),
        (f"{args.n} submissions, sequential", args.n, 1, wall_seq, wall_seq / args.n, "1.00", "", None),
        (f"{args.n} submissions, {args.workers} workers", args.n, args.workers, wall_par, wall_par / args.n,
         f"{ratio:.2f}", "<= 0.60x", ratio <= 0.6),
        (f"  grading phase only (no course setup)", args.n, args.workers, g_par, g_par / args.n,
         f"{g_par / g_seq:.2f}", "", None),
    ]
    print(f"\nGrading speed, lesson {LESSON} (perfect example), {len(cpus)} CPUs visible, "
          f"backend {os.environ.get('KERNELS_BACKEND', 'auto')}, load average {os.getloadavg()[0]:.1f}; "
          f"all graded+passed: {ok}")
    print(f"course setup (nbgrader generate_assignment + gradebook): {res_seq.phases['setup']:.1f} s per batch")
    head = f"{'run':<40}{'subs':>5}{'workers':>8}{'wall s':>9}{'s/sub':>8}{'vs seq':>8}  {'goal':<10}{'met':>5}"
    print(head + "\n" + "-" * len(head))
    for name, n, w, wall, per, rel, goal, met in rows:
        print(f"{name:<40}{n:>5}{w:>8}{wall:>9.1f}{per:>8.1f}{rel:>8}  {goal:<10}"
              f"{'' if met is None else ('yes' if met else 'NO'):>5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

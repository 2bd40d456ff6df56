"""Grading throughput vs workers: a localhost Dask cluster with 1, 2 and 4 workers, side by side in one run
(and the embedded local pool for comparison).

    python benchmarks/grading_speed.py                 # 16 lesson-5 submissions (the bundled examples x 4)
    python benchmarks/grading_speed.py -n 48 --execute # 48, each notebook also run for feedback
    python benchmarks/grading_speed.py --workers 1 2 4 8

Every submission is graded for real: sandboxed hidden cases, answers, vetoes, recorded through nbgrader's
autograde pipeline by the coordinator. Each configuration grades into a fresh output folder (nothing is
resumed) with one seed. Prints a table of wall time, submissions per minute and speed-up over one worker;
asserts nothing (speed targets are not unit tests). On one machine the workers share its cores, so the
speed-up stops at the core count; on a cluster each worker brings its own.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LESSON = "05_layernorm"
EXAMPLES = ROOT / "examples" / "submissions"
BIN = Path(sys.executable).parent


def submissions(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    ex = sorted(EXAMPLES.glob("*.ipynb"))
    for i in range(n):
        src = ex[i % len(ex)]
        shutil.copyfile(src, folder / f"s{i:03d}_{src.stem}.ipynb")
    return folder


class Cluster:
    """``dask scheduler`` + ``k`` single-threaded ``dask worker`` processes on localhost."""

    def __init__(self, k: int, tmp: Path):
        self.tmp, self.procs = tmp, []
        sched = tmp / f"sched-{k}.json"
        self.log = open(tmp / f"dask-{k}.log", "w")
        self._start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(sched)])
        t0 = time.monotonic()
        while not sched.exists() and time.monotonic() - t0 < 120:
            time.sleep(0.2)
        self.address = json.loads(sched.read_text())["address"]
        self._start(["worker", self.address, "--nworkers", str(k), "--nthreads", "1", "--no-dashboard",
                     "--local-directory", str(tmp / f"work-{k}")])
        from distributed import Client
        with Client(self.address, timeout="60s") as c:
            c.wait_for_workers(k, timeout=300)

    def _start(self, args):
        self.procs.append(subprocess.Popen([str(BIN / "dask"), *args], stdout=self.log, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def close(self):
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.log.close()


def run(subs: Path, out: Path, settings, layout, **kw) -> float:
    from autograder.batch import grade_batch
    t0 = time.monotonic()
    grade_batch(subs, LESSON, out, seed=1234, settings=settings, layout=layout, feedback=False, progress=False,
                show=False, **kw)
    return time.monotonic() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=16, help="submissions (default 16)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--execute", action="store_true", help="also run each notebook for feedback")
    p.add_argument("--no-local", action="store_true", help="skip the local-pool rows")
    a = p.parse_args(argv)
    from autograder import config
    from autograder.settings import CourseLayout, GradingSettings
    layout = CourseLayout.resolve(ROOT)
    settings = GradingSettings.resolve(config.lesson(LESSON, layout.rubric)["settings"],
                                       flags={"sandbox": "require", "execute": a.execute})
    tmp = Path(tempfile.mkdtemp(prefix="grading-speed-"))
    subs = submissions(tmp / "subs", a.n)
    # warm the shared emulator builds once, so every row measures grading, not the first compile
    run(subs, tmp / "warm", settings, layout, students=[sorted(x.stem for x in subs.glob("*.ipynb"))[0]])
    rows = []
    try:
        for k in a.workers:
            cluster = Cluster(k, tmp)
            try:
                rows.append((f"dask, {k} worker(s)", k, run(subs, tmp / f"dask-{k}", settings, layout,
                                                           scheduler=cluster.address)))
            finally:
                cluster.close()
            if not a.no_local:
                rows.append((f"local pool, {k} process(es)", k, run(subs, tmp / f"local-{k}", settings, layout,
                                                                   workers=k)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = {kind.split(",")[0]: wall for kind, k, wall in rows if k == min(a.workers)}
    print(f"\n{a.n} lesson-5 submissions, {'with' if a.execute else 'without'} feedback runs, "
          f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'configuration':<28} {'wall s':>8} {'subs/min':>9} {'speed-up':>9}")
    for kind, k, wall in rows:
        print(f"{kind:<28} {wall:8.1f} {60 * a.n / wall:9.1f} {base[kind.split(',')[0]] / wall:8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

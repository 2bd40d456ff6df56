"""Batch at scale, kept lean (a tiny CUDA lesson, no feedback runs), 60 submissions graded twice:

1. uninterrupted, through a real ``dask scheduler`` and two ``dask worker`` processes on localhost
   (``--scheduler``);
2. locally, killed with SIGTERM midway (every worker stops, a one-line message, every finished result
   kept), then re-run: it resumes;
and the two CSVs are identical: the resumed run equals an uninterrupted one, Dask equals local.
"""
from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import scale_fixture as S  # noqa: E402

from autograder import sandbox  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")]
BIN = Path(sys.executable).parent
N = 60


def _csv(p):
    with open(p, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _grade(env, course_root, subs, out, *extra, **popen):
    cmd = [str(BIN / "autograder"), "grade", str(subs), "--lesson", "96_scale", "--out", str(out), "--seed", "5",
           "--no-feedback", "--no-progress", "--course-root", str(course_root), *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _start(args, env, log):
    return subprocess.Popen([str(BIN / "dask"), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    """The uninterrupted run: all 60 through a localhost Dask cluster of two workers."""
    import json
    tmp = tmp_path_factory.mktemp("scale")
    root, subs = tmp / "course", tmp / "subs"
    rubric = S.write_course(root, N, subs)
    env = dict(os.environ, AUTOGRADER_RUBRIC=str(rubric))
    sched_file = tmp / "scheduler.json"
    log = open(tmp / "dask.log", "w")
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], env, log)]
    try:
        t0 = time.monotonic()
        while not sched_file.exists() and time.monotonic() - t0 < 120:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(2):
            procs.append(_start(["worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                                 "--local-directory", str(tmp / "dask-work")], env, log))
        from distributed import Client
        with Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
        out = tmp / "dask"
        p = _grade(env, root, subs, out, "--scheduler", address)
        _, err = p.communicate(timeout=1500)
        assert p.returncode == 0, err[-3000:]
        workers = {json.loads(f.read_text())["worker"] for f in (out / "results" / "96_scale").glob("*.json")}
    finally:
        for pr in procs:
            try:
                os.killpg(pr.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pr in procs:
            try:
                pr.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(pr.pid, signal.SIGKILL)
        log.close()
    return {"tmp": tmp, "root": root, "subs": subs, "env": env, "dask": _csv(out / "grades-96_scale.csv"),
            "workers": workers}


def test_dask_scheduler_and_two_workers_graded_every_submission(scale):
    assert len(scale["dask"]) == N and {r["status"] for r in scale["dask"]} == {"graded"}
    assert len(scale["workers"]) == 2, scale["workers"]      # both dask workers graded (host:pid of each)
    assert {r["passed"] for r in scale["dask"]} == {"yes", "no"}


def test_sigterm_midway_then_resume_equals_an_uninterrupted_run(scale):
    out = scale["tmp"] / "killed"
    results = out / "results" / "96_scale"
    p = _grade(scale["env"], scale["root"], scale["subs"], out)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 900:
        done = len(list(results.glob("*.json"))) if results.is_dir() else 0
        if done >= N // 3:
            break
        assert p.poll() is None, p.communicate()[1][-2000:]
        time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    kept = len(list(results.glob("*.json")))
    assert p.returncode == 128 + signal.SIGTERM, err[-2000:]
    last = [ln for ln in err.strip().splitlines() if ln.strip()][-1]
    assert "stopped by SIGTERM" in last and "run the same command again" in last
    assert N // 3 <= kept < N
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True).stdout.strip()
    assert left == "", left                     # no worker (or sandbox) outlived the coordinator
    again = _grade(scale["env"], scale["root"], scale["subs"], out)
    _, err = again.communicate(timeout=1500)
    assert again.returncode == 0, err[-3000:]
    assert _csv(out / "grades-96_scale.csv") == scale["dask"]      # resumed local == uninterrupted Dask


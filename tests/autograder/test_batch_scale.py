"""Batch at scale, kept lean (a tiny CUDA lesson, no feedback runs):

* a 60-submission ``autograder grade`` killed with SIGTERM midway stops every worker with a one-line
  message, keeps every finished result, and the re-run resumes: its CSV equals an uninterrupted run's;
* a real ``dask scheduler`` and two ``dask worker`` processes on localhost grade a batch through
  ``--scheduler`` with results identical to the local run.
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


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scale")
    root, subs = tmp / "course", tmp / "subs"
    rubric = S.write_course(root, N, subs)
    env = dict(os.environ, AUTOGRADER_RUBRIC=str(rubric))
    full = tmp / "full"
    p = _grade(env, root, subs, full)
    out, err = p.communicate(timeout=1500)
    assert p.returncode == 0, err[-3000:]
    return {"tmp": tmp, "root": root, "subs": subs, "env": env, "full": _csv(full / "grades-96_scale.csv")}


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
    assert _csv(out / "grades-96_scale.csv") == scale["full"]
    assert len(scale["full"]) == N and {r["status"] for r in scale["full"]} == {"graded"}


def _start(args, env, log):
    return subprocess.Popen([str(BIN / "dask"), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def test_dask_scheduler_and_two_workers_grade_like_the_local_run(scale, tmp_path):
    env = dict(scale["env"], DASK_DISTRIBUTED__WORKER__DAEMON="False")
    sched_file = tmp_path / "scheduler.json"
    log = open(tmp_path / "dask.log", "w")
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], env, log)]
    try:
        t0 = time.monotonic()
        while not sched_file.exists() and time.monotonic() - t0 < 120:
            time.sleep(0.2)
        import json
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(2):
            procs.append(_start(["worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
                                 "--local-directory", str(tmp_path / "dask-work")], env, log))
        from distributed import Client
        with Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
        students = [f"s{i:02d}" for i in range(12)]
        out = tmp_path / "dask"
        sel = [a for s in students for a in ("--student", s)]
        p = _grade(scale["env"], scale["root"], scale["subs"], out, "--scheduler", address, *sel)
        _, err = p.communicate(timeout=1500)
        assert p.returncode == 0, err[-3000:]
        rows = _csv(out / "grades-96_scale.csv")
        local = [r for r in scale["full"] if r["student"] in students]
        assert rows == local
        workers = {json.loads((out / "results" / "96_scale" / f"{s}.json").read_text())["worker"] for s in students}
        assert len(workers) == 2, workers               # both dask workers graded (host:pid of each)
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

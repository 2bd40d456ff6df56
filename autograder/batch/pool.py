"""Where jobs run: local worker processes (the embedded default) or a Dask cluster (``--scheduler``).

Both have one method, ``run(jobs, on_result)``: it calls ``on_result(outcome_dict)`` in the coordinator as
each job finishes and returns when all are done. Stopping (Ctrl-C, SIGTERM) raises out of ``run`` after every
worker is stopped: a local worker is killed with its whole process group (its sandboxes die with it), Dask
futures are cancelled.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

from .jobs import GradeJob, GradeOutcome, Status, grade_job

OnResult = Callable[[Dict], None]
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _child(job: Dict, out_path: str) -> None:
    """Body of a forked worker: own process group, no terminal, the job, its outcome to a file."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the coordinator decides when a worker stops
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)   # blocked by the coordinator around the fork
    fd = os.open(os.devnull, os.O_RDWR)
    os.dup2(fd, 0)
    os.dup2(fd, 1)
    code = 1
    try:
        out = grade_job(job)
        tmp = out_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False)
        os.replace(tmp, out_path)
        code = 0
    finally:
        os._exit(code)


def _preload() -> None:
    """Import what every job needs once, before forking (saves seconds per submission)."""
    import nbformat  # noqa: F401
    from nbgrader.preprocessors import ClearSolutions  # noqa: F401

    from .. import answers, cases, check, execute  # noqa: F401
    from ..judge import core, executor, scorers, template  # noqa: F401


class LocalPool:
    """At most ``workers`` forked worker processes, one per job, each killed past ``limit_s``."""

    def __init__(self, workers: int = 2, limit_s: float = 900.0):
        self.workers = max(1, int(workers))
        self.limit_s = float(limit_s)

    def run(self, jobs: List[GradeJob], on_result: OnResult) -> None:
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        _preload()
        tmp = Path(tempfile.mkdtemp(prefix="autograder-pool-"))
        pending = list(jobs)
        running: Dict[int, tuple] = {}
        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    job = pending.pop(0)
                    out = tmp / f"{len(running)}-{time.monotonic_ns()}.json"
                    sys.stdout.flush()
                    sys.stderr.flush()
                    proc = ctx.Process(target=_child, args=(job.to_dict(), str(out)), daemon=False)
                    # a stop signal between the fork and this bookkeeping would leave a worker nobody kills (and
                    # the coordinator's exit waiting for it): it waits, blocked, until the worker is on the list
                    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
                    try:
                        proc.start()
                        running[proc.pid] = (proc, job, out, time.monotonic())
                    finally:
                        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                for pid, (proc, job, out, t0) in list(running.items()):
                    alive = proc.is_alive()
                    if alive and time.monotonic() - t0 <= self.limit_s:
                        continue
                    if alive:
                        _kill_group(proc)
                        result = GradeOutcome.failed(job, Status.TIMEOUT, f"评分超过 {self.limit_s:.0f} 秒，已终止",
                                                     time.monotonic() - t0).to_dict()
                    else:
                        proc.join()
                        result = _read(out, job, proc.exitcode, time.monotonic() - t0)
                    del running[pid]
                    on_result(result)
                time.sleep(0.05)
        finally:
            for proc, *_ in running.values():
                _kill_group(proc)
            for proc in multiprocessing.active_children():    # none should be left; never wait for one at exit
                _kill_group(proc)
            for p in tmp.glob("*"):
                p.unlink()
            tmp.rmdir()


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):    # not (yet) the leader of its own group
        proc.kill()
    proc.join(timeout=10)


def _read(out: Path, job: GradeJob, rc, seconds: float) -> Dict:
    try:
        return json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return GradeOutcome.failed(job, Status.CRASHED, f"评分进程异常退出（退出码 {rc}）", seconds).to_dict()


class DaskPool:
    """Jobs as Dask tasks on ``scheduler`` (``tcp://host:8786``); results come back to this process."""

    def __init__(self, scheduler: str):
        self.scheduler = scheduler

    def run(self, jobs: List[GradeJob], on_result: OnResult) -> None:
        from distributed import Client, as_completed
        client = Client(self.scheduler, timeout="30s")
        futures = {}
        try:
            for job in jobs:
                fut = client.submit(grade_job, job.to_dict(), pure=False, retries=1,
                                    key=f"grade-{job.lesson}-{job.student}-{job.fingerprint[:8]}-{time.time_ns()}")
                futures[fut.key] = (fut, job)
            for fut in as_completed([f for f, _ in futures.values()]):
                job = futures[fut.key][1]
                try:
                    result = fut.result()
                except Exception as exc:       # the worker died or the task could not be run
                    result = GradeOutcome.failed(job, Status.CRASHED, f"Dask 任务失败：{type(exc).__name__}: {exc}"[:300]).to_dict()
                on_result(result)
        finally:
            pending = [f for f, _ in futures.values() if not f.done()]
            if pending:
                client.cancel(pending)
            client.close()

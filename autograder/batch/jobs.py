"""The batch's wire format: ``GradeJob`` in, ``GradeOutcome`` out, both plain JSON-able dicts.

They travel to local worker processes and to Dask workers on other machines alike, so a job carries
everything its worker needs (the submitted notebook's text and hint record, the seed, the settings and the
course layout) and an outcome everything the coordinator records (the verdict, the executed notebook for
feedback). ``SCHEMA`` is bumped whenever a field changes meaning or goes away; a worker refuses a job of
another schema rather than guess.
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any, Dict, Optional

SCHEMA = 1


class Status(str, Enum):
    GRADED = "graded"          # a verdict exists (passed or not)
    INVALID = "invalid"        # not a notebook of this lesson: nothing to grade (the reason says why)
    TIMEOUT = "timeout"        # the worker itself ran past its limit and was killed
    CRASHED = "crashed"        # the worker process died
    ERROR = "error"            # the grader failed (a bug or a broken course config): the reason says where
    CANCELLED = "cancelled"    # the batch was stopped first


@dataclass(frozen=True)
class GradeJob:
    lesson: str
    student: str
    notebook: str                       # the submitted .ipynb, as text
    fingerprint: str                    # of the submitted bytes + hint record (autograder.nbgrader_ext.preprocessors)
    seed: int
    settings: Dict[str, Any]            # autograder.settings.GradingSettings.to_dict()
    layout: Dict[str, str]              # autograder.settings.CourseLayout.to_dict()
    hints: Dict[str, int] = field(default_factory=dict)
    filename: str = ""
    schema: int = SCHEMA

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "GradeJob":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"grade job schema {d.get('schema')!r} is not {SCHEMA}: coordinator and worker run "
                             "different autograder versions")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class GradeOutcome:
    lesson: str
    student: str
    status: Status
    reason: str = ""                    # Chinese, for the gradebook and the student's feedback
    verdict: Optional[Dict[str, Any]] = None     # autograder.verdict.Verdict.to_dict()
    executed: Optional[str] = None      # the notebook as run for feedback (JSON text), None when not run
    execution_error: Optional[str] = None
    fingerprint: str = ""
    seed: Optional[int] = None
    seconds: float = 0.0
    worker: str = ""
    finished: float = 0.0
    schema: int = SCHEMA

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["status"] = Status(self.status).value
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "GradeOutcome":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"grade outcome schema {d.get('schema')!r} is not {SCHEMA}")
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["status"] = Status(kw["status"])
        return cls(**kw)

    @classmethod
    def failed(cls, job: GradeJob, status: Status, reason: str, seconds: float = 0.0) -> "GradeOutcome":
        return cls(job.lesson, job.student, status, reason, fingerprint=job.fingerprint, seed=job.seed,
                   seconds=seconds, worker=socket.gethostname(), finished=time.time())


def grade_job(job: Dict[str, Any]) -> Dict[str, Any]:
    """Grade one submission (runs on a worker: a local process or a Dask worker). Never raises."""
    from .worker import run_job
    started = time.monotonic()
    try:
        j = GradeJob.from_dict(job)
    except Exception as exc:
        return {"schema": SCHEMA, "lesson": job.get("lesson", ""), "student": job.get("student", ""),
                "status": Status.ERROR.value, "reason": f"{type(exc).__name__}: {exc}", "verdict": None,
                "executed": None, "execution_error": None, "fingerprint": job.get("fingerprint", ""),
                "seed": job.get("seed"), "seconds": 0.0, "worker": socket.gethostname(), "finished": time.time()}
    try:
        out = run_job(j)
    except Exception as exc:    # the grader's failure, not the student's: say where
        import traceback
        tb = traceback.format_exc().strip().splitlines()
        out = GradeOutcome.failed(j, Status.ERROR, f"评分器出错（{type(exc).__name__}: {str(exc)[:200]}）"
                                                   f" {tb[-3] if len(tb) > 2 else ''}".strip())
    out.seconds = round(time.monotonic() - started, 2)
    out.worker = f"{socket.gethostname()}:{os.getpid()}"
    out.finished = time.time()
    return out.to_dict()

"""Results as each finishes: ``<out>/results/<lesson>/<student>.json`` (one GradeOutcome per file).

Written atomically the moment a worker returns, so an interrupted batch loses nothing; a re-run skips a
student whose stored outcome matches the submission's fingerprint, the seed, the rubric and the grader
(unless ``--force``), and grades the rest.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, Optional

from .jobs import GradeOutcome, Status


class ResultStore:
    def __init__(self, out_dir: Path, lesson: str):
        self.dir = Path(out_dir) / "results" / lesson
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lesson = lesson

    def path(self, student: str) -> Path:
        return self.dir / f"{student}.json"

    def save(self, outcome: GradeOutcome) -> Path:
        p = self.path(outcome.student)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(outcome.to_json(), encoding="utf-8")
        os.replace(tmp, p)
        return p

    def load(self, student: str) -> Optional[GradeOutcome]:
        try:
            return GradeOutcome.from_dict(json.loads(self.path(student).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def load_all(self) -> Dict[str, GradeOutcome]:
        out = {}
        for p in sorted(self.dir.glob("*.json")):
            o = self.load(p.stem)
            if o is not None:
                out[o.student] = o
        return out

    def current(self, student: str, fingerprint: str, seed: int, rubric_hash: str, grader_version: str) -> bool:
        """Whether the stored outcome is the one a regrade would produce (so it can be skipped)."""
        o = self.load(student)
        if o is None or o.fingerprint != fingerprint or o.seed != seed:
            return False
        if o.status in (Status.CANCELLED, Status.CRASHED, Status.ERROR, Status.TIMEOUT):
            return False        # the grader's failures are always retried
        v = o.verdict or {}
        return o.status == Status.INVALID or (v.get("rubric_hash") == rubric_hash and
                                              v.get("grader_version") == grader_version)

"""The grading record: one ``Verdict`` per graded submission, built from typed ``ItemScore``s.

Every consumer reads this one record: ``autograder check --json``, ``L.self_check()``,
the per-item ``L.check(...)``, the batch CSV, the HTML feedback and the nbgrader gradebook.
The pass rule lives here once (``pass_rule``); nothing else decides pass/fail.

Persisted and sent between processes as JSON (``to_dict`` / ``from_dict``); ``SCHEMA``
is bumped whenever a field changes meaning or is removed (adding a field with a default
does not need a bump).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Dict, Iterable, List, Optional, Tuple

SCHEMA = 1


@dataclass(frozen=True)
class Veto:
    """A reason the submission fails whatever its score (Chinese message, verbatim evidence)."""
    id: str                       # template_edit | assert_removed | tolerance_loosened | gpu_claim | misconception | ...
    message: str
    evidence: str = ""
    item: Optional[str] = None    # the item it came from, when it came from one

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Claim:
    """One key claim of a written item's rubric, as found in an answer."""
    id: str
    label: str
    status: str                   # established | contradicted | missing
    evidence: str = ""            # the sentence it rests on ("" when missing)
    core: bool = False
    points: float = 0.0           # credit this claim contributed to the item

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ItemScore:
    """The score of one graded item, with what it rests on."""
    item: str
    kind: str                     # cases | test | rubric
    points: float
    max_points: float
    message: str = ""             # Chinese, shown to the student
    confidence: float = 1.0       # 0..1: how sure the scorer is of ``points``
    needs_review: bool = False    # route to a person (nbgrader's manual-grading queue)
    review_reasons: Tuple[str, ...] = ()
    claims: Tuple[Claim, ...] = ()
    families: Tuple[Dict[str, Any], ...] = ()   # code items: per case family {family, passed, reason, ...}
    vetoes: Tuple[Veto, ...] = ()
    evidence: Tuple[str, ...] = ()
    grade_id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["id"] = self.item        # the key `autograder check --json` has always used
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "ItemScore":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw.setdefault("item", d.get("id"))
        kw["claims"] = tuple(Claim(**c) for c in d.get("claims") or ())
        kw["vetoes"] = tuple(Veto(**v) for v in d.get("vetoes") or ())
        kw["families"] = tuple(d.get("families") or ())
        kw["review_reasons"] = tuple(d.get("review_reasons") or ())
        kw["evidence"] = tuple(d.get("evidence") or ())
        return cls(**kw)

    def with_points(self, points: float, note: str = "") -> "ItemScore":
        return replace(self, points=points, message=self.message + note)


def pass_rule(score: float, pass_score: float, vetoes: Iterable[Veto], errors: Iterable[str]) -> bool:
    """The course's rule, the one place it is computed: total >= pass score, no veto, no grading error."""
    return score >= pass_score and not list(vetoes) and not list(errors)


@dataclass(frozen=True)
class Verdict:
    lesson: str
    items: Tuple[ItemScore, ...]
    pass_score: float
    vetoes: Tuple[Veto, ...] = ()
    errors: Tuple[str, ...] = ()          # Chinese: why something could not be graded
    notes: Tuple[str, ...] = ()           # Chinese: repairs made before grading
    seed: Optional[int] = None
    backend: Optional[str] = None         # the grader's own record, never the notebook's
    hints_used: Dict[str, int] = field(default_factory=dict)
    grader_version: str = ""
    rubric_hash: str = ""
    schema: int = SCHEMA

    @property
    def score(self) -> float:
        return round(sum(i.points for i in self.items), 3)

    @property
    def max_score(self) -> float:
        return float(sum(i.max_points for i in self.items))

    @property
    def passed(self) -> bool:
        return pass_rule(self.score, self.pass_score, self.vetoes, self.errors)

    @property
    def needs_review(self) -> List[str]:
        return [i.item for i in self.items if i.needs_review]

    def item(self, item_id: str) -> ItemScore:
        return next(i for i in self.items if i.item == item_id)

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": self.schema, "lesson": self.lesson, "score": self.score, "max_score": self.max_score,
                "pass_score": self.pass_score, "passed": self.passed,
                "vetoes": [v.to_dict() for v in self.vetoes], "items": [i.to_dict() for i in self.items],
                "needs_review": self.needs_review, "seed": self.seed, "backend": self.backend,
                "hints_used": dict(self.hints_used), "errors": list(self.errors), "notes": list(self.notes),
                "grader_version": self.grader_version, "rubric_hash": self.rubric_hash}

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kw)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Verdict":
        if int(d.get("schema", 0)) != SCHEMA:
            raise ValueError(f"verdict schema {d.get('schema')!r} is not {SCHEMA}: regrade with this grader")
        return cls(lesson=d["lesson"], items=tuple(ItemScore.from_dict(i) for i in d["items"]),
                   pass_score=float(d["pass_score"]), vetoes=tuple(Veto(**v) for v in d.get("vetoes") or ()),
                   errors=tuple(d.get("errors") or ()), notes=tuple(d.get("notes") or ()), seed=d.get("seed"),
                   backend=d.get("backend"), hints_used=dict(d.get("hints_used") or {}),
                   grader_version=d.get("grader_version", ""), rubric_hash=d.get("rubric_hash", ""))

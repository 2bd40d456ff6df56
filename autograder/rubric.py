"""Compatibility shim: the old ``rubric.score`` API over the claim engine (``autograder.answers``).

Kept until the grader calls ``autograder.answers.score_answer`` itself (PLAN.md: GRADER's one
adapter); then this module goes.  ``RubricResult`` keeps the fields its callers read (points,
message, misconceptions for the veto, term_only) and adds the claim engine's record.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List

from . import answers
from .answers.normalise import normalise as _normalise


@dataclass
class RubricResult:
    points: float
    max_points: float
    concepts_hit: List[str] = field(default_factory=list)      # established claims (labels)
    concepts_missed: List[str] = field(default_factory=list)   # missing claims (topics)
    chains_found: List[Dict[str, str]] = field(default_factory=list)
    chains_missed: List[str] = field(default_factory=list)
    term_only: bool = False
    keyword_stuffing: bool = False
    misconceptions: List[Dict[str, str]] = field(default_factory=list)   # {why, evidence}: each vetoes
    nudge: str = ""
    message: str = ""
    claims: List[Dict[str, Any]] = field(default_factory=list)
    confidence: float = 1.0
    needs_review: bool = False
    review_reasons: List[str] = field(default_factory=list)

    def to_dict(self):
        return asdict(self)


def validate(spec: Dict[str, Any]) -> None:
    from .config import RubricError
    try:
        answers.validate(spec)
    except answers.SpecError as exc:
        raise RubricError(str(exc)) from None


def is_blank(text: str) -> bool:
    return answers.is_blank(text)


def normalize(text: str) -> str:
    return _normalise(text)


def score(text: str, spec: Dict[str, Any], points: float = 2, prompt: str = "") -> RubricResult:
    """Score one answer (see ``autograder.answers.score_answer``; no GPU-claim veto here: the
    caller's ``vetoes.gpu_claim_vetoes`` reads every answer with the run's backend)."""
    out, _, message = answers.evaluate_text(text, spec, points, prompt)
    nudge = answers.compile_spec(spec).nudge
    if out is None:
        labels = [c.topic for c in answers.compile_spec(spec).claims]
        return RubricResult(0.0, float(points), concepts_missed=labels, nudge=nudge, message=message)
    rec = [{"id": r.claim.id, "label": r.claim.label, "status": r.status,
            "evidence": r.hit.evidence if r.hit else "", "core": r.claim.core, "points": r.points}
           for r in out.results]
    return RubricResult(
        out.points, float(points),
        concepts_hit=[r.claim.label for r in out.established],
        concepts_missed=[r.claim.topic for r in out.results if r.status == "missing"],
        chains_found=[{"cause": r.claim.id, "effect": r.claim.label, "evidence": r.hit.evidence}
                      for r in out.established if r.hit.span.kind != "list"],
        term_only=out.listy or out.term_credit, keyword_stuffing=False,
        misconceptions=[{"why": why, "evidence": answers.messages.clip(ev)} for why, ev in out.vetoing],
        nudge=nudge, message=message, claims=rec, confidence=out.confidence,
        needs_review=bool(out.review), review_reasons=list(out.review))

"""Written answers: the one adapter between the judge and the claim scorer (``autograder.answers``).

The answer is scored on the text a reader sees (``visible_text``: hidden HTML and hidden math dropped); the
GPU-claim veto trusts only ``backend``, the grader's own record of where kernels ran.
"""
from __future__ import annotations

from typing import Optional

from ..answers import is_blank, score_answer, visible_text
from ..verdict import ItemScore

__all__ = ["is_blank", "score_written", "visible_text"]


def score_written(text: str, spec: dict, points: float, *, item: str, prompt: Optional[str] = None,
                  backend: Optional[str] = None, grade_id: Optional[str] = None) -> ItemScore:
    """One written answer (already reduced to its visible text) -> ``ItemScore`` with its vetoes."""
    res = score_answer(text, spec, float(points), item=item, prompt=prompt, backend=backend)
    return res if res.grade_id else ItemScore(**{**res.__dict__, "grade_id": grade_id})

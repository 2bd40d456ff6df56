"""Scoring written answers by the claims they establish (issue 17).

Public API (the contract in /work/coord/PLAN.md):

* ``score_answer(text, spec, points, *, item, prompt=None, backend=None) -> ItemScore`` — ``text``
  is the answer cell's markdown (only what a reader sees is scored), ``spec`` the item's
  ``rubric:`` block (claim format, docs/grading.md), ``prompt`` the question (sentences copied
  from it earn nothing), ``backend`` the grader's own record for the GPU-claim veto.
* ``validate(spec)`` — raises ``SpecError`` (a ValueError naming the key path).
* ``visible_text(markdown)``.

Modules: normalise (text forms), visible (rendered text), spec (the format, compiled), claims
(matching), policy (points, confidence, review), messages (Chinese), gpu_claims, cli.
"""
from __future__ import annotations

import functools
import re
from difflib import SequenceMatcher
from typing import Any, Dict, Optional

from ..verdict import Claim as ClaimRecord, ItemScore, Veto
from . import claims as cm
from . import messages, policy
from .gpu_claims import gpu_claim
from .normalise import normalise, sentences, squash
from .spec import SpecError, compile_spec, validate
from .visible import visible_text

__all__ = ["score_answer", "validate", "visible_text", "SpecError", "is_blank", "evaluate_text"]

MAX_CHARS = 20_000                     # visible characters scored per answer (more goes to review)
PLACEHOLDERS = ("youransweranswerhere", "youranswerhere", "请在此作答", "在此作答", "在这里作答", "todo")


@functools.lru_cache(maxsize=16)
def seen_text(text: str) -> str:
    """What a reader sees of an answer, bounded (markdown beyond 4 x MAX_CHARS is not even rendered)."""
    return visible_text((text or "")[:4 * MAX_CHARS])


def is_blank(text: str) -> bool:
    sq = squash(normalise(seen_text(text or "")[:200]))
    return len(sq) < 2 or sq in PLACEHOLDERS


_OPS = re.compile(r"[=*+/<>%]")


def _ops_squash(text: str) -> str:
    """Letters, digits and formula operators only."""
    return re.sub(r"[^\w=*+/<>%]+|_", "", text)


def _copied_from(sq: str, pq: str, ops: bool = False) -> bool:
    """``sq`` is a copy of one stretch of ``pq``: the longest common run makes up >= 85 % of it, or, around that
    run, runs of >= 3 characters matched in order cover >= 85 % of it within a stretch of the question not much
    longer than it (a word dropped, changed or added is still a copy; scattered shared words are not).  With
    ``ops``, every formula operator of ``sq`` must lie in a matched run: operators put between the question's
    identifiers make a formula of one's own."""
    m = SequenceMatcher(None, sq, pq, autojunk=False).find_longest_match(0, len(sq), 0, len(pq))
    if m.size >= 0.85 * len(sq):
        return True
    if m.size < 3:
        return False
    lo = max(0, m.b - m.a - 8)
    window = pq[lo:m.b + (len(sq) - m.a) + 8]
    blocks = [x for x in SequenceMatcher(None, sq, window, autojunk=False).get_matching_blocks() if x.size >= 3]
    covered = sum(x.size for x in blocks)
    span = blocks[-1].b + blocks[-1].size - blocks[0].b if blocks else 0
    if ops:
        inside = {i for x in blocks for i in range(x.a, x.a + x.size)}
        if any(_OPS.match(ch) and i not in inside for i, ch in enumerate(sq)):
            return False
    return covered >= 0.85 * len(sq) and span <= 1.25 * len(sq) + 4


def drop_copied(norm: str, prompt: str):
    """``norm`` without its sentences copied from the question; (text, number dropped)."""
    if not prompt:
        return norm, 0
    pq = squash(normalise(visible_text(prompt)))
    po = _ops_squash(normalise(visible_text(prompt)))
    sents = sentences(norm)
    copied = []
    for a, b in sents:
        sq = squash(cm.HEDGE_OPEN.sub("", norm[a:b]))          # "我觉得 <the question>" is still the question
        # copied = the sentence is, up to a word dropped or changed, one stretch of the question (order kept);
        # reusing the question's identifiers in a formula of one's own is not a copy
        copy = len(sq) >= 4 and _copied_from(sq, pq)
        # a formula of one's own built from the question's identifiers ("warp_row = blockIdx.x * meta_group_size()
        # + meta_group_rank()" where the question lists them with 、) is the answer, not a copy: with the
        # operators kept, the question no longer holds it
        if copy and _OPS.search(norm[a:b]):
            copy = _copied_from(_ops_squash(norm[a:b]), po, ops=True)
        copied.append(copy)
    out = []
    for k, (a, b) in enumerate(sents):
        if copied[k]:
            continue
        # each kept sentence keeps its own end ("X？不对。" is a question answered no); a semicolon joins two
        # halves of one thought (claims.analyse links them) only while the other half is kept
        sep = norm[b:sents[k + 1][0] if k + 1 < len(sents) else len(norm)]
        if ";" in sep and (k + 1 >= len(sents) or copied[k + 1]) or not sep.strip():
            sep = "\n"
        out.append(norm[a:b] + sep)
    return "".join(out).rstrip(), sum(copied)


def evaluate_text(text: str, spec: Dict[str, Any], points: float, prompt: Optional[str] = None):
    """(Outcome or None when blank, number of copied sentences, message) — the engine without records."""
    compiled = compile_spec(spec)
    if is_blank(text):
        return None, 0, messages.EMPTY
    seen = seen_text(text)
    # no reader grades a book: the scored text is bounded (and the item goes to review), so a
    # pasted megabyte cannot stall the grader
    long = len(seen) > MAX_CHARS or len(text) > 4 * MAX_CHARS
    norm, copied = drop_copied(normalise(seen[:MAX_CHARS]), prompt or "")
    if len(squash(norm)) < 2:
        return None, copied, messages.COPIED_ONLY
    out = policy.evaluate(compiled, cm.analyse(norm, normalised=True), points)
    if long:
        out.review = tuple(out.review) + ("too_long",)
    return out, copied, messages.item_message(out, compiled.nudge, copied)


def score_answer(text: str, spec: Dict[str, Any], points: float, *, item: str, prompt: Optional[str] = None,
                 backend: Optional[str] = None, grade_id: Optional[str] = None) -> ItemScore:
    """Score one written answer; see the module docstring."""
    out, copied, message = evaluate_text(text, spec, points, prompt)
    vetoes = []
    gpu = gpu_claim(seen_text(text)[:MAX_CHARS], backend) if out is not None else None
    if out is None:
        compiled = compile_spec(spec)
        return ItemScore(item=item, kind="rubric", points=0.0, max_points=float(points), message=message,
                         confidence=1.0 if not copied else 0.9,
                         claims=tuple(ClaimRecord(c.id, c.label, "missing", "", c.core) for c in compiled.claims),
                         grade_id=grade_id or item)
    seen = set()
    for why, ev in out.vetoing:          # one veto per sentence, however many rules it breaks
        if ev not in seen:
            seen.add(ev)
            vetoes.append(Veto("misconception", messages.veto_message(item, why), messages.clip(ev), item))
    review = list(out.review)
    if gpu:
        vetoes.append(Veto("gpu_claim", messages.gpu_veto_message(item, backend), messages.clip(gpu), item))
        if "veto" not in review:
            review.insert(0, "veto")
    records = tuple(ClaimRecord(r.claim.id, r.claim.label, r.status, r.hit.evidence if r.hit else "",
                                r.claim.core, r.points) for r in out.results)
    evidence = tuple(dict.fromkeys(r.hit.evidence for r in out.results if r.hit))
    return ItemScore(item=item, kind="rubric", points=out.points, max_points=float(points), message=message,
                     confidence=out.confidence, needs_review=bool(review), review_reasons=tuple(review),
                     claims=records, vetoes=tuple(vetoes), evidence=evidence, grade_id=grade_id or item)

"""Points, vetoes, confidence and review routing from the claims found in one answer.

The course rule, as data in each item's ``points:`` (docs/grading.md):

* full points when at least ``full`` claims are established in prose (sentences, not a term list);
  ``partial`` claims give 1 point on a 2-point item;
* a term list — or an answer made mostly of verbless fragments — gets at most 1 point on a
  2-point item (and nothing on a 1-point item), and that only when it names the terms of at least
  ``term_list`` of the claims and contradicts none;
* a contradicted claim earns nothing even where another sentence states it; with
  ``contradiction: zero`` (the default: "a false causal claim scores 0 however many right terms")
  any contradiction makes the item 0, with ``cancel`` only that claim's credit goes;
* a contradicted ``core`` claim and an asserted misconception veto, with the sentence as evidence;
  the same views quoted in order to be rejected do not (they send the item to review instead).

Confidence is how far the answer is from the nearest scoring threshold, lowered by what makes a
reading uncertain (quotes, claims spread over two sentences, term lists, mixed signals); the
item goes to review on any veto, confidence below ``REVIEW_BELOW``, or a full score carried by
the rubric's own vocabulary (``VOCABULARY_SHARE`` of the answer's words).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Tuple

from . import claims as cm
from .arithmetic import false_relations
from .facts import false_facts
from .spec import Claim, Spec, claim_parts

REVIEW_BELOW = 0.6
VOCABULARY_SHARE = 0.6
LISTY_SHARE = 0.7


@dataclass
class ClaimResult:
    claim: Claim
    status: str                        # established | contradicted | missing
    hit: Optional[cm.Hit] = None       # what established or contradicted it
    quoted: Optional[cm.Hit] = None    # a contradiction quoted in order to be rejected
    points: float = 0.0


@dataclass
class Outcome:
    points: float
    max_points: float
    results: List[ClaimResult]
    misconceptions: List[Tuple[str, str]] = field(default_factory=list)   # (why, evidence) asserted: veto
    false_claims: List[Tuple[str, str]] = field(default_factory=list)     # asserted, not vetoing
    rejected: List[str] = field(default_factory=list)                    # quoted-and-rejected evidence
    listy: bool = False
    soup: bool = False                 # a sentence of terms strung together by causal connectives
    capped: bool = False               # every asked part named, but in notes or a list: capped as a term list
    term_credit: bool = False
    unanswered: List[str] = field(default_factory=list)   # parts of the question (asks) no claim answers
    vocabulary: float = 0.0
    confidence: float = 1.0
    review: Tuple[str, ...] = ()

    @property
    def established(self) -> List[ClaimResult]:
        return [r for r in self.results if r.status == "established"]

    @property
    def contradicted(self) -> List[ClaimResult]:
        return [r for r in self.results if r.status == "contradicted"]

    @property
    def vetoing(self) -> List[Tuple[str, str]]:
        """(why, evidence) of every veto: contradicted core claims, then asserted misconceptions."""
        core = [(r.claim.why or r.claim.label, r.hit.evidence) for r in self.contradicted if r.claim.core]
        return core + self.misconceptions


def _claim_result(claim: Claim, text: cm.Text, cache) -> ClaimResult:
    contra = quoted = None
    for pat in claim.contradicts:
        h = cm.find(pat, text, cache, assertion=True, consequence=not claim.core)
        if h and cm.supposed(pat, h.evidence, h.at):
            continue          # "只乘 l 的话，acc 的基准就对不上" supposes the false claim, it does not make it
        if h and not h.quoted and _by_number(pat, h) and _says_in(claim, text, h.span, cache):
            continue          # a side number ("每次 4 字节，所以每元素 16 字节"), the sentence states the claim
        if h and not h.quoted and cm.reported_and_rejected(text, h.span, h.at):
            quoted = quoted or h  # a wrong view reported to be rejected is not the student's: a person reads it
            continue
        if h and not h.quoted:
            contra = h
            break
        quoted = quoted or h
    if contra:
        return ClaimResult(claim, "contradicted", contra, quoted)
    listed = None
    for pat in claim.says:
        h = cm.find(pat, text, cache)
        if h and not h.quoted and h.span.kind != "list":
            return ClaimResult(claim, "established", h, quoted)
        listed = listed or (h if h and not h.quoted else None)
    # only a term list or a note names it, unless another of its patterns holds in prose
    return ClaimResult(claim, "established", listed, quoted) if listed else ClaimResult(claim, "missing", None, quoted)


def _by_number(pat, h: cm.Hit) -> bool:
    """The contradiction's hit has a number slot filled by a number (not by a paraphrase of the same part)."""
    return any(p.numbers and any(m.value_ok for m in cm.part_matches(replace(p, regex=None), h.evidence))
               for p in pat)


def _says_in(claim: Claim, text: cm.Text, span: cm.Span, cache) -> bool:
    """The sentence states the claim with its own number: then another number in it is a side number.  A pattern
    without a number slot ("block 一行 … 分摊") says nothing about the number the contradiction reads."""
    one = cm.Text(text.norm, text.sentences, [span], text.quoted, text.listy_share)
    return any(cm.find(pat, one, cache) for pat in claim.says if any(p.numbers for p in pat))


def _names_terms(claim: Claim, text: cm.Text, cache) -> bool:
    parts = claim_parts(claim)
    if not parts:
        return False
    whole = cm.Span(0, len(text.norm), "list")
    named = sum(1 for p in {p.name: p for p in parts}.values()
                if cache.setdefault((id(p), whole), cm.part_matches(p, text.norm)))
    return named >= max(1, len({p.name for p in parts}) // 2)


def vocabulary_share(spec: Spec, text: cm.Text) -> float:
    """Share of the answer's words inside a match of the rubric's own paraphrases."""
    from .normalise import _jieba
    covered = bytearray(len(text.norm) + 1)
    for p in spec.term_parts:
        for m in p.regex.finditer(text.norm):
            covered[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    words = [(a, b) for w, a, b in _jieba().tokenize(text.norm) if w.strip() and cm.units(w)]
    if not words:
        return 0.0
    return sum(1 for a, b in words if any(covered[a:b])) / len(words)


def evaluate(spec: Spec, text: cm.Text, max_points: float) -> Outcome:
    cache = {}
    results = [_claim_result(c, text, cache) for c in spec.claims]
    out = Outcome(0.0, float(max_points), results)
    for m in spec.misconceptions:
        for pat in m.says:
            h = cm.find(pat, text, cache, assertion=True, consequence=not m.veto)
            if h and m.unless is not None and any(u.start < h.at and not u.negated
                                                  for u in cm.part_matches(m.unless, h.evidence)):
                # "缩放到同一个最大值之后就可以直接相加" is right; a denied condition is none: "不用每一轮都同步，只要
                # 最后一轮之后同步一次就行" still says one barrier is enough
                continue
            if h and cm.hypothetical(h.evidence, h.at):
                continue          # "如果树不用每轮同步，就会读到旧值" supposes the view, it does not hold it
            if h and not h.quoted and m.veto and cm.reported_and_rejected(text, h.span, h.at):
                out.rejected.append(h.evidence)
                continue          # reported to be rejected, in words no frame lists: not a veto, a person reads it
            if h and not h.quoted:
                (out.misconceptions if m.veto else out.false_claims).append((m.why, h.evidence))
                break
            if h:
                out.rejected.append(h.evidence)
    out.false_claims += false_facts(text.norm, text.in_quote)     # a course constant with a wrong value
    out.false_claims += false_relations(text.norm, text.in_quote, cm.hypothetical)   # "0 × inf = 0": false arithmetic
    out.rejected += [r.quoted.evidence for r in results if r.quoted]
    out.listy = text.listy_share >= LISTY_SHARE
    est = [r for r in results if r.status == "established"]
    out.soup = any(sp.kind == "soup" for sp in text.spans)
    in_prose = [r for r in est if r.hit.span.kind != "list"]
    wrong = len(out.contradicted) + len(out.misconceptions) + len(out.false_claims)
    n = len(est) if not out.listy else 0
    asked = {c.asks for c in spec.claims if c.asks}
    answered = {r.claim.asks for r in in_prose if r.claim.asks}
    noted = {r.claim.asks for r in est if r.claim.asks} - answered
    if len(asked - answered) == 1 and asked - answered <= noted and len(in_prose) > spec.full:
        # "…（prose past the full count）。Cost: 32 extra floats per tile (4224 B)": one part answered by a note among
        # reasoned sentences is an answer in shorthand, not a term list
        answered |= noted
    out.unanswered = sorted(asked - answered)
    if n >= spec.full and in_prose and not out.unanswered:
        pts = max_points
    elif n >= spec.partial and in_prose and max_points > 1:
        pts = 1.0
    else:
        pts = 0.0
    # every claim the answer names sits in a term list or a note (numbered notes such as "24 位有效位舍入；
    # 多一次 launch" are not fragments, so the answer is not listy by share): it is graded as a term list
    list_only = bool(est) and not in_prose
    if pts == 0 and max_points > 1 and not wrong and (out.listy or list_only) and not out.soup:
        named = sum(1 for c in spec.claims if _names_terms(c, text, cache))
        if est or named >= spec.term_list * len(spec.claims):
            out.term_credit = True
            pts = 1.0
    if wrong and spec.contradiction == "zero":
        pts = 0.0
    # the claims would make full points, were they not in notes or a list: whether the notes link them is a reader's call
    out.capped = not wrong and pts < max_points and len(est) >= spec.full and \
        not asked - {r.claim.asks for r in est if r.claim.asks}
    out.points = min(pts, float(max_points))
    if out.points:
        share = out.points / max(1, len(est))
        for r in est:
            r.points = round(min(share, out.points), 3)
    out.vocabulary = vocabulary_share(spec, text) if out.points >= max_points else 0.0
    out.confidence, out.review = _confidence(spec, out, n)
    return out


def _confidence(spec: Spec, out: Outcome, n: int) -> Tuple[float, Tuple[str, ...]]:
    wrong = bool(out.contradicted or out.misconceptions or out.false_claims)
    if out.points >= out.max_points:
        conf = 0.95 if n > spec.full else 0.8
    elif out.points == 0 and not wrong:
        conf = 0.9 if n == 0 and not out.term_credit else 0.7
    elif wrong:
        conf = 0.55 if out.established else 0.8       # right and wrong claims side by side: a person decides
    else:
        conf = 0.6 if n >= spec.full - 1 and len(out.unanswered) <= 1 else 0.75
    if out.term_credit or out.listy:
        conf = min(conf, 0.7)
    if out.rejected:
        conf -= 0.15
    if out.established and all(r.hit.span.kind == "window" for r in out.established):
        conf -= 0.1
    conf = round(max(0.05, min(1.0, conf)), 2)
    reasons = []
    if out.vetoing:
        reasons.append("veto")
    if conf < REVIEW_BELOW:
        reasons.append("low_confidence")
    if out.points >= out.max_points and out.vocabulary >= VOCABULARY_SHARE:
        reasons.append("vocabulary")
    if out.rejected:
        reasons.append("quoted_misconception")
    if out.soup and out.points < out.max_points:
        reasons.append("connective_chain")   # a sentence of connective-strung terms earned nothing: a person confirms
    if out.term_credit and out.points:
        reasons.append("term_list")          # a point for naming terms, no claim in prose: a person confirms it
    if out.capped:
        reasons.append("notes_capped")       # everything named, in notes: a person decides whether they link it
    return conf, tuple(reasons)

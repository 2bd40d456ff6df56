"""Written answers: the one adapter between the judge and the answer scorer.

The scorer is RUBRIC's ``autograder.answers.score_answer`` (claim-based, returns an ``ItemScore`` with its own
vetoes, ``needs_review`` and confidence) when that package is present, else the vocabulary scorer
``autograder.rubric.score`` wrapped here into the same ``ItemScore``. Either way the answer is scored on the
text a reader sees (``visible_text``) and the GPU-claim veto trusts only ``backend``, the grader's own
record of where kernels ran.
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import Optional

from ..verdict import ItemScore, Veto


def _new_api():
    try:
        from ..answers import score_answer, visible_text   # RUBRIC's engine
        return score_answer, visible_text
    except ImportError:
        return None, None


_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(\.0*)?\s*(;|$)",
                           re.I)
_DROP_TAGS = {"script", "style", "template", "head", "title", "noscript", "svg", "math"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Visible(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.hidden = [], []    # stack of "is this element hiding its contents"

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            if tag in ("br", "hr"):
                self.out.append("\n")
            return
        a = {k.lower(): (v or "") for k, v in attrs}
        hide = tag in _DROP_TAGS or "hidden" in a or a.get("aria-hidden") == "true" or \
            bool(_HIDDEN_STYLE.search(a.get("style", "")))
        self.hidden.append(hide)
        if tag in ("p", "div", "li", "tr", "details", "summary", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.out.append("\n")

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        if self.hidden:
            self.hidden.pop()

    def handle_data(self, data):
        if not any(self.hidden):
            self.out.append(data)


def _closing(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the ``close`` matching the ``open_`` at ``text[i]`` (nesting counted), or -1."""
    depth = 0
    for k in range(i, len(text)):
        ch = text[k]
        if ch == "\\":
            continue
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


def _drop_images(text: str) -> str:
    """An image shows its picture, not its alt text or link: ``![alt](src)`` / ``![alt][ref]`` carry no
    answer (alt text may itself hold brackets, e.g. ``E[x^2]``)."""
    out, i = [], 0
    while True:
        j = text.find("![", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        end = _closing(text, j + 1, "[", "]")
        if end > 0 and end < len(text) and text[end] in "([":
            tail = _closing(text, end, text[end], ")" if text[end] == "(" else "]")
            if tail > 0:
                out.append(text[i:j] + " ")
                i = tail
                continue
        out.append(text[i:j + 2])
        i = j + 2


def fallback_visible_text(markdown: str) -> str:
    """What a reader of the rendered markdown sees: HTML comments, images (their alt text), ``<script>``/
    ``<style>`` and hidden elements (``display:none``, ``hidden``, ``aria-hidden``) dropped, other tags removed,
    entities decoded."""
    text = re.sub(r"<!--.*?(-->|\Z)", " ", markdown or "", flags=re.S)
    text = _drop_images(text)
    p = _Visible()
    try:
        p.feed(text)
        p.close()
        text = "".join(p.out)
    except Exception:
        text = re.sub(r"<[^>]*>", " ", text)
    return html.unescape(text).strip()


def visible_text(markdown: str) -> str:
    _, vt = _new_api()
    return (vt or fallback_visible_text)(markdown)


def is_blank(text: str) -> bool:
    from .. import rubric
    return rubric.is_blank(text)


def score_written(text: str, spec: dict, points: float, *, item: str, prompt: Optional[str] = None,
                  backend: Optional[str] = None, grade_id: Optional[str] = None) -> ItemScore:
    """One written answer (already reduced to its visible text) -> ``ItemScore`` with its vetoes."""
    score_answer, _ = _new_api()
    if score_answer is not None:
        res = score_answer(text, spec, float(points), item=item, prompt=prompt, backend=backend)
        return res if res.grade_id else ItemScore(**{**res.__dict__, "grade_id": grade_id})
    from .. import rubric, vetoes
    rr = rubric.score(text, spec, float(points), prompt=prompt or "")
    found = [Veto("misconception", f"回答「{item}」中的核心因果链错误：{m['why']}", m["evidence"], item=item)
             for m in rr.misconceptions or []]
    found += [Veto(v.id, v.message, v.evidence, item=item) for v in vetoes.gpu_claim_vetoes({item: text}, backend)]
    blank = rr.message.startswith("未作答")
    # The vocabulary scorer is sure of two things only: an empty answer and one meeting the full rule.
    # Anything in between goes to a person, with this score as the suggestion.
    unsure = not blank and rr.points < float(points)
    reasons = []
    if unsure:
        reasons.append("部分得分：词表评分只作建议，请老师确认")
    if rr.keyword_stuffing:
        reasons.append("疑似关键词堆砌")
    return ItemScore(item=item, kind="rubric", points=float(rr.points), max_points=float(points), message=rr.message,
                     confidence=0.5 if unsure else 0.9, needs_review=unsure or bool(found), review_reasons=tuple(reasons),
                     vetoes=tuple(found), evidence=tuple(c["evidence"] for c in rr.chains_found), grade_id=grade_id)

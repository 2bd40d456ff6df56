"""Chinese messages for the student and the teacher: what was established, what is missing (named
by each claim's ``topic``, which says what to explain without the answer), what was contradicted."""
from __future__ import annotations

from .policy import Outcome

EMPTY = "未作答"
COPIED_ONLY = "未作答：答案只是复制了题目原文（0 分），请用自己的话回答"
REVIEW = {
    "veto": "有一票否决项",
    "low_confidence": "自动评分把握不大",
    "vocabulary": "满分主要靠评分要点里的术语撑起",
    "quoted_misconception": "答案引用并反驳了一个常见误解，请确认读法",
    "too_long": "答案过长，只自动评了前 20000 个字符",
    "term_list": "只列了术语（没有成句的因果说明），术语分需要老师确认",
    "connective_chain": "有句子用因为 / 所以 / 导致把术语串在一起，这样的句子没有计分，请确认读法",
    "notes_capped": "要点都写到了，但写成了笔记或列表，按术语列表封顶；请确认因果是否连成了链",
}


def clip(s: str, n: int = 90) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"


def item_message(out: Outcome, nudge: str, copied: int) -> str:
    head = f"{out.points:g}/{out.max_points:g} 分"
    parts = []
    est = out.established
    if out.points >= out.max_points and not out.vetoing:
        parts.append("说清了：" + "；".join(r.claim.label for r in est) if est else "")
    else:
        if est:
            parts.append("已说清：" + "；".join(r.claim.topic for r in est))
        missing = [r.claim.topic for r in out.results if r.status == "missing"]
        if missing:
            parts.append("还没说清：" + "；".join(missing))
    for r in out.contradicted:
        parts.append(f"这句话与正确结论相反，不得分：「{clip(r.hit.evidence)}」" + (f"（{r.claim.why}）" if r.claim.why else ""))
    for why, ev in out.misconceptions + out.false_claims:
        parts.append(f"概念错误：「{clip(ev)}」（{why}）")
    if out.soup:
        parts.append("用因为 / 所以 / 导致把术语一个接一个串起来，没有说明每一步为什么成立，这样的句子不计分")
    if out.listy:
        parts.append("只列出了术语或短语（关键词堆砌），没有用完整的句子说明因果（最多 1 分）")
    elif out.term_credit:
        parts.append("提到了相关术语，但没有说清它们之间的因果关系（最多 1 分）")
    if copied:
        parts.append(f"有 {copied} 句是照抄题目，不计分")
    if out.points < out.max_points and nudge:
        parts.append("提示：" + nudge)
    if out.review:
        parts.append("这道题会由老师复核（" + "、".join(REVIEW.get(r, r) for r in out.review) + "）")
    return "：".join([head, "；".join(p for p in parts if p)]) if any(parts) else head


def veto_message(item: str, why: str) -> str:
    return f"回答「{item}」中的核心结论错误：{why}"


def gpu_veto_message(item: str, backend) -> str:
    where = "没有记录到 GPU 运行" if backend is None else f"本次运行的后端是 {backend}（没有 GPU）"
    return f"回答「{item}」声称有自己的 GPU 实测结果，但{where}：没有运行过的结果不能说成实测。"


_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩"


def scoring_note(rubric: dict, points: float) -> str:
    """The 评分说明 line under a question: what earns full points, in words, without the answer.

    One numbered part per ``asks`` value (the parts of the question; full points need each), named by the
    ``topic`` of its claims; claims without ``asks`` count towards the claims needed but answer no part of
    their own, so they are named after the parts as further points."""
    groups, extra = {}, []
    for c in rubric.get("claims") or []:
        topic = c.get("topic")
        if not c.get("asks"):
            if topic and topic not in extra:
                extra.append(topic)
            continue
        group = groups.setdefault(str(c["asks"]), [])
        if topic and topic not in group:
            group.append(topic)
    parts = "；".join(f"{_CIRCLED[i]} {'、'.join(g)}" for i, g in enumerate(g for g in groups.values() if g))
    if extra:
        parts += f"（{'、'.join(extra)}也算要点）"
    if points <= 1:
        return (f"> 评分说明：{points:g} 分需要用完整的句子说清 {parts}，并说出原因（因为……所以……）。"
                "只列术语不得分；与正确结论相反的说法不得分。")
    return (f"> 评分说明：{points:g} 分需要说清 {parts}，并用正确的因果链把它们连起来（因为……所以……，导致……）。"
            "只说对一部分得 1 分；只列术语最多 1 分；任何一句与正确结论相反的因果说法（例如把两种情况说反、数字算错）得 0 分。")

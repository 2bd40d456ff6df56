"""A misconception reported in order to reject it is not a veto, however the rejection is phrased.

Every sentence of the tuning corpora that the scorer vetoes (a misconception asserted as the student's own
claim) is wrapped in the ways students report a view to reject it: someone else's view, a written source, a
negated frame, a question answered no, a quote closed by a rejection, a retracted view of one's own, in Chinese
(simplified and traditional) and English.  Wrapped, it must not veto: a veto fails the whole lesson, so a
sentence that rejects the view must never trigger one.  The held-out halves are not used here.
"""
from __future__ import annotations

import functools
import json

import pytest

from autograder import config
from autograder.answers.cli import score_record

TUNING = ["answers_tune.jsonl", "tune_e.jsonl", "tune_new.jsonl", "tune_g.jsonl", "tune_h.jsonl",
          "tune_ijk.jsonl", "tune_opq.jsonl", "tune_uvwx.jsonl", "tune_r7.jsonl", "tune_veto.jsonl",
          "tune_r8.jsonl", "tune_r9.jsonl", "tune_r10.jsonl", "tune_r12.jsonl", "tune_r13.jsonl", "tune_r14.jsonl",
          "tune_r15.jsonl", "tune_r16.jsonl", "tune_r17.jsonl",
          "tune_r18.jsonl", "tune_r19.jsonl", "tune_r20.jsonl"]
FRAMES = [
    "有人说「{s}」，其实不对。",
    "很多同学以为{s}，这是误解。",
    "网上有教程写{s}——错的。",
    "別人講{s}，其實不對。",
    "{s}？不对。",
    "我一开始也以为{s}，后来发现不是这样。",
    "Some people say {s}, but that is wrong.",
    "不要以为{s}。",
    "The idea that '{s}' does not survive a closer look.",
    "Some notes say '{s}' - no.",
    # round 10: reported and rejected in words no frame lists (claims.reported_and_rejected reads them for vetoes)
    "很多教程里说{s}，这个说法不准确。",
    "我之前也觉得{s}，但仔细想想不对。",
    "别被“{s}”这种说法骗了。",
    "{s}——这是个常见误区。",
    "同学讨论时有人提出{s}，后来我们发现这是错的。",
    "我室友说{s}，我觉得他说错了。",
    "网上流传一个说法，{s}，这并不正确。",
    "很多人误会了，以为{s}。",
    "書上這麼寫：{s}。但這是過時的說法，不成立。",
    "如果有人告诉你{s}，别信。",
    "It's a common belief that {s}, but it's wrong.",
    "Someone in the forum said {s}. That's not right.",
    "有些人会想当然地认为{s}，这是个坑。",
    "曾经流行过一种解释：{s}。这个解释站不住。",
    "{s}，乍听有道理，其实经不起推敲。",
    "My first guess was that {s}, but that is not correct.",
    # round 11: views labelled wrong before they are stated, verdicts on "this" after them, disagreement
    "Contrary to what some blogs say ({s}), the opposite is true.",
    "和某些博客说的相反（{s}），事实并非如此。",
    "I used to believe {s}; I no longer do.",
    "A classmate insisted that {s}. He was mistaken.",
    "有一种错误说法：{s}。",
    "下面这个说法是错的：{s}。",
    "Myth: {s}.",
    "{s}（错）",
    "{s}——这是我以前的理解，现在看是错的。",
    "以前的讲义上写着{s}，后来被勘误了。",
    "我不同意“{s}”这种看法。",
    "{s}。以上是错误示范。",
    "One answer I saw online: {s}. This answer is wrong.",
    "很多人以為{s}，但這種理解有問題。",
    "一开始我写成了{s}，后来才反应过来不对。",
    "我原本以为{s}，结果在模拟器上跑了一下发现并非如此。",
    "本来想说{s}，但再想一下不对。",
    "At first I wrote that {s}, but I was wrong.",
    "I initially assumed {s}; that turned out to be false.",
    "刚学的时候我以为{s}，现在知道不是。",
    "千万别写成“{s}”。",
    "有同学答{s}，被扣分了。",
    "{s}——这是典型的错误。",
    "{s}, 这个我以前信过，后来发现是错的。",
    "People often claim {s}. They are wrong.",
    "说{s}的人没搞清楚。",
    "{s}这种想法是错误的。",
    "I'd be tempted to say {s}, but that's a mistake.",
    "我曾经误以为{s}。",
    "A common misreading is that {s}.",
    "{s}. It isn't: the lesson shows otherwise.",
    "常见的误读是：{s}。",
    "所谓“{s}”，是站不住的。",
    "我以前的笔记写着{s}，现在划掉了。",
    "{s}——我一度这么认为。",
    "{s}, or so I used to think.",
    # round 13: a copula verdict after a clause about the result ("…结果都一样是错的"), rumours, the mistake warned of
    "老师提醒过：{s}是错的。",
    "网上流传{s}，这是谣言。",
    "{s} — this is exactly the mistake the lesson warns about.",
    "我查了资料，{s}这个说法不靠谱。",
    "助教说过，{s}这种答案会被判错。",
    "\"{s}\" — I've seen this claim, and it doesn't hold.",
    "I'm not convinced that {s}; the lesson argues the opposite.",
    "A friend thought {s}. I explained why that's incorrect.",
    "（错误）{s}",
    "很多人把它理解为{s}，其实理解反了。",
    "以前我也是这么答的：{s}。被老师纠正了。",
    "{s}——这是初学者最容易犯的错。",
    "{s}——这个结论下得太早了。",
    "乍一看{s}，但仔细算一下并不是。",
    "这里容易想成{s}，但实际上不是这么回事。",
    "There's a popular claim that {s}. The lesson disproves it.",
    "Some classmates wrote {s} on the quiz and lost points.",
    "The textbook's claim that {s} is outdated.",
    "{s} — a tempting but wrong conclusion.",
    "I had written {s} at first; I've crossed it out.",
    "At first glance {s}, but that's not what happens.",
    "It would be wrong to say {s}.",
    "Don't fall for the idea that {s}.",
    "{s}（这是错误的说法）",
    "我的第一反应是{s}，后来推翻了。",
    # round 14: another's view answered by a contrast alone, no word of rejection
    "有同学觉得{s}，但其实关键在别处。",
    "网上有人说{s}。实际上课程的推导给出的是另一回事。",
    "Some tutorials claim {s}. In fact, the lesson's derivation shows something else.",
    # probe 11: 8 of 16 fresh rejection frames vetoed; 7 pass now (an ironic "Sure, X, in theory" is left to review)
    "室友信誓旦旦地说{s}，结果我在模拟器上一跑，当场打脸。",
    "期末试卷里专门埋了一个陷阱选项\"{s}\"，选它的人全都被扣了分。",
    "某篇点赞很高的博客说{s}，我照着改完代码直接翻车，从此再也不信这种说法。",
    "The obvious answer is that {s}, and like most obvious answers in this course, it falls apart the moment you profile it.",
    "My lab partner insisted that {s}; nope, a three-line counterexample settled that.",
    "A forum answer with hundreds of upvotes says that {s} (it is mistaken, and the comments underneath point that out).",
    "Stack Overflow 上有个高赞回答 claim {s}，我自己 reproduce 了一遍，结果恰恰相反。",
    # probe 12: 6 of 14 fresh rejection frames vetoed, 2 of 6 assertion frames lost the veto; 5 + 1 pass now
    # (left to review: "纠正一下前提：X并不是事实" with no one holding the view, 4 % of "虽然…但我倾向于认为 X")
    "说什么{s}，纯属扯淡，自己写个十几行的小 benchmark 跑一下就清楚了。",
    "谁懂啊，课程群里又有人刷屏说{s}，我直接扣了个问号，这说法根本就不对好吧，醒醒。",
    "Intuitively you might expect that {s}; that's a common but wrong intuition, and the reason is worth spelling out.",
    "I used to buy that {s}; after working through the memory traffic for each version, I no longer do.",
    "ChatGPT 给我的 answer 是 {s}，I double-checked with the CUDA Programming Guide，官方文档 doesn't support this at all。",
]
TOLERANCE = 0.03          # a view whose own words contain a rejection (",但…") is ambiguous: at most 3 % of them


def _vetoes(rec) -> bool:
    return any(v.id == "misconception" for v in score_record(rec, "cpu").vetoes)


@functools.lru_cache(maxsize=None)
def vetoing_sentences():
    out, seen = [], set()
    for name in TUNING:
        for line in (config.REPO_ROOT / "calibration" / name).read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if not rec.get("human_veto"):
                continue
            for v in score_record(rec, "cpu").vetoes:
                ev = v.evidence.strip().rstrip("。.!！…")
                key = (rec["lesson"], rec["item"], ev)
                # only whole sentences: a clipped one ("…") no longer says the same thing
                if v.id == "misconception" and key not in seen and not v.evidence.endswith("…") and \
                        _vetoes(dict(rec, text=ev + "。")):
                    seen.add(key)
                    out.append(dict(rec, text=ev))
    return tuple(out)


def test_the_corpora_give_enough_vetoing_sentences():
    assert len(vetoing_sentences()) >= 60


@pytest.mark.slow
@pytest.mark.parametrize("frame", FRAMES)
def test_a_rejected_misconception_does_not_veto(frame):
    sents = vetoing_sentences()
    still = [r["text"] for r in sents if _vetoes(dict(r, text=frame.format(s=r["text"])))]
    assert len(still) <= TOLERANCE * len(sents), still[:3]


# what follows from a view, said after it, is not a verdict on it: the veto stays
CONSEQUENCES = [
    "{s}。这会导致错误的结果。",
    "{s}。这样结果就错了。",
    "{s}. That is why the output is wrong.",
    "{s}。所以不会出错。",
    "{s}，这样算出来的结果是错的。",
    "{s}，所以会算错。",
    "并不是每个人都注意到，{s}。",          # a denial that opens the sentence covers its own clause only
    "{s}，所以结果是错的。",                # a copula verdict whose subject is the result is a consequence
    "{s}，这样输出也是错的。",
    "我觉得{s}，但也要注意边界情况。",       # one's own view and a "but" that adds to it: still the student's claim
    "老师讲得没错，{s}，这也是我在作业里这么写的原因。",      # another's view, endorsed
    "应该说{s}，这一点要是搞反了，后面的分析就全都不对了。",   # a mistake supposed in a conditional is no verdict
    "我的 conclusion 是 {s}，网上那种正好相反的说法是不对的。",  # the verdict is on the opposite view
]


@pytest.mark.slow
@pytest.mark.parametrize("frame", CONSEQUENCES)
def test_a_consequence_after_a_misconception_keeps_the_veto(frame):
    sents = vetoing_sentences()
    lost = [r["text"] for r in sents if not _vetoes(dict(r, text=frame.format(s=r["text"])))]
    assert len(lost) <= TOLERANCE * len(sents), lost[:3]

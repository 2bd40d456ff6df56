"""The GPU-claim veto: an answer claims a GPU measurement of the student's own that this run never made.

It reads what is claimed, sentence by sentence (normalised text):

* a *measurement* — 实测 / 测得 / 跑出 / 耗时 3 ms / measured / benchmarked / profiled / ncu 显示 …;
* on a *GPU or of performance* — a GPU name, ms / us / GB/s, 加速比, 快了 2 倍, speedup, occupancy …;
* *the student's own*: first person (我 / I / we …) or unattributed ("在 GPU 上测得 3 TB/s"): no citation of
  someone else's figures (课程 / 本课 / 表 / 文档 / llm.c / the course's table / reported) before it or in its clause;
* *asserted*: not negated (没有实测, did not measure), not hypothetical (如果 / 应该 / 预计 / would /
  should / expect), not on the CPU emulator or numpy without a GPU named.

It never fires when the grader's own record says the run was on a GPU (``backend == "cupy"``).
"""
from __future__ import annotations

import re
from typing import List, Optional

from .claims import OTHER_PEOPLE
from .normalise import normalise, sentences

# a GPU of the writer's own with a figure on it: "在我的 A100 上只要 0.3 ms", "on my H100 it took 0.21 ms"
OWN_GPU_FIGURE = re.compile(
    r"(?:(?:我的|我们的|我这边的?|我们这边的?|我手上的|我自己的?|我(?=电脑|机器|笔记本|台式机))\s*(?:电脑|机器|笔记本|台式机|工作站)?(?:的|上的?)?|"
    r"\b(?:my|our)\b\s*(?:(?:own|machine|laptop|desktop|workstation|home)(?:'s)?\s+)?)"
    r"\s*(?:gpu|显卡|卡|h100|h200|a100|v100|t4|l4|4090|3090|rtx)"
    r"(?=.*?(?<![a-z_0-9.])\d[0-9.]*\s*(?:ms|us|μs|毫秒|微秒|gb/s|tb/s|x|倍|%))", re.I | re.A)
# a figure of the card's data sheet, or one worked out from it, is no measurement: "我的显卡理论带宽 1 TB/s"
SPEC = re.compile(r"理论|标称|峰值|规格|参数|官方|号称|最高|上限|\bpeak\b|\bspec|\brated\b|\bnominal\b|\btheoretical|"
                  r"\bdatasheet\b|\bon paper\b|\bmax(?:imum)?\b", re.I | re.A)
MEASURE = re.compile(
    r"亲测|(?<![每第])一跑|跑(?:了)?一下|"
    r"实测|实际测得?|实际测量|测得|测出|测到|测了|测过|测试过|测量了|跑出|跑了|跑过|跑下来|试过|试了|测试了|实际运行|profile\s*(?:过|了)|运行时间(?:为|是)|"
    r"耗时\s*(?<![a-z_0-9.])\d[0-9.]*\s*(?:ms|us|μs|毫秒|微秒)|计时(?!单元|的?(?:那个?)?(?:格|cell|代码|函数|部分))|"
    r"\bmeasured\b|\bbenchmark(?:ed|ing)?\b|\bprofil(?:ed|ing)\b|\btimed\b|\btested\b|\bi ran\b|\bwe ran\b|\bran it\b|"
    r"(?:nsight|ncu|nsys|nvprof)\s*(?:显示|结果|报告|report|shows?|says)|"
    r"(?:用|拿|跑|开)\s*(?:nsight(?: compute| systems)?|ncu|nsys|nvprof)\s*(?:看|查|测|profile|跑|抓)", re.I | re.A)
CONTEXT = re.compile(
    r"gpu|显卡|\bh100\b|\bh200\b|\ba100\b|\bv100\b|\bt4\b|\bl4\b|\b4090\b|\b3090\b|\brtx\b|\bcuda\b|nsight|\bncu\b|"
    r"nsys|nvprof|(?<![a-z_0-9.])\d[0-9.]*\s*(?:ms|us|μs|毫秒|微秒|秒|gb/s|tb/s)(?![a-z])|带宽|吞吐|加速比|speed-?up|faster|slower|"
    r"更快|更慢|快了|慢了|latency|延迟|耗时|throughput|occupancy|(?<![a-z_0-9.])\d[0-9.]*\s*(?:x|倍)(?![a-z])", re.I | re.A)
GPU_NAMES = re.compile(r"gpu|显卡|\bh100\b|\bh200\b|\ba100\b|\bv100\b|\bt4\b|\bl4\b|\b4090\b|\b3090\b|\brtx\b", re.I | re.A)
EMULATOR = re.compile(r"\bcpu\b|模拟器|仿真|emulat|numpy|python|回放|replay|本地(?:电脑|机器)", re.I | re.A)
# "（不是 GPU）", "not on a GPU", "没有 GPU": a GPU named in order to say the run was not on one
_NOT_ON_GPU = re.compile(r"(?:不是|并非|而非|非|没有|没|无|不在|没在)\s*(?:在\s*)?(?:真(?:的|实)?)?\s*(?:gpu|显卡)|"
                         r"\b(?:not|no|without)\s+(?:on\s+)?(?:a\s+|the\s+|any\s+|real\s+)*gpu", re.I | re.A)
CITATION = re.compile(
    r"课程|本课|课上|课件|讲义|教材|表(?!示|明|达|现)|图表|文档|官方|给出|公布|发布|提供的|列出|报告(?:里|中|显示)|根据|(?<![数证])据(?!说)|"
    r"引用|参考|"
    + OTHER_PEOPLE + r"|网上|\b(?:he|she|they|his|her|their)\b|\bthe author|"    # someone else's run, reported
    r"llm\.c|readme|论文|博客|上面的|上文|lesson|course|table|published|reported|according to|documentation|"
    r"the paper|docs?\b|listed|cited", re.I | re.A)
HYPOTHETICAL = re.compile(
    r"如果|假如|假设|若(?!干)|(?<![主需只就还正])要是|应该|应当|预计|估计|预期|理论上|按理|照理|推测|推算|预估|大概(?!\s*[0-9.])|也许|或许|"
    r"\bif\b|\bwould\b|\bcould\b|\bshould\b|\bmight\b|\bmay\b|\bexpect(?:ed)?\b|\bestimate|\btheoretical|\bin theory\b|"
    r"\bwhen run on\b|\bon a real gpu\b|\b(?:had|were) (?:i|we)\b|\b(?:i|we)'d\b|"
    # a run still to come, or one meant and not made: "我本来想在 3060 上跑一下", "等我拿到 4090 之后打算 benchmark"
    # ("跑了以后发现…" is after a run: 以后 is no plan)
    r"(?:本来|原本|原来)?想(?:要)?(?:在|用|拿|去)|打算|计划|等我|下次|将来|"
    r"\b(?:plan(?:ned|ning|s)?|intend(?:ed|s)?|hope|want(?:ed|s)?) to\b|\b(?:i|we)(?: will|'ll| am going to|'m going to|'re going to)\b|"
    r"\bonce (?:i|we) (?:get|have)\b", re.I | re.A)
NEGATED = re.compile(r"没有|没|未|无法|不能|不可能|并未|从未|\bnot\b|\bnever\b|\bno\b|\bwithout\b|仅静态|静态审查|"
                     r"没法", re.I | re.A)


# the writer says outright that there is no run of their own: "我这边只有 CPU 模拟器" / "我没有自己的时间数据"
_NO_RUN = re.compile(r"(?:只有|仅有|只能用|只在)\s*(?:一台\s*)?(?:cpu|模拟器)|没有\s*(?:自己的\s*)?(?:gpu\s*)?(?:时间|计时|测量|实测|性能)?\s*数据|"
                     r"没有\s*(?:可用的\s*)?(?:gpu|显卡)|\b(?:i|we) (?:only )?(?:have|had) (?:only )?(?:the |a )?(?:cpu|emulator)\b|"
                     r"\bno (?:gpu|timings?|measurements?) of (?:my|our) own\b|\b(?:i|we) (?:have|had) no (?:gpu|timings?|measurements?)\b", re.I | re.A)


def _clause_end(s: str, pos: int) -> int:
    m = re.search(r"[,，;；:：]", s[pos:])
    return pos + m.start() if m else len(s)


def is_gpu_claim(sentence: str) -> bool:
    """One normalised sentence asserts a GPU measurement of the writer's own."""
    m = MEASURE.search(sentence)
    own = None if m else OWN_GPU_FIGURE.search(sentence)
    hit = m or own
    if not hit or not CONTEXT.search(sentence) or _NO_RUN.search(sentence):
        return False
    if own:
        # one's own GPU with a figure: the figure may sit anywhere in the sentence, and so may what frames it, so the
        # whole sentence is the measurement's clause; a data-sheet figure is no measurement
        if SPEC.search(sentence):
            return False
        clause_start, clause_end = 0, len(sentence)
    else:
        clause_start = max([0] + [x.end() for x in re.finditer(r"[,，;；:：]", sentence[:m.start()])])
        clause_end = _clause_end(sentence, m.end())
    # a run on the emulator / CPU / numpy: a GPU counts only where the measurement's own clause names one as the
    # place of the run ("我在 CPU 模拟器上跑了…，按 GPU 默认的 FMA 回放是 -0.25" is an emulator run)
    if EMULATOR.search(sentence) and not GPU_NAMES.search(_NOT_ON_GPU.sub(" ", sentence[clause_start:clause_end])):
        return False
    scope = sentence[:clause_end]          # what frames the measurement comes before it or with it
    if CITATION.search(scope) or HYPOTHETICAL.search(scope):
        return False
    if NEGATED.search(sentence[clause_start:hit.end()]):
        return False
    return True                # first person, or unattributed: a measurement nobody else is credited with


def gpu_claim(text: str, backend: Optional[str]) -> Optional[str]:
    """The first sentence of ``text`` claiming an own GPU measurement this run did not make, else None."""
    if backend == "cupy":
        return None
    norm = normalise(text)
    for a, b in sentences(norm):
        if is_gpu_claim(norm[a:b]):
            return norm[a:b]
    return None


def claims_in(answers: dict, backend: Optional[str]) -> List[tuple]:
    """[(answer id, sentence)] for every answer with such a claim (one per answer)."""
    out = []
    for gid, text in answers.items():
        s = gpu_claim(text, backend)
        if s:
            out.append((gid, s))
    return out

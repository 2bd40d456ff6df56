"""Course-wide facts: a wrong value for a standard constant is a false claim in every item.

A teacher does not need an item's rubric to know that "FP16 的最大值是 65536" or "FP16 有 16 位有效位"
is false, and the course rule is that a false claim used as an argument scores 0 (issue 17:
wrong numbers are the commonest way a confident wrong chain is built in the lesson's vocabulary).
Each fact names a subject (FP16, FP32, BF16, a warp), an attribute written with its number
("最大值 65504", "11 位有效位", "32 个线程") and the values that are right.  A stated value belongs to
the nearest subject named before it in its sentence ("FP16 只有 11 位有效位，FP32 有 24 位": 24 is
FP32's), so comparisons between formats are read correctly.  What is quoted in order to be rejected
("有人说 FP16 最大是 65536，其实…") is not asserted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

_NUMBER = r"(?<![\d.+\-*/^])(\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)(?![\d.]|\s*万|\s*\^|\s*\*\*)"

_SUBJECTS = {
    "fp16": re.compile(r"(?<![a-z0-9_])(?:fp16|float16|half(?: precision)?|__half)(?![a-z0-9_])|半精度"),
    "bf16": re.compile(r"(?<![a-z0-9_])(?:bf16|bfloat16)(?![a-z0-9_])"),
    "fp32": re.compile(r"(?<![a-z0-9_])(?:fp32|float32|float(?![a-z0-9_]|\s*\*))(?![a-z0-9_])|单精度"),
    "warp": re.compile(r"(?<![a-z0-9_])warp(?![a-z0-9_])|线程束"),
}

_SIGNIFICAND = re.compile(
    _NUMBER + r"\s*(?:\+\s*1\s*)?(?:位|bits?|-bit)\s*(?:的\s*)?(?:有效位|有效数字|尾数|mantissa|significand|精度位)|"
    r"(?:有效位|有效数字|尾数|mantissa|significand)(?:数|位数)?\s*(?:是|为|有|只有|才|就|也就|=|:|of|is|has|only)*\s*"
    + _NUMBER + r"\s*(?:位|bits?)")
_MAXIMUM = re.compile(
    r"(?:最大(?:有限)?(?:值|的数|可表示的?数|能表示的?数)?|能表示的最大(?:的)?数|\bmax(?:imum)?(?: finite value)?\b|"
    r"\blargest (?:finite )?(?:value|number)\b|上限|\btops out at\b)\s*"
    r"(?:是|为|只有|才|也就|就|=|:|约|大约|about|is|of|at|only|~)*\s*"
    r"(?:2\s*(?:\^|\*\*)\s*\d+\s*(?:-\s*\d+\s*)?=\s*)?" + _NUMBER +       # "最大数就是 2^11 = 2048"
    # a format's maximum has no unit: "拷贝上限 4223 GB/s" next to "fp32" is a bandwidth ceiling, not FP32's maximum
    r"(?!\s*(?:[kmgtp]i?b\b|[kmgtp]i?b/s|b/s|bytes?\b|字节|ms\b|us\b|μs|ns\b|秒|s\b|%|倍|x\b|×|个|次|行|列|flops?\b))")
# the size of one value ("FP32 每个 2 字节"); not a traffic count ("fp32 每元素 12 字节" counts several values)
_VALUE_BYTES = re.compile(
    r"\s*(?:的)?\s*(?:数|值|数据|类型|元素类型)?\s*(?:是|为|占|只占|有|is|takes|uses|每个(?!元素)|一个|每个数|每个值|each)*\s*"
    + _NUMBER + r"\s*(?:个)?\s*(?:字节|bytes?\b|b\b)(?!\s*(?:/|每|per\b))")
_WARP_THREADS = re.compile(
    r"(?:有|是|包含|由|=|:|\bof\b|\bhas\b|\bis\b|\bcontains\b)\s*" + _NUMBER + r"\s*(?:个)?\s*(?:线程|threads|lanes)")


_ARGUMENT = re.compile(r"\b(?:exp|expf|__expf|log|sqrt|rsqrt|sin|cos)\b|指数|参数|自变量|输入|\b(?:argument|input|exponent)\b")


@dataclass(frozen=True)
class Fact:
    subject: str
    attribute: re.Pattern
    right: Callable[[float], bool]
    why: str
    near: int = 40               # the attribute starts at most this many characters after the subject
    # what, between the subject and the attribute, makes the attribute another thing's ("FP32 里 exp 的参数上限大约 88.7"
    # is the limit of exp's argument, not FP32's largest value)
    other: Optional[re.Pattern] = None


FACTS: Tuple[Fact, ...] = (
    Fact("fp16", _SIGNIFICAND, lambda v: v in (10, 11), "FP16 有 11 位有效位（10 位尾数加隐含的 1 位）"),
    Fact("fp16", _MAXIMUM, lambda v: 65000 <= v <= 65520, "FP16 的最大有限值是 65504（不是 2^16 = 65536）", other=_ARGUMENT),
    Fact("bf16", _SIGNIFICAND, lambda v: v in (7, 8), "BF16 有 8 位有效位（7 位尾数加隐含的 1 位）"),
    Fact("fp32", _SIGNIFICAND, lambda v: v in (23, 24), "FP32 有 24 位有效位（23 位尾数加隐含的 1 位）"),
    Fact("fp32", _MAXIMUM, lambda v: 3.3e38 <= v <= 3.5e38, "FP32 的最大有限值约 3.4e38", other=_ARGUMENT),
    Fact("fp32", _VALUE_BYTES, lambda v: v == 4, "一个 FP32 数占 4 字节", near=0),
    Fact("fp16", _VALUE_BYTES, lambda v: v == 2, "一个 FP16 数占 2 字节", near=0),
    Fact("bf16", _VALUE_BYTES, lambda v: v == 2, "一个 BF16 数占 2 字节", near=0),
    Fact("warp", _WARP_THREADS, lambda v: v == 32, "一个 warp 是 32 个线程", near=12),
)

_SENTENCE = re.compile(r"[。！？?;；\n]|!(?!=)|\.(?=\s|$)")


_COUNTED = re.compile(r"\d\s*(?:个|x|×)?\s*(?:连续|相邻)?的?\s*$")
_COMPARED = re.compile(r"(?:跟|和|与|同|像|比|\bthan|\bas|\blike)\s*$")


def _attributes(fact: Fact, s: str, mentions):
    """The attribute matches of ``fact`` in sentence ``s`` whose subject is ``fact.subject``."""
    if fact.near == 0:          # the attribute follows its subject directly ("FP32 每个 2 字节")
        for start, end, name in mentions:
            if _COUNTED.search(s[:start]):
                continue        # "32 个连续的 float = 128 字节", "A、B 各 1 个 float 8 字节": a total, not one value
            m = fact.attribute.match(s, end) if name == fact.subject else None
            if m:
                yield m
        return
    for m in fact.attribute.finditer(s):
        before = [x for x in mentions if x[1] <= m.start()]
        if before and before[-1][2] == fact.subject and m.start() - before[-1][1] <= fact.near and \
                not (fact.other and fact.other.search(s, before[-1][1], m.start())):
            yield m


# "位有效数字" without "bit" is also said of decimal digits: FP32 about 7 (6-8), FP16 about 3-4, BF16 about 2-3
_DECIMAL_DIGITS = {"fp32": (6, 8), "fp16": (3, 4), "bf16": (2, 3)}


def _decimal_digits(subject: str, said: str, value: float) -> bool:
    lo, hi = _DECIMAL_DIGITS.get(subject, (1, 0))
    return "有效数字" in said and not re.search(r"bit|位数", said) and lo <= value <= hi


def false_facts(norm: str, in_quote: Callable[[int], bool]) -> List[Tuple[str, str]]:
    """(why, sentence) for each course constant the answer states with a wrong value."""
    out = []
    starts = [0] + [m.end() for m in _SENTENCE.finditer(norm)]
    ends = starts[1:] + [len(norm)]
    for a, b in zip(starts, ends):
        s = norm[a:b]
        # a format named as the object of a comparison is not what the sentence is about:
        # "BF16 的指数位跟 FP32 一样是 8 位，但只有 8 位有效位" states BF16's significand
        mentions = sorted((m.start(), m.end(), name) for name, rx in _SUBJECTS.items() for m in rx.finditer(s)
                          if not _COMPARED.search(s[max(0, m.start() - 6):m.start()]))
        if not mentions:
            continue
        for fact in FACTS:
            for m in _attributes(fact, s, mentions):
                raw = next(g for g in m.groups() if g)
                try:
                    value = float(raw.replace(",", ""))
                except ValueError:
                    continue
                if fact.attribute is _SIGNIFICAND and _decimal_digits(fact.subject, m.group(0), value):
                    continue        # "FP32 有 7 位有效数字": decimal digits, right
                if not fact.right(value) and not in_quote(a + m.start()):
                    out.append((fact.why, s.strip()))
                    break
    return out

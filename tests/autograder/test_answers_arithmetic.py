"""autograder.answers.arithmetic: relations between numbers alone, checked in IEEE arithmetic (FP32 and FP64)."""
from __future__ import annotations

import pytest

from autograder.answers import claims as cm
from autograder.answers.arithmetic import false_relations
from autograder.answers.normalise import normalise


def wrong(text):
    n = normalise(text)
    t = cm.analyse(n, normalised=True)
    return bool(false_relations(n, t.in_quote, cm.hypothetical))


@pytest.mark.parametrize("text", [
    "全零行时 0 × inf = 0，所以不加 eps 也没事。",
    "-1e-7 + 1e-5 < 0，所以开方得到 NaN。",
    "rsqrt(inf) = inf，所以输出还是 inf。",
    "inf - inf = 0，所以空状态合并没问题。",
    "exp(-inf - (-inf)) = exp(0) = 1，所以输出均匀分布。",
    "每元素 3 × 4 = 16 字节。",
])
def test_false_arithmetic_is_found(text):
    assert wrong(text)


@pytest.mark.parametrize("text", [
    "0 × inf = NaN，所以整行 NaN。",
    "1/sqrt(1e-5) = 316，缩放系数有界。",            # the rounding of the number written
    "sqrt(1e-5) ≈ 0.003。",
    "exp(100) = inf（FP32 上溢）。",                  # true in FP32: false only where both precisions say so
    "2^24 = 16777216，之后整数不再精确。",
    "e^88.7 ≈ 3.4e38。",
    "0/0 = NaN，1/0 = inf，exp(-inf) = 0。",
    "x2 = 4，v1 < 2。",                               # identifiers are not arithmetic
    "eps = 1e-8 时 var + eps < 0。",
    "e^-inf - (-inf) = e^nan",                        # flattened LaTeX: where the exponent ends is unknown
    "有人说 0 × inf = 0，其实不对，是 NaN。",           # quoted to be rejected
    "如果 0 × inf = 0，那全零行就没事了；可惜它是 NaN。",  # supposed, not held
    "65504 = 65536",                                  # two bare figures: facts.py reads those
])
def test_true_or_unread_relations_pass(text):
    assert not wrong(text)

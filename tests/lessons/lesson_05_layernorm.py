"""Lesson 5 (LayerNorm): each common wrong fill-in of `float var = ______;` and the family
that must catch it, the families and tolerance the lesson text states, and the written-answer
cases (eps-blind answers, the three vetoing misconceptions asserted and negated).
Proved by test_lessons.py."""
from proof import (ALL, Fill, Lesson, full_marks, not_vetoed, partial, term_only, vetoed,
                   zero)

RIGHT = "sq_sum / static_cast<float>(N) - mean * mean"
CLAMP = "rsqrtf(fmaxf(var, 0.0f) + eps)"

# family names as written in grading_rubric.yaml
BLOCK_MULTIPLE = "N 为 block 整数倍"
NOT_MULTIPLE = "N > block 且不是整数倍"
SINGLE_ROW = "M = 1（单行）"
SMALL_N = "N < 32"
MID_OFFSET = "中等偏移（x≈100±1）"
NEGATIVE_VAR = "消减使朴素方差为负（fmaxf 必须生效，输出必须有限）"
TINY_EPS = "极小 eps（1e-12）"


def wrong(fill, item_id, family):
    return Fill(fill, {RIGHT: fill}, {item_id: {family: False}})


FILLS = (
    wrong("sq_sum / N - mean", "code_normal", BLOCK_MULTIPLE),             # forgot to square the mean
    wrong("sq_sum - mean * mean", "code_normal", NOT_MULTIPLE),            # forgot to divide by N
    wrong("sq_sum / N", "code_normal", SINGLE_ROW),                        # E[x^2] alone (x has nonzero mean)
    wrong("mean * mean", "code_normal", BLOCK_MULTIPLE),                   # E[x]^2 alone
    wrong("(sq_sum - sum * sum) / N", "code_normal", NOT_MULTIPLE),        # sum^2 instead of sum^2 / N
    wrong("sq_sum / (N - 1) - mean * mean", "code_boundary", SMALL_N),      # sample variance denominator
    wrong("sq_sum / BLOCK_SIZE - mean * mean", "code_boundary", SMALL_N),   # divides by the block, not N
    wrong("fabsf(sq_sum / N - mean * mean)", "code_boundary", NEGATIVE_VAR),  # |var| turns -16 into +16
    # removing the clamp fails only where the variance goes negative
    Fill("no_clamp", {CLAMP: "rsqrtf(var + eps)"},
         {"code_normal": ALL, "code_boundary": {NEGATIVE_VAR: False, MID_OFFSET: True, SMALL_N: True}}),
)

ANSWERS = (
    term_only("q1", "合并读取、寄存器累加、local_sum、warp shuffle 归约、shared memory、__syncthreads、均值、方差、"
                    "inv_std、写回、gamma、beta。"),
    term_only("q2", "负方差、-1e-7、eps = 1e-5、NaN、整行、传播、fmaxf、截断。"),
    term_only("q3", "大均值、小方差、灾难性消减、FP16、BF16、count、mean、M2、三元组、除法、Chan 合并公式、寄存器。"),
    zero("explain_code", "sq_sum / N，mean * mean，相减，负数，NaN，fmaxf"),    # term-only explanation
    zero("q2", ""),
    zero("q3", "这道题我觉得很有意思，以后再想。"),
    # a fluent chain "negative -> NaN -> spreads, fmaxf fixes it" that never says the outcome depends on eps
    partial("q2", "方差为负时直接 rsqrt 会得到 NaN，因为负数不能开平方根；NaN 会传播到整行输出和后续层。"
                  "所以要用 fmaxf 把方差截断为 0。", missed="结果取决于 eps"),
    full_marks("q2", "It depends on eps: with eps = 1e-5, var + eps is still positive, so rsqrt is fine. "
                     "If eps <= 1e-7, var + eps < 0 and rsqrt of a negative number produces NaN, which means the "
                     "whole row becomes NaN and it propagates to later layers. Clamping with fmaxf(var, 0) keeps "
                     "the radicand >= eps."),
    vetoed("explain_code", "var = sq_sum / N - mean * mean，因为两个大数相减可能为负；fmaxf 是为了加速 rsqrtf 的计算。"),
    vetoed("q3", "当均值很大时会发生消减，所以用 Welford，因为 Welford 更快，寄存器也更少。"),
    vetoed("q2", "方差不可能为负，所以 -1e-7 只是打印误差，rsqrt 会得到 NaN 的说法不对。"),
    vetoed("q2", "The variance cannot be negative in float32, so the NaN never happens."),
    not_vetoed("explain_code", "fmaxf 不是为了加速，而是把舍入造成的负方差截断为 0，否则 rsqrtf 会得到 NaN。"),
    not_vetoed("q3", "Welford 并不更快：它要维护三个状态量并做除法，所以指令更多。"),
    not_vetoed("q3", "两矩法比 Welford 更快，因为每步只做加法；但大均值时会发生消减，所以要换 Welford。"),
    not_vetoed("q2", "有人以为方差不可能为负，这是错的：在 float32 里舍入会导致方差为负。"),
    not_vetoed("q2", "Some people think variance cannot be negative; in float32 rounding makes it negative, "
                     "so fmaxf is needed."),
)

LESSON = Lesson(
    "05_layernorm", blanks=(RIGHT,), anchors=(CLAMP,), released_text=("float var = ______;",),
    seeds=(1234, 99, 41311218),  # 41311218 drew a short row of near-eps variance before exact-moment rows
    stated_families={"code_boundary": (SMALL_N, "N = 1", MID_OFFSET, NEGATIVE_VAR, TINY_EPS, "常数行（方差为 0）")},
    stated_atol={("code_boundary", "1e4"): 5.0},
    fills=FILLS, answers=ANSWERS)

"""Lesson 5 (LayerNorm): each common wrong fill-in of `float var = ______;` and the family
that must catch it, the families and tolerance the lesson text states, and the written-answer
cases (eps-blind answers, the three vetoing misconceptions asserted and negated).
Proved by test_lessons.py."""
from proof import (ALL, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed,
                   zero)
from proof import wrong as proof_wrong

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
LARGE_EPS = "调用方给的较大 eps（1e-2 / 1e-1，与方差同量级）"


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
    wrong("sq_sum / N - mean * mean + eps", "code_boundary", LARGE_EPS),     # eps added twice (the clamp adds it)
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
                  "所以要用 fmaxf 把方差截断为 0。", missed="eps_large_ok"),
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
    full_marks("q2", "这得看 eps：eps 是 1e-5 的话 -1e-7 加上去还是正的，rsqrt 没事，就是稍微偏一点；eps 要是 1e-8 这种，"
                     "var + eps 就小于 0 了，rsqrt 一个负数直接出 NaN，这一行每个输出都乘它，整行就都是 NaN，再往后面的层传。"
                     "fmaxf 把方差截到 0，根号里最少是 eps，就不会 NaN 了。"),
    full_marks("q3", "Switch to Welford when the data has a large mean and a small variance (a big mean-to-std ratio): "
                     "E[x^2] and mean^2 are then almost equal and subtracting them cancels catastrophically. Welford only "
                     "accumulates deviations from the running mean, so it avoids that subtraction. The cost: three state "
                     "values (count, mean, M2) per thread, a division per element, and a reduction that shuffles three "
                     "values and merges them with Chan's formula, so more instructions and slower."),
    full_marks("q1", "输入：一个 block 拿一行，线程隔 256 个跳着读，相邻线程读相邻地址，读取就能合并；每个线程先在寄存器里把"
                     "自己那几个数的和、平方和加起来。状态变化：warp 里先用 shuffle 归约，每个 warp 的 lane 0 写到 shared "
                     "memory，同步一下，warp 0 再归约一次得到整行的和；thread 0 算 mean 和 var，var 可能因为舍入是负的，"
                     "所以 fmaxf 一下再算 inv_std，放回 shared memory 再同步，大家就都能拿到。输出：再读一遍 x，算 "
                     "(x - mean) * inv_std * gamma + beta 写回去，还是合并写。"),
    stuffed("q2", "因为 eps = 1e-5 时 -1e-7 + eps 仍是负数，所以 rsqrt 得到 NaN，导致整行 NaN；fmaxf 截断以后方差也变准确了，"
                  "因此 fmaxf 修正了精度。"),
    not_vetoed("q3", "常有人说 Welford 更快，其实相反：它每个元素多一次除法，还要维护三个状态量。"),
    # round 6: a listed view in other words (vetoed); 'fmaxf makes the variance accurate' is false (0, no veto)
    vetoed("explain_code", "sq_sum / N 是 E[x^2]，mean * mean 是均值的平方，二者之差是方差。fmaxf 是为了让后面的 rsqrtf 算得更快。"),
    proof_wrong("q2", "要看 eps：eps = 1e-5 时 var + eps 仍为正，不会 NaN；eps = 1e-8 时 var + eps < 0，rsqrt 得到 NaN，整行输出 NaN "
                "并传到后续层。fmaxf 截断以后方差更准确了。"),
    # q1 needs every stage: a bare '最后写出归一化结果' is not the output stage, and who computes the statistics is asked
    partial("q1", "输入：一个 block 负责一行，线程按 tid, tid+256, … 读，相邻线程读相邻地址，所以合并。每个线程在寄存器里累加 sum 和 "
                  "sq_sum。warp 内 shuffle 归约，lane 0 写 shared memory，__syncthreads 后 warp 0 再归约。最后写出归一化结果。"),
)

LESSON = Lesson(
    "05_layernorm", blanks=(RIGHT,), anchors=(CLAMP,), released_text=("float var = ______;",),
    seeds=(1234, 99, 41311218),  # 41311218 drew a short row of near-eps variance before exact-moment rows
    stated_families={"code_boundary": (SMALL_N, "N = 1", MID_OFFSET, NEGATIVE_VAR, TINY_EPS, "常数行（方差为 0）")},
    stated_atol={("code_boundary", "1e4"): 5.0},
    fills=FILLS, answers=ANSWERS)

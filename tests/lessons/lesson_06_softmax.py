"""Lesson 6 (stable softmax): the blank, the wrong fill-ins and the families that must catch
them, and the written-answer cases.  Proved by test_lessons.py."""
from proof import (ALL, Fill, Lesson, NONE, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero)

RIGHT = "expf(x - row_max)"

FILLS = (
    Fill("naive_exp_passes_normal_inputs_but_fails_large_values", {RIGHT: "expf(x)"},
         {"code_normal": ALL,
          "code_boundary": {"大正数（1e4 附近）": False, "大负数（-1e4 附近）": False, "K = 1": True}}),
    Fill("reversed_subtraction_fails_normal_inputs", {RIGHT: "expf(row_max - x)"}, {"code_normal": NONE}),
    # a fill that hides NaN (treats it as an excluded element) must fail the NaN-row family
    Fill("flushing_nan_to_zero_breaks_the_nan_policy", {RIGHT: "(x == x) ? expf(x - row_max) : 0.0f"},
         {"code_boundary": {"含 NaN 的行（约定：整行 NaN，同 torch）": False, "含 -inf 的行（这些位置输出 0）": True}}),
)

ANSWERS = (
    full_marks("q1", "exp(x)：x > 88.7 → inf，1e4 → 分子分母都 inf → inf/inf = NaN；全是 −1e4 → 全部下溢成 0 → 0/0 = NaN。减 max：分子分母同乘 e^−max 约掉，结果不变；x−max ≤ 0 → 每项 ∈ (0,1]、最大项 = 1 → 分母 ∈ [1,K] → 不溢出、不 0/0。"),   # arrow style
    partial("explain_code", "返回 expf(x - row_max)。因为 x − row_max ≤ 0，每个 exp 都在 (0,1] 内，最大那项是 1，所以不会溢出；分子分母都乘了 exp(−row_max)，比值不变。", points=0, missed="neg_inf"),
    term_only("q1", "溢出、inf、NaN、88.7、平移不变、(0, 1]、下溢、0/0。"),
    term_only("q2", "三遍 16 字节、朴素 12 字节、缓存 8 字节、访存受限、带宽、耗时、occupancy、online。"),
    term_only("q3", "单位元 -inf、整数倍、初值为 0、NaN、mask、fmaxf、torch、策略。"),
    zero("q1", ""),
    zero("explain_code", "减去最大值"),
    vetoed("q1", "减去最大值会改变输出，但因为这样不溢出，所以可以接受。"),
    vetoed("q1", "减去最大值是为了加速，因为 exp 的参数变小了。"),
    # false claims the lesson does not list as vetoes: 0 points, no veto
    wrong("q2", "softmax 是计算受限的，因为 exp 很贵，所以流量不重要。"),
    wrong("q3", "整行都是 -inf 时输出为 0，因为 exp(-inf) = 0。"),
    wrong("q3", "fmaxf 会传播 NaN，所以 max 就是 NaN。"),
    # correct statements near the misconception patterns
    # right, but how 1e4 becomes NaN (the question's first part) is not said: 1
    not_vetoed("q1", "减去最大值不会改变结果，因为分子分母同乘 exp(-max) 约掉；减后参数 <= 0，所以不会溢出成 inf。",
               points=1),
    not_vetoed("q3", "整行都是 -inf 时 max = -inf，-inf - (-inf) = NaN，因此整行输出 NaN（与 torch 的约定一致）；"
                     "初值为 0 会导致全负的行 0/0 = NaN。"),
    full_marks("q1", "In FP32 exp(x) overflows to inf once x exceeds about 88.7, so 1e4 inputs give inf / inf which "
                     "produces NaN. Subtracting the row max does not change the result because exp(-c) cancels. "
                     "After the shift every argument is <= 0, so each term is at most 1 and nothing can overflow."),
    full_marks("q2", "The three-pass kernel reads x 3 times and writes y once: 16 bytes per element, versus 12 bytes "
                     "for the naive one and 8 bytes when the row is cached in shared memory. Softmax is "
                     "memory-bound, so the time is proportional to this traffic. Caching costs K*4 bytes of shared "
                     "memory per block, which lowers occupancy."),
    # the question asks for three inputs' outputs; this answer leaves out the -inf ones: 1
    not_vetoed("q3", "Threads without elements join the reduction with the initial value, so the max must start at "
                     "-inf, the identity. If the initial value is 0, a row of -1e4 gets max = 0, every exp "
                     "underflows and 0/0 produces NaN. A NaN row: fmaxf ignores NaN but exp(NaN) makes the sum "
                     "NaN, so the whole row is NaN (torch policy).", points=1),
    full_marks("q3", "Threads without elements join the reduction with the initial value, so the max must start at "
                     "-inf, the identity. If the initial value is 0, a row of -1e4 gets max = 0, every exp "
                     "underflows and 0/0 produces NaN. With some -inf entries, exp(-inf - max) = 0, so those "
                     "positions output 0 and the rest are normalised as usual. A row that is all -inf has "
                     "max = -inf and -inf - (-inf) = NaN, so the whole row outputs NaN. A NaN row: fmaxf ignores "
                     "NaN but exp(NaN) makes the sum NaN, so the whole row is NaN (torch policy)."),
    full_marks("q2", "本课三遍的 kernel 读 3 次 x 写 1 次 y，一个元素 16 字节；朴素的读两次写一次是 12 字节；整行放片上的只读"
                     "一次写一次，8 字节。softmax 一个元素就一次 exp，算得很少，卡在访存上，所以时间基本跟字节数成正比。"
                     "缓存整行的代价是每个 block 占 K*4 字节的 shared memory，能同时驻留的 block 就少了，occupancy 下降。"),
    full_marks("explain_code", "返回 expf(x - row_max)。row_max 是整行最大的，所以 x - row_max 都 <= 0，每一项都在 (0, 1] 里，"
                               "不会溢出。分子分母都乘了同一个 exp(-row_max)，结果跟原来一样。输入是 -inf 的话 exp(-inf) = 0，"
                               "那个位置输出 0。"),
    stuffed("q2", "三遍 kernel 每元素 12 字节，朴素版 16 字节，缓存整行 4 字节，因为 softmax 是计算受限的，所以字节数不重要，"
                  "导致缓存没有代价。"),
    stuffed("q1", "因为 exp(1e4) 会下溢成 0，所以 0/0 = NaN；x - max >= 0，因此不会溢出。"),
    not_vetoed("q1", "有人觉得减去最大值会改变 softmax 的结果，但分子分母同乘 exp(-c)，比例不变。"),
    # round 6: 'subtracting the max changes the result' in other words (vetoed); the negated form is not
    vetoed("explain_code", "填 expf(x - row_max)。减去最大值后结果只是原来 softmax 的一个近似值，但不会溢出；-inf 输入时 exp(-inf) = 0，该位置输出 0。"),
    vetoed("q1", "FP32 的 exp 在 x 超过约 88.7 时上溢为 inf，1e4 让分子分母都是 inf，inf/inf = NaN。减去最大值会让输出整体变小，"
                 "需要再乘回 exp(max)；减完每个指数 <= 0，不会溢出。"),
    not_vetoed("q1", "FP32 的 exp 在 x 超过约 88.7 时上溢为 inf，1e4 让分子分母都是 inf，inf/inf = NaN。减去行最大值不会让结果整体缩小："
                     "分子分母同乘 exp(-max) 约掉，所以结果不变；减完每个指数 <= 0，每项在 (0,1]，分母至少 1，不会溢出。", points=2),
    wrong("q3", "初值必须是 -inf，因为 K 不是 256 的倍数时空线程带着初值进归约，初值写成 0 的话全 -1e4 的行 max 就变成 0，全部下溢，"
                "0/0 = NaN。有 -inf 的位置 exp(-inf - max) = 0，输出 0。整行 -inf 时 -inf - (-inf) = NaN，整行 NaN。"
                "含 NaN 的行：fmaxf 碰到 NaN 就返回 NaN，所以 max 是 NaN，整行 NaN。"),
)

LESSON = Lesson("06_softmax", blanks=(RIGHT,), fills=FILLS, answers=ANSWERS)

"""Lesson 7 (Softmax2D, several kernels): the two blanks of the (max, sum) merge, the wrong
merges and the families that must catch them, and the written-answer cases.
Proved by test_lessons.py (also on the GPU)."""
from proof import (Fill, Lesson, NONE, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero)

RIGHT_MAX = "fmaxf(m, m_o)"
RIGHT_SUM = "s * __expf(m - m_new) + s_o * __expf(m_o - m_new)"

# family names as written in grading_rubric.yaml
EQUAL_ROWS = "全相等的行（输出 1/K）"
LARGE_POSITIVE = "大正数（不减最大值会溢出）"

FILLS = (
    # every partial sum of an all-equal row has the same max, so skipping the rescale goes unnoticed there
    Fill("merge_without_rescaling_fails_every_path_but_equal_rows", {RIGHT_SUM: "s + s_o"},
         {"code_normal": NONE,
          "code_boundary": {EQUAL_ROWS: True, LARGE_POSITIVE: False,
                            "mask + 两阶段（有的 chunk 整段被屏蔽）": False}}),
    Fill("rescaling_only_one_side_fails", {RIGHT_SUM: "s * __expf(m - m_new) + s_o"},
         {"code_normal": {"warp 一行（小 K，K 不是 32 的整数倍）": False, "多 block 两阶段（大 K，多个 chunk）": False}}),
    # any common base is algebraically fine; only the max keeps every exp <= 1
    Fill("taking_the_smaller_max_overflows_on_wide_rows", {RIGHT_MAX: "fminf(m, m_o)"},
         {"code_normal": {"较大的数值范围（logits 在 ±50）": False}, "code_boundary": {LARGE_POSITIVE: False}}),
)

ANSWERS = (
    full_marks("explain_code", "m_new 要取两边的最大值：这样合并后的状态仍然满足“m 是这组元素的最大值”，而且 m − m_new 和 m_o − m_new 都 ≤ 0，缩放因子都不超过 1，不会溢出。两边的和以各自的最大值为基准，基准不同不能直接相加，所以各乘 exp(旧最大值 − m_new)。合并满足结合律和交换律，所以逐元素、warp shuffle、block 和两阶段都能用同一个函数。"),
    term_only("q1", "平移不变、exp(0)、溢出、inf、下溢、0/0、NaN、88.7。"),
    term_only("q2", "K 个正数累加、11 位有效位、大数吃小数、65504、FP32、__float2half 写回。"),
    term_only("q3", "填不满 SM、串行、部分结果、chunk、合并、重新缩放、launch、往返。"),
    term_only("explain_code", "fmaxf、重新缩放、基准、结合律、warp、两阶段。"),
    zero("q1", ""),
    zero("q3", "我觉得这题要看具体情况，以后再想。"),
    partial("q1", "不减最大值时大正数会上溢成 inf，所以 inf/inf 得到 NaN。"),     # one idea with a chain
    vetoed("q1", "减去最大值是为了更快，因为 exp 的参数变小了。"),
    # false claims this lesson does not list as vetoes: 0 points, no veto
    wrong("q1", "减去最大值会改变结果，所以要再加回来。"),
    wrong("q2", "FP32 累加可以节省带宽，因此更快。"),
    vetoed("q3", "阶段 2 把各 chunk 的部分和直接相加，因为每段都算过 exp。"),
    vetoed("explain_code", "两个部分和可以直接相加即可，因为它们都是 exp 的和。"),
    # right, but the large-negative case the question asks about is missing: 1
    not_vetoed("q1", "减去最大值不是为了更快，而是因为分子分母同乘 exp(-c) 比例不变，"
                     "减后指数 <= 0，所以 exp 不会溢出成 inf，也就不会出现 inf/inf = NaN。", points=1),
    full_marks("q2", "row_sum adds up K positive terms, so for large K the sum keeps growing, and FP16 has only 11 "
                     "significant bits: once the sum is large, the spacing between representable numbers exceeds a single "
                     "exp term and new terms are rounded away, so the sum stops growing. So the kernel converts FP16/BF16 "
                     "inputs to FP32, does max, exp, sum and the division in FP32, and converts back to the input type only "
                     "when writing the result."),
    full_marks("explain_code", "m_new 取两边大的那个，新最大值不比任何一边小，缩放因子都 <= 1。每边的和都是按自己的最大值算的，"
                               "基准不一样不能直接加，所以各自乘 exp(旧最大值 - 新最大值) 换到同一个新最大值上再加。这个合并满足"
                               "结合律和交换律，所以逐元素、warp shuffle、block 归约、两阶段都能用同一个函数。"),
    full_marks("q3", "M 小的时候一个 block 管一行，总共就 M 个 block，SM 大半都闲着，每个线程还得串着处理一大堆元素。两阶段就是"
                     "把一行切成好几段给多个 block：第一阶段各自算自己那段的 (max, sum) 写回全局内存，第二阶段把这些部分结果"
                     "按新的最大值缩放后合起来再归一化。代价是多一次 kernel launch，部分结果要在全局内存里来回一趟。"),
    not_vetoed("explain_code", "两边按新最大值重新缩放到同一个基准之后，就可以直接相加了；结合律保证各级归约都能用同一个函数。"),
    stuffed("explain_code", "m_new 取两边较小的最大值，因为基准不同，所以两个部分和可以直接相加即可，导致结合律成立。"),
    # round 6: 'the partial sums add directly' in other words
    vetoed("q3", "M 很小时只有 M 个 block，大部分 SM 空闲，每个线程还要串行处理很多元素。两阶段：阶段 1 每个 block 算自己那段的 "
                 "(max, sum)，阶段 2 把每段的 sum 直接加起来就是整行的和。代价是多一次 launch。"),
)

LESSON = Lesson("07_softmax2d", blanks=(RIGHT_MAX, RIGHT_SUM), min_families=8, gpu=True,
                fills=FILLS, answers=ANSWERS)

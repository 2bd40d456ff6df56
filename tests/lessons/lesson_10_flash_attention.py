"""Lesson 10 (FlashAttention forward): the wrong fills of the online merge's two exponentials
(alpha for the old state, p for the new tile) and the family each must fail, correct fills written
differently, and the written-answer cases. Proved by test_lessons.py (also on the GPU)."""
from proof import (ALL, NONE, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed,
                   wrong, zero)

ALPHA = "__expf(m - base)"
P = "__expf(s[j] - base)"

# family names as written in grading_rubric.yaml
ALIGNED = "T 是 32 的整数倍（D = 64）"
LONG = "较长的序列（多个 query block）"
T1 = "T = 1（只有一行：O = V[0]）"
SINGLE_TILE = "T < 16（单个 tile，第一行只看见自己）"
MASKED_TILE = "整块被屏蔽的 tile（倒序遍历时先遇到，状态为空）"
BIG_LOGITS = "很大的 logits（分数上百，不减最大值就溢出）"
EQUAL = "全相等的分数（K = 0：O[i] = 前 i+1 个 V 的平均，lse = log(i+1)）"

FILLS = (
    # the base trick ignored: fine while a row's first tile has a visible key, NaN when it meets a fully
    # masked tile with an empty state
    Fill("alpha_from_m_new_is_nan_on_fully_masked_tiles", {ALPHA: "__expf(m - m_new)"},
         {"code_normal": {ALIGNED: False}, "code_boundary": {T1: True, SINGLE_TILE: True, MASKED_TILE: False}}),
    Fill("p_from_m_new_is_nan_on_fully_masked_tiles", {P: "__expf(s[j] - m_new)"},
         {"code_boundary": {SINGLE_TILE: True, MASKED_TILE: False}}),
    # no rescale of the old state: right while the max never grows (one tile, equal scores)
    Fill("no_rescale", {ALPHA: "1.0f"},
         {"code_normal": NONE, "code_boundary": {SINGLE_TILE: True, EQUAL: True, MASKED_TILE: False}}),
    # the new tile's weights on its own base, the old state on another
    Fill("p_on_tile_max", {P: "__expf(s[j] - tile_max)"}, {"code_normal": {LONG: False}, "code_boundary": {SINGLE_TILE: True}}),
    # no max at all: O is right for small logits (the base cancels in acc / l), lse is not; large logits overflow
    Fill("no_max_subtraction", {ALPHA: "1.0f", P: "__expf(s[j])"},
         {"code_normal": {ALIGNED: False}, "code_boundary": {BIG_LOGITS: False}}),
    # correct fills written the way other students write them
    Fill("other_style_guarded", {ALPHA: "(m == neg_inf() ? 0.0f : __expf(m - m_new))",
                                 P: "(s[j] == neg_inf() ? 0.0f : __expf(s[j] - m_new))"},
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("other_style_exp2", {ALPHA: "exp2f((m - base) * 1.4426950408889634f)", P: "exp2f(1.4426950408889634f * (s[j] - base))"},
         {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    term_only("q1", "在线 softmax、(m, l, acc)、寄存器、m_new、alpha、exp(m - m_new)、acc / l、lse、精确。"),
    term_only("q2", "4T²、访存受限、HBM、读一次、T/BR、FLOP 相同、L2、lse、显存。"),
    term_only("q3", "第一行、key <= i、整块被屏蔽、-inf - (-inf)、base = 0、越界、__syncthreads、溢出、88.7。"),
    zero("explain_code", "exp(m - base)，exp(s[j] - base)，base，-inf，NaN。"),
    zero("q2", ""),
    zero("q1", "FlashAttention 很有名，很多框架都在用。"),
    partial("q1", "每个 query 行只在寄存器里保存 m、l 和 acc 三个状态，所以每个 tile 的分数用完就丢弃，不需要写出 S。"),
    full_marks("q1", "Each query row keeps only a running max m, a sum l of exp(s - m) and an accumulator acc of "
                     "exp(s - m) * v in registers, so the scores of a tile are merged and discarded and S is never "
                     "stored. When a tile arrives, m_new = max(m, tile_max); l and acc are both rescaled by "
                     "alpha = exp(m - m_new), then p_j = exp(s_j - m_new) and p_j * v_j are added. At the end "
                     "O = acc / l and lse = m + log l. The result is exact, not an approximation."),
    vetoed("q1", "FlashAttention 是一种近似算法，所以它不需要写出 T × T 的矩阵，结果和标准注意力略有不同。"),
    vetoed("q2", "FlashAttention is an approximation of attention, so it reads fewer bytes."),
    vetoed("explain_code", "各 tile 的和直接相加即可，alpha 只是为了让数值小一点，所以只缩放 l 就够了，acc 不用缩放。"),
    not_vetoed("q1", "有人说 FlashAttention 是近似，这是错的：在线合并与整行 softmax 完全相同。"),
    not_vetoed("q2", "FlashAttention 不是近似算法，它和标准实现的 FLOP 一样，快是因为不再读写 S 和 P。"),
    stuffed("q1", "因为 FlashAttention 是一种近似算法，所以每个 tile 的和可以直接相加，不用重新缩放，最后 O = acc / l。"),
    wrong("q3", "整块被屏蔽的 tile 不会出问题，因为 exp(-inf - (-inf)) = 0，所以不需要特殊处理。"),
    full_marks("q1", "每一行在寄存器里只记三样东西：当前最大分数 m、以 m 为基准的指数和 l、以 m 为基准加权的 V 之和 acc，"
                     "每个 tile 的分数一算完就合并进去然后扔掉，所以用不着把 S 或 P 写进显存。新 tile 来了就先取 m_new = max(m, tile_max)，"
                     "旧的 l 和 acc 都乘上 alpha = exp(m - m_new) 换到新基准，再把 p_j = exp(s_j - m_new) 和 p_j*v_j 加上去；"
                     "全部扫完以后 O = acc / l，lse = m + log(l)。这样算出来和整行 softmax 完全一样，是精确的。"),
    # round 6: alpha written as e^(m - m_new) (and reversed as e^(m_new - m)), lse without m, per-tile results
    # added directly, an "acceptable approximation", the tail said with 填 0 / 设成 -inf / 永远等
    full_marks("q1", "每个 query 行在寄存器里只存 m、l、acc 三个状态，每块分数用完就扔，所以不用写 T×T 的 S。新 tile 来时 "
                     "m_new = max(m, tile_max)，旧的 l 和 acc 乘 α = e^(m − m_new)，再加上 p_j = exp(s_j − m_new) 与 p_j·v_j。"
                     "最后 O = acc / l，lse = m + log l。"),
    wrong("q1", "每个 query 行在寄存器里只存 m、l、acc 三个状态，每块分数用完就扔，所以不用写 T×T 的 S。新 tile 来时 "
                "m_new = max(m, tile_max)，旧的 l 和 acc 乘 alpha = e^(m_new − m)，再加上 p_j = exp(s_j − m_new) 与 p_j·v_j。"
                "最后 O = acc / l，lse = m + log l。"),
    wrong("q1", "每个 query 行在寄存器里只存 m、l、acc 三个状态，每块分数用完就扔，所以不用写 T×T 的 S。新 tile 来时 "
                "m_new = max(m, tile_max)，旧的 l 和 acc 乘 alpha = exp(m − m_new)，再加上 p_j = exp(s_j − m_new) 与 p_j·v_j。"
                "最后 O = acc / l，lse 就是 log(l)。"),
    vetoed("q1", "每一块各自做 softmax，然后把每个 tile 的结果直接相加就行。"),
    not_vetoed("q1", "每个 tile 的结果先乘 alpha 缩放到同一个最大值，然后再直接相加。"),
)

LESSON = Lesson("10_flash_attention", blanks=(ALPHA, P), released_text=("float alpha = ______;", "float p = ______;"),
                min_families=5, gpu=True,
                stated_families={"code_boundary": (T1, SINGLE_TILE, MASKED_TILE, BIG_LOGITS, EQUAL,
                                                   "最后一个 block 只有一行有效（T = 32k + 1）")},
                fills=FILLS, answers=ANSWERS)

"""Lesson 11 (RoPE): the wrong channel pairings of pair_channels and the family each must fail (layouts
swapped, overlapping pairs caught by racecheck, a partner in the next head), correct pairings written
differently, and the written-answer cases. Proved by test_lessons.py (also on the GPU)."""
from proof import (ALL, NONE, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed,
                   wrong, zero)

C0 = "interleaved ? 2 * p : p"
C1 = "interleaved ? 2 * p + 1 : p + D / 2"

# family names as written in grading_rubric.yaml
INTERLEAVED = "交错布局（预计算 cos/sin）"
HALF = "半分布局（预计算 cos/sin）"
SINCOS_HALF = "现算 sincosf（半分，位置 < 256）"
D2 = "D = 2（只有一对）"
POS0 = "位置 0（角度 0：输出与输入完全相同）"
INPLACE = "原地（y 就是 x）"
BIG_POS = "大位置（1e5～2e6，double 缓存必须精确）"

FILLS = (
    # the two layouts swapped: every rotation lands on pairs the reference does not use; with one pair
    # (D = 2) both layouts are (0, 1), and at angle 0 any pairing is the identity
    Fill("layouts_swapped", {C0: "interleaved ? p : 2 * p", C1: "interleaved ? p + D / 2 : 2 * p + 1"},
         {"code_normal": NONE, "code_boundary": {D2: True, POS0: True, BIG_POS: False, INPLACE: False}}),
    # half-split partner p + 1: neighbouring threads share a channel (a write-write race, and wrong)
    Fill("overlapping_pairs", {C1: "interleaved ? 2 * p + 1 : p + 1"},
         {"code_normal": {INTERLEAVED: True, HALF: False, SINCOS_HALF: False}, "code_boundary": {INPLACE: False}}),
    # partner a whole head away: the last head reads and writes past the end of x / y
    Fill("partner_in_next_head", {C1: "interleaved ? 2 * p + 1 : p + D"},
         {"code_normal": {INTERLEAVED: True, HALF: False}, "code_boundary": {D2: False}}),
    # the interleaved c0 with the half-split c1: pairs overlap
    Fill("mixed_layouts", {C0: "2 * p"}, {"code_normal": {INTERLEAVED: True, HALF: False}}),
    # correct pairings written the way other students write them
    Fill("other_style_shifts", {C0: "p << (interleaved ? 1 : 0)", C1: "interleaved ? (p << 1) | 1 : p + (D >> 1)"},
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("other_style_from_c0", {C0: "interleaved ? p + p : p", C1: "c0 + (interleaved ? 1 : D / 2)"},
         {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    term_only("q1", "交错布局、(2p, 2p+1)、半分布局、(p, p + D/2)、rotate_half、权重、置换、注意力分数、不报错。"),
    term_only("q2", "FP32、24 位有效位、ulp、1e5、5e-3、与位置成正比、double、2π 规约。"),
    term_only("q3", "缓存、显存、1/(2H)、L2、double、sincosf、冗余计算、访存受限、融合。"),
    zero("explain_code", "2 * p，2 * p + 1，p + D / 2，交错，半分。"),
    zero("q1", ""),
    zero("q3", "RoPE 是 2021 年提出的，很多模型都在用。"),
    partial("q1", "交错布局把 (2p, 2p+1) 配成一对，半分布局把 (p, p + D/2) 配成一对，两者只差一个通道置换。"),
    full_marks("q1", "The interleaved layout rotates channels (2p, 2p+1) together and the half-split layout rotates "
                     "(p, p + D/2); they differ by a channel permutation. The weights W_q and W_k were trained "
                     "for one pairing, so with the other layout the rotation acts on channels that were never "
                     "paired, which changes q·k and the attention scores and the model degrades. Both are valid "
                     "rotations, so every value stays finite, there is no NaN and no error is raised: it fails "
                     "silently. Fix: match the kernel's layout to the weights or permute the W_q / W_k rows."),
    vetoed("q1", "两种布局可以混用，因为它们都满足相对位置性质，所以结果一样。"),
    vetoed("explain_code", "c0 = 2p、c1 = 2p + 1 是交错布局；交错和半分没有区别，结果一样，所以写反了也没关系。"),
    vetoed("q2", "FP32 计算角度在任何位置都足够精确，所以大位置不会有问题。"),
    not_vetoed("q1", "有人以为两种布局结果一样，其实不对：换布局后旋转作用在没配对过的通道上，注意力分数改变。"),
    not_vetoed("q2", "旋转不会改变向量的长度，但 FP32 的角度在大位置上有误差。"),
    stuffed("q1", "交错布局和半分布局没有区别，结果一样，所以两种布局可以混用，因为 RoPE 只依赖相对位置，不会报错。"),
    wrong("q2", "FP32 的 pos × θ 误差不随位置增长，因为 cos 和 sin 是周期函数，所以位置 1e5 时误差仍是 6e-8。"),
    full_marks("q2", "Because the angle pos × θ grows with the position and FP32 only has 24 significant bits, the spacing "
                     "(ulp) near a large angle is large: at position 1e5 the angle is about 1e5 and its ulp is about 0.0078, "
                     "so the angle error is around 5e-3 and cos/sin are off by a few 1e-3; the error grows proportionally "
                     "with the position, so q and k get rotated by a slightly wrong angle and the attention scores carry a "
                     "systematic error. Fix: compute the angle in double and store the cos/sin cache in FP32, or reduce the "
                     "angle modulo 2π in integer/double before converting."),
    # round 6: "用哪一种都一样" / attention scores unchanged, a layout said to change the length, FP32 angles
    # "在所有位置都足够精确", the angle error given as FP32's relative epsilon
    vetoed("q1", "两种布局其实用哪一种都一样，注意力分数也不变。"),
    not_vetoed("q1", "换了布局以后 q·k 就变了，注意力分数不一样，模型静默变差。", points=1),
    vetoed("q1", "交错布局会改变向量的长度，所以模型变差。"),
    vetoed("q2", "pos × θ 用 FP32 算在所有位置都足够精确。"),
    wrong("q2", "The angle error is about 1e-7 even at position 1e5, since a single multiply rounds once."),
    # round 9: the length change said in the passive, a memory-access cause (bank conflict) for the silent degradation
    vetoed("q1", "换成另一种布局以后，q、k 的长度就被改变了，所以注意力分数不对。"),
    wrong("q1", "交错布局配对 (2p, 2p+1)，半分布局配对 (p, p + D/2)。半分布局的访存会有 bank conflict，导致模型变差。"),
)

LESSON = Lesson("11_rope", blanks=(C0, C1), released_text=("c0 = ______;", "c1 = ______;"), min_families=6, gpu=True,
                stated_families={"code_boundary": (D2, POS0, BIG_POS, INPLACE, "T = 1、H = 1",
                                                   "不连续的位置（KV cache 解码，位置可重复）",
                                                   "很多对、只有 2 个 block（grid-stride 循环）")},
                fills=FILLS, answers=ANSWERS)

"""Lesson 12 (fused cross-entropy): the wrong log-sum-exp and gradient fills and the family each must
fail (the max not added back, the one-hot or dloss forgotten, an unnormalised or overflowing softmax),
correct fills written differently, and the written-answer cases. Proved by test_lessons.py (also on the GPU)."""
from proof import (ALL, NONE, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed,
                   wrong, zero)

LSE = "m + __logf(s)"
GRAD = "(__expf(x[v] - lse) - (v == t ? 1.0f : 0.0f)) * grad_scale"

# family names as written in grading_rubric.yaml
GENERAL = "一般词表（V 几百到几千，不是 256 的整数倍）"
GPT2 = "GPT-2 词表 V = 50257（2 行）"
IGNORED = "ignore_index 的行（混在有效行中间：loss 0、梯度 0）"
ALL_IGNORED = "全部行都被忽略"
BIG = "很大的 logits（±1e4，不减最大值就溢出）"
V1 = "V = 1（loss 0、梯度 0）"
INPLACE = "原地：梯度覆盖 logits（llm.c 的做法）"

FILLS = (
    # the subtracted max never added back: right only where the row max is 0
    Fill("lse_without_max", {LSE: "__logf(s)"}, {"code_normal": NONE, "code_boundary": {ALL_IGNORED: True, BIG: False}}),
    # softmax only: the -1 at the target is missing (V = 1 should give a zero gradient)
    Fill("no_onehot", {GRAD: "__expf(x[v] - lse) * grad_scale"},
         {"code_normal": NONE, "code_boundary": {ALL_IGNORED: True, V1: False, INPLACE: False}}),
    # the gradient of the summed, not the averaged, loss
    Fill("no_grad_scale", {GRAD: "__expf(x[v] - lse) - (v == t ? 1.0f : 0.0f)"}, {"code_normal": {GPT2: False}}),
    # exp(x - m) is not a probability: the 1/s is missing
    Fill("unnormalised", {GRAD: "(__expf(x[v] - m) - (v == t ? 1.0f : 0.0f)) * grad_scale"},
         {"code_normal": NONE, "code_boundary": {V1: True}}),
    # exp(x) / exp(lse): the same number until exp overflows
    Fill("overflowing_softmax", {GRAD: "(__expf(x[v]) / __expf(lse) - (v == t ? 1.0f : 0.0f)) * grad_scale"},
         {"code_normal": {GENERAL: True}, "code_boundary": {BIG: False, IGNORED: True}}),
    # correct fills written the way other students write them
    Fill("other_style_divide_by_s", {LSE: "__logf(s) + m", GRAD: "(__expf(x[v] - m) / s - (float)(v == t)) * grad_scale"},
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("other_style_overloaded_log", {LSE: "m + log(s)", GRAD: "grad_scale * exp(x[v] - lse) - (v == t ? grad_scale : 0.0f)"},
         {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    term_only("q1", "溢出、88.7、inf、下溢、log 0、减最大值、exp(0) = 1、和 ≥ 1、有限。"),
    term_only("q2", "padding、-100、loss 0、梯度 0、有效行数、1/N、学习率、越界、__syncthreads。"),
    term_only("q3", "p - onehot、lse 标量、现算、寄存器、6.1 GiB、4.6 GiB、缓冲区、原地、重算 exp。"),
    zero("explain_code", "m + __logf(s)，__expf(x[v] - lse)，one-hot，grad_scale。"),
    zero("q2", ""),
    zero("q1", "交叉熵是分类任务最常用的损失函数。"),
    partial("q1", "直接算 log sum exp(z) 时，logit 超过 88.7 就会溢出成 inf，导致 loss 变成 inf。"),
    full_marks("q3", "The gradient is p - onehot with p = exp(z - lse), and lse is one scalar per row computed in the "
                     "first pass, so the second pass computes each probability in registers on the fly and writes "
                     "the gradient at once: P is never stored. For GPT-2 a [N, V] fp32 tensor is 1.53 GiB; unfused "
                     "needs 4 passes (about 6.1 GiB) plus a P buffer, fused needs 3 passes (about 4.6 GiB), and in "
                     "place there is no dlogits buffer either. The cost: exp is recomputed (cheap, the kernel is "
                     "memory-bound), the logits are read twice and are overwritten in place."),
    vetoed("q3", "反向必须先把概率写进显存，因为梯度要用到 softmax；融合只是省了一次 kernel launch。"),
    vetoed("q1", "先算 softmax 再取 log 一样稳定，所以两种写法没有区别。"),
    vetoed("q2", "ignore_index 的行也要计入平均，所以 grad_scale = 1/N。"),
    not_vetoed("q3", "梯度不需要单独写出概率，因为 p = exp(z - lse) 可以在第二遍现算。"),
    not_vetoed("q2", "ignore_index 的行不计入平均，分母是有效行数。"),
    stuffed("q3", "反向必须先把概率写进显存，因为梯度要用 softmax；所以融合只是省了一次 launch，流量没有减少。"),
    vetoed("q2", "grad_scale 应该是 1/N，因为 ignore_index 的行梯度本来就是 0，分母用总行数也一样。"),
    full_marks("q1", "直接算 log(sum(exp(z))) 的话，logit 一超过 88.7 左右 exp 就溢出成 inf，loss 直接变成 inf；"
                     "先算 softmax 再取 -log p_t 也不行，目标的概率很小时 p_t 会下溢成 0，-log 0 又是 inf。"
                     "先减去行最大值 m，求和里最大的那项就是 exp(0) = 1，和至少为 1，不会溢出，log 也有限，"
                     "所以 loss = m + log(s) - z_t 就算 p_t 下溢了也照样是个正确的有限数。"),
    # round 6: probabilities "需要先在第一遍存进显存", ignored rows "仍然计入平均", fused traffic "减半" / 2 passes,
    # a wrong [N, V] tensor size
    vetoed("explain_code", "lse = m + log(s)，s 以行最大值为基准。g[v] = (exp(x[v] − lse) − [v == t]) × grad_scale。"
                           "概率必须先在第一遍写进显存，第二遍才能算梯度。"),
    vetoed("q2", "ignore_index 的行 loss 为 0，但这些行仍然计入平均。"),
    wrong("q3", "fused 版本只读 z 一次、写 dz 一次，2 passes，所以流量减半。"),
    wrong("q3", "一个 [8192, 50257] 的 FP32 张量 ≈ 0.3 GiB，所以省得不多。"),
    # round 9: the softmax-then-log veto in English, "1/N is right" (ignored rows averaged in), probabilities said to
    # live in shared memory, "两次 exp" in a citation is not two passes, the stable sum as "最大一项是 1" / "[1, V]",
    # a bare "和 ≥ 1" scrap is not the stability argument
    vetoed("q1", "Taking the softmax first and then -log p_t is just as stable, since the softmax subtracts the max anyway."),
    vetoed("q2", "被忽略的行 loss 记 0；取平均时 grad_scale 用 1/N 才对，这样每个 batch 的尺度都一样。"),
    wrong("q3", "因为融合 kernel 把概率存在 shared memory 里，所以不需要写显存。"),
    not_vetoed("q3", "课程的 H200 记录显示融合 kernel 第一遍对每个元素做两次 exp，成了指令受限。梯度是 p − onehot，"
                     "p = exp(z − lse)，lse 第一遍就算出来了，所以第二遍现算概率就行。", points=1),
    full_marks("q1", "直接算 log Σ e^z 时，只要有一个 logit 大于 88.7，e^z 就溢出成 inf，loss 也变成 inf。"
                     "先 softmax 再 −log p_t 时，目标概率极小，p_t 下溢成 0，−log 0 = inf。"
                     "减掉最大值后每一项都不超过 1，最大一项正好是 1，和在 [1, V] 之间，log 有限；"
                     "loss = lse − z_t 不经过 p_t，所以 p_t 下溢了 loss 也是对的。"),
    partial("q1", "exp 溢出（> 88.7 → inf）；p_t 下溢 → −log 0 = inf；减最大值；lse = m + log Σ e^(z − m)；和 ≥ 1；数值稳定。"),
)

LESSON = Lesson("12_cross_entropy", blanks=(LSE, GRAD), released_text=("float lse = ______;", "g[v] = ______;"),
                min_families=4, gpu=True,
                stated_families={"code_normal": (GPT2,),
                                 "code_boundary": (IGNORED, ALL_IGNORED, BIG, V1, INPLACE,
                                                   "全相等的 logits（loss = log V）", "V < 32（多数线程没有元素）")},
                fills=FILLS, answers=ANSWERS)

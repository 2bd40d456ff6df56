"""Lesson 4 (RMSNorm): the blank, the wrong fill-ins and the families that must catch them,
and the written-answer cases.  Proved by test_lessons.py."""
from proof import (ALL, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero)

RIGHT = "rsqrtf(sq_sum / static_cast<float>(N) + eps)"
NO_EPS = "rsqrtf(sq_sum / static_cast<float>(N))"

# family names as written in grading_rubric.yaml
ZERO_ROW = "全零行（只剩 eps）"
FP16_OVERFLOW = "FP16 里平方会溢出的大数值"
EPS_SIZED = "均方值与 eps 同量级"
NOT_MULTIPLE = "N 不是 block 整数倍"
LARGE_EPS = "调用方给的较大 eps（1e-2 / 1e-1，与均方值同量级）"

FILLS = (
    Fill("missing_eps_fails_only_the_zero_row_family", {RIGHT: NO_EPS},
         {"code_normal": ALL, "code_boundary": {ZERO_ROW: False, FP16_OVERFLOW: True}}),
    Fill("eps_outside_the_square_root_fails_boundary", {RIGHT: NO_EPS + " + eps"},
         {"code_boundary": {ZERO_ROW: False, EPS_SIZED: False}}),
    Fill("hard_coded_eps_fails_the_large_eps_family", {RIGHT: "rsqrtf(sq_sum / static_cast<float>(N) + 1e-5f)"},
         {"code_normal": ALL, "code_boundary": {LARGE_EPS: False, ZERO_ROW: True}}),
    Fill("dividing_by_block_size_fails_the_non_multiple_family",
         {RIGHT: "rsqrtf(sq_sum / static_cast<float>(BLOCK_SIZE) + eps)"},
         {"code_normal": {NOT_MULTIPLE: False}}),
)

ANSWERS = (
    # round 6: rsqrt(inf) said to be inf; RMSNorm said to keep the re-centering
    wrong("q3", "FP16 平方和溢出成 inf，rsqrt(inf) 还是 inf，所以输出整行变成 inf，很容易发现。"),
    wrong("q1", "RMSNorm 保留了减均值，去掉的是除以标准差，所以只要一次归约。"),
    wrong("q1", "RMSNorm 去掉了减均值和 beta，只按均方根缩放，因为尺度不变性才是稳定训练的关键。因为 RMSNorm 要 Σx 和 Σx² 两个统计量，所以要做两次 block 归约，而 LayerNorm 只要一次。"),   # swapped counts
    full_marks("q1", "RMSNorm 只有 scale 没有 mean 和 beta → 稳定训练靠尺度不变性，效果差不多 → 只需 sum(x^2) 一个统计量 → 每行一次 block 归约 → 少一轮 shuffle + __syncthreads、不读 beta → 更便宜。"),   # arrow chain
    partial("q3", "FP16 最大 65504，|x| > 256 时 x*x 就溢出成 inf，rsqrt(inf) = 0，整行输出被清零。FP32 累加范围到 3.4e38，不会溢出；代价只是每元素一次 __half2float，带宽不变。", missed="precision"),
    term_only("q1", "RMSNorm：均值、beta、缩放、一次归约、__syncthreads、shared memory、带宽。"),
    term_only("q2", "全零行、inf、NaN、根号里、1/sqrt(eps)、外面。"),
    term_only("q3", "FP16、65504、溢出、inf、有效位、舍入、FP32、带宽、__half2float、寄存器。"),
    zero("q2", ""),
    zero("q3", "这道题我觉得很有意思，以后再想。"),
    zero("explain_code", "rsqrtf(，均方值，全零行，整数倍"),            # explanation without causality
    # false claims the lesson does not list as vetoes: 0 points, no veto
    wrong("q1", "RMSNorm 也需要减去均值，只是少了 beta，所以更便宜。"),
    wrong("q1", "RMSNorm 比 LayerNorm 更精确，因为它只做一次归约。"),
    vetoed("q2", "eps 是为了加速 rsqrtf，因为除以零很慢。"),
    vetoed("q3", "FP32 累加可以节省带宽，因此更快。"),
    wrong("explain_code", "应该除以 BLOCK_SIZE，因为每个线程算一部分，所以全零行不会 NaN。"),
    # negated misconception; the no-eps case alone is one part of the question (inside / outside missing)
    not_vetoed("q2", "eps 不是为了加速，而是因为全零行的均方值为 0 时 rsqrtf(0) = inf，导致 0 × inf = NaN。",
               points=1),
    # what is dropped and what it saves, but not why dropping the mean is acceptable: 1
    partial("q1", "RMSNorm drops the mean subtraction (re-centering) and beta, keeping only the re-scaling. "
                  "Because it needs a single reduction of sum(x^2) instead of two, it saves one round of warp "
                  "shuffles, shared memory and __syncthreads, so it is cheaper for a memory-bound kernel.",
            missed="why_ok"),
    # no eps and eps inside, but the rsqrtf(ms) + eps alternative the question asks about is not addressed: 1
    partial("q2", "For an all-zero row the mean square is 0, so without eps rsqrtf(0) = inf and 0 * inf produces "
                  "NaN. With eps inside the sqrt the scale is bounded by 1/sqrt(eps), so the output stays finite.",
            missed="outside_useless"),
    partial("q3", "FP16 has a max value of 65504, so any |x| > 256 makes x*x overflow to inf, which leads to "
                     "inv_rms = rsqrt(inf) = 0 and the row output becomes zeros. FP32 accumulation does not "
                     "overflow; the cost is one __half2float conversion per element, bandwidth is unchanged.", missed="precision"),
    full_marks("q2", "Take an all-zero row: its mean square is 0, so without eps rsqrtf(0) is inf and the output "
                     "0 * inf is NaN, which then spreads. With eps inside the root the radicand is at least eps, so "
                     "the scale is at most 1/sqrt(eps) and the row comes out as zeros. Writing rsqrtf(ms) + eps does "
                     "not help: inf + eps is still inf."),
    full_marks("q2", "全零行的时候 ms 就是 0，不加 eps 的话 rsqrtf(0) 直接变成 inf，0 乘 inf 就成了 NaN。eps 放根号里面，"
                     "根号里最少也有个 eps，缩放系数顶多 1/sqrt(eps)，输出就是 0。要是写成 rsqrtf(ms) + eps，"
                     "inf 加 eps 还是 inf，一点用没有。"),
    full_marks("q2", "全零行(例如padding)的ms=0。冇eps時rsqrtf(0)=∞，輸出0×∞=NaN。eps放在根號裏面，被開方數≧ε，"
                     "縮放係數最多1/√ε，全零行輸出0。寫成rsqrtf(ms)+eps的話∞+ε還是∞，加在外面沒有用。"),
    full_marks("q1", "RMSNorm 把减均值和 β 都砍了，只剩按均方根缩放。能砍是因为训练稳不稳主要看尺度有没有拉回来，平移那部分"
                     "去掉效果差不多。这样一行只要算一个平方和，就只做一次 block 归约，少一轮 shuffle、shared memory 和 "
                     "__syncthreads，也不用读 beta，所以更便宜。"),
    full_marks("explain_code", "sq_sum 只是 N 个元素的平方加起来，多出来的线程那份是 0，所以得除以 N，除 256 的话 N 一不整除"
                               "均方值就小了。eps 塞在 rsqrtf 里头，全零行就不会变 inf，乘出来是 0，不会出 NaN。"),
    stuffed("q2", "因为全零行的 ms = 0，所以 rsqrtf(0) = 0，导致 0 × inf = 0，输出也是 0；eps 放在根号外面也一样，"
                  "因为 inf + eps 是有限的，所以 1/sqrt(eps) 只是写法问题。"),
    stuffed("q3", "因为 FP16 的最大值是 256，所以 x 超过 65504 才会溢出；FP32 累加是为了省带宽，导致读的字节数减半。"),
    not_vetoed("q2", "常有人说 eps 是为了加速 rsqrtf，其实不对：它是为了全零行不出现 rsqrtf(0) = inf。"),
)

LESSON = Lesson("04_rmsnorm", blanks=(RIGHT,), fills=FILLS, answers=ANSWERS)

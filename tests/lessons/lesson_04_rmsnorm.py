"""Lesson 4 (RMSNorm): the blank, the wrong fill-ins and the families that must catch them,
and the written-answer cases.  Proved by test_lessons.py."""
from proof import ALL, Fill, Lesson, full_marks, not_vetoed, term_only, vetoed, zero

RIGHT = "rsqrtf(sq_sum / static_cast<float>(N) + eps)"
NO_EPS = "rsqrtf(sq_sum / static_cast<float>(N))"

# family names as written in grading_rubric.yaml
ZERO_ROW = "全零行（只剩 eps）"
FP16_OVERFLOW = "FP16 里平方会溢出的大数值"
EPS_SIZED = "均方值与 eps 同量级"
NOT_MULTIPLE = "N 不是 block 整数倍"

FILLS = (
    Fill("missing_eps_fails_only_the_zero_row_family", {RIGHT: NO_EPS},
         {"code_normal": ALL, "code_boundary": {ZERO_ROW: False, FP16_OVERFLOW: True}}),
    Fill("eps_outside_the_square_root_fails_boundary", {RIGHT: NO_EPS + " + eps"},
         {"code_boundary": {ZERO_ROW: False, EPS_SIZED: False}}),
    Fill("dividing_by_block_size_fails_the_non_multiple_family",
         {RIGHT: "rsqrtf(sq_sum / static_cast<float>(BLOCK_SIZE) + eps)"},
         {"code_normal": {NOT_MULTIPLE: False}}),
)

ANSWERS = (
    term_only("q1", "RMSNorm：均值、beta、缩放、一次归约、__syncthreads、shared memory、带宽。"),
    term_only("q2", "全零行、inf、NaN、根号里、1/sqrt(eps)、外面。"),
    term_only("q3", "FP16、65504、溢出、inf、有效位、舍入、FP32、带宽、__half2float、寄存器。"),
    zero("q2", ""),
    zero("q3", "这道题我觉得很有意思，以后再想。"),
    zero("explain_code", "rsqrtf(，均方值，全零行，整数倍"),            # explanation without causality
    vetoed("q1", "RMSNorm 也需要减去均值，只是少了 beta，所以更便宜。"),
    vetoed("q1", "RMSNorm 比 LayerNorm 更精确，因为它只做一次归约。"),
    vetoed("q2", "eps 是为了加速 rsqrtf，因为除以零很慢。"),
    vetoed("q3", "FP32 累加可以节省带宽，因此更快。"),
    vetoed("explain_code", "应该除以 BLOCK_SIZE，因为每个线程算一部分，所以全零行不会 NaN。"),
    not_vetoed("q2", "eps 不是为了加速，而是因为全零行的均方值为 0 时 rsqrtf(0) = inf，导致 0 × inf = NaN。",
               points=2),
    full_marks("q1", "RMSNorm drops the mean subtraction (re-centering) and beta, keeping only the re-scaling. "
                     "Because it needs a single reduction of sum(x^2) instead of two, it saves one round of warp "
                     "shuffles, shared memory and __syncthreads, so it is cheaper for a memory-bound kernel."),
    full_marks("q2", "For an all-zero row the mean square is 0, so without eps rsqrtf(0) = inf and 0 * inf produces "
                     "NaN. With eps inside the sqrt the scale is bounded by 1/sqrt(eps), so the output stays finite."),
    full_marks("q3", "FP16 has a max value of 65504, so any |x| > 256 makes x*x overflow to inf, which leads to "
                     "inv_rms = rsqrt(inf) = 0 and the row output becomes zeros. FP32 accumulation does not "
                     "overflow; the cost is one __half2float conversion per element, bandwidth is unchanged."),
)

LESSON = Lesson("04_rmsnorm", blanks=(RIGHT,), fills=FILLS, answers=ANSWERS)

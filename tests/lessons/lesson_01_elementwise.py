"""Lesson 1 (elementwise GELU): the blank is the scalar grid-stride loop after the float4
part, `for (int i = START; i < n; i += STRIDE)`. Each typical wrong start / stride and the
family that must catch it (a short stride is only wrong where it shows: in place), correct
kernels written differently (other fills, a scalar-only kernel, a head-peeling float4
kernel), and the written-answer cases. Proved by test_lessons.py."""
from proof import ALL, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero

START = "4 * n4 + blockIdx.x * blockDim.x + threadIdx.x"
STRIDE = "blockDim.x * gridDim.x"
LOOP = f"for (int i = {START}; i < n; i += {STRIDE})"
VECTOR_LOOP = "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {"

# family names as written in grading_rubric.yaml
TAIL = "对齐，n 不是 4 的倍数（float4 + 标量尾部）"
IN_PLACE = "原地调用（out 与 inp 是同一数组）"
SMALL_N = "n < 32"
GRID_STRIDE_IN_PLACE = "n 大于一个 grid 的线程总数，原地"
MISALIGNED = "基址未对齐的视图（float4 不可用）"
MISALIGNED_IN_PLACE = "基址未对齐的视图，原地"


def loop(start=START, stride=STRIDE):
    return {LOOP: f"for (int i = {start}; i < n; i += {stride})"}


FILLS = (
    # starting at the thread index redoes the float4 part: invisible out of place, gelu(gelu(x)) in place
    Fill("start_without_4n4_redoes_the_vector_part", loop(start="blockIdx.x * blockDim.x + threadIdx.x"),
         {"code_normal": {IN_PLACE: False, TAIL: True}, "code_boundary": {GRID_STRIDE_IN_PLACE: False}}),
    Fill("start_n4_instead_of_4n4", loop(start="n4 + blockIdx.x * blockDim.x + threadIdx.x"),
         {"code_normal": {IN_PLACE: False}}),
    Fill("start_without_the_block_offset", loop(start="4 * n4 + threadIdx.x"),
         {"code_boundary": {MISALIGNED: False, MISALIGNED_IN_PLACE: False}}),
    Fill("start_without_the_thread_index", loop(start="4 * n4"),
         {"code_normal": {TAIL: False}, "code_boundary": {SMALL_N: False, MISALIGNED: False}}),
    Fill("start_in_float4_units", loop(start="4 * (n4 + blockIdx.x * blockDim.x + threadIdx.x)"),
         {"code_normal": {TAIL: False}, "code_boundary": {MISALIGNED: False}}),
    # a stride of one block (or of the grid's block count) covers every element, several times
    Fill("stride_of_one_block_is_wrong_in_place", loop(stride="blockDim.x"),
         {"code_normal": ALL, "code_boundary": {MISALIGNED: True, MISALIGNED_IN_PLACE: False}}),
    Fill("stride_of_grid_blocks_is_wrong_in_place", loop(stride="gridDim.x"),
         {"code_normal": ALL, "code_boundary": {MISALIGNED_IN_PLACE: False}}),
    # no stride at all: one element per thread, a quarter of a misaligned array
    Fill("no_grid_stride", {LOOP: f"for (int i = {START}; i < n; i += n)"},
         {"code_boundary": {MISALIGNED: False}}),
    # the template without its alignment check: what a float4 kernel without one does on a view
    Fill("float4_without_alignment_check",
         {"(aligned16(out) && aligned16(inp)) ? n / 4 : 0": "n / 4"},
         {"code_normal": ALL, "code_boundary": {MISALIGNED: False, MISALIGNED_IN_PLACE: False}}),
    Fill("float4_rounding_up_reads_past_the_end",
         {"(aligned16(out) && aligned16(inp)) ? n / 4 : 0": "(aligned16(out) && aligned16(inp)) ? (n + 3) / 4 : 0"},
         {"code_normal": {TAIL: False}}),
    # correct, written differently
    Fill("other_order_of_the_same_terms", loop(start="threadIdx.x + blockDim.x * blockIdx.x + n4 * 4",
                                               stride="gridDim.x * blockDim.x"),
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("scalar_only_kernel", {VECTOR_LOOP: "for (int i = 0; i < 0; ++i) {",
                                LOOP: "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                                      "i += blockDim.x * gridDim.x)"},
         {"code_normal": ALL, "code_boundary": ALL}),
    # another student's float4 kernel: scalar head until out is aligned, float4 body when inp then is too
    Fill("head_peeling_float4_kernel", {
        "const int n4 = (aligned16(out) && aligned16(inp)) ? n / 4 : 0;":
            "const int tid0 = blockIdx.x * blockDim.x + threadIdx.x, nthreads = blockDim.x * gridDim.x;\n"
            "    int head = (int)(((16 - (reinterpret_cast<unsigned long long>(out) & 15)) & 15) / 4);\n"
            "    if (head > n) head = n;\n"
            "    for (int i = tid0; i < head; i += nthreads) out[i] = gelu_tanh(inp[i]);\n"
            "    out += head; inp += head; n -= head;\n"
            "    const int n4 = aligned16(inp) ? n / 4 : 0;",
        LOOP: "for (int i = 4 * n4 + tid0; i < n; i += nthreads)"},
        {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    wrong("q3", "GPT-2 训练时用的就是 tanh 近似，所以推理也用它。逐元素 kernel 的时间由 flop 数决定，所以换更便宜的公式会变快；融合之所以快，是因为两个算子的 flop 减半了。"),
    term_only("q1", "grid-stride、线程总数、gridDim.x、blockDim.x、i < n、越界、重复处理、原地、gelu(gelu(x))、数据竞争。"),
    term_only("q2", "float4、16 字节对齐、视图、x[1:]、misaligned address、尾部、n % 4、标量循环、指令数。"),
    term_only("q3", "GPT-2、tanh、erf、训练、1e-4、访存受限、带宽、字节、融合、寄存器。"),
    zero("explain_code", "4 * n4，全局线程号，线程总数，恰好一次，未对齐"),     # terms, no causality
    zero("q1", ""),
    zero("q2", "这题不会，以后再看。"),
    # half the story: the stride argument without what a short stride or a missing guard does
    partial("q1", "步长是整个 grid 的线程总数，所以每个下标只属于一个线程，恰好处理一次。"),
    vetoed("q3", "GPT-2 用 tanh 形式是因为 tanh 形式更精确，误差比 erf 小。"),
    # the rubric's terms and connectives around false claims
    stuffed("q3", "因为逐元素 kernel 是计算受限的，所以 GELU 的时间由运算量决定；换成更便宜的公式就会明显变快，"
                  "融合两个 kernel 反而导致中间结果的字节更多。"),
    # a confident false chain the lesson does not list as a veto: 0 points, the sentence named
    wrong("q1", "步长写小了没有关系，也是正确的，因为每个元素至少被处理了一次，原地调用时也一样。"),
    vetoed("q2", "float4 可以减少读写的字节数，所以更快；对齐只是为了好看。"),
    vetoed("explain_code", "逐元素 kernel 需要 __syncthreads，否则尾部会和向量部分冲突，所以起点是 4 * n4。"),
    not_vetoed("q3", "tanh 形式并不更精确，erf 才是精确定义；GPT-2 用 tanh 是因为训练时用的就是它，"
                     "所以推理必须一致。"),
    not_vetoed("q2", "float4 并不减少字节数，读写的字节数不变，只是 load 指令变成四分之一。"),
    partial("q1", "With a stride equal to the total number of threads in the grid, index i belongs only to thread "
                     "i mod S, so every element is processed exactly once, and the i < n guard keeps the extra threads "
                     "idle. If the stride is too small (blockDim.x), threads of different blocks cover the same "
                     "indices, so an element is processed twice; in place this leads to gelu(gelu(x)) because the "
                     "second thread reads an already computed value, and it is a data race.", missed="guard_oob"),
    full_marks("q3", "GPT-2 was trained with the tanh approximation, so to reproduce its weights inference must use "
                     "the same function; the two forms differ by about 1e-4, far above float32 precision. An "
                     "elementwise kernel is memory-bound, so its time is roughly bytes / bandwidth: a cheaper "
                     "formula only removes arithmetic, not bytes, while fusion keeps the intermediate in registers "
                     "and therefore halves the bytes."),
)

LESSON = Lesson("01_elementwise", blanks=(START, STRIDE), anchors=(LOOP, VECTOR_LOOP),
                released_text=("for (int i = ______; i < n; i += ______)",),
                stated_families={"code_boundary": ("n = 1", SMALL_N, "n 不是 block 的整数倍",
                                                   "n 大于一个 grid 的线程总数（grid-stride）", MISALIGNED)},
                fills=FILLS, answers=ANSWERS)

"""Lesson 9 (GEMM tiling): the common wrong fill-ins of load_tile's element expression and the
family each must fail (tails caught by memcheck or by a wrong K sum, strides by a non-square
shape), correct fills written differently, and the written-answer cases.
Proved by test_lessons.py (also on the GPU)."""
from proof import (ALL, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed,
                   wrong, zero)

RIGHT = "(gr < R && gc < C) ? X[(long)gr * C + gc] : 0.0f"

# family names as written in grading_rubric.yaml
ALIGNED = "分块 kernel：M、N、K 都是 16 的整数倍"
REG_ALIGNED = "寄存器分块：M、N 是 64、K 是 8 的整数倍"
NON_SQUARE = "非方阵（M、N、K 各不相同，查行优先步长）"
K_TAIL = "K 不是 tile 的整数倍（分块 kernel：K 尾部必须补 0）"
K_TAIL_REG = "K 不是 BK 的整数倍（寄存器分块：K 尾部必须补 0）"
MN_TAIL = "M、N 不是 tile 的整数倍（越界的行列只在写回时丢弃，读取不能越界）"
ONE = "1 × 1 × 1（分块 kernel）"


def wrong_fill(fill, expect):
    return Fill(fill, {RIGHT: fill}, expect)


FILLS = (
    # no bounds check: aligned shapes pass (no tail), every tail reads past the end (memcheck)
    wrong_fill("X[(long)gr * C + gc]", {"code_normal": {ALIGNED: True, REG_ALIGNED: True},
                                   "code_boundary": {K_TAIL: False, K_TAIL_REG: False, MN_TAIL: False, ONE: False}}),
    # only the row checked: the K tail of A reads the next row (times B's zero rows: the sum is right),
    # but the last row's columns past the end are out of bounds
    wrong_fill("gr < R ? X[(long)gr * C + gc] : 0.0f", {"code_boundary": {MN_TAIL: False, K_TAIL: False}}),
    # clamping to the last row/column instead of 0: in bounds, but the K tail adds duplicated products
    wrong_fill("X[(long)min(gr, R - 1) * C + min(gc, C - 1)]",
          {"code_normal": {ALIGNED: True}, "code_boundary": {K_TAIL: False, K_TAIL_REG: False}}),
    # off by one in the guard: reads one past the end (memcheck; on a GPU the read goes unseen)
    wrong_fill("(gr <= R && gc <= C) ? X[(long)gr * C + gc] : 0.0f", {"code_boundary": {MN_TAIL: False, ONE: False}}),
    # stride of the other dimension: right only on square matrices
    wrong_fill("(gr < R && gc < C) ? X[(long)gr * R + gc] : 0.0f", {"code_normal": {NON_SQUARE: False}}),
    # correct fills written the way other students write them
    Fill("other_style_if_inverted", {RIGHT: "(gr >= R || gc >= C) ? 0.f : X[gr * (size_t)C + gc]"},
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("other_style_pointer", {RIGHT: "(gc < C && gr < R) ? *(X + (long)gr * C + gc) : float(0)"},
         {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    term_only("q1", "算术强度、0.25 FLOP/B、8 字节、脊点、roofline、带宽、复用、shared memory、1/T、T 倍。"),
    term_only("q2", "外积、寄存器、TM × TN、0.5、shared memory 带宽、occupancy、指令级并行、小矩阵。"),
    term_only("q3", "K 尾部、点积、补 0、写回、r < M、越界、memcheck、illegal address。"),
    zero("explain_code", "gr * C + gc，补 0，越界，memcheck，写回。"),
    zero("q1", ""),
    zero("q3", "这一题和 GEMM 关系不大，我以后再补。"),
    # the memory-bound chain without saying what tiling changes
    partial("q1", "朴素 kernel 每次乘加都要从全局内存读 8 个字节，所以算术强度只有 0.25，远低于脊点，导致它受带宽限制。"),
    partial("q1", "The naive kernel loads one float of A and one of B from global memory for every FMA, i.e. 8 bytes "
                     "for 2 FLOPs, so its arithmetic intensity is 0.25 FLOP/B, far below the ridge point, which means "
                     "it is memory-bound. Tiling lets a block load a T x T tile of A and of B into shared memory once "
                     "and reuse every element T times, so global traffic drops by a factor of T and the intensity "
                     "rises T times (about 4 for 16 x 16). The number of FLOPs does not change.", missed="no_reuse"),
    full_marks("q3", "因为 K 方向尾部的元素要参与点积求和，所以越界的 A 列和 B 行必须补 0，0 乘任何有限数都是 0，不改变和；"
                     "M、N 方向越界的行列只产生矩阵之外的输出，写回时用 r < M && c < N 丢弃即可。"
                     "如果不判断，线程会越界读到数组末尾之后的内存，导致结果错误，模拟器的 memcheck 会报错。"),
    vetoed("q1", "shared memory 分块减少了乘加次数，所以比朴素 kernel 快。"),
    vetoed("q2", "Register blocking is faster because tiling reduces the number of FLOPs each thread performs."),
    vetoed("q3", "M、N 方向越界读没关系，因为结果会在写回时被丢掉，所以 load_tile 可以不判断。"),
    not_vetoed("q1", "分块并没有减少乘加次数，运算量仍是 2MNK，减少的是从全局内存读取的字节数。"),
    not_vetoed("q3", "有人以为越界读没关系，其实越界读本身就是错误，即使结果碰巧对。"),
    stuffed("q1", "因为朴素 kernel 的算术强度很高，远高于脊点，所以它受计算限制；shared memory 分块减少了运算量，因此流量降为 1/T、强度提高 T 倍。"),
    stuffed("q3", "K 方向尾部的元素不参与点积求和，所以 K 方向不需要补 0；M、N 方向越界读没关系，因为写回时会丢弃，所以不判断也可以。"),
    wrong("q3", "K 方向的尾部不需要补 0，因为最后写回时会判断 r < M。"),
    full_marks("q1", "朴素 GEMM 每算一次乘加都得去显存拿一个 A 一个 B，一共 8 个字节，也就 0.25 FLOP/B 的算术强度，比 H200 的脊点低太多了，"
                     "所以它是被带宽卡住的，算力闲着；而且同一个数被好多线程反复读，根本没复用。换成 shared memory 分块以后，"
                     "一个 block 先把 T×T 的小块搬进来一次，块里的线程共用 T 次，于是全局流量变成原来的 1/T，强度涨 T 倍，16×16 时大概是 4，"
                     "运算量还是 2MNK 没变。"),
    full_marks("q2", "With shared-memory tiling alone every FMA still reads two values from shared memory, so shared-memory "
                     "bandwidth and load instructions become the bottleneck. Register blocking keeps a TM x TN tile of "
                     "accumulators in registers and does an outer product: per k it loads TM + TN values and does TM x TN "
                     "FMAs, so with 4 x 4 it needs only 0.5 shared loads per FMA. The cost is more registers per thread and "
                     "more shared memory per block, which means fewer resident warps (lower occupancy), and big tiles waste "
                     "work on small matrices."),
    # round 6: FLOP reduction said as "变成原来的 1/16"; the 16x16 tile said to reach the ridge; "读到什么都没关系";
    # a tile read once into shared memory (reversed order) and used by T outputs; English "drops them"
    vetoed("q1", "分块以后乘加的次数降为原来的 1/16，所以快了。"),
    vetoed("q1", "有了 shared memory，很多运算就不需要重复计算了，因此 kernel 更快。"),
    wrong("q1", "朴素 kernel 每次乘加读 8 字节，强度 0.25 FLOP/B，远低于脊点，访存受限；同一元素被 N 个线程重复读，没有复用。"
                "分块时 block 把 16×16 的块从全局内存只读一遍放进 shared memory，每个元素被 16 个线程用到，所以流量降为 1/16，"
                "强度提高 16 倍，16×16 分块已经越过脊点了。"),
    full_marks("q1", "朴素 kernel 每次乘加读 8 字节，强度 0.25 FLOP/B，远低于脊点，访存受限；同一元素被 N 个线程重复读，没有复用。"
                     "分块时 block 把 16×16 的块从全局内存只读一遍放进 shared memory，每个元素被 16 个线程用到，所以流量降为 1/16，"
                     "强度提高 16 倍到约 4 FLOP/B，16×16 分块仍然是访存受限。"),
    vetoed("q3", "K 尾部的元素会进入点积求和，必须补 0。M/N 方向越界的输出写回时被丢弃，所以 M/N 方向读到什么都没关系，不用判断。"),
    full_marks("q3", "K 尾部的元素会进入点积求和，必须补 0；M/N 尾部的输出在写回时被丢弃，这些位置存什么数都无所谓，但读取仍然不能越界。"
                     "不做判断会读到数组末尾之后，结果错误或 illegal address。"),
    full_marks("q3", "Along K the padded terms enter the dot product, so they must be 0. Along M or N they only feed outputs "
                     "that do not exist, and the write-back check drops them. Without the check the load reads past the end "
                     "of the array, giving garbage or an illegal address."),
)

LESSON = Lesson("09_gemm", blanks=(RIGHT,), released_text=("tile[r][c] = ______;",), min_families=5, gpu=True,
                stated_families={"code_boundary": (K_TAIL, K_TAIL_REG, MN_TAIL, ONE, "M = 1（一行，GEMV 形状）",
                                                   "N = 1（一列）")},
                stated_atol={("code_boundary", "K 很长"): 1.0e-3},
                fills=FILLS, answers=ANSWERS)

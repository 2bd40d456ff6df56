"""Lesson 2 (reduction: sum and max, two stages): the blank is one step of the shared-memory
tree, `if (tid < s) smem[tid] = Op::apply(smem[tid], smem[tid + s])`. Each typical wrong
step and the family that must catch it (a missing guard is a race, a barrier inside the
branch a deadlock, a hard-coded + or fmaxf fails the other op and the NaN / inf families),
the template's own semantics (fmaxf in MaxOp swallows NaN, a 0 initial value breaks
all-negative max), correct kernels written differently, and the written-answer cases.
Proved by test_lessons.py."""
from proof import ALL, NONE, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero

RIGHT = "if (tid < s) smem[tid] = Op::apply(smem[tid], smem[tid + s])"
MAX_APPLY = "return (a > b || a != a) ? a : b;"
MAX_IDENTITY = "return __int_as_float(0xff800000); }   // -inf"
TREE_AND_WARP = RIGHT + """;
        __syncthreads();
    }

    // ③ 最后 32 个值在 warp 0 里：用 __shfl_down_sync 在寄存器之间做完最后 5 步。
    //    同一个 warp 的 32 个线程一起执行 shuffle，不需要 __syncthreads()。
    if (tid < 32) {
        float v = smem[tid];
        for (int offset = 16; offset > 0; offset >>= 1) {
            v = Op::apply(v, __shfl_down_sync(0xffffffff, v, offset));
        }
        if (tid == 0) out[blockIdx.x] = v;
    }"""

# family names as written in grading_rubric.yaml
SUM = "sum：多 block 两阶段（BLOCK = 256）"
MAX = "max：多 block 两阶段（BLOCK = 256）"
SMALL_N = "n 小于一个 block（一个 block，多数线程只有初值）"
ALL_NEG = "全部相等的负数（max 等于该值：初值不能是 0）"
ALL_NEG_INF = "全为 -inf（max = -inf）"
MAX_NAN = "max：含 NaN（必须是 NaN：fmaxf 会把它吞掉）"
INF_MINUS_INF = "+inf 与 -inf 同时出现（sum = NaN）"
N_ONE_MAX = "n = 1（max，负数）"


def step(text):
    return {RIGHT: text}


FILLS = (
    # without the guard, tid + s runs past the tree and thread t writes smem[t] while t - s reads it
    Fill("no_guard_races", step("smem[tid] = Op::apply(smem[tid], smem[tid + s])"),
         {"code_normal": {SUM: False, SMALL_N: False}, "code_boundary": {N_ONE_MAX: False}}),
    Fill("guard_off_by_one_races", step("if (tid <= s) smem[tid] = Op::apply(smem[tid], smem[tid + s])"),
         {"code_normal": {SUM: False}}),
    # the barrier moved into the branch: threads tid >= s never arrive (the emulator reports a deadlock)
    Fill("barrier_inside_the_branch_deadlocks",
         step("if (tid < s) { smem[tid] = Op::apply(smem[tid], smem[tid + s]); __syncthreads(); }"),
         {"code_normal": NONE}),
    Fill("hard_coded_plus_fails_max", step("if (tid < s) smem[tid] += smem[tid + s]"),
         {"code_normal": {SUM: True, MAX: False}, "code_boundary": {ALL_NEG: False}}),
    Fill("hard_coded_fmaxf_fails_sum_and_nan", step("if (tid < s) smem[tid] = fmaxf(smem[tid], smem[tid + s])"),
         {"code_normal": {SUM: False}, "code_boundary": {MAX_NAN: False, INF_MINUS_INF: False}}),
    # the interleaved-addressing test with a halving s leaves most values unmerged
    Fill("interleaved_test_with_sequential_s", step("if (tid % (2 * s) == 0) smem[tid] = Op::apply(smem[tid], smem[tid + s])"),
         {"code_normal": {SUM: False}}),
    # the template's semantics, each guarded by its own family
    Fill("fmaxf_in_maxop_swallows_nan", {MAX_APPLY: "return fmaxf(a, b);"},
         {"code_normal": ALL, "code_boundary": {MAX_NAN: False, ALL_NEG: True}}),
    Fill("zero_identity_breaks_negative_max", {MAX_IDENTITY: "return 0.0f; }"},
         {"code_normal": {MAX: True}, "code_boundary": {ALL_NEG: False, N_ONE_MAX: False}}),
    Fill("minus_flt_max_identity_breaks_all_minus_inf", {MAX_IDENTITY: "return -3.402823466e38f; }"},
         {"code_boundary": {ALL_NEG_INF: False, ALL_NEG: True}}),
    # correct, written differently
    Fill("xor_partner", step("if (tid < s) smem[tid] = Op::apply(smem[tid], smem[tid ^ s])"),
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("mirrored_partner", step("if (tid < s) smem[tid] = Op::apply(smem[tid], smem[2 * s - 1 - tid])"),
         {"code_normal": ALL, "code_boundary": ALL}),
    # another student's block reduction: warp shuffles first, one value per warp through shared memory
    Fill("shuffle_first_block_reduction", {TREE_AND_WARP: """if (false) {}
        __syncthreads();
    }
    {
        float v = acc;
        for (int o = 16; o > 0; o >>= 1) v = Op::apply(v, __shfl_down_sync(0xffffffff, v, o));
        __shared__ float warp_part[BLOCK / 32];
        if ((tid & 31) == 0) warp_part[tid >> 5] = v;
        __syncthreads();
        if (tid < 32) {
            v = tid < BLOCK / 32 ? warp_part[tid] : Op::identity();
            for (int o = 16; o > 0; o >>= 1) v = Op::apply(v, __shfl_down_sync(0xffffffff, v, o));
            if (tid == 0) out[blockIdx.x] = v;
        }
    }"""}, {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    term_only("q1", "__syncthreads、每一轮、旧值、数据竞争、racecheck、分支、死锁、warp、__shfl_down_sync、寄存器。"),
    term_only("q2", "结合律、舍入、24 位、树的形状、BLOCK、atomicAdd、到达顺序、两阶段、可复现、launch。"),
    term_only("q3", "两阶段、atomicAdd、kernel 边界、全局同步、确定、launch 开销、争用、atomicMax、CAS。"),
    zero("explain_code", "tid < s，smem[tid + s]，Op::apply，__syncthreads，减半"),     # terms, no causality
    zero("q1", ""),
    zero("q3", "我觉得两种都可以，看情况。"),
    # why the barrier is needed, but nothing on the branch or the warp
    partial("q1", "第 s 轮线程读的 smem[tid + s] 是另一个线程上一轮刚写的，没有栅障就可能读到旧值，导致结果错误。"),
    vetoed("q2", "float 加法满足结合律，所以 BLOCK 不同结果完全一样，差别只是打印误差。"),
    vetoed("q2", "atomicAdd 的结果是确定的，每次都一样，因为硬件保证了原子性。"),
    vetoed("q1", "树里只需要最后一次 __syncthreads，因为 shared memory 的写入会立刻被所有线程看到。"),
    # fmaxf swallowing NaN is taught, but not listed among the vetoes: the item scores 0
    wrong("q3", "max 可以直接用 fmaxf 来做，因为 fmaxf 会传播 NaN。"),
    stuffed("q2", "因为 atomicAdd 的结果是确定的，每次都一样，所以不同 BLOCK 的差别只来自打印；两阶段归约导致结果不可复现，"
                  "代价是舍入更多。"),
    not_vetoed("q2", "有人认为 float 加法满足结合律，这是错的：每次相加都舍入，所以顺序不同结果不同。"),
    not_vetoed("q3", "atomicAdd 的结果不是确定的：加的顺序由调度决定，所以需要可复现时用两阶段。"),
    full_marks("q1", "In round s thread tid reads smem[tid + s], which another thread wrote in the previous round, so "
                     "without __syncthreads it may read a stale value: a data race, and the emulator's in-order "
                     "schedule can hide it (racecheck finds it). A barrier inside if (tid < s) is never reached by "
                     "threads tid >= s, which leads to a deadlock or undefined behaviour. The last 5 steps use "
                     "__shfl_down_sync within one warp: the 32 lanes exchange registers in lockstep, so no barrier "
                     "is needed."),
    partial("q2", "Float addition is not associative because every addition rounds to 24 bits, so a different "
                     "BLOCK changes the tree shape (which numbers are added first) and therefore the last bits. "
                     "atomicAdd adds in the arrival order chosen by scheduling, so each run can differ. To get "
                     "reproducible results use a two-stage reduction with fixed G and BLOCK; the cost is a second "
                     "launch and a partial array, so it is slower.", missed="meaning"),
)

LESSON = Lesson("02_reduction", blanks=(RIGHT,), anchors=(MAX_APPLY, MAX_IDENTITY, TREE_AND_WARP),
                released_text=("        ______;  // TODO\n        __syncthreads();",),
                stated_families={"code_boundary": ("n = 1（sum）", ALL_NEG, ALL_NEG_INF, MAX_NAN, INF_MINUS_INF,
                                                   "n 不是 2 的幂（也不是 block 的整数倍）",
                                                   "大 n（n > 10^6，每个线程累加多个元素）")},
                fills=FILLS, answers=ANSWERS)

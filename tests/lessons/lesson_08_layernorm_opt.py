"""Lesson 8 (LayerNorm optimisation path v1..v6): the two blanks (warp -> row mapping, float4
row view), the wrong fill-ins and the versions' families that must catch them, and the
written-answer cases.  Proved by test_lessons.py (also on the GPU).  The row mapping is a
helper shared by v3/v4/v6, so the released notebook must not show it in v4/v6 either (leak proof)."""
from proof import (Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero)

RIGHT_ROW = "return blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();"
RIGHT_VIEW = "reinterpret_cast<const float4*>(inp + (long)idx * C)"

FILLS = (
    Fill("row_equals_block_index_fails_the_warp_per_row_versions", {RIGHT_ROW: "return blockIdx.x;"},
         {"code_normal": {"v3：N 不是 4 的整数倍，C 任意": False, "v6：C 为 4 的整数倍（float4）": False,
                          "其余版本：v5 block 一行": True}}),      # block per row does not use warp_row
    # offsetting the float4 pointer by idx * C float4s runs 4x too far: out of bounds
    Fill("float4_view_with_float_offset_is_caught", {RIGHT_VIEW: "reinterpret_cast<const float4*>(inp) + idx * C"},
         {"code_normal": {"v6：C 为 128 的整数倍": False, "v3：C 为 32 的整数倍": True}}),
)

ANSWERS = (
    term_only("q1", "相隔 C 个 float、事务、合并访问、i += block_size、带宽、树形归约。"),
    term_only("q2", "launch、全局内存往返、寄存器、融合、__syncthreads、占主导。"),
    term_only("q3", "32 个线程、串行、shuffle、N 很大、1024、shared memory、__syncthreads。"),
    term_only("explain_code", "meta_group_size、meta_group_rank、重复、float4、C % 4、指令数。"),
    zero("q2", ""),
    zero("q1", "这个问题很复杂，取决于硬件。"),
    partial("q1", "v1 中相邻线程的地址相隔 C 个 float，所以一次请求被拆成很多事务。"),     # one idea with a chain
    vetoed("q1", "v1 慢是因为算术更多，所以要减少计算。"),
    # false claims the lesson does not list as vetoes: 0 points, no veto
    wrong("q2", "拆成三个 kernel 更快，因为每个 kernel 更简单。"),
    wrong("q3", "block 一行总是更快，因为线程更多。"),
    wrong("explain_code", "只写 blockIdx.x 也可以，因为每个 block 处理一行。"),
    not_vetoed("q3", "block 一行并不总是更快：warp 一行只用 shuffle、不需要 __syncthreads，"
                     "所以 N 很大、C 较小时 warp 一行更好；block 一行最多 1024 线程分摊，因此适合 C 大，"
                     "代价是 shared memory 归约和 __syncthreads 等待。", points=1),   # C 大时 warp 一行的问题没说
    partial("q1", "In v1 each thread owns a row, so at the same instant the 32 threads of a warp read addresses C floats "
                     "apart. Each address falls into a different memory segment, the request is split into 32 transactions "
                     "and there is no coalescing, so most of the bandwidth is wasted. v2 gives a row to a block and loops "
                     "i = tid; i += block_size, so neighbouring threads read neighbouring addresses and a warp's 32 loads "
                     "coalesce into one 128-byte transaction.", missed="tree"),
    full_marks("q2", "拆成三个 kernel，每次发射 kernel 都有几微秒的固定开销，三个就付三次；kernel 之间只能靠全局内存传东西，"
                     "mean 和 rstd 得先写回显存，下一个 kernel 再读回来，形状小的时候发射开销占大头。v3 融成一个 kernel "
                     "之后，mean 和 rstd 就留在寄存器里，用 cg::reduce 在 warp 里归约，两次发射和显存来回都省了。"),
    full_marks("q3", "Warp per row puts only 32 threads on a row, so with large C each thread runs a long serial loop, but the "
                     "reduction is pure shuffles with no __syncthreads. When N is large and C small there are enough warps "
                     "to fill the GPU, so warp per row wins. Block per row spreads a row over up to 1024 threads, so it suits "
                     "very large C or small N; the price is an extra shared memory reduction level and a __syncthreads."),
    stuffed("q1", "v1 慢是因为访存合并了但是算术更多；v2 让每个线程读连续的一段，所以访问合并，带宽更高。"),
    stuffed("q3", "warp 一行适合 C 很大的情况，因为 shuffle 最快；block 一行适合 C 小的情况，因为 shared memory 不需要同步，"
                  "没有额外代价。"),
    # round 6: 'v1 does more arithmetic' (vetoed) vs its negation; q2 without the shape part is 1
    vetoed("q1", "v1 一线程一行，v1 的计算量多得多，因为每个线程要循环 C 次；v2 用 i = tid; i += block_size 让相邻线程读相邻地址，"
                 "合并成一次事务，再用树形归约。"),
    not_vetoed("q1", "v1 和 v2 的算术量差不多，v1 的计算并不更多。v1 一线程一行，同一时刻 warp 的 32 个线程读的地址相隔 C 个 float，"
                     "落在 32 个不同的内存段，没有合并，带宽浪费；v2 用 i = tid; i += block_size 让相邻线程读相邻地址，合并成一次 "
                     "128 字节事务，带宽利用率高，求和用树形归约。", points=2),
    partial("q2", "每次 kernel launch 都有几微秒固定开销，三个 kernel 付三次；mean、rstd 要写回全局内存再被下一个 kernel 读回。"
                  "v3 融合成一个 kernel，mean/rstd 留在寄存器里，省掉两次 launch 和全局内存往返。"),
)

LESSON = Lesson("08_layernorm_opt", blanks=(RIGHT_ROW, RIGHT_VIEW), min_families=8, gpu=True,
                fills=FILLS, answers=ANSWERS)

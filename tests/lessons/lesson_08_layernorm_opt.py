"""Lesson 8 (LayerNorm optimisation path v1..v6): the two blanks (warp -> row mapping, float4
row view), the wrong fill-ins and the versions' families that must catch them, and the
written-answer cases.  Proved by test_lessons.py (also on the GPU).  The row mapping is a
helper shared by v3/v4/v6, so the released notebook must not show it in v4/v6 either (leak proof)."""
from proof import Fill, Lesson, not_vetoed, partial, term_only, vetoed, zero

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
    vetoed("q2", "拆成三个 kernel 更快，因为每个 kernel 更简单。"),
    vetoed("q3", "block 一行总是更快，因为线程更多。"),
    vetoed("explain_code", "只写 blockIdx.x 也可以，因为每个 block 处理一行。"),
    not_vetoed("q3", "block 一行并不总是更快：warp 一行只用 shuffle、不需要 __syncthreads，"
                     "所以 N 很大、C 较小时 warp 一行更好；block 一行最多 1024 线程分摊，因此适合 C 大，"
                     "代价是 shared memory 归约和 __syncthreads 等待。", points=2),
)

LESSON = Lesson("08_layernorm_opt", blanks=(RIGHT_ROW, RIGHT_VIEW), min_families=8, gpu=True,
                fills=FILLS, answers=ANSWERS)

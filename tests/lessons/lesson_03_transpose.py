"""Lesson 3 (coalescing, shared-memory transpose): the blank is the write-back line of the
tiled transpose, `if (c < rows && r + j < cols) dst[(r + j) * rows + c] = tile[tx][ty + j]`.
Each typical wrong line and the family that must catch it (the read phase's bounds copied:
rectangles; no bounds: ragged shapes; the tile read by rows: every shape), correct lines
written differently, and the written-answer cases. The counters the lesson prints are
checked against its hand count in test_lesson03_counters.py. Proved by test_lessons.py."""
from proof import ALL, NONE, Fill, Lesson, full_marks, not_vetoed, partial, stuffed, term_only, vetoed, wrong, zero

RIGHT = "if (c < rows && r + j < cols) dst[(size_t)(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j]"
SYNC = "    __syncthreads();   // 写出去的元素是别的线程读进来的"

# family names as written in grading_rubric.yaml
SQUARE = "方阵，32 的整数倍"
RECT = "长方形，32 的整数倍（rows ≠ cols）"
PAD0 = "不填充的 tile（PAD = 0），长方形"
RAGGED = "行数、列数不是 32 的整数倍"
ONE_BY_N = "1 × N"
THIN = "细长的长方形（rows 远大于 cols）"


def line(text):
    return {RIGHT: text}


FILLS = (
    Fill("tile_read_by_rows_does_not_transpose_inside_a_tile",
         line("if (c < rows && r + j < cols) dst[(size_t)(r + j) * rows + c] = tile[threadIdx.y + j][threadIdx.x]"),
         {"code_normal": NONE}),
    # the read phase's bounds pass on squares only
    Fill("read_phase_bounds_copied",
         line("if (c < cols && r + j < rows) dst[(size_t)(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j]"),
         {"code_normal": {SQUARE: True, RECT: False}, "code_boundary": {RAGGED: False, THIN: False}}),
    Fill("no_bounds_writes_past_ragged_edges",
         line("dst[(size_t)(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j]"),
         {"code_normal": ALL, "code_boundary": {RAGGED: False, ONE_BY_N: False}}),
    Fill("row_length_of_the_input",
         line("if (c < rows && r + j < cols) dst[(size_t)(r + j) * cols + c] = tile[threadIdx.x][threadIdx.y + j]"),
         {"code_normal": {SQUARE: True, RECT: False, PAD0: False}}),
    Fill("naive_output_index",
         line("if (c < rows && r + j < cols) dst[(size_t)c * cols + r + j] = tile[threadIdx.x][threadIdx.y + j]"),
         {"code_normal": NONE}),
    Fill("missing_barrier_between_the_phases", {SYNC: "    // (no barrier)"},
         {"code_normal": {SQUARE: False}}),
    # correct, written differently
    Fill("reordered_terms", line("if (r + j < cols && c < rows) dst[c + rows * (r + j)] = tile[threadIdx.x][j + threadIdx.y]"),
         {"code_normal": ALL, "code_boundary": ALL}),
    Fill("guard_as_early_continue",
         line("if (c >= rows || r + j >= cols) continue; dst[(size_t)(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j]"),
         {"code_normal": ALL, "code_boundary": ALL}),
)

ANSWERS = (
    # round 6: global memory given banks, the padding aligning rows to global memory, permute-as-transpose needing a tile
    vetoed("q2", "全局内存里也会产生 32 路 bank conflict，所以要 padding。"),
    vetoed("q2", "+1 填充让每行错开全局内存的对齐边界，所以没有冲突。"),
    vetoed("q3", "head permute 就是转置，所以必须用 tile。"),
    not_vetoed("q2", "bank conflict 只存在于 shared memory，全局内存没有 bank，全局内存的问题是 sector 浪费。"),
    # the naive read's 4 sectors is not a wrong count for the write
    partial("q1", "朴素版的读是一行 32 个相邻 float，4 个 sector；写是 32 个不同的行，32 个 sector，有效带宽只有 1/8。"),
    wrong("q3", "permute 只交换 T 和 NH，最内层 HS 个 float 在输入和输出两边都连续；相邻线程处理相邻的 d，HS = 64 时一个 warp 读写 32 个连续 float，只碰 4 个 sector。规律：连续段至少 128 字节才合并。HS 越大连续段越长，所以 HS = 128 时 permute 需要 tile。"),   # conditional, wrong direction: no veto
    wrong("explain_code", "越界判断可以照抄读阶段的 c < cols && r + j < rows，因为转置前后元素个数一样。"),
    term_only("q1", "sector、32 个 sector、4 个 sector、跨步、1/8、有效带宽、shared memory、tile、__syncthreads、合并。"),
    term_only("q2", "32 个 bank、mod 32、32t + k、32 路冲突、wavefront、tile[32][33]、33t + k、4224 字节、occupancy。"),
    term_only("q3", "head permute、HS、最内层、连续、相邻线程、32 字节、HS ≥ 8、4 个 sector、HS = 1、退化、转置。"),
    zero("explain_code", "c < rows，r + j < cols，* rows，tile[threadIdx.x]，合并"),     # terms, no causality
    zero("q2", ""),
    zero("q1", "转置很简单，就是把行变成列。"),
    # the sector count of the naive write without the tile
    partial("q1", "朴素转置写的时候相邻线程写的地址相隔 rows 个 float，每个地址落在不同的 sector 里，所以一次请求要 32 个 sector，"
                  "有效带宽只有 1/8。"),
    vetoed("q2", "padding 是为了对齐全局内存，让写回显存时合并。"),
    vetoed("q2", "bank conflict 发生在全局内存，因为按列读显存会冲突。"),
    vetoed("q3", "head permute 必须用 shared memory，因为它也是转置。"),
    stuffed("q1", "因为 bank conflict 发生在全局内存，所以朴素转置的写每次请求 32 个 bank；tile 让 sector 变成 bank，"
                  "导致合并。"),
    not_vetoed("q2", "填充不是为了全局内存的对齐，而是改变 shared memory 里的 bank 映射，所以按列读没有冲突。"),
    not_vetoed("q3", "head permute 不需要 shared memory：最内层 HS 个 float 两边都连续，所以相邻线程读写的都是连续地址。"),
    full_marks("q2", "Shared memory has 32 banks of 4 bytes and word w is in bank w mod 32. Reading tile[32][32] by column, "
                     "thread t reads word 32t + k, so all 32 threads hit the same bank k and the request is serialized "
                     "into 32 wavefronts: a 32-way bank conflict. With tile[32][33] the word is 33t + k, so the bank "
                     "(t + k) mod 32 differs for every thread and one wavefront suffices. Row writes touch adjacent "
                     "words, so they never conflict; the cost is 32 extra floats per tile (4224 bytes), occupancy is "
                     "barely affected."),
)

LESSON = Lesson("03_transpose", blanks=(RIGHT,), anchors=(SYNC,),
                released_text=("        ______;  // TODO\n",),
                stated_families={"code_boundary": (RAGGED, ONE_BY_N, "N × 1", "1 × 1",
                                                   "一个维度小于 8（block 的一部分行没有数据）")},
                fills=FILLS, answers=ANSWERS)

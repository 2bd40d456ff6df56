"""kernels.memory_counters(): warp-level requests, global 32-byte sectors and shared-memory wavefronts, against
counts done by hand (docs/emulator.md, "Memory counters"; the H200 comparison is benchmarks/memory_counters_ncu.py)."""
import numpy as np
import pytest

import kernels
from kernel_launch import launch

ACCESS = r'''
extern "C" __global__ void copy(const float* x, float* y, int stride, int offset) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i * stride + offset];
}

extern "C" __global__ void half_warp(const float* x, float* y) {
    if ((threadIdx.x & 31) < 16) y[threadIdx.x] = x[threadIdx.x];
}

extern "C" __global__ void shared_patterns(float* out, int stride) {
    __shared__ float s[32 * 33];
    __shared__ double d[64];
    __shared__ float4 q[64];
    int lane = threadIdx.x;
    s[lane * stride] = lane;            // store: stride 1 -> 1 wavefront, 2 -> 2, 32 -> 32, 33 -> 1
    d[lane] = lane;                     // 8-byte store: two half-warp phases, no conflict
    q[lane] = make_float4(lane, 0, 0, 0);   // 16-byte store: four quarter-warp phases
    __syncwarp();
    float b = s[0];                     // broadcast load: 1 wavefront
    out[lane] = b + s[lane * stride] + (float)d[lane] + q[lane].x;
}
'''

TRANSPOSES = r'''
#define TILE 32
extern "C" __global__ void naive(const float* in, float* out, int n) {
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) out[x * n + (y + j)] = in[(y + j) * n + x];
}
template <int PAD>
__global__ void tiled(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
'''


def counted(src, name, grid, block, args, names=None, shared_mem=0):
    with kernels.memory_counters() as rec:
        out = launch(src, name, grid, block, args, name_expressions=names, shared_mem=shared_mem)
    return rec, out


def test_global_sectors_per_request(cpu):
    n = 256
    x = np.arange(64 * n, dtype=np.float32)
    for stride, offset, sectors in ((1, 0, 4), (1, 1, 5), (2, 0, 8), (8, 0, 32), (32, 0, 32)):
        rec, (_, y, _, _) = counted(ACCESS, "copy", (n // 128,), (128,),
                                    [x, np.zeros(n, np.float32), np.int32(stride), np.int32(offset)])
        c = rec.last
        np.testing.assert_array_equal(y, x[np.arange(n) * stride + offset])   # counting changes no result
        assert c.kernel == "copy" and c.grid == (2, 1, 1) and c.block == (128, 1, 1)
        assert c.global_load.requests == n // 32, (stride, offset)
        assert c.global_load.sectors == sectors * n // 32, (stride, offset)
        assert c.global_load.sectors_per_request == sectors
        assert (c.global_store.requests, c.global_store.sectors) == (n // 32, 4 * n // 32)
        assert c.shared_load.requests == c.shared_store.requests == 0


def test_a_request_counts_the_active_lanes_only(cpu):
    # 64 threads, lanes 0..15 of each warp: 2 requests of 16 floats (64 bytes = 2 sectors) each way
    rec, _ = counted(ACCESS, "half_warp", (1,), (64,), [np.ones(64, np.float32), np.zeros(64, np.float32)])
    c = rec.last
    assert (c.global_load.requests, c.global_load.sectors) == (2, 4)
    assert (c.global_store.requests, c.global_store.sectors) == (2, 4)


@pytest.mark.parametrize("stride, store_waves", [(1, 1), (2, 2), (32, 32), (33, 1)])
def test_shared_wavefronts_and_bank_conflicts(cpu, stride, store_waves):
    rec, (out, _) = counted(ACCESS, "shared_patterns", (1,), (32,), [np.zeros(32, np.float32), np.int32(stride)])
    c = rec.last
    lane = np.arange(32)
    np.testing.assert_array_equal(out, 0 + lane + lane + lane)
    # stores: s[lane * stride] (store_waves), d[lane] (8 bytes: 2 phases of 16 lanes, 1 wavefront each),
    # q[lane] (16 bytes: 4 phases of 8 lanes)
    assert c.shared_store.requests == 3
    assert c.shared_store.wavefronts == store_waves + 2 + 4
    assert c.shared_store.bank_conflicts == store_waves - 1
    # loads: s[0] broadcast (1), s[lane * stride] (store_waves), d[lane] (2), q[lane].x (4 bytes a lane,
    # 16 bytes apart: every 8th lane shares a bank -> 4 distinct words in each bank)
    assert c.shared_load.requests == 4
    assert c.shared_load.wavefronts == 1 + store_waves + 2 + 4
    assert c.shared_load.bank_conflicts == (store_waves - 1) + 3
    ncu = c.as_ncu()
    assert ncu["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == store_waves - 1
    assert ncu["smsp__inst_executed_op_shared_ld.sum"] == 4


def test_transposes_hand_counts(cpu):
    n = 64
    x = np.arange(n * n, dtype=np.float32).reshape(n, n)
    blocks = (n // 32) ** 2
    reqs = blocks * 8 * 4          # 8 warps a block (32 x 8 threads), 4 rows each
    rec, (_, y, _) = counted(TRANSPOSES, "naive", (2, 2), (32, 8), [x, np.zeros_like(x), np.int32(n)])
    np.testing.assert_array_equal(y, x.T)
    c = rec.last
    assert (c.global_load.requests, c.global_load.sectors) == (reqs, 4 * reqs)      # rows: coalesced
    assert (c.global_store.requests, c.global_store.sectors) == (reqs, 32 * reqs)   # columns: a sector a lane
    for pad, load_waves in ((0, 32), (1, 1)):
        rec, (_, y, _) = counted(TRANSPOSES, f"tiled<{pad}>", (2, 2), (32, 8), [x, np.zeros_like(x), np.int32(n)],
                                 names=[f"tiled<{pad}>"])
        np.testing.assert_array_equal(y, x.T)
        c = rec.last
        assert c.global_load.sectors == 4 * reqs and c.global_store.sectors == 4 * reqs
        assert (c.shared_store.requests, c.shared_store.wavefronts) == (reqs, reqs)   # tile rows: no conflict
        assert c.shared_load.requests == reqs
        assert c.shared_load.wavefronts == load_waves * reqs                           # a column of tile[32][32]: 32-way
        assert c.shared_load.bank_conflicts == (load_waves - 1) * reqs


def test_every_launch_in_the_block_is_recorded_in_order(cpu):
    mod = kernels.RawModule(code=ACCESS)
    f, g = mod.get_function("copy"), mod.get_function("half_warp")
    x, y = np.ones(256, np.float32), np.zeros(256, np.float32)
    with kernels.memory_counters() as rec:
        f((2,), (128,), (x, y, np.int32(1), np.int32(0)))
        g((1,), (64,), (x, y))
    assert [c.kernel for c in rec.launches] == ["copy", "half_warp"] and rec.available
    f((2,), (128,), (x, y, np.int32(1), np.int32(0)))       # outside the block: not recorded
    assert len(rec.launches) == 2


def test_memory_counters_api_on_every_backend(backend):
    # on cupy the kernels run as usual and nothing is recorded (Nsight Compute is the tool there)
    with kernels.memory_counters() as rec:
        y = launch(ACCESS, "copy", (1,), (32,), [np.arange(32, dtype=np.float32), np.zeros(32, np.float32),
                                                 np.int32(1), np.int32(0)])[1]
    np.testing.assert_array_equal(y, np.arange(32))
    assert rec.available == (backend == "cpu")
    assert (rec.last is not None) == (backend == "cpu")

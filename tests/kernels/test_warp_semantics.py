"""The failure classes the foreign-kernel corpus found (issue 21, benchmarks/foreign_kernels.py), each as a small
kernel of our own: what the GPU computes (the ``backend`` fixture runs them on cupy too), and on the emulator the
diagnostics that stay (racecheck, synccheck, UnsupportedFeatureError)."""
import numpy as np
import pytest

import kernels
from kernel_launch import launch


def line_of(src, needle, nth=0):
    return [i + 1 for i, l in enumerate(src.splitlines()) if needle in l][nth]


# ---------------------------------------------------------------- warp-synchronous code (no __syncwarp)

VOLATILE_LAST_WARP = r'''
extern "C" __global__ void sum512(const float* x, float* out) {
    __shared__ float sdata[512];
    unsigned tid = threadIdx.x;
    sdata[tid] = x[tid];
    __syncthreads();
    for (unsigned s = 256; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {                       // the legacy last-warp unroll: no __syncwarp between the steps
        volatile float* v = sdata;
        v[tid] += v[tid + 32];
        v[tid] += v[tid + 16];
        v[tid] += v[tid + 8];
        v[tid] += v[tid + 4];
        v[tid] += v[tid + 2];
        v[tid] += v[tid + 1];
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}'''


def test_volatile_last_warp_reduction_computes_what_the_gpu_computes(backend):
    # lanes run in lockstep between memory accesses, as a converged warp does (it used to give 56 here)
    out = launch(VOLATILE_LAST_WARP, "sum512", (1,), (512,), [np.ones(512, np.float32), np.zeros(1, np.float32)])[1]
    assert out[0] == 512.0
    x = np.random.default_rng(3).integers(-8, 8, 512).astype(np.float32)
    out = launch(VOLATILE_LAST_WARP, "sum512", (1,), (512,), [x, np.zeros(1, np.float32)])[1]
    assert out[0] == x.sum()


def test_racecheck_reports_warp_synchronous_code_and_names_syncwarp(cpu):
    with kernels.check("racecheck"), pytest.raises(kernels.RaceError) as ei:
        launch(VOLATILE_LAST_WARP, "sum512", (1,), (512,), [np.ones(512, np.float32), np.zeros(1, np.float32)])
    assert "__syncwarp()" in ei.value.message
    assert line_of(VOLATILE_LAST_WARP, "v[tid] += v[tid + 32]") <= ei.value.line <= line_of(VOLATILE_LAST_WARP, "v[tid + 1]")


LANE0_WRITES = r'''
extern "C" __global__ void broadcast_rows(const float* x, float* partial, float* out, int n) {
    int lane = threadIdx.x & 31, row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    for (int j = 0; j < n; j++) {         // one warp per row; lane 0 keeps running partial sums
        float v = x[row * n + j] * (float)(lane == 0);
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
        if (lane == 0) partial[row * n + j] = (j ? partial[row * n + j - 1] : 0.0f) + v;
    }
    // every lane reads what lane 0 wrote last, with no __syncwarp in between
    for (int j = lane; j < n; j += 32) out[row * n + j] = partial[row * n + j] * 2.0f;
}'''


def test_lanes_read_what_lane_zero_just_wrote(backend):
    rows, n = 4, 40
    x = np.random.default_rng(1).standard_normal((rows, n)).astype(np.float32)
    partial, out = launch(LANE0_WRITES, "broadcast_rows", (2,), (64,),
                          [x, np.zeros((rows, n), np.float32), np.zeros((rows, n), np.float32), np.int32(n)])[1:3]
    np.testing.assert_allclose(out, 2 * np.cumsum(x.astype(np.float64), 1), rtol=1e-5, atol=1e-5)


SHIFT = r'''
extern "C" __global__ void rotate(const int* x, int* y) {
    __shared__ volatile int s[32];
    int lane = threadIdx.x;
    s[lane] = x[lane];
    y[lane] = s[(lane + 31) & 31];        // a converged warp stores, then loads: every lane sees the stores
}'''


def test_converged_lanes_see_each_others_stores(backend):
    x = np.arange(32, dtype=np.int32) * 3
    y = launch(SHIFT, "rotate", (1,), (32,), [x, np.zeros(32, np.int32)])[1]
    np.testing.assert_array_equal(y, np.roll(x, 1))


def test_kernels_without_warp_communication_do_not_run_in_lockstep(cpu):
    # the PTX decides (kernels.ptx): a kernel that only reads x and writes y keeps the fast schedule
    src = r'''extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i]; }'''
    mod = kernels.RawModule(code=src)
    f = mod.get_function("scale")
    x, y = np.ones(100, np.float32), np.zeros(100, np.float32)
    assert f._impl.step_flags([x, y, np.float32(2), np.int32(100)]) == 0
    assert f._impl.step_flags([x, x, np.float32(2), np.int32(100)]) != 0    # one array as x and y: a store may meet a load
    assert mod._impl.lockstep["scale"].shared is False


# ---------------------------------------------------------------- barriers

EXITED_THREADS = r'''
extern "C" __global__ void row_max(const float* x, float* out, int cols) {
    __shared__ float best[8];
    int t = threadIdx.x;
    if (t >= cols) return;                // threads past the row leave before the barriers
    float v = x[blockIdx.x * cols + t];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(__activemask(), v, o));
    if ((t & 31) == 0) best[t / 32] = v;
    __syncthreads();
    if (t == 0) {
        float m = best[0];
        for (int w = 1; w < (cols + 31) / 32; w++) m = fmaxf(m, best[w]);
        out[blockIdx.x] = m;
    }
}'''


def test_threads_that_returned_do_not_hold_a_barrier(backend):
    x = np.random.default_rng(2).standard_normal((3, 64)).astype(np.float32)
    out = launch(EXITED_THREADS, "row_max", (3,), (128,), [x, np.zeros(3, np.float32), np.int32(64)])[1]
    np.testing.assert_array_equal(out, x.max(1))


PRODUCER_CONSUMER = r'''
extern "C" __global__ void halves(const float* x, float* y) {
    __shared__ float buf[64];
    int t = threadIdx.x;
    if (t < 64) {                          // producers
        buf[t] = x[t] * 2.0f;
        __syncthreads();
    } else {                               // consumers: another __syncthreads() line, the same barrier 0
        __syncthreads();
        y[t - 64] = buf[t - 64] + 1.0f;
    }
}'''


def test_barrier_reached_at_two_lines_runs_like_the_gpu(backend):
    x = np.arange(64, dtype=np.float32)
    y = launch(PRODUCER_CONSUMER, "halves", (1,), (128,), [x, np.zeros(64, np.float32)])[1]
    np.testing.assert_array_equal(y, 2 * x + 1)


def test_synccheck_reports_the_two_barrier_lines(cpu):
    with kernels.check("synccheck"), pytest.raises(kernels.SyncCheckError) as ei:
        launch(PRODUCER_CONSUMER, "halves", (1,), (128,), [np.zeros(64, np.float32), np.zeros(64, np.float32)])
    assert {ei.value.line, ei.value.line2} == {line_of(PRODUCER_CONSUMER, "__syncthreads();", 0),
                                              line_of(PRODUCER_CONSUMER, "__syncthreads();", 1)}


# ---------------------------------------------------------------- shuffles

PARTIAL_BLOCK = r'''
extern "C" __global__ void scan16(int* x) {
    int lane = threadIdx.x, v = x[lane];
    for (int i = 1; i < 32; i *= 2) {      // a 16-thread block with full-warp masks: lanes 16..31 do not exist
        int n = __shfl_up_sync(0xffffffff, v, i, 32);
        if (lane >= i) v += n;
    }
    x[lane] = v;
}'''


def test_full_mask_in_a_block_smaller_than_a_warp(backend):
    x = np.arange(1, 17, dtype=np.int32)
    out = launch(PARTIAL_BLOCK, "scan16", (1,), (16,), [x])[0]
    np.testing.assert_array_equal(out, np.cumsum(np.arange(1, 17)))


OUT_OF_MASK_SOURCE = r'''
extern "C" __global__ void eight_lanes(const float* x, float* out) {
    float v = x[threadIdx.x];
    unsigned m = __ballot_sync(0xffffffff, threadIdx.x < 8);
    if (threadIdx.x < 8) {
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(m, v, o);   // o = 16, 8 read lanes outside m
        out[threadIdx.x] = v;
    }
}'''


def test_shuffle_from_a_lane_outside_the_mask_is_reported_under_checks(cpu):
    for check in ("racecheck", "memcheck"):
        with kernels.check(check), pytest.raises(kernels.ShuffleMaskError) as ei:
            launch(OUT_OF_MASK_SOURCE, "eight_lanes", (1,), (32,), [np.ones(32, np.float32), np.zeros(8, np.float32)])
        assert ei.value.line == line_of(OUT_OF_MASK_SOURCE, "__shfl_down_sync")
        assert "not in the mask" in ei.value.message and "undefined" in ei.value.message


# ---------------------------------------------------------------- cooperative groups and libcu++

CG_BREADTH = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
struct Pair { double a; float b; int c; };          // 16 bytes: two 8-byte words per shuffle

extern "C" __global__ void wide_tiles(const float* x, float* sums, float* firsts) {
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<64>(block);     // wider than a warp
    float v = x[block.thread_rank()];
    sums[block.thread_rank()] = cg::reduce(tile, v, cg::plus<float>());
    tile.sync();
    firsts[block.thread_rank()] = tile.shfl(v, 0);
}

extern "C" __global__ void struct_shfl(int* out) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    Pair p{warp.thread_rank() * 0.5, (float)warp.thread_rank(), (int)warp.thread_rank() * 3};
    Pair q = warp.shfl_xor(p, 5);
    out[threadIdx.x] = q.c + (int)q.b + (int)(q.a * 2.0);
}

extern "C" __global__ void partitions(const int* x, int* odd_sum, int* label_rank) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    int v = x[threadIdx.x];
    auto half = cg::binary_partition(warp, v & 1);
    int s = cg::reduce(half, v, cg::plus<int>());
    if ((v & 1) && half.thread_rank() == 0) odd_sum[threadIdx.x / 32] = s;
    auto same = cg::labeled_partition(warp, v % 3);
    label_rank[threadIdx.x] = same.thread_rank() * 100 + same.size();
}
'''


def test_tiles_wider_than_a_warp_and_block_tile_memory(backend):
    x = np.random.default_rng(4).integers(-4, 5, 256).astype(np.float32)
    sums, firsts = launch(CG_BREADTH, "wide_tiles", (1,), (256,), [x, np.zeros(256, np.float32),
                                                                       np.zeros(256, np.float32)])[1:]
    np.testing.assert_array_equal(sums, np.repeat(x.reshape(4, 64).sum(1), 64))
    np.testing.assert_array_equal(firsts, np.repeat(x[::64], 64))


def test_cg_shfl_of_a_16_byte_struct(backend):
    out = launch(CG_BREADTH, "struct_shfl", (1,), (64,), [np.zeros(64, np.int32)])[0]
    src = (np.arange(64) % 32) ^ 5
    np.testing.assert_array_equal(out, src * 3 + src + src)


def test_binary_and_labeled_partitions(backend):
    x = np.random.default_rng(5).integers(0, 50, 64).astype(np.int32)
    odd, lab = launch(CG_BREADTH, "partitions", (1,), (64,), [x, np.zeros(2, np.int32), np.zeros(64, np.int32)])[1:]
    w = x.reshape(2, 32)
    np.testing.assert_array_equal(odd, [r[r % 2 == 1].sum() for r in w])
    want = []
    for r in w:
        for i, v in enumerate(r):
            same = np.flatnonzero(r % 3 == v % 3)
            want.append(int(np.searchsorted(same, i)) * 100 + same.size)
    np.testing.assert_array_equal(lab, want)


LIBCUDACXX = r'''
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void barrier_sum(const float* x, float* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float part[4];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    bar.arrive_and_wait();
    auto token = bar.arrive();                 // a second phase through arrive() / wait(token)
    bar.wait(std::move(token));
    if (threadIdx.x == 0) out[0] = part[0] + part[1] + part[2] + part[3];
}

// double-buffered copy through a per-thread pipeline and cuda::memcpy_async
extern "C" __global__ void pipe_copy(const float* x, float* y, int chunks) {
    __shared__ alignas(16) float buf[2][128];
    auto pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(&buf[0][threadIdx.x], &x[threadIdx.x], cuda::aligned_size_t<4>(4), pipe);
    pipe.producer_commit();
    for (int c = 0; c < chunks; c++) {
        if (c + 1 < chunks) {
            pipe.producer_acquire();
            cuda::memcpy_async(&buf[(c + 1) & 1][threadIdx.x], &x[(c + 1) * 128 + threadIdx.x], sizeof(float), pipe);
            pipe.producer_commit();
        }
        if (c + 1 < chunks) cuda::pipeline_consumer_wait_prior<1>(pipe);   // the next chunk may stay in flight
        else cuda::pipeline_consumer_wait_prior<0>(pipe);                   // the last one: WAIT_FOR_LAST
        __syncthreads();
        y[c * 128 + threadIdx.x] = buf[c & 1][127 - threadIdx.x];
        pipe.consumer_release();
        __syncthreads();
    }
}

// one producer warp fills stages of a block-scope pipeline; three consumer warps read them
extern "C" __global__ void roles(const float* x, float* y, int chunks) {
    __shared__ float stage[2][96];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
    auto block = cg::this_thread_block();
    bool producer = threadIdx.x >= 96;
    auto pipe = cuda::make_pipeline(block, &state, producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    for (int c = 0; c < chunks; c++) {
        if (producer) {
            pipe.producer_acquire();
            for (int i = threadIdx.x - 96; i < 96; i += 32)
                cuda::memcpy_async(&stage[c & 1][i], &x[c * 96 + i], sizeof(float), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            y[c * 96 + threadIdx.x] = stage[c & 1][95 - threadIdx.x] * 2.0f;
            pipe.consumer_release();
        }
    }
}
'''


def test_cuda_barrier_arrive_and_wait(backend):
    x = np.arange(128, dtype=np.float32)
    out = launch(LIBCUDACXX, "barrier_sum", (1,), (128,), [x, np.zeros(1, np.float32)])[1]
    assert out[0] == x.sum()


def test_cuda_pipeline_thread_scope_double_buffer(backend):
    x = np.arange(5 * 128, dtype=np.float32)
    y = launch(LIBCUDACXX, "pipe_copy", (1,), (128,), [x, np.zeros_like(x), np.int32(5)])[1]
    np.testing.assert_array_equal(y, x.reshape(5, 128)[:, ::-1].reshape(-1))


def test_async_copies_land_at_their_wait_so_a_missing_wait_shows(cpu):
    # the last chunk waited for with wait_prior<1> (one stage left in flight): the GPU may read the buffer before
    # the copy lands (it did on the H200); the emulator lands copies at their wait, so the bug shows every time
    buggy = LIBCUDACXX.replace("else cuda::pipeline_consumer_wait_prior<0>(pipe);", "else cuda::pipeline_consumer_wait_prior<1>(pipe);")
    x = np.arange(5 * 128, dtype=np.float32)
    y = launch(buggy, "pipe_copy", (1,), (128,), [x, np.zeros_like(x), np.int32(5)])[1]
    np.testing.assert_array_equal(y[:512], x.reshape(5, 128)[:4, ::-1].reshape(-1))
    np.testing.assert_array_equal(y[512:], x[256:384][::-1])     # chunk 2's data, still in that buffer


def test_cuda_pipeline_block_scope_producer_and_consumers(backend):
    x = np.arange(6 * 96, dtype=np.float32)
    y = launch(LIBCUDACXX, "roles", (1,), (128,), [x, np.zeros_like(x), np.int32(6)])[1]
    np.testing.assert_array_equal(y, 2 * x.reshape(6, 96)[:, ::-1].reshape(-1))


def test_grid_sync_of_one_block_and_the_clear_error_for_more(cpu):
    src = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void two_phase(float* x) {
    cg::grid_group grid = cg::this_grid();
    x[threadIdx.x] += 1.0f;
    grid.sync();
    if (threadIdx.x == 0) x[0] = x[blockDim.x - 1];
}'''
    x = np.zeros(32, np.float32)
    launch(src, "two_phase", (1,), (32,), [x])
    assert x[0] == 1
    with pytest.raises(kernels.UnsupportedFeatureError) as ei:
        launch(src, "two_phase", (2,), (32,), [np.zeros(64, np.float32)])
    assert ei.value.line == line_of(src, "grid.sync()") and "grid_group::sync" in ei.value.message


# ---------------------------------------------------------------- builds

ONE_BAD_KERNEL = r'''
extern "C" __global__ void lane_id(unsigned* out) {
    unsigned id;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
    out[threadIdx.x] = id;
}

extern "C" __global__ void plain(float* y) { y[threadIdx.x] = 2.0f * threadIdx.x; }
'''


def test_a_construct_one_kernel_uses_does_not_stop_the_others(backend):
    y = launch(ONE_BAD_KERNEL, "plain", (1,), (32,), [np.zeros(32, np.float32)])[0]
    np.testing.assert_array_equal(y, 2 * np.arange(32))
    if backend == "cpu":
        with pytest.raises(kernels.UnsupportedFeatureError) as ei:
            launch(ONE_BAD_KERNEL, "lane_id", (1,), (32,), [np.zeros(32, np.uint32)])
        assert ei.value.line == line_of(ONE_BAD_KERNEL, "asm volatile") and "asm" in ei.value.message
    else:
        out = launch(ONE_BAD_KERNEL, "lane_id", (1,), (32,), [np.zeros(32, np.uint32)])[0]
        np.testing.assert_array_equal(out, np.arange(32))


def test_cuda_arch_is_the_architecture_nvrtc_compiles_for(backend):
    src = r'''extern "C" __global__ void arch(int* out) {
#ifdef __CUDA_ARCH__
        out[0] = __CUDA_ARCH__;
#endif
    }'''
    assert launch(src, "arch", (1,), (1,), [np.zeros(1, np.int32)])[0][0] == 900
    # cupy compiles for the device whatever -arch says (it appends the device's; measured on the H200)
    assert launch(src, "arch", (1,), (1,), [np.zeros(1, np.int32)], options=("-arch=compute_80",))[0][0] == 900


def test_shared_qualifier_spellings(backend):
    src = r'''
extern "C" __global__ void spell(const float* x, float* y) {
    extern float __shared__ late[];            // qualifier after the type
    __shared__ alignas(16) float aligned[64];  // alignas after __shared__
    late[threadIdx.x] = x[threadIdx.x];
    aligned[threadIdx.x] = 2.0f * x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = late[63 - threadIdx.x] + aligned[threadIdx.x];
}'''
    x = np.arange(64, dtype=np.float32)
    y = launch(src, "spell", (1,), (64,), [x, np.zeros(64, np.float32)], shared_mem=64 * 4)[1]
    np.testing.assert_array_equal(y, x[::-1] + 2 * x)


def test_racecheck_hint_for_threads_of_one_block(cpu):
    src = r'''
extern "C" __global__ void no_barrier(float* y) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    y[threadIdx.x] = s[63 - threadIdx.x];     // another warp's element, with no __syncthreads()
}'''
    with kernels.check("racecheck"), pytest.raises(kernels.RaceError) as ei:
        launch(src, "no_barrier", (1,), (64,), [np.zeros(64, np.float32)])
    assert "__syncthreads()" in ei.value.message and "different blocks" not in ei.value.message

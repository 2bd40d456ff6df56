"""CUB's warp and block collectives (cub::WarpReduce, WarpScan, BlockReduce, BlockScan) from their CCCL
headers: the same kernels on the CPU emulator (kernels/cpu/include/cub) and, marked gpu, on cupy with the
real CUB, each against numpy."""
import numpy as np
import pytest

import kernels

rng = np.random.default_rng(21)

SRC = r'''
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

// one row per logical warp of 16 lanes: sum, max, min, sum of the first 5 lanes, head-segmented sum
extern "C" __global__ void warp_reduce16(const int* in, int* out, const int* heads) {
    using WR = cub::WarpReduce<int, 16>;
    __shared__ typename WR::TempStorage temp[8];
    int t = threadIdx.x, lw = t / 16;
    int v = in[t];
    int s = WR(temp[lw]).Sum(v);
    int mx = WR(temp[lw]).Reduce(v, cuda::maximum<>());
    int mn = WR(temp[lw]).Reduce(v, cuda::minimum<>());   // WarpReduce::Min is CCCL >= 3.1 only
    int part = WR(temp[lw]).Sum(v, 5);
    int seg = WR(temp[lw]).HeadSegmentedSum(v, heads[t]);
    if (t % 16 == 0) { out[lw * 4 + 0] = s; out[lw * 4 + 1] = mx; out[lw * 4 + 2] = mn; out[lw * 4 + 3] = part; }
    out[64 + t] = seg;   // valid at each segment's head
}

extern "C" __global__ void warp_reduce_float(const float* in, float* out) {
    using WR = cub::WarpReduce<float>;
    __shared__ typename WR::TempStorage temp;
    float s = WR(temp).Sum(in[blockIdx.x * 32 + threadIdx.x]);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

extern "C" __global__ void warp_scan(const int* in, int* inc, int* exc, int* agg, int* seeded) {
    using WS = cub::WarpScan<int>;
    __shared__ typename WS::TempStorage temp[4];
    int t = threadIdx.x, w = t / 32, a;
    WS(temp[w]).InclusiveSum(in[t], inc[t], a);
    WS(temp[w]).ExclusiveSum(in[t], exc[t]);
    WS(temp[w]).ExclusiveScan(in[t], seeded[t], 100, cuda::maximum<>());
    if (t % 32 == 0) agg[w] = a;
}

// 2-D block (32 x 4): Sum, max through Reduce, Sum over the first num_valid threads, 4 items per thread
extern "C" __global__ void block_reduce_2d(const float* in, float* out, int num_valid) {
    using BR = cub::BlockReduce<float, 32, cub::BLOCK_REDUCE_WARP_REDUCTIONS, 4>;
    __shared__ typename BR::TempStorage temp;
    int t = threadIdx.y * 32 + threadIdx.x;
    const float* x = in + blockIdx.x * 128;
    float s = BR(temp).Sum(x[t]);
    __syncthreads();
    float m = BR(temp).Reduce(x[t], cuda::maximum<>());
    __syncthreads();
    float p = BR(temp).Sum(x[t], num_valid);
    __syncthreads();
    float items[4] = {x[t], 2 * x[t], 3 * x[t], 4 * x[t]};
    float q = BR(temp).Sum(items);
    if (t == 0) { out[blockIdx.x * 4] = s; out[blockIdx.x * 4 + 1] = m; out[blockIdx.x * 4 + 2] = p;
                  out[blockIdx.x * 4 + 3] = q; }
}

// 80 threads (a partial last warp), private temp storage
extern "C" __global__ void block_reduce_80(const int* in, int* out) {
    int s = cub::BlockReduce<int, 80>().Sum(in[threadIdx.x]);
    if (threadIdx.x == 0) out[0] = s;
}

template <cub::BlockScanAlgorithm ALGO, int THREADS>
__global__ void block_scan(const int* in, int* inc, int* exc, int* agg, int* seeded) {
    using BS = cub::BlockScan<int, THREADS, ALGO>;
    __shared__ typename BS::TempStorage temp;
    int t = threadIdx.x, a;
    BS(temp).InclusiveSum(in[t], inc[t], a);
    __syncthreads();
    BS(temp).ExclusiveSum(in[t], exc[t]);
    __syncthreads();
    BS(temp).ExclusiveScan(in[t], seeded[t], -1000, cuda::maximum<>());
    if (t == 0) agg[0] = a;
}

// the classic tile loop: a running prefix carried between tiles by a callback, 4 items per thread
struct RunningPrefix {
    int total;
    __device__ int operator()(int block_aggregate) { int old = total; total += block_aggregate; return old; }
};
extern "C" __global__ void tiled_exclusive_sum(const int* in, int* out, int tiles) {
    using BS = cub::BlockScan<int, 64>;
    __shared__ typename BS::TempStorage temp;
    RunningPrefix prefix{0};
    for (int tile = 0; tile < tiles; ++tile) {
        int base = tile * 64 * 4 + threadIdx.x * 4;
        int items[4] = {in[base], in[base + 1], in[base + 2], in[base + 3]};
        int chunk = items[0] + items[1] + items[2] + items[3], chunk_prefix;
        BS(temp).ExclusiveSum(chunk, chunk_prefix, prefix);
        __syncthreads();
        int acc = chunk_prefix;
        for (int i = 0; i < 4; ++i) { out[base + i] = acc; acc += items[i]; }
    }
}

extern "C" __global__ void block_scan_items(const int* in, int* out) {
    using BS = cub::BlockScan<int, 96>;
    __shared__ typename BS::TempStorage temp;
    int items[3];
    for (int i = 0; i < 3; ++i) items[i] = in[threadIdx.x * 3 + i];
    BS(temp).InclusiveSum(items, items);
    for (int i = 0; i < 3; ++i) out[threadIdx.x * 3 + i] = items[i];
}
'''

NAMES = ["block_scan<cub::BLOCK_SCAN_RAKING, 128>", "block_scan<cub::BLOCK_SCAN_WARP_SCANS, 128>",
         "block_scan<cub::BLOCK_SCAN_RAKING, 200>", "block_scan<cub::BLOCK_SCAN_WARP_SCANS, 200>"]


@pytest.fixture
def mod(backend):
    return kernels.RawModule(code=SRC, name_expressions=NAMES)


def _go(mod, name, grid, block, args):
    dev = [kernels.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    mod.get_function(name)(grid, block, tuple(dev))
    kernels.synchronize()
    return [kernels.asnumpy(d) if isinstance(a, np.ndarray) else a for a, d in zip(args, dev)]


def test_warp_reduce_logical_warps(mod):
    x = rng.integers(-50, 50, 128).astype(np.int32)
    heads = (rng.random(128) < 0.2).astype(np.int32)
    out = _go(mod, "warp_reduce16", (1,), (128,), [x, np.zeros(64 + 128, np.int32), heads])[1]
    rows = x.reshape(8, 16)
    want = np.stack([rows.sum(1), rows.max(1), rows.min(1), rows[:, :5].sum(1)], 1).reshape(-1)
    np.testing.assert_array_equal(out[:32], want)
    seg = out[64:]
    for w in range(8):
        lanes = x[w * 16:(w + 1) * 16]
        starts = [0] + [i for i in range(1, 16) if heads[w * 16 + i]]
        for a, b in zip(starts, starts[1:] + [16]):
            assert seg[w * 16 + a] == lanes[a:b].sum(), (w, a, b)


def test_warp_reduce_float_sum(mod):
    x = rng.standard_normal(32 * 6).astype(np.float32)
    out = _go(mod, "warp_reduce_float", (6,), (32,), [x, np.zeros(6, np.float32)])[1]
    np.testing.assert_allclose(out, x.reshape(6, 32).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_warp_scan(mod):
    x = rng.integers(-20, 20, 128).astype(np.int32)
    z = lambda n: np.zeros(n, np.int32)  # noqa: E731
    _, inc, exc, agg, seeded = _go(mod, "warp_scan", (1,), (128,), [x, z(128), z(128), z(4), z(128)])
    rows = x.reshape(4, 32)
    np.testing.assert_array_equal(inc, np.cumsum(rows, 1).reshape(-1))
    np.testing.assert_array_equal(exc, (np.cumsum(rows, 1) - rows).reshape(-1))
    np.testing.assert_array_equal(agg, rows.sum(1))
    run_max = np.maximum.accumulate(np.concatenate([np.full((4, 1), 100), rows[:, :-1]], 1), axis=1)
    np.testing.assert_array_equal(seeded, run_max.reshape(-1))


def test_block_reduce_2d_block(mod):
    x = rng.standard_normal(3 * 128).astype(np.float32)
    out = _go(mod, "block_reduce_2d", (3,), (32, 4), [x, np.zeros(12, np.float32), np.int32(70)])[1].reshape(3, 4)
    b = x.reshape(3, 128).astype(np.float64)
    np.testing.assert_allclose(out[:, 0], b.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[:, 1], x.reshape(3, 128).max(1))
    np.testing.assert_allclose(out[:, 2], b[:, :70].sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 3], 10 * b.sum(1), rtol=1e-4, atol=1e-4)


def test_block_reduce_partial_warp_private_storage(mod):
    x = rng.integers(-1000, 1000, 80).astype(np.int32)
    assert _go(mod, "block_reduce_80", (1,), (80,), [x, np.zeros(1, np.int32)])[1][0] == x.sum()


@pytest.mark.parametrize("name", NAMES)
def test_block_scan_algorithms(mod, name):
    n = int(name.split(",")[1].strip(" >"))
    x = rng.integers(-30, 30, n).astype(np.int32)
    z = lambda k: np.zeros(k, np.int32)  # noqa: E731
    _, inc, exc, agg, seeded = _go(mod, name, (1,), (n,), [x, z(n), z(n), z(1), z(n)])
    np.testing.assert_array_equal(inc, np.cumsum(x))
    np.testing.assert_array_equal(exc, np.cumsum(x) - x)
    assert agg[0] == x.sum()
    np.testing.assert_array_equal(seeded, np.maximum.accumulate(np.concatenate([[-1000], x[:-1]])))


def test_block_scan_prefix_callback_over_tiles(mod):
    tiles = 3
    x = rng.integers(0, 9, tiles * 256).astype(np.int32)
    out = _go(mod, "tiled_exclusive_sum", (1,), (64,), [x, np.zeros_like(x), np.int32(tiles)])[1]
    np.testing.assert_array_equal(out, np.cumsum(x) - x)


def test_block_scan_items_per_thread(mod):
    x = rng.integers(-9, 9, 288).astype(np.int32)
    np.testing.assert_array_equal(_go(mod, "block_scan_items", (1,), (96,), [x, np.zeros_like(x)])[1], np.cumsum(x))


def test_block_collective_in_a_block_of_another_size_is_an_error(cpu):
    """CUB only defines BlockReduce<T, 128> for blocks of 128 threads (a smaller block leaves warp
    aggregates unwritten: a silently wrong sum on the GPU); the emulator stops at the call's line."""
    src = '#include <cub/block/block_reduce.cuh>\n' \
          'extern "C" __global__ void k(const float* x, float* y) {\n' \
          '    using BR = cub::BlockReduce<float, 128>;\n' \
          '    __shared__ BR::TempStorage t;\n' \
          '    float s = BR(t).Sum(x[threadIdx.x]);\n' \
          '    if (threadIdx.x == 0) y[0] = s;\n' \
          '}\n'
    f = kernels.RawModule(code=src).get_function("k")
    with pytest.raises(kernels.KernelError) as info:
        f((1,), (64,), (kernels.zeros(64), kernels.zeros(1)))
    assert info.value.line == 5 and "cub::BlockReduce" in info.value.message


def test_cub_umbrella_header_is_refused(backend):
    """<cub/cub.cuh> does not compile under NVRTC on either backend. CCCL >= 3.1 refuses it with an #error,
    reported at the user's #include line; CCCL 3.0 (the H200 machine's) fails inside a host-only header."""
    with pytest.raises(kernels.CompileError) as info:
        kernels.RawModule(code='\n#include <cub/cub.cuh>\nextern "C" __global__ void k(float* y) { y[0] = 1; }\n')
    if "#error" in info.value.message:
        assert info.value.line == 2


def test_temp_storage_reuse_without_a_barrier_is_a_race(cpu):
    """CUB requires __syncthreads() before TempStorage is reused; racecheck names both user lines."""
    src = '#include <cub/block/block_reduce.cuh>\n' \
          'extern "C" __global__ void k(const float* x, float* y) {\n' \
          '    using BR = cub::BlockReduce<float, 128>;\n' \
          '    __shared__ BR::TempStorage t;\n' \
          '    float s = BR(t).Sum(x[threadIdx.x]);\n' \
          '    float m = BR(t).Reduce(x[threadIdx.x], cuda::maximum<>());\n' \
          '    if (threadIdx.x == 0) { y[0] = s; y[1] = m; }\n' \
          '}\n'
    f = kernels.RawModule(code=src).get_function("k")
    args = (kernels.asarray(rng.random(128).astype(np.float32)), kernels.zeros(2))
    with pytest.raises(kernels.RaceError) as info, kernels.check("racecheck"):
        f((1,), (128,), args)
    assert {info.value.line, 5, 6} == {5, 6}

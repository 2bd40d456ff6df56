"""Conformance suite: small kernels, one CUDA feature each, checked against numpy.

Every test runs on the CPU emulator and (marked gpu) on cupy with the same
kernel and the same reference, so the emulator is held to what the GPU does.
"""
from pathlib import Path

import numpy as np
import pytest

import kernels

SEED_LAYERNORM = (Path(__file__).parent / "cuda" / "layernorm_seed.cu").read_text()
rng = np.random.default_rng(1234)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- indexing / launch geometry

def test_vector_add_with_tail(run):
    src = r'''
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}'''
    n = 1000
    a, b = f32(n), f32(n)
    out = run(src, "vadd", ((n + 127) // 128,), (128,), [a, b, np.zeros(n, np.float32), np.int32(n)])
    np.testing.assert_array_equal(out[2], a + b)


def test_3d_thread_and_block_indices(run):
    src = r'''
extern "C" __global__ void ids(int* out) {
    int bid = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int nt = blockDim.x * blockDim.y * blockDim.z;
    int* o = out + 4 * (bid * nt + tid);
    o[0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    o[1] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
    o[2] = blockDim.x + 10 * blockDim.y + 100 * blockDim.z;
    o[3] = gridDim.x + 10 * gridDim.y + 100 * gridDim.z;
}'''
    grid, block = (2, 3, 2), (4, 2, 3)
    nb, nt = 12, 24
    out = run(src, "ids", grid, block, [np.zeros(nb * nt * 4, np.int32)])[0].reshape(nb, nt, 4)
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                b = (bz * 3 + by) * 2 + bx
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            t = (tz * 2 + ty) * 4 + tx
                            assert tuple(out[b, t]) == (tx + 10 * ty + 100 * tz, bx + 10 * by + 100 * bz, 4 + 20 + 300,
                                                        2 + 30 + 200)


def test_warp_size_lane_and_warp_ids(run):
    src = r'''
extern "C" __global__ void lanes(int* lane, int* warp) {
    int t = threadIdx.x;
    lane[t] = t % warpSize;
    warp[t] = t / warpSize;
}'''
    out = run(src, "lanes", (1,), (96,), [np.zeros(96, np.int32), np.zeros(96, np.int32)])
    np.testing.assert_array_equal(out[0], np.arange(96) % 32)
    np.testing.assert_array_equal(out[1], np.arange(96) // 32)


# ---------------------------------------------------------------- shared memory and barriers

def test_static_shared_reverse(run):
    src = r'''
extern "C" __global__ void reverse(const int* in, int* out) {
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    out[blockIdx.x * 256 + t] = s[255 - t];
}'''
    x = np.arange(512, dtype=np.int32)
    out = run(src, "reverse", (2,), (256,), [x, np.zeros_like(x)])
    np.testing.assert_array_equal(out[1], x.reshape(2, 256)[:, ::-1].reshape(-1))


def test_dynamic_shared_memory(run):
    src = r'''
extern "C" __global__ void rotate(const float* in, float* out, int n) {
    extern __shared__ float buf[];
    int t = threadIdx.x;
    buf[t] = in[t];
    buf[n + t] = 2.0f * in[t];
    __syncthreads();
    out[t] = buf[(t + 1) % n] + buf[n + (t + 3) % n];
}'''
    n = 64
    x = f32(n)
    out = run(src, "rotate", (1,), (n,), [x, np.zeros(n, np.float32), np.int32(n)], shared_mem=2 * n * 4)
    np.testing.assert_allclose(out[1], np.roll(x, -1) + 2 * np.roll(x, -3), rtol=1e-6)


def test_syncthreads_count_and_or(run):
    src = r'''
extern "C" __global__ void votes(const int* pred, int* out) {
    int p = pred[threadIdx.x];
    int c = __syncthreads_count(p);
    int a = __syncthreads_and(p);
    int o = __syncthreads_or(p);
    if (threadIdx.x == 0) { out[0] = c; out[1] = a; out[2] = o; }
}'''
    p = (rng.random(200) < 0.3).astype(np.int32)
    out = run(src, "votes", (1,), (200,), [p, np.zeros(3, np.int32)])[1]
    assert list(out) == [p.sum(), 0, 1]
    out = run(src, "votes", (1,), (200,), [np.ones(200, np.int32), np.zeros(3, np.int32)])[1]
    assert list(out) == [200, 1, 1]


def test_shared_tree_reduction_2d_grid(run):
    src = r'''
#define TILE 16
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];   // +1 column: no bank conflicts on the GPU
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}'''
    r, c = 37, 50
    x = f32(r, c)
    out = run(src, "transpose", ((c + 15) // 16, (r + 15) // 16), (16, 16),
              [x, np.zeros((c, r), np.float32), np.int32(r), np.int32(c)])
    np.testing.assert_array_equal(out[1], x.T)


# ---------------------------------------------------------------- warp shuffles and votes

def test_shfl_broadcast_with_width(run):
    src = r'''
extern "C" __global__ void bcast(int* out) {
    int v = threadIdx.x * 3;
    out[threadIdx.x] = __shfl_sync(0xffffffff, v, 5, 8);   // lane 5 of each 8-lane segment
}'''
    out = run(src, "bcast", (1,), (64,), [np.zeros(64, np.int32)])[0]
    lanes = np.arange(64)
    np.testing.assert_array_equal(out, ((lanes // 8) * 8 + 5) * 3)


def test_shfl_up_inclusive_scan(run):
    src = r'''
extern "C" __global__ void scan(const float* in, float* out) {
    int lane = threadIdx.x & 31;
    float v = in[threadIdx.x];
    for (int d = 1; d < 32; d <<= 1) {
        float up = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d) v += up;
    }
    out[threadIdx.x] = v;
}'''
    x = rng.integers(-5, 5, 64).astype(np.float32)
    out = run(src, "scan", (1,), (64,), [x, np.zeros(64, np.float32)])[1]
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(2, 32), axis=1).reshape(-1))


def test_shfl_down_reduction_double(run):
    src = r'''
extern "C" __global__ void wsum(const double* in, double* out) {
    double v = in[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
    if ((threadIdx.x & 31) == 0) out[threadIdx.x / 32] = v;
}'''
    x = rng.standard_normal(128)
    out = run(src, "wsum", (1,), (128,), [x, np.zeros(4)])[1]
    np.testing.assert_allclose(out, x.reshape(4, 32).sum(1), rtol=1e-12)


def test_shfl_xor_butterfly_width16_int(run):
    src = r'''
extern "C" __global__ void bfly(const int* in, int* out) {
    int v = in[threadIdx.x];
    for (int m = 8; m > 0; m >>= 1) v = max(v, __shfl_xor_sync(0xffffffff, v, m, 16));
    out[threadIdx.x] = v;
}'''
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    out = run(src, "bfly", (1,), (64,), [x, np.zeros(64, np.int32)])[1]
    np.testing.assert_array_equal(out, np.repeat(x.reshape(4, 16).max(1), 16))


def test_shfl_half_and_bfloat16(run):
    src = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void sh(const __half* h, __half* ho, const __nv_bfloat16* b, __nv_bfloat16* bo) {
    int t = threadIdx.x;
    ho[t] = __shfl_xor_sync(0xffffffff, h[t], 1);
    bo[t] = __shfl_down_sync(0xffffffff, b[t], 2);
}'''
    h = f32(32).astype(np.float16)
    braw = rng.integers(0, 1 << 16, 32).astype(np.uint16)
    out = run(src, "sh", (1,), (32,), [h, np.zeros(32, np.float16), braw, np.zeros(32, np.uint16)])
    np.testing.assert_array_equal(out[1], h[np.arange(32) ^ 1])
    expect = np.where(np.arange(32) + 2 < 32, braw[np.minimum(np.arange(32) + 2, 31)], braw)
    np.testing.assert_array_equal(out[3], expect)


def test_ballot_any_all(run):
    src = r'''
extern "C" __global__ void votes(const int* p, unsigned* ballot, int* any_, int* all_) {
    int v = p[threadIdx.x];
    unsigned b = __ballot_sync(0xffffffff, v);
    int a = __any_sync(0xffffffff, v), l = __all_sync(0xffffffff, v);
    if ((threadIdx.x & 31) == 0) { int w = threadIdx.x / 32; ballot[w] = b; any_[w] = a; all_[w] = l; }
}'''
    p = np.zeros(96, np.int32)
    p[3] = p[17] = p[31] = 1          # warp 0: some
    p[64:] = 1                        # warp 2: all, warp 1: none
    out = run(src, "votes", (1,), (96,), [p, np.zeros(3, np.uint32), np.zeros(3, np.int32), np.zeros(3, np.int32)])
    assert list(out[1]) == [(1 << 3) | (1 << 17) | (1 << 31), 0, 0xFFFFFFFF]
    assert list(out[2]) == [1, 0, 1] and list(out[3]) == [0, 0, 1]


def test_warp_reduce_and_match_intrinsics(run):
    src = r'''
extern "C" __global__ void red(const int* v, int* o) {
    int x = v[threadIdx.x];
    int* r = o + 8 * threadIdx.x;
    r[0] = __reduce_add_sync(0xffffffff, x);
    r[1] = __reduce_min_sync(0xffffffff, x);
    r[2] = __reduce_max_sync(0xffffffff, x);
    r[3] = (int)__reduce_max_sync(0xffffffff, (unsigned)x);
    if (threadIdx.x < 16) r[4] = (int)__reduce_or_sync(0x0000ffff, (unsigned)x & 0xff);
    r[5] = (int)__match_any_sync(0xffffffff, x % 3);
    int pred = -1;
    r[6] = (int)__match_all_sync(0xffffffff, x / 1000, &pred);
    r[7] = pred;
}'''
    v = rng.integers(-500, 500, 32).astype(np.int32)
    out = run(src, "red", (1,), (32,), [v, np.zeros(32 * 8, np.int32)])[1].reshape(32, 8)
    assert (out[:, 0] == v.sum()).all() and (out[:, 1] == v.min()).all() and (out[:, 2] == v.max()).all()
    assert (out[:, 3] == np.array([v.view(np.uint32).max()], np.uint32).view(np.int32)[0]).all()
    lo = np.bitwise_or.reduce(v[:16].view(np.uint32) & 0xFF)
    assert (out[:16, 4] == lo).all()
    rem = np.fmod(v, 3)                    # C's % truncates toward zero
    for i in range(32):
        same = sum(1 << j for j in range(32) if rem[j] == rem[i])
        assert np.uint32(out[i, 5]) == np.uint32(same)
    assert (out[:, 6] == -1).all() and (out[:, 7] == 1).all()        # |x| < 1000: x / 1000 == 0 for all


def test_syncwarp_half_warp_mask(run):
    src = r'''
extern "C" __global__ void halves(int* out) {
    __shared__ int s[32];
    int lane = threadIdx.x;
    if (lane < 16) {
        s[lane] = lane * lane;
        __syncwarp(0x0000ffff);
        out[lane] = s[15 - lane];
    } else {
        int v = __shfl_sync(0xffff0000, lane, 16);
        out[lane] = v;
    }
}'''
    out = run(src, "halves", (1,), (32,), [np.zeros(32, np.int32)])[0]
    np.testing.assert_array_equal(out[:16], (15 - np.arange(16)) ** 2)
    np.testing.assert_array_equal(out[16:], 16)


def test_syncwarp_from_different_branches(run):
    src = r'''
extern "C" __global__ void branches(int* out) {
    __shared__ int s[32];
    int lane = threadIdx.x;
    if (lane % 2) { s[lane] = 2 * lane; __syncwarp(); }
    else          { s[lane] = 3 * lane; __syncwarp(); }
    out[lane] = s[lane ^ 1];
}'''
    out = run(src, "branches", (1,), (32,), [np.zeros(32, np.int32)])[0]
    other = np.arange(32) ^ 1
    np.testing.assert_array_equal(out, np.where(other % 2, 2 * other, 3 * other))


def test_partial_last_warp(run):
    src = r'''
extern "C" __global__ void partial(const int* in, int* out) {
    int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    int active = min(32, (int)blockDim.x - warp * 32);
    unsigned mask = active == 32 ? 0xffffffffu : ((1u << active) - 1);
    int v = in[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) {
        int o = __shfl_down_sync(mask, v, off);
        if (lane + off < active) v += o;
    }
    if (lane == 0) out[warp] = v;
}'''
    x = rng.integers(0, 100, 40).astype(np.int32)
    out = run(src, "partial", (1,), (40,), [x, np.zeros(2, np.int32)])[1]
    assert list(out) == [x[:32].sum(), x[32:].sum()]


# ---------------------------------------------------------------- cooperative groups

CG_HEAD = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
'''


def test_cg_thread_block(run):
    src = CG_HEAD + r'''
extern "C" __global__ void tb(int* out) {
    cg::thread_block b = cg::this_thread_block();
    __shared__ int s[128];
    s[b.thread_rank()] = b.thread_rank();
    b.sync();
    int r = b.thread_rank();
    out[r] = s[b.size() - 1 - r] + 1000 * b.group_index().x + 100000 * (b.thread_index().y);
}'''
    out = run(src, "tb", (1,), (32, 4), [np.zeros(128, np.int32)])[0]
    r = np.arange(128)
    np.testing.assert_array_equal(out, (127 - r) + 100000 * (r // 32))


def test_cg_tiled_partition_reduce(run):
    src = CG_HEAD + r'''
extern "C" __global__ void tiles(const float* in, float* sums, float* mins, float* maxs, int* meta) {
    cg::thread_block b = cg::this_thread_block();
    cg::thread_block_tile<16> t = cg::tiled_partition<16>(b);
    float v = in[b.thread_rank()];
    float s = cg::reduce(t, v, cg::plus<float>());
    float lo = cg::reduce(t, v, cg::less<float>());
    float hi = cg::reduce(t, v, cg::greater<float>());
    if (t.thread_rank() == 0) {
        sums[t.meta_group_rank()] = s; mins[t.meta_group_rank()] = lo; maxs[t.meta_group_rank()] = hi;
    }
    if (b.thread_rank() == 0) { meta[0] = t.meta_group_size(); meta[1] = t.size(); meta[2] = t.num_threads(); }
}'''
    x = rng.integers(-50, 50, 96).astype(np.float32)
    z = lambda: np.zeros(6, np.float32)
    out = run(src, "tiles", (1,), (96,), [x, z(), z(), z(), np.zeros(3, np.int32)])
    g = x.reshape(6, 16)
    np.testing.assert_array_equal(out[1], g.sum(1))
    np.testing.assert_array_equal(out[2], g.min(1))
    np.testing.assert_array_equal(out[3], g.max(1))
    assert list(out[4]) == [6, 16, 16]


def test_cg_tile_shuffles_and_votes(run):
    src = CG_HEAD + r'''
extern "C" __global__ void tile8(const int* in, int* out) {
    auto t = cg::tiled_partition<8>(cg::this_thread_block());
    int v = in[threadIdx.x];
    int* o = out + 7 * threadIdx.x;
    o[0] = t.shfl(v, 2);
    o[1] = t.shfl_down(v, 1);
    o[2] = t.shfl_up(v, 1);
    o[3] = t.shfl_xor(v, 4);
    o[4] = t.any(v > 90);
    o[5] = t.all(v >= 0);
    o[6] = (int)t.ballot(v % 2 == 0);
}'''
    x = rng.integers(0, 100, 32).astype(np.int32)
    out = run(src, "tile8", (1,), (32,), [x, np.zeros(32 * 7, np.int32)])[1].reshape(32, 7)
    for i in range(32):
        base, r = (i // 8) * 8, i % 8
        seg = x[base:base + 8]
        assert out[i, 0] == seg[2]
        assert out[i, 1] == (seg[r + 1] if r + 1 < 8 else seg[r])
        assert out[i, 2] == (seg[r - 1] if r >= 1 else seg[r])
        assert out[i, 3] == seg[r ^ 4]
        assert out[i, 4] == int((seg > 90).any()) and out[i, 5] == 1
        assert out[i, 6] == sum(1 << k for k in range(8) if seg[k] % 2 == 0)


# ---------------------------------------------------------------- vector types

def test_vector_types_layout_and_make(run):
    src = r'''
#include <cuda_fp16.h>
extern "C" __global__ void layout(int* o, float* f) {
    o[0] = sizeof(float4); o[1] = alignof(float4); o[2] = sizeof(float3); o[3] = alignof(float3);
    o[4] = sizeof(float2); o[5] = alignof(float2); o[6] = sizeof(int4); o[7] = alignof(int4);
    o[8] = sizeof(double2); o[9] = alignof(double2); o[10] = sizeof(uint4); o[11] = sizeof(half2);
    o[12] = sizeof(int2); o[13] = alignof(int2);
    int2 a = make_int2(3, 4); int4 b = make_int4(1, 2, 3, 4); uint4 u = make_uint4(5u, 6u, 7u, 8u);
    double2 d = make_double2(0.5, 0.25); float2 g = make_float2(1.5f, 2.5f); float3 h = make_float3(1, 2, 3);
    half2 hh = __floats2half2_rn(1.5f, -2.0f);
    f[0] = a.x * a.y + b.w + u.z; f[1] = (float)(d.x + d.y); f[2] = g.x * g.y + h.z;
    f[3] = __low2float(hh) + __high2float(hh);
}'''
    out = run(src, "layout", (1,), (1,), [np.zeros(14, np.int32), np.zeros(4, np.float32)])
    assert list(out[0]) == [16, 16, 12, 4, 8, 8, 16, 16, 16, 16, 16, 4, 8, 8]
    np.testing.assert_array_equal(out[1], [12 + 4 + 7, 0.75, 3.75 + 3, -0.5])


def test_float4_vectorised_copy(run):
    src = r'''
extern "C" __global__ void scale4(const float* in, float* out, int n4, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        v.x *= a; v.y *= a; v.z *= a; v.w *= a;
        reinterpret_cast<float4*>(out)[i] = v;
    }
}'''
    x = f32(256)
    out = run(src, "scale4", (2,), (32,), [x, np.zeros(256, np.float32), np.int32(64), np.float32(3.0)])
    np.testing.assert_array_equal(out[1], x * np.float32(3.0))


# ---------------------------------------------------------------- half / bfloat16

def _bf16_round(x):
    """float32 -> bfloat16 bits, round to nearest even (what the GPU does)."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((b[nan] >> 16) | 0x40).astype(np.uint16)
    return r


HALF_VALUES = np.array([0.0, -0.0, 1.0, 1.0009765625, 1.00048828125, 1.00146484375, 65504.0, 65519.0, 65520.0,
                        1e-8, 2.98e-8, 5.96e-8, 6.1e-5, 3.0e-5, -2.5, np.inf, -np.inf, 1e10, 0.1, 1 / 3],
                       dtype=np.float32)


def test_half_conversion_round_to_nearest_even(run):
    src = r'''
#include <cuda_fp16.h>
extern "C" __global__ void conv(const float* in, __half* h, __half* h2, float* back, int n) {
    int i = threadIdx.x;
    if (i < n) { h[i] = __float2half(in[i]); h2[i] = __float2half_rn(in[i]); back[i] = __half2float(h[i]); }
}'''
    x = np.concatenate([HALF_VALUES, f32(44) * 1000])
    n = x.size
    out = run(src, "conv", (1,), (64,), [x, np.zeros(n, np.float16), np.zeros(n, np.float16),
                                         np.zeros(n, np.float32), np.int32(n)])
    with np.errstate(over="ignore"):   # numpy's float16 cast is the RNE reference (overflow -> inf)
        ref = x.astype(np.float16)
    np.testing.assert_array_equal(out[1].view(np.uint16), ref.view(np.uint16))
    np.testing.assert_array_equal(out[2], out[1])
    np.testing.assert_array_equal(out[3], ref.astype(np.float32))


def test_bfloat16_conversion_round_to_nearest_even(run):
    src = r'''
#include <cuda_bf16.h>
extern "C" __global__ void conv(const float* in, __nv_bfloat16* b, float* back, int n) {
    int i = threadIdx.x;
    if (i < n) { b[i] = __float2bfloat16(in[i]); back[i] = __bfloat162float(b[i]); }
}'''
    x = np.concatenate([HALF_VALUES, np.array([1.00390625, 1.01171875, 3.0e38, np.nan], np.float32), f32(40)])
    n = x.size
    out = run(src, "conv", (1,), (64,), [x, np.zeros(n, np.uint16), np.zeros(n, np.float32), np.int32(n)])
    expect = _bf16_round(x)
    ok = ~np.isnan(x)
    np.testing.assert_array_equal(out[1][ok], expect[ok])
    assert np.isnan(out[2][~ok]).all()
    np.testing.assert_array_equal(out[2][ok], (expect[ok].astype(np.uint32) << 16).view(np.float32))


def test_half_arithmetic(run):
    src = r'''
#include <cuda_fp16.h>
extern "C" __global__ void arith(const __half* a, const __half* b, __half* o) {
    int i = threadIdx.x;
    __half x = a[i], y = b[i];
    o[5 * i + 0] = __hadd(x, y);
    o[5 * i + 1] = __hmul(x, y);
    o[5 * i + 2] = x - y;
    o[5 * i + 3] = __hfma(x, y, x);
    o[5 * i + 4] = hexp(__hmul(x, __float2half(0.25f)));
}'''
    a, b = f32(32).astype(np.float16), f32(32).astype(np.float16)
    out = run(src, "arith", (1,), (32,), [a, b, np.zeros(32 * 5, np.float16)])[2].reshape(32, 5)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a * b)
    np.testing.assert_array_equal(out[:, 2], a - b)
    np.testing.assert_array_equal(out[:, 3], (a.astype(np.float64) * b + a).astype(np.float16))
    np.testing.assert_allclose(out[:, 4].astype(np.float32), np.exp((a * np.float16(0.25)).astype(np.float32)),
                               rtol=2e-3)


def test_bfloat16_arithmetic(run):
    src = r'''
#include <cuda_bf16.h>
extern "C" __global__ void arith(const float* a, const float* b, float* o) {
    int i = threadIdx.x;
    __nv_bfloat16 x = __float2bfloat16(a[i]), y = __float2bfloat16(b[i]);
    o[2 * i] = __bfloat162float(__hadd(x, y));
    o[2 * i + 1] = __bfloat162float(x * y);
}'''
    a, b = f32(32), f32(32)
    out = run(src, "arith", (1,), (32,), [a, b, np.zeros(64, np.float32)])[2].reshape(32, 2)
    tof = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32)
    xa, xb = tof(_bf16_round(a)), tof(_bf16_round(b))
    np.testing.assert_array_equal(out[:, 0], tof(_bf16_round(xa + xb)))
    np.testing.assert_array_equal(out[:, 1], tof(_bf16_round(xa * xb)))


# ---------------------------------------------------------------- math and bit intrinsics

def test_float_math_functions(run):
    src = r'''
extern "C" __global__ void m(const float* x, const float* y, float* o, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float* r = o + 16 * i;
    r[0] = rsqrtf(fabsf(a) + 1.0f); r[1] = sqrtf(fabsf(a)); r[2] = __expf(a); r[3] = expf(a);
    r[4] = exp2f(a); r[5] = __logf(fabsf(a) + 1.0f); r[6] = logf(fabsf(a) + 1.0f); r[7] = fmaxf(a, b);
    r[8] = fminf(a, b); r[9] = __fdividef(a, b + 4.0f); r[10] = fmaf(a, b, 1.0f); r[11] = __fmaf_rn(a, b, -1.0f);
    r[12] = __frcp_rn(b + 4.0f); r[13] = __saturatef(a); r[14] = copysignf(2.0f, b); r[15] = tanhf(a);
}'''
    n = 64
    x, y = f32(n), f32(n)
    o = run(src, "m", (1,), (n,), [x, y, np.zeros(16 * n, np.float32), np.int32(n)])[2].reshape(n, 16)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    ref = np.stack([1 / np.sqrt(np.abs(x64) + 1), np.sqrt(np.abs(x64)), np.exp(x64), np.exp(x64), np.exp2(x64),
                    np.log(np.abs(x64) + 1), np.log(np.abs(x64) + 1), np.maximum(x64, y64), np.minimum(x64, y64),
                    x64 / (y64 + 4), x64 * y64 + 1, x64 * y64 - 1, 1 / (y64 + 4), np.clip(x64, 0, 1),
                    np.copysign(2.0, y64), np.tanh(x64)], axis=1)
    np.testing.assert_allclose(o, ref, rtol=2e-6, atol=2e-6)   # GPU fast intrinsics are within a few ulp too


def test_special_values_and_math_constants(run):
    src = r'''
#include <math_constants.h>
extern "C" __global__ void sv(const float* x, int* o, float* f) {
    int i = threadIdx.x;
    o[3 * i] = isnan(x[i]); o[3 * i + 1] = isinf(x[i]); o[3 * i + 2] = isfinite(x[i]);
    if (i == 0) { f[0] = CUDART_INF_F; f[1] = CUDART_NAN_F; f[2] = CUDART_PI_F; f[3] = __saturatef(CUDART_NAN_F); }
}'''
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -3.5, 1e-40, np.float32(3e38)], np.float32)
    out = run(src, "sv", (1,), (8,), [x, np.zeros(24, np.int32), np.zeros(4, np.float32)])
    o = out[1].reshape(8, 3)
    np.testing.assert_array_equal(o[:, 0] != 0, np.isnan(x))
    np.testing.assert_array_equal(o[:, 1] != 0, np.isinf(x))
    np.testing.assert_array_equal(o[:, 2] != 0, np.isfinite(x))
    assert np.isposinf(out[2][0]) and np.isnan(out[2][1]) and abs(out[2][2] - np.pi) < 1e-6 and out[2][3] == 0


def test_min_max_overloads_and_bitcasts(run):
    src = r'''
extern "C" __global__ void mm(int* o, unsigned* u, long long* l, float* f) {
    o[0] = min(-3, 5); o[1] = max(-3, 5);
    u[0] = min(7u, 9u); u[1] = max(7u, 9u);
    l[0] = min(-(1LL << 40), 3LL); l[1] = max((1LL << 40), 3LL);
    f[0] = min(1.5f, -2.5f); f[1] = max(1.5f, -2.5f);
    o[2] = __float_as_int(1.0f); u[2] = __float_as_uint(-2.0f); f[2] = __int_as_float(0x40490fdb);
    f[3] = __uint_as_float(0x3f800000u);
    o[3] = __popc(0xF0F0u); o[4] = __clz(1); o[5] = __ffs(8); u[3] = __brev(1u);
}'''
    out = run(src, "mm", (1,), (1,), [np.zeros(6, np.int32), np.zeros(4, np.uint32), np.zeros(2, np.int64),
                                      np.zeros(4, np.float32)])
    assert list(out[0]) == [-3, 5, 0x3F800000, 8, 31, 4]
    assert list(out[1]) == [7, 9, 0xC0000000, 0x80000000]
    assert list(out[2]) == [-(1 << 40), 1 << 40]
    np.testing.assert_array_equal(out[3], np.array([-2.5, 1.5, np.float32(3.14159274), 1.0], np.float32))


def test_load_store_cache_hints(run):
    src = r'''
extern "C" __global__ void hints(const float* __restrict__ a, float* __restrict__ o) {
    int i = threadIdx.x;
    float v = __ldg(a + i) + __ldcs(a + i) + __ldcg(a + i) + __ldlu(a + i);
    __stcs(o + i, v);
    __stcg(o + 32 + i, 2.0f * v);
    __stwt(o + 64 + i, 3.0f * v);
}'''
    a = f32(32)
    out = run(src, "hints", (1,), (32,), [a, np.zeros(96, np.float32)])[1]
    v = a * 4
    np.testing.assert_allclose(out, np.concatenate([v, 2 * v, 3 * v]), rtol=1e-6)


# ---------------------------------------------------------------- atomics, fences, clock

def test_atomic_add_all_types(run):
    src = r'''
extern "C" __global__ void hist(const int* bins, int* hi, unsigned* hu, float* hf, double* hd,
                                unsigned long long* hull) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int b = bins[i];
    atomicAdd(hi + b, 1);
    atomicAdd(hu + b, 2u);
    atomicAdd(hf + b, 0.5f);
    atomicAdd(hd + b, 0.25);
    atomicAdd(hull + b, 3ull);
}'''
    bins = rng.integers(0, 8, 512).astype(np.int32)
    out = run(src, "hist", (4,), (128,), [bins, np.zeros(8, np.int32), np.zeros(8, np.uint32),
                                          np.zeros(8, np.float32), np.zeros(8), np.zeros(8, np.uint64)])
    c = np.bincount(bins, minlength=8)
    np.testing.assert_array_equal(out[1], c)
    np.testing.assert_array_equal(out[2], 2 * c)
    np.testing.assert_array_equal(out[3], 0.5 * c)
    np.testing.assert_array_equal(out[4], 0.25 * c)
    np.testing.assert_array_equal(out[5], 3 * c)


def test_other_atomics(run):
    src = r'''
extern "C" __global__ void atom(const int* v, int* o, unsigned* u) {
    int x = v[threadIdx.x];
    atomicMax(o + 0, x);
    atomicMin(o + 1, x);
    atomicSub(o + 2, 1);
    atomicAnd(o + 3, ~(1 << (threadIdx.x % 8)));
    atomicOr(o + 4, 1 << (threadIdx.x % 16));
    atomicXor(o + 5, 1);
    atomicInc(u + 0, 9u);                 // wraps to 0 after 9
    atomicMax(u + 1, (unsigned)x);
    if (threadIdx.x == 5) { atomicExch(o + 6, x); atomicCAS(o + 7, 0, 42); atomicCAS(o + 8, 1, 42); }
}'''
    x = rng.integers(0, 10000, 64).astype(np.int32)
    o = np.array([-1, 1 << 30, 100, -1, 0, 0, 0, 0, 0], np.int32)
    out = run(src, "atom", (1,), (64,), [x, o, np.zeros(2, np.uint32)])
    assert list(out[1]) == [x.max(), x.min(), 36, ~0xFF, 0xFFFF, 0, x[5], 42, 0]
    assert list(out[2]) == [64 % 10, x.max()]


def test_threadfence_and_clock64(run):
    src = r'''
extern "C" __global__ void clk(long long* o, int* flag) {
    long long t0 = clock64();
    flag[threadIdx.x] = 1;
    __threadfence(); __threadfence_block();
    long long t1 = clock64();
    o[threadIdx.x] = t1 - t0;
}'''
    out = run(src, "clk", (1,), (32,), [np.zeros(32, np.int64), np.zeros(32, np.int32)])
    assert (out[0] >= 0).all() and out[1].sum() == 32


# ---------------------------------------------------------------- C++ features

def test_templates_namespaces_name_expressions(run):
    src = r'''
namespace course {
namespace {
template <typename T, int K>
__device__ __forceinline__ T times(T v) { return v * K; }
}
struct __align__(16) Pair { float a, b, c, d; };
template <typename T, int K>
__global__ void __launch_bounds__(128) scale(const T* __restrict__ in, T* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int r = 0; r < 1; ++r)
        if (i < n) out[i] = times<T, K>(in[i]) + (T)(sizeof(Pair) == 16 && alignof(Pair) == 16 ? 0 : 1000);
}
}  // namespace course
'''
    x = f32(100)
    names = ["course::scale<float, 3>", "course::scale<double, 2>"]
    out = run(src, names[0], (1,), (128,), [x, np.zeros(100, np.float32), np.int32(100)], name_expressions=names)
    np.testing.assert_array_equal(out[1], x * np.float32(3))
    xd = x.astype(np.float64)
    out = run(src, names[1], (1,), (128,), [xd, np.zeros(100), np.int32(100)], name_expressions=names)
    np.testing.assert_array_equal(out[1], xd * 2)


def test_device_printf(run, capfd):
    src = r'''
extern "C" __global__ void hello(int n) {
    if (threadIdx.x < 2) printf("block %d thread %d n=%d x=%.2f\n", blockIdx.x, threadIdx.x, n, 1.5f);
}'''
    run(src, "hello", (2,), (32,), [np.int32(7)])
    text = capfd.readouterr().out
    for b in range(2):
        for t in range(2):
            assert f"block {b} thread {t} n=7 x=1.50" in text


def test_shfl_64bit_and_half2(run):
    src = r'''
#include <cuda_fp16.h>
extern "C" __global__ void wide(const unsigned long long* a, unsigned long long* o, const __half2* h, __half2* ho) {
    int t = threadIdx.x;
    o[t] = __shfl_sync(0xffffffff, a[t], 31 - t);
    ho[t] = __shfl_up_sync(0xffffffff, h[t], 3);
}'''
    a = rng.integers(0, 2**63, 32, dtype=np.uint64)
    h = f32(64).astype(np.float16)
    out = run(src, "wide", (1,), (32,), [a, np.zeros(32, np.uint64), h, np.zeros(64, np.float16)])
    np.testing.assert_array_equal(out[1], a[::-1])
    pairs = h.reshape(32, 2)
    src_lane = np.where(np.arange(32) >= 3, np.arange(32) - 3, np.arange(32))
    np.testing.assert_array_equal(out[3].reshape(32, 2), pairs[src_lane])


def test_softmax_warp_per_row_half_input(run):
    """Seed 004: stable softmax, one warp per row, fp16 in, fp32 accumulation."""
    src = r'''
#include <cuda_fp16.h>
#include <math_constants.h>
template <typename T>
__global__ void softmax_rows(const T* __restrict__ x, float* __restrict__ y, int M, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize, lane = threadIdx.x % warpSize;
    if (warp >= M) return;                      // whole warps leave together
    const T* row = x + (size_t)warp * K;
    float m = -CUDART_INF_F;
    for (int j = lane; j < K; j += warpSize) m = fmaxf(m, __half2float(row[j]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    float s = 0.0f;
    for (int j = lane; j < K; j += warpSize) s += __expf(__half2float(row[j]) - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    for (int j = lane; j < K; j += warpSize) y[(size_t)warp * K + j] = __expf(__half2float(row[j]) - m) / s;
}'''
    M, K = 10, 77
    x = (f32(M, K) * 4).astype(np.float16)
    x[3] = 7.0                                   # all equal -> 1/K
    x[4, 5] = 60000.0                            # huge value: no overflow
    name = "softmax_rows<__half>"
    out = run(src, name, (3,), (128,), [x, np.zeros((M, K), np.float32), np.int32(M), np.int32(K)],
              name_expressions=[name])[1]
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_barrier_in_loop_and_2d_block_shuffle(run):
    src = r'''
extern "C" __global__ void steps(int* out, int rounds) {
    __shared__ int buf[2][64];
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    buf[0][t] = t;
    __syncthreads();
    for (int r = 0; r < rounds; ++r) {
        int cur = r & 1;
        buf[cur ^ 1][t] = buf[cur][(t + 1) % 64] + __shfl_xor_sync(0xffffffff, t, 1);
        __syncthreads();
    }
    out[t] = buf[rounds & 1][t];
}'''
    out = run(src, "steps", (1,), (16, 4), [np.zeros(64, np.int32), np.int32(5)])[0]
    ref = np.arange(64)
    for _ in range(5):
        ref = np.roll(ref, -1) + (np.arange(64) ^ 1)
    np.testing.assert_array_equal(out, ref)


# ---------------------------------------------------------------- the seed lesson kernel

def layernorm_ref(x, g, b, eps):
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    var = x64.var(1, keepdims=True)
    return (x64 - mu) / np.sqrt(var + eps) * g + b


@pytest.mark.parametrize("M,N", [(7, 1000), (3, 4096), (2, 100)])
def test_seed_layernorm_matches_float64(run, M, N):
    x, g, b = f32(M, N), f32(N), f32(N)
    out = run(SEED_LAYERNORM, "layernorm_kernel<256>", (M,), (256,),
              [x, g, b, np.zeros_like(x), np.int32(M), np.int32(N), np.float32(1e-5)],
              name_expressions=["layernorm_kernel<256>"])
    np.testing.assert_allclose(out[3], layernorm_ref(x, g, b, 1e-5), rtol=1e-4, atol=1e-4)


def test_seed_layernorm_clean_under_all_checks(cpu):
    M, N = 2, 300
    x, g, b = f32(M, N), f32(N), f32(N)
    y = np.zeros_like(x)
    mod = kernels.RawModule(code=SEED_LAYERNORM, name_expressions=["layernorm_kernel<256>"])
    with kernels.check("memcheck", "racecheck"):
        mod.get_function("layernorm_kernel<256>")((M,), (256,), (x, g, b, y, np.int32(M), np.int32(N),
                                                                 np.float32(1e-5)))
    np.testing.assert_allclose(y, layernorm_ref(x, g, b, 1e-5), rtol=1e-4, atol=1e-4)


def test_inline_ptx_special_register_reads(run):
    """`asm("mov.u32 %0, %%laneid;" : "=r"(x))` and the lane masks / thread indices read the same way."""
    src = r'''
extern "C" __global__ void sregs(unsigned* out) {
    unsigned lt, lane, le, ge; int tx;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(le));
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    asm("mov.u32 %0, %%tid.x;" : "=r"(tx));
    unsigned* o = out + 5 * threadIdx.x;
    o[0] = lt; o[1] = lane; o[2] = le; o[3] = ge; o[4] = tx;
}'''
    r = run(src, "sregs", (1,), (64,), [np.zeros(64 * 5, np.uint32)])[0].reshape(64, 5).astype(np.uint64)
    lane = np.arange(64, dtype=np.uint64) % 32
    full = np.uint64(0xFFFFFFFF)
    np.testing.assert_array_equal(r[:, 0], (np.uint64(1) << lane) - 1)
    np.testing.assert_array_equal(r[:, 1], lane)
    np.testing.assert_array_equal(r[:, 2], ((np.uint64(2) << lane) - 1) & full)
    np.testing.assert_array_equal(r[:, 3], ~((np.uint64(1) << lane) - 1) & full)
    np.testing.assert_array_equal(r[:, 4], np.arange(64))

"""Red-team suite: CUDA kernels written the way other people write them (llm.c dev/cuda style,
the classic reduction series, transposes, tiled GEMM, fp16/bf16 templates, warp intrinsics ...),
each checked against a numpy reference on every backend, and on the CPU emulator also under
memcheck + racecheck (no false diagnostics). Planted-bug variants check the diagnostic kind and line."""
import contextlib

import numpy as np
import pytest

import kernels
from kernel_launch import launch


RNG = np.random.default_rng(1234)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def line_of(src, needle):
    hits = [i for i, l in enumerate(src.splitlines(), 1) if needle in l]
    assert hits, needle
    return hits[0]


CASES = {}
SANITIZED = []


def case(name, src, entry, grid, block, make, ref, shared_mem=0, names=None, options=(), rtol=1e-4, atol=1e-5,
         order_dependent=False, sanitize=True, gpu_atol=None):
    # order_dependent: the output's order comes from an atomic ticket (legal, nondeterministic on the
    # GPU too); racecheck's schedule comparison reports that by design (docs/emulator.md, Known gaps).
    CASES[name] = dict(src=src, entry=entry, grid=grid, block=block, make=make, ref=ref, shared_mem=shared_mem,
                       names=names, options=options, rtol=rtol, atol=atol, order_dependent=order_dependent,
                       gpu_atol=atol if gpu_atol is None else gpu_atol)
    if sanitize:    # pure arithmetic cases skip the (costly) memcheck + racecheck pass
        SANITIZED.append(name)


# ------------------------------------------------------------------ llm.c-style kernels
LAYERNORM_CG = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

__global__ void layernorm_forward_kernel3(float* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                    const float*  __restrict__ inp, const float*  __restrict__ weight,
                                    const float* __restrict__ bias, int N, int C) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if(idx >= N) {
        return;
    }
    const float* x = inp + idx * C;
    float sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        sum += x[i];
    }
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    float m = sum / C;
    if(warp.thread_rank() == 0 && mean != nullptr) {
        __stcs(mean + idx, m);
    }
    sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        float diff = x[i] - m;
        sum += diff * diff;
    }
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    float s = rsqrtf(sum / C + 1e-5f);
    if(warp.thread_rank() == 0 && rstd != nullptr) {
        __stcs(rstd + idx, s);
    }
    float* o = out + idx * C;
    for (int c = warp.thread_rank(); c < C; c += warp.size()) {
        float n = s * (__ldcs(x+c) - m);
        __stcs(o+c, n * weight[c] + bias[c]);
    }
}
'''


def _ln_make():
    N, C = 13, 72
    return [np.zeros((N, C), np.float32), np.zeros(N, np.float32), np.zeros(N, np.float32), f32(N, C), f32(C), f32(C),
            np.int32(N), np.int32(C)]


def _ln_ref(a):
    x, w, b = a[3], a[4], a[5]
    m = x.mean(1)
    r = 1 / np.sqrt(((x - m[:, None]) ** 2).mean(1) + 1e-5)
    return {0: (x - m[:, None]) * r[:, None] * w + b, 1: m, 2: r}


case("llmc_layernorm_cg", LAYERNORM_CG, "layernorm_forward_kernel3", (4,), (128,), _ln_make, _ln_ref,
     names=["layernorm_forward_kernel3"])

SOFTMAX_ONLINE = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

#include <math_constants.h>
struct __align__(8) SumMax { float maxval; float sum; };

__device__ __forceinline__ SumMax reduce_sum_max_op(SumMax a, SumMax b) {
    bool a_bigger = (a.maxval > b.maxval);
    SumMax bigger_m = a_bigger ? a : b;
    SumMax smaller_m = a_bigger ? b : a;
    SumMax res;
    res.maxval = bigger_m.maxval;
    res.sum = bigger_m.sum + smaller_m.sum * expf(smaller_m.maxval - bigger_m.maxval);
    return res;
}

__global__ void softmax_forward_online_kernel2(float* out, const float* inp, int N, int C) {
    namespace cg = cooperative_groups;
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (idx >= N) return;
    const float* x = inp + idx * C;
    SumMax sm_partial;
    sm_partial.maxval = -CUDART_INF_F;
    sm_partial.sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        sm_partial = reduce_sum_max_op(sm_partial, { x[i], 1.0f });
    }
    SumMax sm_total = cg::reduce(warp, sm_partial, reduce_sum_max_op);
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        __stcs(out + idx * C + i, expf(x[i] - sm_total.maxval) / sm_total.sum);
    }
}
'''


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


case("llmc_softmax_online_cg_reduce_struct", SOFTMAX_ONLINE, "softmax_forward_online_kernel2", (3,), (64,),
     lambda: [np.zeros((5, 50), np.float32), f32(5, 50) * 3, np.int32(5), np.int32(50)],
     lambda a: {0: _softmax(a[1])}, names=["softmax_forward_online_kernel2"])

RESIDUAL_X128 = r'''
#include <cuda_bf16.h>
template<class ElementType>
struct alignas(16) Packed128 {
    Packed128() = default;
    __device__ explicit Packed128(int4 bits) {
        static_assert(sizeof(bits) == sizeof(payload), "Size mismatch.");
        memcpy(&payload, &bits, sizeof(bits));
    }
    __device__ ElementType& operator[](int index) { return payload[index]; }
    __device__ const ElementType& operator[](int index) const { return payload[index]; }
    __device__ int4 get_bits() const {
        int4 bits;
        memcpy(&bits, &payload, sizeof(bits));
        return bits;
    }
    static constexpr const size_t size = sizeof(int4) / sizeof(ElementType);
    ElementType payload[size];
};
template<class ElementType>
__device__ Packed128<ElementType> load128cs(const ElementType* address) {
    return Packed128<ElementType>{__ldcs(reinterpret_cast<const int4*>(address))};
}
template<class ElementType>
__device__ void store128(ElementType* target, Packed128<ElementType> value) {
    *reinterpret_cast<int4*>(target) = value.get_bits();
}
typedef __nv_bfloat16 floatX;
typedef Packed128<floatX> x128;

__global__ void residual_forward_kernel2(floatX* out, const floatX* inp1, const floatX* inp2, int N) {
    int idx = ((blockIdx.x * blockDim.x) + threadIdx.x) * x128::size;
    if (idx < N) {
        x128 packed_out;
        x128 packed_inp1 = load128cs(inp1 + idx);
        x128 packed_inp2 = load128cs(inp2 + idx);
        for (int k = 0; k < packed_inp1.size; ++k) {
            packed_out[k] = (floatX)((float)packed_inp1[k] + (float)packed_inp2[k]);
        }
        store128(out + idx, packed_out);
    }
}
'''


def _bf16(x):
    b = np.asarray(x, np.float32).view(np.uint32)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return r


def _bf16_to_f32(u):
    return (u.astype(np.uint32) << 16).view(np.float32)


def _res_make():
    n = 8 * 40
    return [np.zeros(n, np.uint16), _bf16(f32(n)), _bf16(f32(n)), np.int32(n)]


case("llmc_residual_x128_bf16", RESIDUAL_X128, "residual_forward_kernel2", (2,), (32,), _res_make,
     lambda a: {0: _bf16(_bf16_to_f32(a[1]) + _bf16_to_f32(a[2]))}, rtol=0, atol=0, names=["residual_forward_kernel2"])

GELU_F4 = r'''
#include <math_constants.h>
#define GELU_SCALING_FACTOR sqrtf(2.0f / CUDART_PI_F)
__global__ void gelu_forward_kernel2(float4* out, const float4* inp, int N4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N4) {
        float4 v = inp[i];
        float* pv = reinterpret_cast<float*>(&v);
        float r[4];
        #pragma unroll
        for (int k = 0; k < 4; k++) {
            float xi = pv[k];
            float cube = 0.044715f * xi * xi * xi;
            r[k] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
        }
        out[i] = make_float4(r[0], r[1], r[2], r[3]);
    }
}
'''


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


case("llmc_gelu_float4", GELU_F4, "gelu_forward_kernel2", (2,), (64,),
     lambda: [np.zeros(4 * 100, np.float32), f32(400), np.int32(100)], lambda a: {0: _gelu(a[1])}, names=["gelu_forward_kernel2"])

ATTN_SOFTMAX = r'''
__global__ void softmax_forward_kernel5(float* out, float inv_temperature, const float* inp, int N, int T) {
    // inp, out shape: (N, T, T), causal: row t only attends to 0..t
    assert(T % 4 == 0);
    const int warp_size = 32;
    int lane_id = threadIdx.x % warp_size;
    int warp_id = threadIdx.x / warp_size;
    int num_warps = blockDim.x / warp_size;
    int idx = (gridDim.x - blockIdx.x - 1) * num_warps + warp_id;  // backwards order
    if (idx >= N * T) return;
    int own_pos = idx % T;
    const float* x = inp + idx * T;
    float maxval = -3.402823466e+38f;  // -FLT_MAX
    float sumval = 0.0f;
    for (int i = lane_id; i <= own_pos; i += warp_size) {
        float old_maxval = maxval;
        maxval = fmaxf(maxval, x[i]);
        sumval *= expf(inv_temperature * (old_maxval - maxval));
        sumval += expf(inv_temperature * (x[i] - maxval));
    }
    float global_maxval = maxval;
    for (int off = 16; off > 0; off /= 2) global_maxval = fmaxf(global_maxval, __shfl_xor_sync(0xFFFFFFFFu, global_maxval, off));
    sumval *= expf(inv_temperature * (maxval - global_maxval));
    float sum = sumval;
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, off);
    float norm = 1.f / sum;
    for (int i = lane_id; i <= own_pos; i += warp_size) {
        float ev = expf(inv_temperature * (__ldcs(x + i) - global_maxval));
        __stcs(out + idx * T + i, ev * norm);
    }
}
'''


def _attn_make():
    N, T = 2, 12
    return [np.zeros((N, T, T), np.float32), np.float32(0.5), f32(N, T, T), np.int32(N), np.int32(T)]


def _attn_ref(a):
    x = a[2] * a[1]
    T = x.shape[-1]
    mask = np.tril(np.ones((T, T), bool))
    x = np.where(mask, x, -np.inf)
    return {0: np.where(mask, _softmax(x), 0)}


case("llmc_causal_attention_softmax", ATTN_SOFTMAX, "softmax_forward_kernel5", (6,), (128,), _attn_make, _attn_ref,
     names=["softmax_forward_kernel5"])

# ------------------------------------------------------------------ reduction series
REDUCE0 = r'''
extern "C" __global__ void reduce0(int *g_idata, int *g_odata, unsigned int n) {
    extern __shared__ int sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x*blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0;
    __syncthreads();
    for (unsigned int s=1; s < blockDim.x; s *= 2) {
        if (tid % (2*s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
'''
case("reduce0_interleaved_dynamic_smem", REDUCE0, "reduce0", (3,), (128,),
     lambda: [RNG.integers(-50, 50, 300).astype(np.int32), np.zeros(3, np.int32), np.uint32(300)],
     lambda a: {1: np.add.reduceat(np.pad(a[0], (0, 84)), [0, 128, 256])}, shared_mem=128 * 4)

REDUCE6 = r'''
template <class T>
__device__ void warpReduce(volatile T* sdata, unsigned int tid, unsigned blockSize) {
    if (blockSize >= 64) { sdata[tid] += sdata[tid + 32]; __syncwarp(); }
    if (blockSize >= 32) { sdata[tid] += sdata[tid + 16]; __syncwarp(); }
    if (blockSize >= 16) { sdata[tid] += sdata[tid + 8]; __syncwarp(); }
    if (blockSize >= 8)  { sdata[tid] += sdata[tid + 4]; __syncwarp(); }
    if (blockSize >= 4)  { sdata[tid] += sdata[tid + 2]; __syncwarp(); }
    if (blockSize >= 2)  { sdata[tid] += sdata[tid + 1]; __syncwarp(); }
}
template <unsigned int blockSize, class T>
__global__ void reduce6(const T *g_idata, T *g_odata, unsigned int n) {
    __shared__ T sdata[blockSize];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x*(blockSize*2) + tid;
    unsigned int gridSize = blockSize*2*gridDim.x;
    T mySum = 0;
    while (i < n) {
        mySum += g_idata[i];
        if (i + blockSize < n) mySum += g_idata[i+blockSize];
        i += gridSize;
    }
    sdata[tid] = mySum;
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) { sdata[tid] += sdata[tid + 256]; } __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) { sdata[tid] += sdata[tid + 128]; } __syncthreads(); }
    if (blockSize >= 128) { if (tid <  64) { sdata[tid] += sdata[tid +  64]; } __syncthreads(); }
    if (tid < 32) {
        T v = sdata[tid];
        // modern form of the volatile warp-unrolled tail: read, sync, write, sync
        for (int off = 32; off > 0; off >>= 1) {
            v += sdata[tid + off];
            __syncwarp();
            sdata[tid] = v;
            __syncwarp();
        }
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
'''
case("reduce6_template_gridstride", REDUCE6, "reduce6<128, float>", (2,), (128,),
     lambda: [f32(1000), np.zeros(2, np.float32), np.uint32(1000)],
     lambda a: {1: np.array([a[0].reshape(-1)[np.r_[np.arange(0, 256), np.arange(512, 768)]].sum(),
                             a[0][np.r_[np.arange(256, 512), np.arange(768, 1000)]].sum()], np.float32)},
     names=["reduce6<128, float>"])

SHFL_ATOMIC = r'''
#define WARP_SIZE 32
#define FULL_MASK 0xffffffff
__inline__ __device__ float warpReduceSum(float val) {
    #pragma unroll
    for (int mask = WARP_SIZE/2; mask > 0; mask >>= 1)
        val += __shfl_xor_sync(FULL_MASK, val, mask);
    return val;
}
__inline__ __device__ float blockReduceSum(float val) {
    static __shared__ float shared[32];
    int lane = threadIdx.x % WARP_SIZE;
    int wid = threadIdx.x / WARP_SIZE;
    val = warpReduceSum(val);
    if (lane == 0) shared[wid] = val;
    __syncthreads();
    val = (threadIdx.x < blockDim.x / WARP_SIZE) ? shared[lane] : 0;
    if (wid == 0) val = warpReduceSum(val);
    return val;
}
extern "C" __global__ void deviceReduceBlockAtomicKernel(const float *in, float* out, size_t N) {
    float sum = 0.0f;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += (size_t)blockDim.x * gridDim.x) {
        sum += in[i];
    }
    sum = blockReduceSum(sum);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}
'''
case("shfl_xor_blockreduce_atomic_gridstride", SHFL_ATOMIC, "deviceReduceBlockAtomicKernel", (3,), (96,),
     lambda: [f32(2000), np.zeros(1, np.float32), np.uint64(2000)], lambda a: {1: np.array([a[0].sum()])},
     rtol=1e-4, atol=1e-4)

TWO_PASS = r'''
#include <math_constants.h>
#define BLOCK 64
extern "C" __global__ void partial_max(const float* x, float* partial, int n) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    float m = -CUDART_INF_F;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x) m = fmaxf(m, x[i]);
    s[tid] = m;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] = fmaxf(s[tid], s[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}
'''
case("two_pass_max_pass1", TWO_PASS, "partial_max", (4,), (64,),
     lambda: [f32(777), np.zeros(4, np.float32), np.int32(777)],
     lambda a: {1: np.array([np.max(np.concatenate([a[0][j * 64 + k * 256: j * 64 + k * 256 + 64] for k in range(4)]))
                             for j in range(4)])})

SYNC_OR = r'''
extern "C" __global__ void any_negative(const float* x, int n, int* flags, int* counts) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int neg = (i < n) && x[i] < 0.0f;
    int any = __syncthreads_or(neg);
    int cnt = __syncthreads_count(neg);
    int all = __syncthreads_and(i < n);
    if (threadIdx.x == 0) { flags[blockIdx.x] = any | (all << 1); counts[blockIdx.x] = cnt; }
}
'''


def _sync_or_make():
    x = np.abs(f32(150))
    x[[3, 70, 71]] *= -1
    return [x, np.int32(150), np.zeros(3, np.int32), np.zeros(3, np.int32)]


case("syncthreads_or_count_and", SYNC_OR, "any_negative", (3,), (64,), _sync_or_make,
     lambda a: {2: np.array([1 | 2, 1 | 2, 0]), 3: np.array([1, 2, 0])}, rtol=0, atol=0)

# ------------------------------------------------------------------ 2-D / 3-D
TRANSPOSE = r'''
#define TILE_DIM 32
#define BLOCK_ROWS 8
extern "C" __global__ void transposeNoBankConflicts(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM+1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y+j][threadIdx.x] = idata[(y+j)*width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y+j)*height + x] = tile[threadIdx.x][threadIdx.y + j];
}
'''
case("transpose_padded_tile_2d", TRANSPOSE, "transposeNoBankConflicts", (2, 2), (32, 8),
     lambda: [np.zeros((40, 50), np.float32), f32(50, 40), np.int32(40), np.int32(50)],
     lambda a: {0: a[1].T}, rtol=0, atol=0)

SGEMM = r'''
#define TILE 16
extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A, const float* B,
                                       float beta, float* C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const unsigned row = blockIdx.y * TILE + threadIdx.y;
    const unsigned col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        unsigned ak = t * TILE + threadIdx.x, bk = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.f;
        __syncthreads();
        #pragma unroll 4
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
'''


def _sgemm_make():
    M, N, K = 20, 19, 35
    return [np.int32(M), np.int32(N), np.int32(K), np.float32(1.5), f32(M, K), f32(K, N), np.float32(0.5), f32(M, N)]


case("sgemm_tiled_16x16", SGEMM, "sgemm_tiled", (2, 2), (16, 16), _sgemm_make,
     lambda a: {7: 1.5 * a[4] @ a[5] + 0.5 * a[7]})

IDX3D = r'''
extern "C" __global__ void idx3d(int* out, int nx, int ny, int nz) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    size_t off = ((size_t)z * ny + y) * nx + x;
    int lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[off] = (lin / warpSize) * 1000 + (lin % warpSize);
}
'''


def _idx3d_ref(a):
    z, y, x = np.meshgrid(np.arange(5), np.arange(6), np.arange(7), indexing="ij")
    lin = (x % 4) + 4 * ((y % 3) + 3 * (z % 2))
    return {0: (lin // 32) * 1000 + lin % 32}


case("grid_block_3d_indexing", IDX3D, "idx3d", (2, 2, 3), (4, 3, 2),
     lambda: [np.zeros((5, 6, 7), np.int32), np.int32(7), np.int32(6), np.int32(5)], _idx3d_ref, rtol=0, atol=0)

DYN_CARVE = r'''
#include <math_constants.h>
extern "C" __global__ void topval_per_block(const float* x, const int* keys, float* out_val, int* out_key, int n) {
    extern __shared__ char smem[];
    float* vals = reinterpret_cast<float*>(smem);
    int* ks = reinterpret_cast<int*>(smem + blockDim.x * sizeof(float));
    unsigned char* valid = reinterpret_cast<unsigned char*>(ks + blockDim.x);
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    vals[tid] = i < n ? x[i] : -CUDART_INF_F;
    ks[tid] = i < n ? keys[i] : -1;
    valid[tid] = i < n;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s && valid[tid + s] && vals[tid + s] > vals[tid]) {
            vals[tid] = vals[tid + s]; ks[tid] = ks[tid + s]; valid[tid] = 1;
        }
        __syncthreads();
    }
    if (tid == 0) { out_val[blockIdx.x] = vals[0]; out_key[blockIdx.x] = ks[0]; }
}
'''


def _dyn_make():
    x = RNG.permutation(100).astype(np.float32)
    return [x, np.arange(100, dtype=np.int32) * 3, np.zeros(2, np.float32), np.zeros(2, np.int32), np.int32(100)]


def _dyn_ref(a):
    x = a[0]
    i0, i1 = np.argmax(x[:64]), 64 + np.argmax(x[64:])
    return {2: np.array([x[i0], x[i1]]), 3: np.array([3 * i0, 3 * i1])}


case("dynamic_smem_carved_three_arrays", DYN_CARVE, "topval_per_block", (2,), (64,), _dyn_make, _dyn_ref,
     shared_mem=64 * 9, rtol=0, atol=0)

# ------------------------------------------------------------------ fp16 / bf16 templates
HALF_TMPL = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

template <typename T>
__global__ void scale_bias(T* y, const T* x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = from_float<T>(a * to_float(x[i]) + b);
}

__global__ void half2_axpy(__half2* y, const __half2* x, __half2 alpha, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 r = __hadd2(__hmul2(alpha, x[i]), y[i]);
        float2 f = __half22float2(r);
        y[i] = __floats2half2_rn(f.x, f.y);
    }
}
'''


def _f16(x):
    return np.asarray(x, np.float32).astype(np.float16)


case("template_bf16_scale_bias", HALF_TMPL, "scale_bias<__nv_bfloat16>", (1,), (64,),
     lambda: [np.zeros(50, np.uint16), _bf16(f32(50)), np.float32(2.0), np.float32(0.25), np.int32(50)],
     lambda a: {0: _bf16(np.float32(2.0) * _bf16_to_f32(a[1]) + np.float32(0.25))},
     names=["scale_bias<__half>", "scale_bias<__nv_bfloat16>"], rtol=0, atol=0)
case("template_half_scale_bias", HALF_TMPL, "scale_bias<__half>", (1,), (64,),
     lambda: [np.zeros(50, np.float16), _f16(f32(50)), np.float32(2.0), np.float32(0.25), np.int32(50)],
     lambda a: {0: (np.float32(2.0) * a[1].astype(np.float32) + np.float32(0.25)).astype(np.float16)},
     names=["scale_bias<__half>", "scale_bias<__nv_bfloat16>"], rtol=0, atol=0, sanitize=False)


def _h2_make():
    return [_f16(f32(64)), _f16(f32(64)), np.array((1.5, -0.5), dtype=[('x', '<f2'), ('y', '<f2')])[()], np.int32(32)]


def _h2_ref(a):
    al = np.array([1.5, -0.5] * 32, np.float16)
    prod = (al.astype(np.float32) * a[1].astype(np.float32)).astype(np.float16)
    return {0: (prod.astype(np.float32) + a[0].astype(np.float32)).astype(np.float16)}


# Exact on the emulator (each op rounds, as written); on an H200 NVRTC contracts __hmul2 + __hadd2 into an fma
# (one rounding; __hmul2_rn would prevent it): measured there, differences up to 2^-9 at |a*x| < 4.
case("half2_axpy_hmul2_hadd2", HALF_TMPL, "half2_axpy", (1,), (32,), _h2_make, _h2_ref, names=["half2_axpy"], rtol=0, atol=0,
     gpu_atol=2.0 ** -9)

# ------------------------------------------------------------------ C++ features
STRUCT_CONST = r'''
struct Params {
    float scale;
    int n;
    int stride;
    float bias[3];
};
__constant__ float c_poly[4] = {1.0f, -2.0f, 0.5f, 0.25f};
constexpr int kItems = 2;

__device__ __noinline__ float horner(float x) {
    float r = c_poly[3];
    for (int k = 2; k >= 0; --k) r = r * x + c_poly[k];
    return r;
}
extern "C" __global__ void __launch_bounds__(256, 2) apply(const float* __restrict__ x, float* __restrict__ y, Params p) {
    auto idx = [&](int k) -> unsigned { return (blockIdx.x * blockDim.x + threadIdx.x) * kItems + k; };
    #pragma unroll
    for (int k = 0; k < kItems; ++k) {
        unsigned i = idx(k);
        if (i < (unsigned)p.n) y[i * p.stride] = p.scale * horner(x[i]) + p.bias[i % 3];
    }
}
'''


def _struct_make():
    n = 70
    p = np.zeros(1, dtype=[("scale", np.float32), ("n", np.int32), ("stride", np.int32), ("bias", np.float32, 3)])
    p["scale"], p["n"], p["stride"], p["bias"] = 2.0, n, 2, [0.1, 0.2, 0.3]
    return [f32(n), np.zeros(2 * n, np.float32), p[0]]


def _struct_ref(a):
    x = a[0]
    y = np.zeros(140, np.float32)
    y[::2] = 2 * (1 - 2 * x + 0.5 * x ** 2 + 0.25 * x ** 3) + np.array([0.1, 0.2, 0.3], np.float32)[np.arange(70) % 3]
    return {1: y}


STRUCT_OK = True
case("struct_by_value_constant_lambda_noinline", STRUCT_CONST, "apply", (2,), (32,), _struct_make, _struct_ref)

PRINTF_ASSERT = r'''
extern "C" __global__ void checked_copy(const int* x, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(blockDim.x % 32 == 0);
    if (i == 0) printf("checked_copy: n=%d grid=%d block=%d\n", n, gridDim.x, blockDim.x);
    if (i < n) {
        assert(x[i] >= 0);
        y[i] = x[i] * 2;
    }
}
'''
case("printf_and_assert_pass", PRINTF_ASSERT, "checked_copy", (2,), (32,),
     lambda: [np.arange(50, dtype=np.int32), np.zeros(50, np.int32), np.int32(50)],
     lambda a: {1: a[0] * 2}, rtol=0, atol=0)

# ------------------------------------------------------------------ warp intrinsics
SHFL_WIDTH = r'''
extern "C" __global__ void segment_broadcast(const float* x, float* y16, float* y8, int* lanes) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[t];
    float b16 = __shfl_sync(0xffffffff, v, 3, 16);      // lane 3 of each 16-lane segment
    float b8 = __shfl_sync(0xffffffff, v, 7, 8);
    float up = __shfl_up_sync(0xffffffff, v, 1, 8);
    y16[t] = b16;
    y8[t] = b8 + up;
    lanes[t] = __activemask() == 0xffffffffu;
}
'''


def _shw_ref(a):
    x = a[0].reshape(-1, 8)
    up = np.concatenate([x[:, :1], x[:, :-1]], 1)
    return {1: np.repeat(a[0].reshape(-1, 16)[:, 3], 16), 2: (x[:, 7:8] + up).reshape(-1), 3: np.ones(64)}


case("shfl_width_16_8_broadcast", SHFL_WIDTH, "segment_broadcast", (1,), (64,),
     lambda: [f32(64), np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.int32)], _shw_ref)

COMPACT = r'''
extern "C" __global__ void compact_positive(const float* x, float* out, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    bool keep = i < n && x[i] > 0.0f;
    unsigned ballot = __ballot_sync(0xffffffffu, keep);
    int leader = __ffs(ballot) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(ballot));
    base = __shfl_sync(0xffffffffu, base, leader < 0 ? 0 : leader);
    if (keep) {
        unsigned below = ballot & ((1u << lane) - 1u);
        out[base + __popc(below)] = x[i];
    }
    if (i == 0) { out[n] = (float)__clz(1); }
}
'''


def _compact_check(a, inp):
    x = inp[0]
    got = a[1][: a[2][0]]
    assert a[2][0] == (x > 0).sum()
    np.testing.assert_array_equal(np.sort(got), np.sort(x[x > 0]))
    assert a[1][100] == 31


case("ballot_popc_ffs_warp_aggregated_atomic", COMPACT, "compact_positive", (2,), (64,),
     lambda: [f32(100), np.zeros(101, np.float32), np.zeros(1, np.int32), np.int32(100)], _compact_check,
     order_dependent=True)

MATCH = r'''
extern "C" __global__ void hist_match(const int* keys, int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = i < n ? keys[i] : -1;
    unsigned peers = __match_any_sync(__activemask(), k);
    int leader = __ffs(peers) - 1;
    int lane = threadIdx.x % 32;
    if (k >= 0 && lane == leader) atomicAdd(&hist[k], __popc(peers));
}
'''
case("match_any_histogram", MATCH, "hist_match", (3,), (64,),
     lambda: [RNG.integers(0, 6, 150).astype(np.int32), np.zeros(6, np.int32), np.int32(150)],
     lambda a: {1: np.bincount(a[0], minlength=6)}, rtol=0, atol=0)

CAS_MAX = r'''
__device__ __forceinline__ float atomicMaxFloat(float* addr, float value) {
    int* addr_as_int = (int*)addr;
    int old = *addr_as_int, assumed;
    do {
        assumed = old;
        old = atomicCAS(addr_as_int, assumed, __float_as_int(fmaxf(value, __int_as_float(assumed))));
    } while (assumed != old);
    return __int_as_float(old);
}
extern "C" __global__ void absmax(const float* x, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicMaxFloat(out, fabsf(x[i]));
}
'''
case("atomiccas_float_max_loop", CAS_MAX, "absmax", (2,), (64,),
     lambda: [f32(500), np.zeros(1, np.float32), np.int32(500)], lambda a: {1: np.array([np.abs(a[0]).max()])},
     rtol=0, atol=0)

ONLINE_EXP2 = r'''
#include <math_constants.h>
#define LOG2E 1.4426950408889634f
extern "C" __global__ void online_softmax_rows(const float* x, float* y, int rows, int cols) {
    int row = blockIdx.x;
    if (row >= rows) return;         // whole block exits together, before any barrier
    __shared__ float s_m[32], s_l[32];
    float m = -CUDART_INF_F, l = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = x[row * cols + c] * LOG2E;
        float mn = fmaxf(m, v);
        l = l * exp2f(m - mn) + exp2f(v - mn);
        m = mn;
    }
    for (int o = 16; o; o >>= 1) {
        float mo = __shfl_down_sync(0xffffffff, m, o);
        float lo = __shfl_down_sync(0xffffffff, l, o);
        float mn = fmaxf(m, mo);
        l = (mn == -CUDART_INF_F) ? 0.f : l * exp2f(m - mn) + lo * exp2f(mo - mn);
        m = mn;
    }
    int w = threadIdx.x / 32, nw = blockDim.x / 32;
    if (threadIdx.x % 32 == 0) { s_m[w] = m; s_l[w] = l; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 1; k < nw; ++k) {
            float mn = fmaxf(s_m[0], s_m[k]);
            s_l[0] = s_l[0] * exp2f(s_m[0] - mn) + s_l[k] * exp2f(s_m[k] - mn);
            s_m[0] = mn;
        }
    }
    __syncthreads();
    float M = s_m[0], L = s_l[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[row * cols + c] = __expf((x[row * cols + c] * LOG2E - M) * 0.6931471805599453f) / L;
}
'''
case("online_softmax_exp2_fast_math_early_return", ONLINE_EXP2, "online_softmax_rows", (6,), (64,),
     lambda: [f32(4, 90), np.zeros((4, 90), np.float32), np.int32(4), np.int32(90)],
     lambda a: {1: _softmax(a[0])}, options=("-use_fast_math", "--std=c++17"), rtol=2e-3, atol=1e-5)

SCAN = r'''
extern "C" __global__ void block_inclusive_scan(const int* x, int* y, int n) {
    __shared__ int warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int v = i < n ? x[i] : 0;
    #pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int t = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += t;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int s = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            int t = __shfl_up_sync(0xffffffffu, s, d);
            if (lane >= d) s += t;
        }
        warp_sums[lane] = s;
    }
    __syncthreads();
    if (warp > 0) v += warp_sums[warp - 1];
    if (i < n) y[i] = v;
}
'''


def _scan_ref(a):
    x = a[0]
    return {1: np.concatenate([np.cumsum(x[k:k + 128]) for k in range(0, len(x), 128)])}


case("warp_shfl_up_block_scan", SCAN, "block_inclusive_scan", (2,), (128,),
     lambda: [RNG.integers(-9, 9, 250).astype(np.int32), np.zeros(250, np.int32), np.int32(250)], _scan_ref,
     rtol=0, atol=0)

CUDA_STD = r'''
#include <cuda/std/limits>
#include <cuda/std/type_traits>
template <typename T>
__global__ void clamp_to_limits(const double* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double lo = (double)cuda::std::numeric_limits<T>::lowest();
    double hi = (double)cuda::std::numeric_limits<T>::max();
    static_assert(cuda::std::is_integral<T>::value, "integral");
    double v = x[i];
    y[i] = (T)(v < lo ? lo : (v > hi ? hi : v));
}
'''
case("cuda_std_numeric_limits", CUDA_STD, "clamp_to_limits<short>", (1,), (64,),
     lambda: [RNG.uniform(-70000, 70000, 40), np.zeros(40, np.int16), np.int32(40)],
     lambda a: {1: np.clip(a[0], -32768, 32767).astype(np.int16)}, names=["clamp_to_limits<short>"], rtol=0,
     atol=0)

BF16_LN = r'''
#include <cuda_bf16.h>
extern "C" __global__ void rmsnorm_bf16x2(__nv_bfloat162* out, const __nv_bfloat162* inp, const float* w, int C2) {
    // one warp per row, C2 bf16 pairs per row
    int row = blockIdx.x;
    const __nv_bfloat162* x = inp + (size_t)row * C2;
    float ss = 0.f;
    for (int i = threadIdx.x; i < C2; i += 32) {
        float2 f = __bfloat1622float2(x[i]);
        ss += f.x * f.x + f.y * f.y;
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    float r = rsqrtf(ss / (2 * C2) + 1e-6f);
    for (int i = threadIdx.x; i < C2; i += 32) {
        float2 f = __bfloat1622float2(x[i]);
        out[(size_t)row * C2 + i] = __floats2bfloat162_rn(f.x * r * w[2 * i], f.y * r * w[2 * i + 1]);
    }
}
'''


def _rms_make():
    return [np.zeros((3, 40), np.uint16), _bf16(f32(3, 40)), f32(40), np.int32(20)]


def _rms_check(a, inp):
    x = _bf16_to_f32(inp[1])
    r = 1 / np.sqrt((x ** 2).mean(1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(_bf16_to_f32(a[0]), x * r * inp[2], rtol=1e-2, atol=1e-2)


case("bf16x2_rmsnorm", BF16_LN, "rmsnorm_bf16x2", (3,), (32,), _rms_make, _rms_check)

TILE16 = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void tile16_sum(const int* x, int* out) {
    cg::thread_block b = cg::this_thread_block();
    auto t16 = cg::tiled_partition<16>(b);
    int v = x[b.thread_rank()];
    for (int o = t16.size() / 2; o > 0; o /= 2) v += t16.shfl_down(v, o);
    if (t16.thread_rank() == 0) out[t16.meta_group_rank()] = v;
    b.sync();
    unsigned bal = t16.ballot(x[b.thread_rank()] > 5);
    if (t16.thread_rank() == 0) out[8 + t16.meta_group_rank()] = __popc(bal);
}
'''
case("cg_tile16_shfl_down_ballot", TILE16, "tile16_sum", (1,), (16, 8),
     lambda: [RNG.integers(0, 10, 128).astype(np.int32), np.zeros(16, np.int32)],
     lambda a: {1: np.concatenate([a[0].reshape(8, 16).sum(1), (a[0].reshape(8, 16) > 5).sum(1)])}, rtol=0, atol=0)


# ------------------------------------------------------------------ found missing in the emulator (now fixed)
COALESCED_AGG = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ int atomicAggInc(int* ctr) {
    cg::coalesced_group g = cg::coalesced_threads();
    int warp_res;
    if (g.thread_rank() == 0) warp_res = atomicAdd(ctr, g.size());
    return g.shfl(warp_res, 0) + g.thread_rank();
}
extern "C" __global__ void filter(const int* x, int* out, int* ctr, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0) out[atomicAggInc(ctr)] = x[i];
}'''
case("cg_coalesced_threads_warp_aggregated_inc", COALESCED_AGG, "filter", (2,), (32,),
     lambda: [np.arange(-20, 44, dtype=np.int32), np.zeros(64, np.int32), np.zeros(1, np.int32), np.int32(64)],
     lambda res, inp: (np.testing.assert_array_equal(np.sort(res[1][:res[2][0]]), np.arange(1, 44)),
                       np.testing.assert_array_equal(res[2], [43])))

GRID_GROUP = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void scale(float* x, int n) {
    cg::grid_group grid = cg::this_grid();
    for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size()) x[i] *= 2.0f;
}'''
case("cg_grid_group_grid_stride", GRID_GROUP, "scale", (3,), (64,),
     lambda: [f32(300), np.int32(300)], lambda a: {0: 2 * a[0]}, rtol=0, atol=0)

THREAD_GROUP = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(int* out) {
    cg::thread_block b = cg::this_thread_block();
    cg::thread_group g = cg::tiled_partition(b, 16);
    out[b.thread_rank()] = g.thread_rank() + 100 * g.size();
    g.sync();
}'''
case("cg_thread_group_dynamic_partition", THREAD_GROUP, "k", (1,), (64,), lambda: [np.zeros(64, np.int32)],
     lambda a: {0: 1600 + np.arange(64) % 16}, rtol=0, atol=0)

ATOMIC_HALF = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(__half* h, __nv_bfloat16* b, __half2* h2, __nv_bfloat162* b2) {
    atomicAdd(h, __float2half(1.0f));
    atomicAdd(b, __float2bfloat16(1.0f));
    atomicAdd(h2, __floats2half2_rn(1.0f, 2.0f));
    atomicAdd(b2, __floats2bfloat162_rn(1.0f, 2.0f));
}'''


def _atomic_half_check(res, inp):
    np.testing.assert_array_equal(res[0], [64.0])
    np.testing.assert_array_equal(_bf16_to_f32(res[1]), [64.0])
    np.testing.assert_array_equal(res[2], [64.0, 128.0])
    np.testing.assert_array_equal(_bf16_to_f32(res[3]), [64.0, 128.0])


case("atomicadd_half_bf16_and_pairs", ATOMIC_HALF, "k", (2,), (32,),
     lambda: [np.zeros(1, np.float16), np.zeros(1, np.uint16), np.zeros(2, np.float16), np.zeros(2, np.uint16)],
     _atomic_half_check)

INT_SIMD = r'''
extern "C" __global__ void k(int* out, unsigned* u) {
    int t = threadIdx.x;
    out[t] = __dp4a(0x01020304, 0x01010101, t) + __sad(t, 5, 0);
    u[t] = __byte_perm(0x11223344u, 0x55667788u, 0x3210 + t) ^ (unsigned)clock() * 0u;
}'''


def _int_simd_ref(a):
    t = np.arange(32)
    return {0: 10 + t + np.abs(t - 5)}


case("dp4a_sad_byte_perm_clock", INT_SIMD, "k", (1,), (32,), lambda: [np.zeros(32, np.int32), np.zeros(32, np.uint32)],
     _int_simd_ref, rtol=0, atol=0, sanitize=False)

HALF_OPS = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k(const __half* a, const __nv_bfloat16* b, float* out) {
    int t = threadIdx.x;
    __half s = a[t] + a[t] * __float2half(2.0f);
    __half m = __hmax(s, __float2half(0.0f));
    bool gt = a[t] > __float2half(0.5f);
    float f = __bfloat162float(b[t]) * 2.0f;
    __nv_bfloat16 bb = b[t] + b[t];
    __half2 h2 = __halves2half2(a[t], s);
    out[t] = __half2float(m) + (gt ? 1.0f : 0.0f) + f + __bfloat162float(bb) + __low2float(__habs2(h2)) + __high2float(h2) + __half2float(__hadd_sat(a[t], s)) + (float)__hge2(h2, h2).x;
}'''
case("half_operators_and_pair_helpers", HALF_OPS, "k", (1,), (32,),
     lambda: [np.ones(32, np.float16), np.zeros(32, np.uint16), np.zeros(32, np.float32)],
     lambda a: {2: np.full(32, 10.0)}, rtol=0, atol=0, sanitize=False)

EXTERN_ALIGN_TMPL = r'''
template <typename T>
__global__ void rev(const T* x, T* y) {
    extern __shared__ __align__(sizeof(T)) unsigned char my_smem[];
    T* s = reinterpret_cast<T*>(my_smem);
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
__device__ int g_counter;
extern "C" __global__ void bump() { atomicAdd(&g_counter, 1); }
'''
case("extern_shared_align_sizeof_template", EXTERN_ALIGN_TMPL, "rev<double>", (1,), (32,),
     lambda: [np.arange(32.0), np.zeros(32)], lambda a: {1: a[0][::-1]}, names=["rev<double>", "rev<float>"],
     shared_mem=32 * 8, rtol=0, atol=0)

CG_SCAN_REDUCE = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(const int* x, int* out) {
    auto block = cg::this_thread_block();
    auto tile = cg::tiled_partition<32>(block);
    int v = x[block.thread_rank()];
    int mx = cg::reduce(tile, v, cg::greater<int>());
    int mn = cg::reduce(tile, v, cg::less<int>());
    int sm = cg::reduce(tile, v, cg::plus<int>());
    unsigned any = tile.any(v > 5), all = tile.all(v >= 0);
    int inc = cg::inclusive_scan(tile, v);
    int exc = cg::exclusive_scan(tile, v);
    if (tile.thread_rank() == 0) { out[0] = mx; out[1] = mn; out[2] = sm; out[3] = any; out[4] = all; }
    out[5 + tile.thread_rank()] = inc - exc;
    block.sync();
    cg::sync(tile);
}'''
case("cg_reduce_less_greater_scan", CG_SCAN_REDUCE, "k", (1,), (32,),
     lambda: [RNG.integers(0, 9, 32).astype(np.int32), np.zeros(40, np.int32)],
     lambda a: {1: np.concatenate([[a[0].max(), a[0].min(), a[0].sum(), (a[0] > 5).any(), 1, ], a[0], [0, 0, 0]])},
     rtol=0, atol=0)


ATOMICS_MISC = r'''
extern "C" __global__ void k(unsigned long long* a, unsigned short* s, double* d, float* f, unsigned* inc) {
    atomicMax(a, (unsigned long long)threadIdx.x << 33);
    atomicExch(a + 1, 5ull);
    unsigned short old = s[0];
    unsigned short assumed;
    do { assumed = old; old = atomicCAS(s, assumed, (unsigned short)(assumed + 1)); } while (old != assumed);
    atomicAdd(d, 0.5);
    __shared__ float sf;
    if (threadIdx.x == 0) sf = 0;
    __syncthreads();
    atomicAdd(&sf, 1.0f);
    __syncthreads();
    if (threadIdx.x == 0) f[0] = sf;
    atomicInc(inc, 9u);
    atomicMin((int*)(inc + 1), -(int)threadIdx.x);
}'''


def _atomics_misc_check(res, inp):
    np.testing.assert_array_equal(res[0], [31 << 33, 5])
    np.testing.assert_array_equal(res[1], [64])
    np.testing.assert_array_equal(res[2], [32.0])
    np.testing.assert_array_equal(res[3], [32.0])
    np.testing.assert_array_equal(res[4], [(64 % 10), np.uint32(-31 & 0xFFFFFFFF)])


case("atomics_u64_max_u16_cas_double_shared_inc", ATOMICS_MISC, "k", (2,), (32,),
     lambda: [np.zeros(2, np.uint64), np.zeros(1, np.uint16), np.zeros(1), np.zeros(1, np.float32), np.zeros(2, np.uint32)],
     _atomics_misc_check)

STRUCT_HALF = r'''
#include <cuda_fp16.h>
struct Cfg { __half scale; short pad; int n; float4 bias; };
extern "C" __global__ void k(float* y, const Cfg c) {
    int i = threadIdx.x;
    if (i < c.n) y[i] = __half2float(c.scale) * i + c.bias.y;
}'''


def _struct_half_make():
    dt = np.dtype([("scale", "<f2"), ("pad", "<i2"), ("n", "<i4"), ("pad2", "V8"), ("bias", "<f4", 4)], align=True)
    return [np.zeros(32, np.float32), np.array((1.5, 0, 20, b"", (0., 2., 0., 0.)), dtype=dt)[()]]


case("struct_with_half_and_float4_by_value", STRUCT_HALF, "k", (1,), (32,), _struct_half_make,
     lambda a: {0: np.where(np.arange(32) < 20, 1.5 * np.arange(32) + 2, 0)}, rtol=0, atol=0)

MATH_MISC = r'''
extern "C" __global__ void k(const float* x, float* y) {
    int i = threadIdx.x;
    float v = x[i];
    float s, c; sincosf(v, &s, &c);
    y[i] = erff(v) + erfcf(v) + lgammaf(fabsf(v) + 1) + cbrtf(v) + hypotf(v, 2.f) + copysignf(1.f, v) + fminf(v, 0.f)
         + __fsqrt_rn(fabsf(v)) + log1pf(fabsf(v)) + expm1f(v) + sinpif(v) + cospif(v) + s * c + truncf(v) + roundf(v)
         + rintf(v) + fmodf(v, 0.3f) + remainderf(v, 0.3f) + ldexpf(v, 2) + (float)ilogbf(v + 3.f) + exp10f(v) + norm3df(v, v, v)
         + rnorm3df(v, 1.f, 1.f) + atan2f(v, 1.f) + __saturatef(v) + fdimf(v, 0.f) + (float)__float2int_rn(v * 10.f) + __frcp_rn(v + 5.f);
}'''


def _math_misc_ref(a):
    import math
    out = []
    for v in a[0].astype(np.float64):
        r = (math.erf(v) + math.erfc(v) + math.lgamma(abs(v) + 1) + np.cbrt(v) + math.hypot(v, 2) + math.copysign(1, v)
             + min(v, 0) + math.sqrt(abs(v)) + math.log1p(abs(v)) + math.expm1(v) + math.sin(math.pi * v)
             + math.cos(math.pi * v) + math.sin(v) * math.cos(v) + math.trunc(v) + np.round(v + 0.0) * 0
             + (math.floor(abs(v) + 0.5) * np.sign(v)) + np.rint(np.float32(v)) + math.fmod(v, 0.3)
             + math.remainder(v, 0.3) + v * 4 + math.floor(math.log2(v + 3)) + 10 ** v + math.sqrt(3) * abs(v)
             + 1 / math.sqrt(v * v + 2) + math.atan2(v, 1) + min(max(v, 0), 1) + max(v, 0) + np.rint(np.float32(v) * np.float32(10))
             + 1 / (v + 5))
        out.append(r)
    return {1: np.array(out)}


case("libm_and_cuda_math_functions", MATH_MISC, "k", (1,), (32,),
     lambda: [np.linspace(-1, 1, 32).astype(np.float32), np.zeros(32, np.float32)], _math_misc_ref, rtol=1e-4, atol=1e-4, sanitize=False)


SAMPLES_SHAREDMEMORY = r'''
template <class T> struct SharedMemory {
    __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
    __device__ inline operator const T *() const { extern __shared__ int __smem[]; return (T *)__smem; }
};
template <> struct SharedMemory<double> {
    __device__ inline operator double *() { extern __shared__ double __smem_d[]; return (double *)__smem_d; }
};
__shared__ int file_scope_counter;
__device__ float d_scratch[64];
template <class T, unsigned int blockSize>
__global__ void reduce3(const T *g_idata, T *g_odata, unsigned int n) {
    T *sdata = SharedMemory<T>();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    T mySum = (i < n) ? g_idata[i] : 0;
    if (i + blockSize < n) mySum += g_idata[i + blockSize];
    sdata[tid] = mySum;
    if (tid == 0) file_scope_counter = 0;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
    atomicAdd(&file_scope_counter, 1);
    __syncthreads();
    if (tid == 0) { d_scratch[blockIdx.x] = (float)file_scope_counter; g_odata[blockIdx.x] = mySum + (T)(d_scratch[blockIdx.x] - blockSize); }
}'''
case("cuda_samples_sharedmemory_struct_file_scope_shared", SAMPLES_SHAREDMEMORY, "reduce3<double, 64>", (3,), (64,),
     lambda: [np.arange(300, dtype=np.float64), np.zeros(3), np.uint32(300)],
     lambda a: {1: np.array([a[0][k * 128:(k + 1) * 128].sum() for k in range(3)])},
     names=["reduce3<double, 64>", "reduce3<float, 64>"], shared_mem=64 * 8, rtol=0, atol=0)


# ------------------------------------------------------------------ runner
def _run_case(c, check=()):
    atol = c["gpu_atol"] if kernels.backend() == "cupy" else c["atol"]
    args = c["make"]()
    inp = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    if check:
        with kernels.check(*check):
            res = launch(c["src"], c["entry"], c["grid"], c["block"], args, shared_mem=c["shared_mem"],
                         name_expressions=c["names"], options=c["options"])
    else:
        res = launch(c["src"], c["entry"], c["grid"], c["block"], args, shared_mem=c["shared_mem"],
                     name_expressions=c["names"], options=c["options"])
    ref = c["ref"](inp) if c["ref"].__code__.co_argcount == 1 else None
    if ref is None:
        c["ref"](res, inp)
        return
    for k, want in ref.items():
        got = res[k]
        if got.dtype == np.uint16 and want.dtype == np.uint16:
            np.testing.assert_array_equal(got, want, err_msg=f"arg {k}")
        else:
            np.testing.assert_allclose(np.asarray(got, np.float64).reshape(np.shape(want)),
                                       np.asarray(want, np.float64), rtol=c["rtol"], atol=atol,
                                       err_msg=f"arg {k}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_foreign_kernel(name, backend):
    _run_case(CASES[name])


@pytest.mark.parametrize("name", sorted(SANITIZED))
def test_foreign_kernel_under_memcheck_and_racecheck(name, cpu):
    c = CASES[name]
    if c["order_dependent"]:
        _run_case(c, check=("memcheck",))
        with kernels.check("racecheck"), pytest.raises(kernels.RaceError, match="depends on the order"):
            _run_case(c)
        return
    _run_case(c, check=("memcheck", "racecheck"))


# ------------------------------------------------------------------ regressions for emulator fixes
def test_activemask_of_converged_warp_is_full_even_after_neighbours_exit(backend):
    """Found here: __activemask() returned only the lanes that had not yet *run to their exit*, so in a
    converged warp lane k saw lanes 0..k-1 missing. Now it returns the lanes converged at the call."""
    src = r'''
extern "C" __global__ void am(unsigned* full, unsigned* branch, int* after_exit) {
    int t = threadIdx.x;
    full[t] = __activemask();
    if ((t & 31) < 12) branch[t] = __activemask();
    else branch[t] = 0;
    if ((t & 31) >= 20) return;
    after_exit[t] = __popc(__activemask());
}'''
    full, branch, after = np.zeros(48, np.uint32), np.zeros(48, np.uint32), np.zeros(48, np.int32)
    full, branch, after = launch(src, "am", (1,), (48,), [full, branch, after])
    np.testing.assert_array_equal(full, [0xFFFFFFFF] * 32 + [0xFFFF] * 16)
    if backend == "cpu":   # the GPU may predicate this short branch instead of diverging (then: all lanes)
        np.testing.assert_array_equal(branch, [0xFFF] * 12 + [0] * 20 + [0xFFF] * 12 + [0] * 4)
    else:
        assert all((b & 0xFFF) == 0xFFF for b in np.r_[branch[:12], branch[32:44]])
    np.testing.assert_array_equal(after, [20] * 20 + [0] * 12 + [16] * 16)


def test_cuda_std_headers_resolve(backend):
    """Found here: NVRTC accepts <cuda/std/limits> (libcu++), the emulator's host build did not."""
    c = CASES["cuda_std_numeric_limits"]
    _run_case(c)


# ------------------------------------------------------------------ planted bugs: kind and line
def test_planted_oob_in_2d_tile_sgemm(cpu):
    """Tiled SGEMM without the K-bounds guard on the A tile load, K not a multiple of the tile."""
    bad = SGEMM.replace("(row < M && ak < K) ? A[row * K + ak] : 0.f", "(row < M) ? A[row * K + ak] : 0.f")
    assert bad != SGEMM
    M, N, K = 16, 16, 20            # the last row of A is read past its end
    args = [np.int32(M), np.int32(N), np.int32(K), np.float32(1), f32(M, K), f32(K, N), np.float32(0), f32(M, N)]
    with kernels.check("memcheck"):
        with pytest.raises(kernels.OutOfBoundsError) as ei:
            launch(bad, "sgemm_tiled", (1, 1), (16, 16), args)
    assert ei.value.line == line_of(bad, "As[threadIdx.y][threadIdx.x] =")
    assert "'A'" in str(ei.value) or " A" in str(ei.value)


def test_planted_missing_syncthreads_in_transpose(cpu):
    bad = TRANSPOSE.replace("    __syncthreads();\n", "", 1)
    assert bad != TRANSPOSE
    args = [np.zeros((64, 64), np.float32), f32(64, 64), np.int32(64), np.int32(64)]
    with kernels.check("racecheck"):
        with pytest.raises(kernels.RaceError) as ei:
            launch(bad, "transposeNoBankConflicts", (2, 2), (32, 8), args)
    lines = {line_of(bad, "tile[threadIdx.y+j][threadIdx.x] ="), line_of(bad, "= tile[threadIdx.x][threadIdx.y + j]")}
    assert ei.value.line in lines
    assert any(f"line {l}" in (ei.value.details or "") for l in lines - {ei.value.line})


def test_planted_partial_mask_shfl_in_divergent_branch(cpu):
    src = r'''
extern "C" __global__ void half_warp_sum(const float* x, float* y) {
    int lane = threadIdx.x & 31;
    float v = x[threadIdx.x];
    if (lane < 16) {
        for (int o = 8; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffff, v, o);   // mask names lanes 16..31, which are not here
    }
    y[threadIdx.x] = v;
}'''
    # lanes 16..31 exit, so the shuffle completes (as on the GPU); lanes 8..15 read exited lanes: undefined,
    # which racecheck reports
    with kernels.check("racecheck"), pytest.raises(kernels.ShuffleMaskError) as ei:
        launch(src, "half_warp_sum", (1,), (32,), [f32(32), np.zeros(32, np.float32)])
    assert ei.value.line == line_of(src, "__shfl_down_sync(0xffffffff")
    fixed = src.replace("0xffffffff", "0x0000ffff")
    x = f32(32)
    y = launch(fixed, "half_warp_sum", (1,), (32,), [x, np.zeros(32, np.float32)])[1]
    np.testing.assert_allclose(y[0], x[:16].sum(), rtol=1e-5)


def test_planted_spin_wait_on_another_block_times_out(cpu, monkeypatch):
    src = r'''
extern "C" __global__ void wait_for_next_block(volatile int* flag, int* out) {
    if (blockIdx.x == 0) {
        while (flag[0] == 0) { }          // block 1 sets it; block 0 runs first here
        out[0] = 1;
    } else if (threadIdx.x == 0) {
        flag[0] = 1;
    }
}'''
    monkeypatch.setenv("KERNELS_TIMEOUT", "1")
    with pytest.raises(kernels.KernelTimeout) as ei:
        launch(src, "wait_for_next_block", (2,), (32,), [np.zeros(1, np.int32), np.zeros(1, np.int32)])
    assert ei.value.line == line_of(src, "while (flag[0] == 0)")


def test_racecheck_float_atomic_sum_that_cancels_is_not_a_race(cpu):
    """Found here: racecheck compared float-atomic outputs with 1e-5 x |result|, so a naive
    atomicAdd sum whose terms cancel (result ~0.01 from partial sums ~1e3) was reported as a data
    race under another schedule. The tolerance now scales with the largest value the atomics saw."""
    src = r'''
extern "C" __global__ void naive_sum(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}'''
    x = (np.random.default_rng(5).standard_normal(128) * 100).astype(np.float32)
    x = np.concatenate([x, -x[::-1]]).astype(np.float32)
    x[0] += 0.01
    with kernels.check("racecheck"):
        out = launch(src, "naive_sum", (1,), (256,), [x, np.zeros(1, np.float32), np.int32(x.size)])[1]
    assert abs(out[0] - 0.01) < 0.01
    # a real race on the same output is still reported
    bad = src.replace("atomicAdd(out, x[i]);", "out[0] += x[i];")
    with kernels.check("racecheck"), pytest.raises(kernels.RaceError):
        launch(bad, "naive_sum", (1,), (256,), [x, np.zeros(1, np.float32), np.int32(x.size)])


def test_saturating_float_to_int_intrinsics_and_xor_shuffle_into_earlier_segment(backend):
    """Found here: __float2int_rn & co. used a plain C cast (x86: INT_MIN for any out-of-range value or
    NaN; the GPU saturates and gives 0 for NaN), and __shfl_xor_sync with width < 32 returned the
    caller's own value when the xor lane lay in an *earlier* segment (CUDA: only later segments)."""
    src = r'''
extern "C" __global__ void conv(const float* f, int* i, unsigned* u, long long* ll, float* xo) {
    int t = threadIdx.x;
    i[t] = __float2int_rn(f[t]);
    u[t] = __float2uint_rn(f[t]);
    ll[t] = __float2ll_rn(f[t]);
    xo[t] = __shfl_xor_sync(0xffffffffu, (float)t, 16, 16);
}'''
    f = np.array([3e9, -3e9, np.nan, np.inf, -np.inf, 2.5, -2.5, 1e20] * 4, np.float32)
    i, u, ll, xo = (np.zeros(32, np.int32), np.zeros(32, np.uint32), np.zeros(32, np.int64),
                    np.zeros(32, np.float32))
    _, i, u, ll, xo = launch(src, "conv", (1,), (32,), [f, i, u, ll, xo])
    imax, imin = 2**31 - 1, -2**31
    np.testing.assert_array_equal(i[:8], [imax, imin, 0, imax, imin, 2, -2, imax])
    np.testing.assert_array_equal(u[:8], [3000000000, 0, 0, 2**32 - 1, 0, 2, 0, 2**32 - 1])
    # 64-bit conversions of NaN give 0x8000000000000000 on the GPU (measured on an H200), not 0 as the 32-bit ones
    np.testing.assert_array_equal(ll[:8], [3000000000, -3000000000, -2**63, 2**63 - 1, -2**63, 2, -2, 2**63 - 1])
    np.testing.assert_array_equal(xo, list(range(16)) + list(range(16)))


def test_intra_block_spin_wait_with_nanosleep_backoff(backend):
    """Found here: a consumer thread spinning on a volatile shared flag with __nanosleep back-off,
    set by a thread of a later warp, never let the producer run (fibers are not preempted) and timed
    out. __nanosleep now yields to the other threads of the block (legal on Volta+ GPUs)."""
    src = r'''
extern "C" __global__ void handoff(int* out) {
    __shared__ volatile int flag;
    __shared__ volatile int data;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        while (flag == 0) __nanosleep(64);
        out[0] = data;
    } else if (threadIdx.x == 32) {
        data = 42;
        __threadfence_block();
        flag = 1;
    }
}'''
    out = launch(src, "handoff", (2,), (64,), [np.zeros(1, np.int32)])[0]
    assert out[0] == 42


def _fp8_table(e4):
    """All finite values of e4m3 / e5m2 by code (reference decode)."""
    M, B = (3, 7) if e4 else (2, 15)
    vals = {}
    for c in range(128):
        ex, man = c >> M, c & ((1 << M) - 1)
        if e4 and c == 0x7F or (not e4 and ex == 0x1F):
            continue
        vals[c] = (man * 2.0 ** (1 - B - M)) if ex == 0 else ((1 << M) | man) * 2.0 ** (ex - B - M)
    return vals


def _fp8_ref(x, e4):
    table = _fp8_table(e4)
    codes = np.array(sorted(table)), None
    out = []
    for v in x.astype(np.float64):
        s = 0x80 if np.signbit(v) else 0
        a = abs(v)
        best = min(table, key=lambda c: (abs(table[c] - a), c & 1))   # nearest, ties to even code
        out.append(s | best)
    return np.array(out, np.uint8)


def test_fp8_e4m3_e5m2_conversions(backend):
    """Found here: <cuda_fp8.h> (NVRTC has it) was missing from the emulator."""
    src = r'''
#include <cuda_fp8.h>
extern "C" __global__ void q8(const float* x, unsigned char* e4, unsigned char* e5, float* back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_fp8_e4m3 a(x[i]);
    __nv_fp8_e5m2 b(x[i]);
    e4[i] = a.__x;
    e5[i] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E5M2);
    back[i] = float(a) + (float)b - (float)b;
}'''
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.standard_normal(40) * 10, rng.standard_normal(20) * 0.01, [0.0, -0.0, 448, 449, 500, 1e6, -1e6,
                        0.0009765625, 0.001953125 * 1.5, 1.0625, 1.1875, 57344, 61440, 70000]]).astype(np.float32)
    n = x.size
    _, e4, e5, back, _ = launch(src, "q8", (2,), (64,), [x, np.zeros(n, np.uint8), np.zeros(n, np.uint8),
                                                           np.zeros(n, np.float32), np.int32(n)])
    want4 = _fp8_ref(np.clip(x, -448, 448), True)
    want5 = _fp8_ref(np.clip(x, -57344, 57344), False)
    np.testing.assert_array_equal(e4, want4)
    np.testing.assert_array_equal(e5, want5)
    t4 = _fp8_table(True)
    np.testing.assert_array_equal(back, [(-1 if c & 0x80 else 1) * t4[c & 0x7F] for c in want4])


def test_cg_memcpy_async_and_wait(backend):
    """Found here: <cooperative_groups/memcpy_async.h> was missing (NVRTC has it)."""
    src = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
extern "C" __global__ void rowsum(const float* x, float* y, int C) {
    extern __shared__ float row[];
    cg::thread_block block = cg::this_thread_block();
    cg::memcpy_async(block, row, x + (size_t)blockIdx.x * C, sizeof(float) * C);
    cg::wait(block);
    if (block.thread_rank() == 0) {
        float s = 0.f;
        for (int i = 0; i < C; ++i) s += row[i];
        y[blockIdx.x] = s;
    }
}'''
    x = f32(3, 100)
    with kernels.check("memcheck", "racecheck") if backend == "cpu" else contextlib.nullcontext():
        y = launch(src, "rowsum", (3,), (64,), [x, np.zeros(3, np.float32), np.int32(100)], shared_mem=400)[1]
    np.testing.assert_allclose(y, x.sum(1), rtol=1e-5, atol=1e-5)


def test_racecheck_bf16_atomic_accumulation_is_not_a_race(cpu):
    """Found here: bf16 outputs arrive as uint16 and were compared bit-exactly, so a bf16 atomicAdd
    accumulation (rounding depends on the order) was reported as a race under another schedule."""
    src = r'''
#include <cuda_bf16.h>
extern "C" __global__ void acc(const float* x, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&out[i % 4], __float2bfloat16(x[i]));
}'''
    x = f32(256) * 10
    with kernels.check("racecheck"):
        out = launch(src, "acc", (1,), (256,), [x, np.zeros(4, np.uint16), np.int32(256)])[1]
    got = _bf16_to_f32(out)
    np.testing.assert_allclose(got, x.reshape(-1, 4).sum(0), rtol=0.1, atol=2.0)

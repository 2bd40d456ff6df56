// Helpers shared by the reference kernels (layernorm.cu, rmsnorm.cu, softmax.cu).
// Not compiled on its own and not #included: solutions/kernels/dispatch.py source(op) builds each op's
// program as this file followed by <op>.cu, with #line directives so compiler diagnostics name the right
// file and line. (Text concatenation works the same for cupy.RawModule, the course's kernels.RawModule
// with either backend and plain NVRTC, and every compile cache sees the whole program text.)
// Names are prefixed sol_ / Sol / SOL_ so they cannot clash with an op file's own.

#if defined(__CUDA_EMU__)
#include <cuda_fp16.h>  // the CPU emulator's bit-exact fp16 conversions (emu::float_to_half_bits), sol_pack_f16x2
#endif

// Cache hints are opt-in (-DSOL_CACHE_HINTS): on the H200, evict-first loads/stores (__ldcs/__stcs)
// measured 3-8 points of copy bandwidth SLOWER than plain ld.global.nc / st.global at most shapes
// (docs/benchmarks/speed_of_light.md, variants table).
#if defined(__CUDA_ARCH__) && defined(SOL_CACHE_HINTS)
#define SOL_LDCS(p) __ldcs(p)          // streaming load: x is read exactly once
#define SOL_LDG(p) __ldg(p)            // read-only path: gamma/beta are re-read by every row
#define SOL_STCS(p, v) __stcs(p, v)    // streaming store: y is not read again by this kernel
#elif defined(__CUDA_ARCH__)
#define SOL_LDCS(p) __ldg(p)
#define SOL_LDG(p) __ldg(p)
#define SOL_STCS(p, v) (*(p) = (v))
#else
#define SOL_LDCS(p) (*(p))
#define SOL_LDG(p) (*(p))
#define SOL_STCS(p, v) (*(p) = (v))
#endif
// 16-byte stores of the persistent kernels. `*(float4*)p = v` is an aggregate copy: NVVM splits it into 4-byte
// stores and re-joins them where it can prove the alignment; inside the persistent kernels' row loop it did
// not (four st.global.f32 per vector, each warp store half-filling 32 sectors; fp32 RMSNorm 8192 measured 87%
// of copy instead of 95%). There: the vector PTX store itself (volatile, so it is kept; no "memory" clobber,
// sound because no kernel reads y back). Not in the other kernels, which already get st.global.v4: the same
// asm store measured fp32 LayerNorm 8192 (block per row) at 63% of copy instead of 90%, with the same PTX
// instructions in a slightly different order (cause not found; H200, 2026-11-29).
#if defined(__CUDA_ARCH__) && !defined(__CUDA_EMU__) && !defined(SOL_CACHE_HINTS)
__device__ __forceinline__ void sol_st16(float4* p, const float4& v) {
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w));
}
__device__ __forceinline__ void sol_st16(uint4* p, const uint4& v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}
#else
template <typename V>
__device__ __forceinline__ void sol_st16(V* p, const V& v) { SOL_STCS(p, v); }
#endif
#if defined(__CUDA_ARCH__)
#define SOL_ST_EVICT_FIRST(p, v) __stcs(p, v)  // stream kernels: keep x (read twice) in L2, not y
#else
#define SOL_ST_EVICT_FIRST(p, v) (*(p) = (v))
#endif

__device__ __forceinline__ float sol_bf16_lo(unsigned u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float sol_bf16_hi(unsigned u) { return __uint_as_float(u & 0xffff0000u); }

__device__ __forceinline__ unsigned short sol_f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__CUDA_EMU__)
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // keep NaN a NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                                  // round to nearest even
    return (unsigned short)(u >> 16);
#endif
}

__device__ __forceinline__ unsigned sol_pack_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__CUDA_EMU__)
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return (unsigned)sol_f32_to_bf16(lo) | ((unsigned)sol_f32_to_bf16(hi) << 16);
#endif
}

// fp16 (IEEE binary16) pairs, round to nearest even: lo in the low half. Used to keep values in (0, 2^15] in
// half the registers (softmax's pipe kernel); the emulator uses its own bit-exact conversions.
__device__ __forceinline__ unsigned sol_pack_f16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(__CUDA_EMU__)
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#elif defined(__CUDA_EMU__)
    return (unsigned)emu::float_to_half_bits(lo) | ((unsigned)emu::float_to_half_bits(hi) << 16);
#else
    unsigned short l, h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(l) : "f"(lo));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(hi));
    return (unsigned)l | ((unsigned)h << 16);
#endif
}

__device__ __forceinline__ void sol_unpack_f16x2(unsigned u, float& lo, float& hi) {
#if defined(__CUDA_EMU__)
    lo = emu::half_bits_to_float((unsigned short)(u & 0xffffu));
    hi = emu::half_bits_to_float((unsigned short)(u >> 16));
#else
    asm("{ .reg .f16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
        : "=f"(lo), "=f"(hi) : "r"(u));
#endif
}

__device__ __forceinline__ float sol_to_f32(float v) { return v; }
__device__ __forceinline__ float sol_to_f32(unsigned short v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ void sol_from_f32(float* p, float v) { SOL_STCS(p, v); }
__device__ __forceinline__ void sol_from_f32(unsigned short* p, float v) { SOL_STCS(p, sol_f32_to_bf16(v)); }

// 16 bytes (W elements) held in a uint4 -> fp32 registers.
template <typename T, int W>
__device__ __forceinline__ void sol_unpack(const uint4& q, float (&v)[W]) {
    if constexpr (sizeof(T) == 4) {
        v[0] = __uint_as_float(q.x); v[1] = __uint_as_float(q.y); v[2] = __uint_as_float(q.z); v[3] = __uint_as_float(q.w);
    } else {
        v[0] = sol_bf16_lo(q.x); v[1] = sol_bf16_hi(q.x); v[2] = sol_bf16_lo(q.y); v[3] = sol_bf16_hi(q.y);
        v[4] = sol_bf16_lo(q.z); v[5] = sol_bf16_hi(q.z); v[6] = sol_bf16_lo(q.w); v[7] = sol_bf16_hi(q.w);
    }
}

// W consecutive elements (16 bytes when W > 1) -> fp32 registers.
template <typename T, int W, bool STREAM>
__device__ __forceinline__ void sol_load(const T* __restrict__ p, float (&v)[W]) {
    if constexpr (W == 1) {
        T s;
        if constexpr (STREAM) s = SOL_LDCS(p); else s = SOL_LDG(p);
        v[0] = sol_to_f32(s);
    } else if constexpr (sizeof(T) == 4) {
        static_assert(W == 4, "fp32 vectors are float4");
        float4 q;
        if constexpr (STREAM) q = SOL_LDCS(reinterpret_cast<const float4*>(p));
        else q = SOL_LDG(reinterpret_cast<const float4*>(p));
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        static_assert(W == 8, "bf16 vectors are 8 x 16 bits");
        uint4 q;
        if constexpr (STREAM) q = SOL_LDCS(reinterpret_cast<const uint4*>(p));
        else q = SOL_LDG(reinterpret_cast<const uint4*>(p));
        sol_unpack<T, W>(q, v);
    }
}

// fp32 registers -> W consecutive elements. EVICT_FIRST: streaming store (used by the stream kernels);
// PTX_VEC: 16-byte vectors through sol_st16 (the persistent kernels).
template <typename T, int W, bool EVICT_FIRST = false, bool PTX_VEC = false>
__device__ __forceinline__ void sol_store(T* __restrict__ p, const float (&v)[W]) {
    if constexpr (W == 1) {
        T s;
        if constexpr (sizeof(T) == 4) s = v[0]; else s = sol_f32_to_bf16(v[0]);
        if constexpr (EVICT_FIRST) SOL_ST_EVICT_FIRST(p, s); else SOL_STCS(p, s);
    } else if constexpr (sizeof(T) == 4) {
        const float4 q = make_float4(v[0], v[1], v[2], v[3]);
        if constexpr (EVICT_FIRST) SOL_ST_EVICT_FIRST(reinterpret_cast<float4*>(p), q);
        else if constexpr (PTX_VEC) sol_st16(reinterpret_cast<float4*>(p), q);
        else SOL_STCS(reinterpret_cast<float4*>(p), q);
    } else {
        uint4 q;
        q.x = sol_pack_bf16x2(v[0], v[1]); q.y = sol_pack_bf16x2(v[2], v[3]);
        q.z = sol_pack_bf16x2(v[4], v[5]); q.w = sol_pack_bf16x2(v[6], v[7]);
        if constexpr (EVICT_FIRST) SOL_ST_EVICT_FIRST(reinterpret_cast<uint4*>(p), q);
        else if constexpr (PTX_VEC) sol_st16(reinterpret_cast<uint4*>(p), q);
        else SOL_STCS(reinterpret_cast<uint4*>(p), q);
    }
}

struct SolSum {
    __device__ __forceinline__ static float apply(float a, float b) { return a + b; }
    __device__ __forceinline__ static float identity() { return 0.0f; }
};
struct SolMax {
    __device__ __forceinline__ static float apply(float a, float b) { return fmaxf(a, b); }
    __device__ __forceinline__ static float identity() { return __int_as_float(0xff800000); }  // -inf
};

// Butterfly over aligned groups of WIDTH lanes (32 = whole warp): every lane of a group ends with the
// bit-identical result (a + b == b + a at each step).
template <class Op, int WIDTH = 32>
__device__ __forceinline__ float sol_warp_allreduce(float v) {
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Thread-block clusters through PTX, so no cooperative_groups header is needed (sm_90+ only).
// The course's CPU emulator (__CUDA_EMU__) has no clusters: there these are never instantiated with
// CLUSTER > 1 and the cluster kernels are left out (the dispatcher uses the stream kernels instead).
#if defined(__CUDA_EMU__)
#define SOL_CLUSTER_DIMS(c)
__device__ __forceinline__ unsigned sol_cluster_rank() { return 0; }
__device__ __forceinline__ void sol_cluster_sync() {}
__device__ __forceinline__ void sol_cluster_exit_sync() {}
__device__ __forceinline__ float sol_load_peer_shared(const float* smem, unsigned) { return *smem; }
__device__ __forceinline__ float2 sol_load_peer_shared2(const float2* smem, unsigned) { return *smem; }
#else
#define SOL_CLUSTER_DIMS(c) __cluster_dims__(c, 1, 1)
__device__ __forceinline__ unsigned sol_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void sol_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Last barrier before exit: only orders peers' reads of this CTA's shared memory (already complete, their
// values were used), so a relaxed arrive suffices; a release arrive would wait for this CTA's global stores.
__device__ __forceinline__ void sol_cluster_exit_sync() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
__device__ __forceinline__ float sol_load_peer_shared(const float* smem, unsigned rank) {
    unsigned local, remote;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(local) : "l"(smem));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}
__device__ __forceinline__ float2 sol_load_peer_shared2(const float2* smem, unsigned rank) {
    unsigned local, remote;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(local) : "l"(smem));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(remote) : "memory");
    return v;
}
#endif

// This CTA's rank in its cluster (0 without clusters).
template <int CLUSTER>
__device__ __forceinline__ int sol_cta_rank() { return CLUSTER > 1 ? (int)sol_cluster_rank() : 0; }

// All-reduce over the TPR threads of one row (and over the CLUSTER CTAs sharing it).
// warp_buf/cluster_buf must not be reused by another call before every thread has passed this one,
// so callers give each reduction its own buffers instead of paying a second barrier.
template <class Op, int TPR, int CLUSTER>
__device__ __forceinline__ float sol_row_allreduce(float v, float* warp_buf, float* cluster_buf) {
    v = sol_warp_allreduce<Op, (TPR < 32 ? TPR : 32)>(v);
    if constexpr (TPR > 32) {
        constexpr int NW = TPR / 32;
        const int lane = threadIdx.x & 31;
        if (lane == 0) warp_buf[threadIdx.x >> 5] = v;
        __syncthreads();
        v = sol_warp_allreduce<Op>(lane < NW ? warp_buf[lane] : Op::identity());
    }
    if constexpr (CLUSTER > 1) {
        if (threadIdx.x == 0) *cluster_buf = v;
        sol_cluster_sync();
        float acc = sol_load_peer_shared(cluster_buf, 0);  // same order in every CTA: identical results
#pragma unroll
        for (int r = 1; r < CLUSTER; ++r) acc = Op::apply(acc, sol_load_peer_shared(cluster_buf, r));
        v = acc;
    }
    return v;
}
// Two sums at once (one barrier round for both): LayerNorm's shifted sum and sum of squares.
template <int TPR, int CLUSTER>
__device__ __forceinline__ float2 sol_row_allreduce_sum2(float a, float b, float2* warp_buf, float2* cluster_buf) {
    constexpr int WIDTH = TPR < 32 ? TPR : 32;
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
    if constexpr (TPR > 32) {
        constexpr int NW = TPR / 32;
        const int lane = threadIdx.x & 31;
        if (lane == 0) warp_buf[threadIdx.x >> 5] = make_float2(a, b);
        __syncthreads();
        const float2 w = lane < NW ? warp_buf[lane] : make_float2(0.0f, 0.0f);
        a = w.x; b = w.y;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            a += __shfl_xor_sync(0xffffffffu, a, o);
            b += __shfl_xor_sync(0xffffffffu, b, o);
        }
    }
    if constexpr (CLUSTER > 1) {
        if (threadIdx.x == 0) *cluster_buf = make_float2(a, b);
        sol_cluster_sync();
        float2 acc = sol_load_peer_shared2(cluster_buf, 0);  // same order in every CTA: identical results
#pragma unroll
        for (int r = 1; r < CLUSTER; ++r) {
            const float2 p = sol_load_peer_shared2(cluster_buf, r);
            acc.x += p.x; acc.y += p.y;
        }
        a = acc.x; b = acc.y;
    }
    return make_float2(a, b);
}

// Last read of data the kernel already read once (stream kernels' second pass): evict-first load. This one
// hint measured faster on the H200 (the first read should stay in L2, the second should not keep it).
template <typename T, int W>
__device__ __forceinline__ void sol_load_last(const T* __restrict__ p, float (&v)[W]) {
#if defined(__CUDA_ARCH__)
    if constexpr (W == 1) {
        v[0] = sol_to_f32(__ldcs(p));
    } else if constexpr (sizeof(T) == 4) {
        const float4 q = __ldcs(reinterpret_cast<const float4*>(p));
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        sol_unpack<T, W>(__ldcs(reinterpret_cast<const uint4*>(p)), v);
    }
#else
    sol_load<T, W, false>(p, v);
#endif
}

// A row split into a 16-byte-aligned body of nb vectors (starting at element `shift`) and up to 2W - 2
// scalar extras (the head before the body, the tail after it), so rows whose start is not 16-byte aligned
// (N not a multiple of W, e.g. 50257 logits) still move their bulk with vector accesses.
template <typename T, int W>
struct SolRowSplit {
    int shift, nb, extras;
    __device__ __forceinline__ SolRowSplit(const T* row, int N) {
        if constexpr (W == 1) {
            shift = 0; nb = N; extras = 0;
        } else {
            const int mis = (int)((reinterpret_cast<unsigned long long>(row) / sizeof(T)) % W);
            shift = min((W - mis) % W, N);
            nb = (N - shift) / W;
            extras = N - nb * W;
        }
    }
    // element index of extra number e (e < extras): head elements first, then the tail
    __device__ __forceinline__ int extra_index(int e) const { return e < shift ? e : nb * W + e; }
};

// Body vector number of a cached row's vector i of thread t in cluster rank `rank`: a warp's load
// instruction covers 32 consecutive 16-byte vectors, and each rank takes every CLUSTER-th block of TPR.
template <int TPR, int CLUSTER>
__device__ __forceinline__ int sol_vec_index(int i, int rank, int t) { return (i * CLUSTER + rank) * TPR + t; }

// Load the body vectors thread t owns of one cached row into v (elements shift + j * W ..., j =
// sol_vec_index) and fill the ones past the row with `pad`; fold(e) sees every element in order: the
// padding too (pad is the reduction's identity) or, FOLD_PAD = false, only the row's own elements.
template <typename T, int W, int TPR, int NV, int CLUSTER, bool FOLD_PAD = true, class Fold>
__device__ __forceinline__ void sol_load_cached_row(const T* __restrict__ xr, const SolRowSplit<T, W>& rs,
                                                    int rank, int t, float (&v)[NV][W], float pad, Fold fold) {
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        if (const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t); j < rs.nb) {
            sol_load<T, W, true>(xr + rs.shift + j * W, v[i]);
            if constexpr (!FOLD_PAD) {
#pragma unroll
                for (int k = 0; k < W; ++k) fold(v[i][k]);
            }
        } else {
#pragma unroll
            for (int k = 0; k < W; ++k) v[i][k] = pad;
        }
        if constexpr (FOLD_PAD) {
#pragma unroll
            for (int k = 0; k < W; ++k) fold(v[i][k]);
        }
    }
}

// The 16 bytes of parameters for the W columns starting at `col` (p 16-byte aligned, any column alignment):
// one vector load when col is a multiple of W; else aligned 32-bit words -- fp32: 4 words, bf16: 4 words
// (even col) or 5 words and a 16-bit funnel shift (odd col) instead of 8 scalar 16-bit loads. Words, not the
// two 16-byte vectors around col: the misaligned branch's registers count against occupancy even on rows
// that never take it (fp32 LayerNorm 4096 measured 95% -> 68% of copy with the two-vector version).
template <typename T, int W>
__device__ __forceinline__ uint4 sol_param_vec(const T* __restrict__ p, int col, int N) {
    const int s = col % W;
    if (s == 0) return SOL_LDG(reinterpret_cast<const uint4*>(p + col));
    const unsigned* w = reinterpret_cast<const unsigned*>(p + (col & (sizeof(T) == 2 ? ~1 : ~0)));
    if (sizeof(T) == 4) return make_uint4(SOL_LDG(w), SOL_LDG(w + 1), SOL_LDG(w + 2), SOL_LDG(w + 3));
    if (col - s + 2 * W > N) {  // the row's last vector: the fifth word could pass element N - 1
        unsigned h[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) h[i] = (unsigned)SOL_LDG(p + col + 2 * i) | ((unsigned)SOL_LDG(p + col + 2 * i + 1) << 16);
        return make_uint4(h[0], h[1], h[2], h[3]);
    }
    if ((col & 1) == 0) return make_uint4(SOL_LDG(w), SOL_LDG(w + 1), SOL_LDG(w + 2), SOL_LDG(w + 3));
    const unsigned w0 = SOL_LDG(w), w1 = SOL_LDG(w + 1), w2 = SOL_LDG(w + 2), w3 = SOL_LDG(w + 3), w4 = SOL_LDG(w + 4);
    return make_uint4(__funnelshift_r(w0, w1, 16), __funnelshift_r(w1, w2, 16), __funnelshift_r(w2, w3, 16),
                      __funnelshift_r(w3, w4, 16));
}

// Parameters (gamma, beta) for the W columns starting at col: 16-byte vector loads at any column alignment
// (sol_param_vec) when p is 16-byte aligned (W > 1), else one element.
// Diagnosis build only (-DSOL_DIAG_NO_PARAMS, wrong results, benchmarks/stage_removal.py): every parameter
// read below returns 1 without touching memory, to time a kernel without them.
template <int W>
__device__ __forceinline__ bool sol_diag_no_params(float (&v)[W]) {
#if defined(SOL_DIAG_NO_PARAMS)
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = 1.0f;
    return true;
#else
    return false;
#endif
}

template <typename T, int W>
__device__ __forceinline__ void sol_load_param(const T* __restrict__ p, int col, int N, float (&v)[W]) {
    if (sol_diag_no_params(v)) return;
    if constexpr (W == 1) {
        v[0] = sol_to_f32(SOL_LDG(p + col));
    } else {
        sol_unpack<T, W>(sol_param_vec<T, W>(p, col, N), v);
    }
}

// Where a pipe kernel reads its parameters (gamma, beta): fetch(p, smem, first row's split, rank, t, N) and
// commit() once (then a block barrier if kBytes > 0), then load(p, i, col, N, v) gives the W columns starting
// at col of parameter p (i: the thread's vector number); kBytes: dynamic shared memory per parameter. fetch
// only issues loads and commit stores them, so a kernel with two parameters has all its loads in flight at
// once (SolParamsTwo). SolParamsGlobal: from global memory on every row (L1/L2 hits while the parameters fit
// there). Stateless, so p stays a __restrict__ kernel argument (a pointer inside a struct loses it).
template <typename T, int W>
struct SolParamsGlobal {
    static constexpr int kBytes = 0;
    __device__ __forceinline__ void row(int) {}  // per-row state: none
    __device__ __forceinline__ void fetch(const T* __restrict__, T*, const SolRowSplit<T, W>&, int, int, int) {}
    __device__ __forceinline__ void commit() {}
    __device__ __forceinline__ void load(const T* __restrict__ p, int, int col, int N, float (&v)[W]) const {
        sol_load_param<T, W>(p, col, N, v);
    }
};

// The 16 bytes of parameter p for columns c ... c + W - 1 (c a multiple of W, p 16-byte aligned); zeros past N.
template <typename T, int W>
__device__ __forceinline__ uint4 sol_param_chunk(const T* __restrict__ p, int c, int N) {
    if (c + W <= N) return SOL_LDG(reinterpret_cast<const uint4*>(p + c));
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        if constexpr (sizeof(T) == 4) {
            w[k] = c + k < N ? __float_as_uint(SOL_LDG(p + c + k)) : 0u;
        } else {
            const int e = c + 2 * k;
            w[k] = (e < N ? (unsigned)SOL_LDG(p + e) : 0u) | (e + 1 < N ? (unsigned)SOL_LDG(p + e + 1) << 16 : 0u);
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// The parameter chunks (W columns, 16 bytes) a persistent CTA copies to shared memory, in registers between
// fetch (every load issued) and their stores (each). The CTA of cluster rank `rank` owns column blocks starting
// at b_i = (i * CLUSTER + rank) * TPR * W, i < NV, of TPR chunks each (the cached-row layout), plus one spare
// chunk per block (u = TPR; a row that starts s < W elements past a 16-byte boundary reads columns
// b_i + s + t * W ..., into the next block's first chunk). Thread t fetches chunk t of every block and the spare
// chunk of block t (SPARE false: no spare chunks, for rows that all start on 16 bytes). Copied a block at a time
// instead (each store waiting for its load), the setup took 5-6 us of a ~130 us launch (LayerNorm 32768 / 65536,
// H200 timeline: docs/benchmarks/explore_1930).
template <typename T, int W, int TPR, int NV, int CLUSTER, bool SPARE = true>
struct SolParamChunks {
    static_assert(W > 1 && NV <= TPR, "16-byte chunks; a thread per spare chunk");
    uint4 q[NV], spare;
    __device__ __forceinline__ void fetch(const T* __restrict__ p, int rank, int t, int N) {
#pragma unroll
        for (int i = 0; i < NV; ++i) q[i] = sol_param_chunk<T, W>(p, sol_vec_index<TPR, CLUSTER>(i, rank, t) * W, N);
        if constexpr (SPARE)
            spare = t < NV ? sol_param_chunk<T, W>(p, (sol_vec_index<TPR, CLUSTER>(t, rank, 0) + TPR) * W, N)
                           : make_uint4(0, 0, 0, 0);
    }
    // f(i, u, chunk, other's chunk) for each chunk thread t fetched, with the same chunk of `other` (a second
    // parameter fetched alike)
    template <class F>
    __device__ __forceinline__ void each(const SolParamChunks& other, int t, F f) const {
#pragma unroll
        for (int i = 0; i < NV; ++i) f(i, t, q[i], other.q[i]);
        if (SPARE && t < NV) f(t, TPR, spare, other.spare);
    }
};

// Parameters of the columns one persistent CTA owns, copied to shared memory once for all of its rows
// (the chunk layout of SolParamChunks: block i, chunk u at s + i * kBlock + u * W).
// Rows longer than L1 re-read gamma/beta from L2 on every row, as many bytes as x itself for LayerNorm:
// measured on the H200 (benchmarks/stage_removal.py), not loading them at all took fp32 LayerNorm
// 1920 x 32768 from 76% to 92% of copy. SPARE: as SolParamChunks'.
template <typename T, int W, int TPR, int NV, int CLUSTER, bool SPARE = true>  // as the kernel's
struct SolParamsShared {
    static constexpr int kBlock = (TPR + 1) * W;
    static constexpr int kBytes = NV * kBlock * (int)sizeof(T);
    T* s;      // NV blocks of kBlock elements
    int rank, t;
    SolParamChunks<T, W, TPR, NV, CLUSTER, SPARE> c;

    __device__ __forceinline__ void row(int) {}  // per-row state: none
    __device__ __forceinline__ void fetch(const T* __restrict__ p, T* smem, const SolRowSplit<T, W>&, int r, int tt,
                                          int N) {
        s = smem;
        rank = r;
        t = tt;
        c.fetch(p, r, tt, N);
    }
    __device__ __forceinline__ void commit() {
        c.each(c, t, [&](int i, int u, const uint4& q, const uint4&) {
            *reinterpret_cast<uint4*>(s + i * kBlock + u * W) = q;
        });
    }
    __device__ __forceinline__ void load(const T* __restrict__, int i, int col, int, float (&v)[W]) const {
        if (sol_diag_no_params(v)) return;
        const T* blk = s + i * kBlock;
        const int off = col - (i * CLUSTER + rank) * TPR * W;  // shift + t * W: 0 <= off <= TPR * W - 1
        uint4 q;
        if (off % W == 0) {
            q = *reinterpret_cast<const uint4*>(blk + off);
        } else {  // misaligned row: aligned 32-bit words (+ a 16-bit funnel shift for odd bf16 columns)
            const unsigned* w = reinterpret_cast<const unsigned*>(blk + (off & (sizeof(T) == 2 ? ~1 : ~0)));
            if (sizeof(T) == 4 || (off & 1) == 0) q = make_uint4(w[0], w[1], w[2], w[3]);
            else q = make_uint4(__funnelshift_r(w[0], w[1], 16), __funnelshift_r(w[1], w[2], 16),
                                __funnelshift_r(w[2], w[3], 16), __funnelshift_r(w[3], w[4], 16));
        }
        sol_unpack<T, W>(q, v);
    }
};

// Two more layouts of the same columns as SolParamsShared, each branch-free on the row's offset (the pipe
// kernels issue an instruction or more per element, and the any-offset branch above costs a few per vector):
// SolParamsAligned: tensors whose rows all start on a 16-byte boundary (N % W == 0; the dispatcher checks):
//   one 16-byte vector per W columns, in the tensor's type.
// SolParamsSpread: rows at any offset s, stored as fp32. Thread t reads columns s + t * W ... as 4-byte
//   words; in the plain layout (thread stride 16 bytes) those conflict 4 ways. Value k of chunk u is
//   stored at k * (TPR + 1) + u, so the warp's j-th load (chunk t + (s + j) / W, value (s + j) % W) hits 32
//   consecutive banks: W conflict-free loads, no funnel shifts, no unpacking.
template <typename T, int W, int TPR, int NV, int CLUSTER>  // as the kernel's
struct SolParamsAligned {
    static constexpr int kBlock = (TPR + 1) * W;  // elements per column block (layout of SolParamsShared)
    static constexpr int kBytes = NV * kBlock * (int)sizeof(T);
    SolParamsShared<T, W, TPR, NV, CLUSTER, false> sh;  // same layout and fill (no row reads a spare chunk)

    __device__ __forceinline__ void row(int) {}  // per-row state: none
    __device__ __forceinline__ void fetch(const T* __restrict__ p, T* smem, const SolRowSplit<T, W>& rs, int r,
                                          int t, int N) {
        sh.fetch(p, smem, rs, r, t, N);
    }
    __device__ __forceinline__ void commit() { sh.commit(); }
    __device__ __forceinline__ void load(const T* __restrict__, int i, int col, int, float (&v)[W]) const {
        if (sol_diag_no_params(v)) return;
        const int off = col - (i * CLUSTER + sh.rank) * TPR * W;  // t * W (rows start at 16-byte boundaries)
        sol_unpack<T, W>(*reinterpret_cast<const uint4*>(sh.s + i * kBlock + off), v);
    }
};

// The bank-spread layout of SolParamsSpread and SolParamPairs: one Word per column; word k of the thread's
// vector i of the current row (row() sets its shift) is column shift + t * W + k, i.e. value (shift + k) % W
// of chunk t + (shift + k) / W: base + k * (TPR + 1) before the wrap, one chunk on and W planes back after it
// (a select per k, offsets immediate; computing the position from the column redid it for every vector).
template <class Word, int W, int TPR, int NV, int CLUSTER>
struct SolSpreadWords {
    static constexpr int kBlock = (TPR + 1) * W;  // words per column block (one spare chunk, as above)
    static constexpr int kBytes = NV * kBlock * (int)sizeof(Word);
    Word* s;  // NV blocks of kBlock words
    unsigned t, shift;  // this thread; the current row's shift

    __device__ __forceinline__ void bind(void* smem, int tt) {
        s = reinterpret_cast<Word*>(smem);
        t = tt;
    }
    // the Word of value k of chunk u of block i (SolParamChunks numbering; the CTA's threads fill every one)
    __device__ __forceinline__ void put(int i, int u, int k, const Word& w) { s[i * kBlock + k * (TPR + 1) + u] = w; }
    __device__ __forceinline__ void row(int row_shift) { shift = row_shift; }
    template <class G>  // g(k, word) for k < W
    __device__ __forceinline__ void each(int i, G g) const {
        const Word* base = s + i * kBlock + shift * (TPR + 1) + t;
        const Word* wrap = base + 1 - W * (TPR + 1);
#pragma unroll
        for (int k = 0; k < W; ++k) g(k, (shift >= (unsigned)(W - k) ? wrap : base)[k * (TPR + 1)]);
    }
};

template <typename T, int W, int TPR, int NV, int CLUSTER>  // as the kernel's
struct SolParamsSpread : SolSpreadWords<float, W, TPR, NV, CLUSTER> {
    SolParamChunks<T, W, TPR, NV, CLUSTER> c;
    __device__ __forceinline__ void fetch(const T* __restrict__ p, T* smem, const SolRowSplit<T, W>&, int r, int tt,
                                          int N) {
        this->bind(smem, tt);
        c.fetch(p, r, tt, N);
    }
    __device__ __forceinline__ void commit() {
        c.each(c, this->t, [&](int i, int u, const uint4& q, const uint4&) {
            float v[W];
            sol_unpack<T, W>(q, v);
#pragma unroll
            for (int k = 0; k < W; ++k) this->put(i, u, k, v[k]);
        });
    }
    __device__ __forceinline__ void load(const T* __restrict__, int i, int, int, float (&v)[W]) const {
        if (sol_diag_no_params(v)) return;
        this->each(i, [&](int k, float w) { v[k] = w; });
    }
};

// Compile-time choice of a type (std::conditional without <type_traits>, which NVRTC may lack).
template <bool B, class A, class C> struct SolIf { using type = A; };
template <class A, class C> struct SolIf<false, A, C> { using type = C; };

// LayerNorm's two parameters through one interface: fetch(gamma, beta, smem, rs, rank, t, N) and commit() once,
// then load(gamma, beta, i, col, N, g, b). SolParamsTwo: each from its own source P (SolPipeParams); both
// parameters' loads are in flight before either is stored.
template <typename T, class P>
struct SolParamsTwo {
    static constexpr int kBytes = 2 * P::kBytes;
    P pg, pb;
    template <class RS>
    __device__ __forceinline__ void fetch(const T* __restrict__ gamma, const T* __restrict__ beta, T* smem,
                                          const RS& rs, int rank, int t, int N) {
        pg.fetch(gamma, smem, rs, rank, t, N);
        pb.fetch(beta, smem + P::kBytes / sizeof(T), rs, rank, t, N);
    }
    __device__ __forceinline__ void commit() {
        pg.commit();
        pb.commit();
    }
    __device__ __forceinline__ void row(int row_shift) {
        pg.row(row_shift);
        pb.row(row_shift);
    }
    template <int W>
    __device__ __forceinline__ void load(const T* __restrict__ gamma, const T* __restrict__ beta, int i, int col,
                                         int N, float (&g)[W], float (&b)[W]) const {
        pg.load(gamma, i, col, N, g);
        pb.load(beta, i, col, N, b);
    }
};

// SolParamPairs: gamma and beta of a column side by side in one word (bf16: one 32-bit word, fp32: a float2),
// in the bank-spread layout of SolParamsSpread. Rows at any offset read a column's two parameters with one
// conflict-free load and no funnel shifts: W loads per vector for both, where the plain layout needs 8-10
// word loads, 8 shifts and a branch on the row's offset (bf16 LayerNorm 8192 x 50257 ran at 66% of copy
// with those and at 82% with no parameter reads at all). Same bytes as two bf16 / fp32 copies.
template <typename T>
using SolPairWord = typename SolIf<sizeof(T) == 2, unsigned, float2>::type;  // (gamma, beta) of one column

template <typename T, int W, int TPR, int NV, int CLUSTER>  // as the kernel's
struct SolParamPairs : SolSpreadWords<SolPairWord<T>, W, TPR, NV, CLUSTER> {
    using Word = SolPairWord<T>;
    SolParamChunks<T, W, TPR, NV, CLUSTER> cg, cb;
    template <class RS>
    __device__ __forceinline__ void fetch(const T* __restrict__ gamma, const T* __restrict__ beta, T* smem,
                                          const RS&, int r, int tt, int N) {
        this->bind(smem, tt);
        cg.fetch(gamma, r, tt, N);
        cb.fetch(beta, r, tt, N);
    }
    __device__ __forceinline__ void commit() {
        cg.each(cb, this->t, [&](int i, int u, const uint4& qg, const uint4& qb) {
            const unsigned g[4] = {qg.x, qg.y, qg.z, qg.w}, b[4] = {qb.x, qb.y, qb.z, qb.w};
#pragma unroll
            for (int k = 0; k < W; ++k) {
                if constexpr (sizeof(T) == 2)  // bf16 k of the chunk: half k % 2 of word k / 2
                    this->put(i, u, k, __byte_perm(g[k / 2], b[k / 2], k % 2 ? 0x7632 : 0x5410));
                else
                    this->put(i, u, k, make_float2(__uint_as_float(g[k]), __uint_as_float(b[k])));
            }
        });
    }
    __device__ __forceinline__ void load(const T* __restrict__, const T* __restrict__, int i, int, int,
                                         float (&g)[W], float (&b)[W]) const {
        if (sol_diag_no_params(g) && sol_diag_no_params(b)) return;
        this->each(i, [&](int k, const Word& w) {
            if constexpr (sizeof(T) == 2) {
                g[k] = sol_bf16_lo(w);
                b[k] = sol_bf16_hi(w);
            } else {
                g[k] = w.x;
                b[k] = w.y;
            }
        });
    }
};

// ---- Pipelined persistent rows (the *_pipe_kernel of each op) ----
// A CTA (or cluster) that holds one row slice in registers serializes load -> reduce -> store unless several
// CTAs per SM overlap; long rows leave room for 1-3 (the block-per-row and cluster kernels measured 70-88% of
// copy at N = 32768-65536). The pipe kernels keep the NEXT row's loads in flight while the current row is
// reduced and written: two register buffers of raw 16-byte vectors (bf16 stays packed, 8 elements in 4
// registers).

// Issue the loads of the body vectors thread t owns of one row (the cached-row layout, sol_vec_index) and of
// its scalar head/tail element (rank 0's first threads; `pad` elsewhere). Vectors past the body are zero.
template <typename T, int W, int TPR, int NV, int CLUSTER>
__device__ __forceinline__ void sol_pipe_issue(const T* __restrict__ xr, const SolRowSplit<T, W>& rs, int rank,
                                               int t, uint4 (&q)[NV], float& ex, float pad) {
    static_assert(W > 1, "pipe kernels move 16-byte vectors");
    // vector i of the thread is i * CLUSTER * TPR vectors past its first one: constant offsets from one base
    // pointer (per-vector 64-bit address arithmetic cost the loop an instruction or more per element)
    const int j0 = sol_vec_index<TPR, CLUSTER>(0, rank, t);
    const uint4* xb = reinterpret_cast<const uint4*>(xr + rs.shift) + j0;
#pragma unroll
    for (int i = 0; i < NV; ++i)
        q[i] = j0 + i * CLUSTER * TPR < rs.nb ? SOL_LDCS(xb + i * CLUSTER * TPR) : make_uint4(0, 0, 0, 0);
    ex = rank == 0 && t < rs.extras ? sol_to_f32(SOL_LDCS(xr + rs.extra_index(t))) : pad;
}

// Where thread t of cluster rank `rank` writes its first body vector of a row; vector i goes to
// sol_pipe_out(...) + i * CLUSTER * TPR * W (a constant offset, see sol_pipe_issue).
template <typename T, int W, int TPR, int CLUSTER>
__device__ __forceinline__ T* sol_pipe_out(T* yr, const SolRowSplit<T, W>& rs, int rank, int t) {
    return yr + rs.shift + sol_vec_index<TPR, CLUSTER>(0, rank, t) * W;
}

// f(i, c, v) for each body vector i of the thread's row slice: c = its first column, v = its fp32 values.
template <typename T, int W, int TPR, int NV, int CLUSTER, class F>
__device__ __forceinline__ void sol_pipe_each(const uint4 (&q)[NV], const SolRowSplit<T, W>& rs, int rank, int t,
                                              F f) {
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        if (const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t); j < rs.nb) {
            float v[W];
            sol_unpack<T, W>(q[i], v);
            f(i, rs.shift + j * W, v);
        }
    }
}

// Reductions of the pipe kernels. A reduction is a value type V, an identity and a merge; lanes, warps and
// CTAs merge in a fixed order and the result is broadcast, so every thread of a row uses bit-identical
// statistics. Merges stay cheap: with 1-2 CTAs per SM the pipe kernels are sensitive to instruction count
// (measured on the H200: one round of online-softmax pairs or Chan-merged (count, mean, M2) triples, which
// divide or exponentiate in every merge, ran slower than two rounds of plain sums/maxima).
struct SolRedSum {
    using V = float;
    __device__ __forceinline__ static V identity() { return 0.0f; }
    __device__ __forceinline__ static V merge(V a, V b) { return a + b; }
};
struct SolRedMax {
    using V = float;
    __device__ __forceinline__ static V identity() { return SolMax::identity(); }
    __device__ __forceinline__ static V merge(V a, V b) { return fmaxf(a, b); }
};
// Two sums in one round (LayerNorm's shifted sum and sum of squares).
struct SolRedSum2 {
    using V = float2;
    __device__ __forceinline__ static V identity() { return make_float2(0.0f, 0.0f); }
    __device__ __forceinline__ static V merge(V a, V b) { return make_float2(a.x + b.x, a.y + b.y); }
};
__device__ __forceinline__ float sol_shfl_down(float v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float2 sol_shfl_down(float2 v, int o) {
    return make_float2(__shfl_down_sync(0xffffffffu, v.x, o), __shfl_down_sync(0xffffffffu, v.y, o));
}
__device__ __forceinline__ float sol_shfl0(float v) { return __shfl_sync(0xffffffffu, v, 0); }
__device__ __forceinline__ float2 sol_shfl0(float2 v) { return make_float2(sol_shfl0(v.x), sol_shfl0(v.y)); }
// Tree to lane 0, then lane 0's value to every lane.
template <class Red>
__device__ __forceinline__ typename Red::V sol_warp_reduce_bcast(typename Red::V v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = Red::merge(v, sol_shfl_down(v, o));
    return sol_shfl0(v);
}

// Cross-CTA exchange without a cluster barrier. barrier.cluster.arrive.release compiles to MEMBAR.ALL.GPU (it
// waits for every outstanding load and store: the next row's prefetch and the previous row's output) and the
// acquiring wait to CCTL.IVALL (L1 dropped). Instead each CTA pushes its partial into every peer's slot with
// st.async, which completes bytes on the peer's mbarrier; a CTA waits on its own mbarrier (no fence).
// Per row parity and reduction k < NRED of a row: one mbarrier and CLUSTER slots.
// The diagnosis builds without the exchange have no message to carry row tickets: they assign rows statically.
#if defined(SOL_DIAG_NO_REDUCE) || defined(SOL_DIAG_NO_EXCHANGE)
constexpr bool kSolPipeDiagStatic = true;
#else
constexpr bool kSolPipeDiagStatic = false;
#endif
// DYN (dynamic rows, sol_pipe_rows): trow[par] is the row this CTA loads two rows ahead, which reduction 0 of
// the row carries from rank 0 (tsend) to every CTA of the cluster.
template <int TPR, int CLUSTER, class V, int NRED = 1, bool DYN = false>
struct SolPipeShared {
    static constexpr bool kDyn = DYN && !kSolPipeDiagStatic;
    unsigned long long bar[2][NRED];
    V slot[2][NRED][CLUSTER];
    V warp[2][NRED][TPR / 32];
    int trow[2], tsend[2];
};
#if defined(__CUDA_EMU__)
__device__ __forceinline__ void sol_mbar_init(unsigned long long*, unsigned) {}
__device__ __forceinline__ void sol_mbar_init_fence() {}
__device__ __forceinline__ void sol_mbar_expect_tx(unsigned long long*, unsigned) {}
template <class V>
__device__ __forceinline__ void sol_st_async(V*, unsigned, const V&, unsigned long long*) {}
__device__ __forceinline__ void sol_mbar_wait(unsigned long long*, unsigned) {}
#else
__device__ __forceinline__ unsigned sol_smem_u32(const void* p) {
    unsigned a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ __forceinline__ unsigned sol_mapa(unsigned a, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
__device__ __forceinline__ void sol_mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sol_smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void sol_mbar_init_fence() {  // make the inits visible to the cluster's st.async
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void sol_mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sol_smem_u32(bar)), "r"(bytes) : "memory");
}
// v -> *slot in the CTA of cluster rank `rank`, completing sizeof(v) bytes on that CTA's *bar.
__device__ __forceinline__ void sol_st_async(float* slot, unsigned rank, const float& v, unsigned long long* bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
                 :: "r"(sol_mapa(sol_smem_u32(slot), rank)), "f"(v), "r"(sol_mapa(sol_smem_u32(bar), rank)) : "memory");
}
__device__ __forceinline__ void sol_st_async(int* slot, unsigned rank, const int& v, unsigned long long* bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.s32 [%0], %1, [%2];"
                 :: "r"(sol_mapa(sol_smem_u32(slot), rank)), "r"(v), "r"(sol_mapa(sol_smem_u32(bar), rank)) : "memory");
}
__device__ __forceinline__ void sol_st_async(float2* slot, unsigned rank, const float2& v, unsigned long long* bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
                 :: "r"(sol_mapa(sol_smem_u32(slot), rank)), "f"(v.x), "f"(v.y), "r"(sol_mapa(sol_smem_u32(bar), rank))
                 : "memory");
}
__device__ __forceinline__ void sol_mbar_wait(unsigned long long* bar, unsigned parity) {
    const unsigned a = sol_smem_u32(bar);
    unsigned ok;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(a), "r"(parity) : "memory");
    } while (!ok);
}
#endif

// Reduction k of row iteration `it` (0, 1, 2 ... of this CTA). Buffers alternate with the row parity: a peer
// can only be one row ahead (it needs this CTA's partial of that row to finish it), so the buffers of row
// it + 2 are free once this CTA has read those of row it (and passed row it + 1's block barrier).
// With dynamic rows, reduction 0 also carries rank 0's tsend[par] into every CTA's trow[par] (the row after next,
// sol_pipe_rows), or, without a cluster, makes thread 0's trow[par] visible to the CTA.
template <class Red, int TPR, int CLUSTER, int NRED, bool DYN>
__device__ __forceinline__ typename Red::V sol_pipe_allreduce(typename Red::V v,
                                                              SolPipeShared<TPR, CLUSTER, typename Red::V, NRED, DYN>& sh,
                                                              int k, int it) {
    constexpr bool kTicket = SolPipeShared<TPR, CLUSTER, typename Red::V, NRED, DYN>::kDyn;
    static_assert(TPR % 32 == 0, "whole warps");
#if defined(SOL_DIAG_NO_REDUCE)  // diagnosis builds only (wrong results, benchmarks/stage_removal.py):
    return v;                    // each thread keeps its own partial (no shuffles, barrier or exchange) ...
#endif
#if defined(SOL_DIAG_NO_EXCHANGE)
    constexpr bool kExchange = false;  // ... or each CTA its own (no cross-CTA exchange)
#else
    constexpr bool kExchange = CLUSTER > 1;
#endif
    const int par = it & 1;
    v = sol_warp_reduce_bcast<Red>(v);
    if constexpr (TPR > 32) {
        constexpr int NW = TPR / 32;
        const int lane = threadIdx.x & 31;
        if (lane == 0) sh.warp[par][k][threadIdx.x >> 5] = v;
        __syncthreads();
        v = sol_warp_reduce_bcast<Red>(lane < NW ? sh.warp[par][k][lane] : Red::identity());
    } else if constexpr (kTicket) {
        __syncwarp();  // thread 0's tsend / trow for the warp's other lanes
    }
    if constexpr (kExchange) {
        const unsigned rank = sol_cluster_rank();
        unsigned long long* bar = &sh.bar[par][k];
        if (threadIdx.x == 0) sol_mbar_expect_tx(bar, CLUSTER * sizeof(v) + (kTicket && k == 0 ? sizeof(int) : 0));
        if (threadIdx.x < CLUSTER) {
            sol_st_async(&sh.slot[par][k][rank], threadIdx.x, v, bar);
            if (kTicket && k == 0 && rank == 0) sol_st_async(&sh.trow[par], threadIdx.x, sh.tsend[par], bar);
        }
        sol_mbar_wait(bar, (it >> 1) & 1);
        typename Red::V acc = sh.slot[par][k][0];  // same order in every CTA: identical results
#pragma unroll
        for (int r = 1; r < CLUSTER; ++r) acc = Red::merge(acc, sh.slot[par][k][r]);
        v = acc;
    }
    return v;
}

// Diagnosis build only (-DSOL_DIAG_TIMELINE, benchmarks/pipe_timeline.py): thread 0 of each of the first
// SOL_DIAG_CTAS CTAs stamps the global timer (ns) at kernel entry, when its first row's loop starts, after its
// first row and at its end, and records its SM and row count. Results are unchanged. Slots: 0 kernel entry,
// 1 loop entry (parameters set up), 2 first row's loads issued (cluster synchronised), 3 first row done, 4 end,
// 5 SM, 6 rows.
#if defined(SOL_DIAG_TIMELINE)
#define SOL_DIAG_CTAS 4096
extern "C" {  // unmangled: the benchmark reads it with RawModule.get_global
__device__ unsigned long long sol_diag_timeline[SOL_DIAG_CTAS][7];
}
__device__ __forceinline__ void sol_diag_stamp(int k, unsigned long long v = ~0ull) {
    if (threadIdx.x == 0 && blockIdx.x < SOL_DIAG_CTAS) {
        if (v == ~0ull) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
        sol_diag_timeline[blockIdx.x][k] = v;
    }
}
__device__ __forceinline__ unsigned sol_diag_smid() {
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}
#else
__device__ __forceinline__ void sol_diag_stamp(int, unsigned long long = 0) {}
__device__ __forceinline__ unsigned sol_diag_smid() { return 0; }
#endif

// Pipe kernels with rows by ticket (SCHED = 1, 2) ask ptxas for a minimum of CTAs per SM (__launch_bounds__): as
// many as registers for the two row buffers (+ parameters held in registers) + SPARE others allow. Without a
// minimum the ticket code cost some kernels a CTA per SM (fp32 LayerNorm 65536: 64 -> 70 registers, 2 -> 1 CTAs
// of 512 threads), measured 20 points slower; SPARE = 40 instead of 32 cost bf16 LayerNorm 65536 a CTA per SM
// (84.7% -> 74.6% of copy); 24 gains a CTA per SM where the kernel fits without spills (dispatch.py chooses:
// PIPE_FLOOR_SPARE_REGS, PIPE_FLOOR_TUNED). Every default instance compiles without spills (the spill test).
// SCHED = 0 (static rows) leaves the choice to ptxas (a minimum of 0 = no bound).
// The register file is four 16384-register quarters, one per scheduler, each holding whole warps: k CTAs of
// TPR / 32 warps need ceil(k * TPR / 128) warps' registers in one quarter (5-warp CTAs: 6 per SM fit 64 registers a
// thread, not 68). Counting the SM's 65536 as one pool, 7-warp CTAs got a floor whose registers did not fit and
// spilled (bf16 LayerNorm 8 x 224 x 8: 164 bytes at 80 registers).
template <int TPR, int NV, int PARAM_REGS, int SCHED, int SPARE>
__host__ __device__ constexpr int sol_pipe_min_ctas() {
    constexpr int regs = (8 * NV + 4 * NV * PARAM_REGS + SPARE + 7) / 8 * 8;
    int k = 2048 / TPR;
    while (k > 1 && (k * (TPR / 32) + 3) / 4 * 32 * regs > 16384) --k;
    return SCHED == 0 ? 0 : k;
}

// One ticket from *p if take, else 0: a predicated atom (no branch; and no "memory" clobber: the counter orders
// nothing else). A branch around atomicAdd made ptxas allocate 3-46 more registers in the pipe kernels.
#if defined(__CUDA_EMU__)
__device__ __forceinline__ unsigned sol_ticket(unsigned* p, bool take) { return take ? atomicAdd(p, 1u) : 0u; }
#else
__device__ __forceinline__ unsigned sol_ticket(unsigned* p, bool take) {
    unsigned v = 0;
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q atom.global.add.u32 %0, [%1], 1; }"
                 : "+r"(v) : "l"(p), "r"((unsigned)take));
    return v;
}
#endif

#if defined(__CUDA_EMU__)
__device__ __forceinline__ void sol_st_shared_if(int* p, int v, bool take) { if (take) *p = v; }
#else
__device__ __forceinline__ void sol_st_shared_if(int* p, int v, bool take) {
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q st.shared.s32 [%0], %1; }"
                 :: "r"(sol_smem_u32(p)), "r"(v), "r"((unsigned)take) : "memory");
}
#endif

// A row's bytes toward L2 ahead of its loads: one bulk prefetch (sm_90) of the row's whole 16-byte blocks, issued
// by one thread; it holds no register or shared memory while in flight, so more rows are on their way than the
// row buffers can hold (sol_pipe_rows, AHEAD). Blocks only inside the row: nothing past the tensor is touched.
// Elsewhere (the CPU emulator, pre-sm_90 GPUs) a no-op: it changes no result.
// Predicated like sol_ticket (take: this thread issues it), not branched around.
template <typename T>
__device__ __forceinline__ void sol_prefetch_row_l2(const T* xr, int N, bool take) {
#if !defined(__CUDA_EMU__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned long long a = (__cvta_generic_to_global(xr) + 15) & ~15ull;
    const unsigned long long e = __cvta_generic_to_global(xr + N) & ~15ull;
    asm volatile("{ .reg .pred q; setp.ne.u32 q, %2, 0; @q cp.async.bulk.prefetch.L2.global [%0], %1; }"
                 :: "l"(a), "r"((unsigned)(e - a)), "r"((unsigned)(take && e > a)) : "memory");
#else
    (void)xr;
    (void)N;
    (void)take;
#endif
}

// The persistent loop. The next row's loads are issued into the other buffer before a row is processed.
// CTA/cluster g of G takes rows g, g + G, g + 2G ... (DYN false: static rows), or (DYN) starts with rows
// g, g + G, g + 2G, g + 3G and then takes tickets: after each row it draws one, and ticket t (counted from
// `base`, the tickets of earlier launches) is its row 4 rows later, 4G + t. Measured on the H200
// (docs/benchmarks): with static rows the clusters that ran slower finished up to 15 us (1920 x 65536) to 60 us
// (8192 x 50257) after the median one. Exactly one ticket is drawn per row (also after a cluster's last rows,
// those tickets go unused), so a launch uses M tickets (LATE: see below) and the host advances `base` by M: no reset between
// launches (launches sharing one counter must run one after another, as on one stream). Rank 0's thread 0
// draws; the ticket is read two rows later (its latency hidden) and travels with reduction 0
// (sol_pipe_allreduce) of the row after next.
// LATE (SCHED 2): tickets for each cluster's last rows only. The cluster takes S = max(4, M / G - 4) rows
// statically (g, g + G, ... g + (S - 1)G) and then tickets (ticket t: row SG + t), drawn after its rows S - 4 on:
// a launch draws M - G(S - 4) tickets. With S = 4 this is the plain ticket schedule.
// ROWS16: the caller guarantees every row starts on 16 bytes (ex is then always `pad`).
// AHEAD: each row is also bulk-prefetched to L2 a row before its loads are issued (publish, below).
// row(q, ex, x0, r, it): x0 = element (lane % 32) of the row (element 0 past its end) when HEAD32, else 0;
// it = 0, 1, 2 ... numbers this CTA's rows (sol_pipe_allreduce's buffers alternate with it); row calls
// sol_pipe_allreduce with k = 0 at least once. Control flow is cluster-uniform.
template <typename T, int W, int TPR, int NV, int CLUSTER, bool HEAD32 = false, bool ROWS16 = false,
          bool LATE = false, bool AHEAD = false, class V, int NRED, bool DYN, class Row>
__device__ __forceinline__ void sol_pipe_rows(const T* __restrict__ x, int M, int N, float pad,
                                              unsigned* __restrict__ tickets, unsigned base,
                                              SolPipeShared<TPR, CLUSTER, V, NRED, DYN>& sh, Row row) {
    sol_diag_stamp(1);
    const int rank = sol_cta_rank<CLUSTER>(), t = threadIdx.x;
    if constexpr (CLUSTER > 1) {
        if (t == 0) {
#pragma unroll
            for (int k = 0; k < NRED; ++k) {
                sol_mbar_init(&sh.bar[0][k], 1);
                sol_mbar_init(&sh.bar[1][k], 1);
            }
            sol_mbar_init_fence();
        }
        sol_cluster_sync();  // every CTA's mbarriers exist before a peer's first st.async
    }
    // 32-bit row indices and tickets (M < 2^31; tickets compare modulo 2^32): every register the loop keeps
    // costs the long-row kernels occupancy (64-bit ones cost fp32 LayerNorm 65536 its second CTA per SM).
    const int G = gridDim.x / CLUSTER, g = blockIdx.x / CLUSTER;
    const int S = LATE ? max(4, M / G - 4) : 4;  // rows taken statically before the first ticket row
    int r = g, r1 = g + G;  // the rows in buffers a and b
    unsigned tka = 0, tkb = 0;  // rank 0's thread 0: the tickets it drew after its last a and b rows
    constexpr bool kDyn = SolPipeShared<TPR, CLUSTER, V, NRED, DYN>::kDyn;
    // The row of iteration it + 2 (row rr at iteration it; tk: the ticket drawn after row it - 2).
    auto next2 = [&](int it, unsigned tk, int rr) -> long long {
        if constexpr (kDyn) return it + 2 < S ? g + (2LL + it) * G : (long long)S * G + (tk - base);
        else return rr + 2LL * G;
    };
    // Before row `it`, right after the loads of row it + 1 are issued: the row of iteration it + 2 goes to trow /
    // tsend, and with AHEAD toward L2 (sol_prefetch_row_l2), a row before its loads into a row buffer are issued
    // (after row it). After those loads, not before: issued right after row it - 2 instead (ahead of the next
    // row's loads in the memory queue) the prefetch gained far less, and lost on bf16 RMSNorm 8192 x 50257
    // (docs/benchmarks/explore_0100/ahead_ab.txt, A/B 2 vs A/B 3).
    auto publish = [&](int it, unsigned tk, int rr) {
        const long long nr = next2(it, tk, rr);
        if constexpr (kDyn)
            sol_st_shared_if(&(CLUSTER > 1 ? sh.tsend : sh.trow)[it & 1], (int)min(nr, (long long)M),
                             rank == 0 && t == 0);
        if constexpr (AHEAD) sol_prefetch_row_l2(x + min(nr, M - 1LL) * N, N, rank == 0 && t == 0 && nr < M);
    };
    // After row `it` (its stores issued, its buffer dead: the fewest live registers), the ticket for 4 rows later.
    auto draw = [&](unsigned& tk, int it) {
        if constexpr (kDyn) tk = sol_ticket(tickets, rank == 0 && t == 0 && it + 4 >= S);
    };
    auto after = [&](int it, int rr) -> int {  // the row of iteration it + 2
        if constexpr (kDyn) return sh.trow[it & 1];
        else return rr + 2 * G < M ? rr + 2 * G : M;  // (no int overflow)
    };
    uint4 a[NV], b[NV];
    float ea, eb, fa = 0.0f, fb = 0.0f;
    auto issue = [&](int rr, uint4 (&q)[NV], float& e, float& f) {
        const T* xr = x + (long long)rr * N;
        sol_pipe_issue<T, W, TPR, NV, CLUSTER>(xr, SolRowSplit<T, W>(xr, N), rank, t, q, e, pad);
        if constexpr (ROWS16) e = pad;  // every row on 16 bytes: no head/tail element (its load is dead code)
        if constexpr (HEAD32) {
            const int lane = t & 31;
            f = sol_to_f32(SOL_LDG(xr + (lane < N ? lane : 0)));  // rows under 32: element 0 again
        }
    };
    if (r < M) issue(r, a, ea, fa);
    sol_diag_stamp(2);
    int it = 0;
    for (; r < M; it += 2) {  // unrolled by two so each buffer stays in its own registers
        if (r1 < M) issue(r1, b, eb, fb);
        publish(it, tka, r);
        row(a, ea, fa, r, it);
        draw(tka, it);
        if (it == 0) sol_diag_stamp(3);
        if (r1 >= M) {
            ++it;
            break;
        }
        r = after(it, r);
        if (r < M) issue(r, a, ea, fa);
        publish(it + 1, tkb, r1);
        row(b, eb, fb, r1, it + 1);
        draw(tkb, it + 1);
        r1 = after(it + 1, r1);
    }
    sol_diag_stamp(4);
    sol_diag_stamp(5, sol_diag_smid());
    sol_diag_stamp(6, it);
    if constexpr (CLUSTER > 1) sol_cluster_exit_sync();  // no CTA leaves while a peer may still address it
}

// Parameters of the thread's columns kept in registers for all rows of a persistent CTA (raw 16-byte vectors):
// valid while every row starts at the same 16-byte offset (N a multiple of W); a row at another offset reads
// them from global memory instead.
template <typename T, int W, int TPR, int NV, int CLUSTER>
struct SolParamsRegs {
    static constexpr int kBytes = 0;
    uint4 q[NV];
    int shift0;
    __device__ __forceinline__ void row(int) {}  // per-row state: none
    __device__ __forceinline__ void fetch(const T* __restrict__ p, T*, const SolRowSplit<T, W>& rs, int rank, int t,
                                          int N) {
        shift0 = rs.shift;
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            if (const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t); j < rs.nb)
                q[i] = sol_param_vec<T, W>(p, rs.shift + j * W, N);
            else
                q[i] = make_uint4(0, 0, 0, 0);
        }
    }
    __device__ __forceinline__ void commit() {}  // the parameters stay in registers
    __device__ __forceinline__ void load(const T* __restrict__ p, int i, int col, int N, float (&v)[W]) const {
        if (sol_diag_no_params(v)) return;
        if (col % W == shift0) sol_unpack<T, W>(q[i], v);
        else sol_load_param<T, W>(p, col, N, v);
    }
};

// PSRC: where a pipe kernel reads its parameters. 0: global memory on every row (SolParamsGlobal), 1: shared
// memory (SolParamsShared, kBytes of dynamic shared memory per parameter), 2: registers (SolParamsRegs),
// 3: shared memory as fp32, spread for rows at any offset (SolParamsSpread), 4: shared memory, 16-byte-aligned
// rows only (SolParamsAligned). 5 (LayerNorm): gamma/beta pairs in shared memory (SolParamPairs).
template <typename T, int W, int TPR, int NV, int CLUSTER, int PSRC>
using SolPipeParams = typename SolIf<PSRC == 0, SolParamsGlobal<T, W>,
                      typename SolIf<PSRC == 1, SolParamsShared<T, W, TPR, NV, CLUSTER>,
                      typename SolIf<PSRC == 2, SolParamsRegs<T, W, TPR, NV, CLUSTER>,
                      typename SolIf<PSRC == 3, SolParamsSpread<T, W, TPR, NV, CLUSTER>,
                                     SolParamsAligned<T, W, TPR, NV, CLUSTER>>::type>::type>::type>::type;

// Softmax over the last dimension, reference ("speed of light") version.
//   y[r, i] = exp(x[r, i] - max_r) / sum_j exp(x[r, j] - max_r)
// T = float (fp32) or unsigned short (bf16 bits); max, exponentials and sum are fp32.
// Launch shapes (chosen by solutions/kernels/dispatch.py from N), as in layernorm.cu:
//   softmax_kernel          row cached in registers (8-32 lanes per row or block per row): one read, one write
//   softmax_cluster_kernel  a cluster of CLUSTER CTAs shares a row through distributed shared memory
//                           (e.g. 8192 x 50257 fp32 logits: 4 SMs hold a 200 KB row on chip)
//   softmax_stream_kernel   any N: online softmax (running max and rescaled sum) in one read, then a
//                           second read of the row (mostly an L2 hit) that writes exp(x - max) / sum
// Compiled after common.cuh (the sol_* helpers): dispatch.source("softmax") joins the two (no #include).

#define SOL_LOG2E 1.4426950408889634f
// 2^x. Diagnosis build only (-DSOL_DIAG_NO_EXP, wrong results, benchmarks/stage_removal.py): one FMA instead
// (no MUFU.EX2), to time the kernels without their exponentials.
#if defined(SOL_DIAG_NO_EXP)
__device__ __forceinline__ float softmax_exp2(float x) { return fmaf(x, 0x1p-20f, 1.0f); }
#else
__device__ __forceinline__ float softmax_exp2(float x) { return exp2f(x); }
#endif

// The pipe kernel keeps each exponential from the sum for the output instead of recomputing it, in the 16 bytes
// the row's own vector held (its registers are free once the sum is taken). fp32: the floats themselves. bf16:
// fp16 pairs of 2^15 exp(x - max), one rounding of 2^-11 (the output's bf16 rounding is 2^-9); the 2^15 (folded
// into the exponent, cancelled by the sum) keeps exp(x - max) normal in fp16 down to 2^-29 instead of 2^-14.
// Values under ~2^-40 are kept as 0 (their outputs are under 2^-40 / sum, far below bf16's relative L2 error).
// -DSOL_SOFTMAX_TWO_EXP: the previous build (every exponential computed twice), for benchmarks/stage_removal.py.
template <typename T>
struct SoftmaxKeep {
    static constexpr float kLog2Scale = sizeof(T) == 2 ? 15.0f : 0.0f;
    template <int W>
    __device__ __forceinline__ static uint4 pack(const float (&e)[W]) {
        if constexpr (sizeof(T) == 4) {
            return make_uint4(__float_as_uint(e[0]), __float_as_uint(e[1]), __float_as_uint(e[2]), __float_as_uint(e[3]));
        } else {
            return make_uint4(sol_pack_f16x2(e[0], e[1]), sol_pack_f16x2(e[2], e[3]), sol_pack_f16x2(e[4], e[5]),
                              sol_pack_f16x2(e[6], e[7]));
        }
    }
    template <int W>
    __device__ __forceinline__ static void unpack(const uint4& q, float (&e)[W]) {
        if constexpr (sizeof(T) == 4) {
            sol_unpack<T, W>(q, e);
        } else {
            sol_unpack_f16x2(q.x, e[0], e[1]); sol_unpack_f16x2(q.y, e[2], e[3]);
            sol_unpack_f16x2(q.z, e[4], e[5]); sol_unpack_f16x2(q.w, e[6], e[7]);
        }
    }
};

template <typename T, int W, int TPR, int RPB, int NV, int CLUSTER>
__device__ __forceinline__ void softmax_cached_row(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    static_assert(TPR <= 32 || RPB == 1, "several rows per block only when a row fits in one warp");
    static_assert((TPR % 32 == 0 && TPR <= 1024) || TPR == 8 || TPR == 16, "TPR: 8, 16 or 32k <= 1024");
    static_assert(TPR >= 2 * W - 2, "a misaligned row's scalar head + tail (< 2 vectors) needs a lane each");
    __shared__ float warp_buf[2][TPR > 32 ? TPR / 32 : 1];
    __shared__ float cluster_buf[2];
    const int t = threadIdx.x % TPR;
    const int rank = sol_cta_rank<CLUSTER>();
    const long long row_id = (long long)(blockIdx.x / CLUSTER) * RPB + threadIdx.x / TPR;
    if (TPR == 32 && row_id >= M) return;  // warp-per-row mode has no block barrier, a whole warp may leave
    // Sub-warp rows (TPR < 32): lanes past the last row still join their warp's shuffles (on a clamped
    // row) and store nothing.
    const bool row_ok = row_id < M;
    const long long row = row_ok ? row_id : (long long)M - 1;
    const T* xr = x + row * N;
    T* yr = y + row * N;
    const SolRowSplit<T, W> rs(xr, N);  // aligned body + scalar head/tail (see layernorm.cu)
    const bool has_ex = rank == 0 && t < rs.extras;
    const int ex_i = has_ex ? rs.extra_index(t) : 0;

    float v[NV][W];
    float ex = has_ex ? sol_to_f32(SOL_LDCS(xr + ex_i)) : SolMax::identity();
    float mx = ex;
    sol_load_cached_row<T, W, TPR, NV, CLUSTER>(xr, rs, rank, t, v, SolMax::identity(),
                                                [&](float e) { mx = fmaxf(mx, e); });
    mx = sol_row_allreduce<SolMax, TPR, CLUSTER>(mx, warp_buf[0], &cluster_buf[0]);
    const float mx_l2 = mx * SOL_LOG2E;

    // exp(x - max) as 2^(x*log2e - max*log2e): one FFMA + one MUFU.EX2. Padding (-inf) gives 0.
    ex = softmax_exp2(fmaf(ex, SOL_LOG2E, -mx_l2));
    float sum = ex;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
#pragma unroll
        for (int k = 0; k < W; ++k) {
            v[i][k] = softmax_exp2(fmaf(v[i][k], SOL_LOG2E, -mx_l2));
            sum += v[i][k];
        }
    }
    const float inv = 1.0f / sol_row_allreduce<SolSum, TPR, CLUSTER>(sum, warp_buf[1], &cluster_buf[1]);

    if (has_ex && row_ok) sol_from_f32(yr + ex_i, ex * inv);
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t);
        if (j < rs.nb && row_ok) {
#pragma unroll
            for (int k = 0; k < W; ++k) v[i][k] *= inv;
            sol_store<T, W>(yr + rs.shift + j * W, v[i]);
        }
    }
    if constexpr (CLUSTER > 1) sol_cluster_exit_sync();  // peers may still read this CTA's cluster_buf
}

template <typename T, int W, int TPR, int RPB, int NV>
__global__ void __launch_bounds__(TPR * RPB)
softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    softmax_cached_row<T, W, TPR, RPB, NV, 1>(x, y, M, N);
}

template <typename T, int W, int TPR, int NV, int CLUSTER>
__global__ void SOL_CLUSTER_DIMS(CLUSTER) __launch_bounds__(TPR)
softmax_cluster_kernel(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    softmax_cached_row<T, W, TPR, 1, NV, CLUSTER>(x, y, M, N);
}

// (max, sum) pairs with sum taken relative to max, in log2 units. Merging rescales the smaller side.
__device__ __forceinline__ void softmax_online_merge(float& m, float& s, float mb, float sb) {
    const float mn = fmaxf(m, mb);
    // Equal maxima (including both -inf) need no rescale; this also avoids (-inf) - (-inf) = NaN.
    const float sa = (m == mn) ? s : s * softmax_exp2(m - mn);
    const float sbb = (mb == mn) ? sb : sb * softmax_exp2(mb - mn);
    m = mn;
    s = sa + sbb;
}

// Any N: online softmax. Pass 1 reads the row once, keeping a running max and a sum rescaled when the
// max grows; pass 2 reads it again (recently touched, so mostly from L2) and writes the result.
template <typename T, int W, int TPR, int U>
__global__ void __launch_bounds__(TPR)
softmax_stream_kernel(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    constexpr int NW = TPR / 32;
    __shared__ float s_m[NW], s_s[NW];
    const int t = threadIdx.x, lane = t & 31;
    const long long row = blockIdx.x;
    const T* xr = x + row * N;
    T* yr = y + row * N;

    float m = SolMax::identity(), s = 0.0f;  // m in log2 units: max(x) * log2e
    for (int base = t * W; base < N; base += TPR * W * U) {
        float v[U][W];
        float cm = SolMax::identity();
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = base + u * TPR * W;
            if (c < N) {
                sol_load<T, W, false>(xr + c, v[u]);
            } else {
#pragma unroll
                for (int k = 0; k < W; ++k) v[u][k] = SolMax::identity();
            }
#pragma unroll
            for (int k = 0; k < W; ++k) cm = fmaxf(cm, v[u][k] * SOL_LOG2E);
        }
        // A chunk of only -inf (masked) entries adds nothing: exp2(-inf - 0) = 0 instead of
        // exp2(-inf + inf) = NaN, which would poison the whole row. NaN entries still give NaN.
        const float cm_safe = cm == SolMax::identity() ? 0.0f : cm;
        float cs = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
            for (int k = 0; k < W; ++k) cs += softmax_exp2(fmaf(v[u][k], SOL_LOG2E, -cm_safe));
        }
        softmax_online_merge(m, s, cm, cs);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float mb = __shfl_down_sync(0xffffffffu, m, o);
        const float sb = __shfl_down_sync(0xffffffffu, s, o);
        softmax_online_merge(m, s, mb, sb);
    }
    if (lane == 0) { s_m[t >> 5] = m; s_s[t >> 5] = s; }
    __syncthreads();
    m = lane < NW ? s_m[lane] : SolMax::identity();
    s = lane < NW ? s_s[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float mb = __shfl_down_sync(0xffffffffu, m, o);
        const float sb = __shfl_down_sync(0xffffffffu, s, o);
        softmax_online_merge(m, s, mb, sb);
    }
    m = __shfl_sync(0xffffffffu, m, 0);
    const float inv = 1.0f / __shfl_sync(0xffffffffu, s, 0);

    for (int base = t * W; base < N; base += TPR * W * U) {
        float v[U][W];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = base + u * TPR * W;
            if (c < N) sol_load_last<T, W>(xr + c, v[u]);  // evict-first: last use
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = base + u * TPR * W;
            if (c < N) {
#pragma unroll
                for (int k = 0; k < W; ++k) v[u][k] = softmax_exp2(fmaf(v[u][k], SOL_LOG2E, -m)) * inv;
                sol_store<T, W, true>(yr + c, v[u]);
            }
        }
    }
}

// Pipelined persistent kernel (rows that need a whole SM or a cluster): the next row's loads are in flight
// while this one is reduced and written (sol_pipe_rows). Each exponential is computed once and kept for the
// output in the row's own registers (SoftmaxKeep). Two rounds (max, then the sum of exp(x - max)): one round of
// (max, sum) pairs about each thread's own max measured no faster with the kept exponentials either (bf16
// 1920 x 65536 88.4 / 88.2%, 8192 x 50257 91.6 / 87.9%; docs/benchmarks/explore_2340/one_round_tried.txt).
// SCHED: rows static (0), by ticket (1) or by ticket for the last rows (2), see sol_pipe_rows; SPARE: registers
// the occupancy floor leaves besides the row buffers (sol_pipe_min_ctas); AHEAD: each row
// bulk-prefetched to L2 a row before its loads (sol_pipe_rows).
template <typename T, int W, int TPR, int NV, int CLUSTER, int SCHED, int SPARE, int AHEAD>
__global__ void SOL_CLUSTER_DIMS(CLUSTER) __launch_bounds__(TPR, (sol_pipe_min_ctas<TPR, NV, 0, SCHED, SPARE>()))
softmax_pipe_kernel(const T* __restrict__ x, T* __restrict__ y, int M, int N,
                    unsigned* __restrict__ tickets, unsigned base) {
    static_assert(TPR % 32 == 0 && TPR >= 2 * W - 2, "pipe kernels: whole warps, a lane per head/tail element");
    sol_diag_stamp(0);
    __shared__ SolPipeShared<TPR, CLUSTER, float, 2, SCHED != 0> sh;
    const int rank = sol_cta_rank<CLUSTER>();
    const int t = threadIdx.x;
    sol_pipe_rows<T, W, TPR, NV, CLUSTER, false, false, SCHED == 2, AHEAD != 0>(x, M, N, SolMax::identity(), tickets, base, sh,
                                          [&](uint4 (&q)[NV], float& ex, float, long long row, int it) {
        const SolRowSplit<T, W> rs(x + row * N, N);
        T* yr = y + row * N;
        T* yb = sol_pipe_out<T, W, TPR, CLUSTER>(yr, rs, rank, t);
        float mx = ex;  // -inf on threads without a head/tail element
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int, int, const float (&v)[W]) {
#pragma unroll
            for (int k = 0; k < W; ++k) mx = fmaxf(mx, v[k]);
        });
        mx = sol_pipe_allreduce<SolRedMax>(mx, sh, 0, it);
        // exponents in log2 units, shifted by SoftmaxKeep's scale (the sum carries it too, so y is unchanged)
        const float mx_l2 = mx * SOL_LOG2E - SoftmaxKeep<T>::kLog2Scale;
        // Kept values overwrite the loop's own buffers (ex here, q below): the loop carries a buffer no row was
        // issued to into its next iteration, so a separate array kept the row's registers live beside the kept
        // copy (NVRTC 13.5: 112 bytes of spills at the 64-register floor).
        ex = softmax_exp2(fmaf(ex, SOL_LOG2E, -mx_l2));
        float sum = ex;
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int i, int, const float (&v)[W]) {
            float e[W];
#pragma unroll
            for (int k = 0; k < W; ++k) sum += (e[k] = softmax_exp2(fmaf(v[k], SOL_LOG2E, -mx_l2)));
#if !defined(SOL_SOFTMAX_TWO_EXP)
            q[i] = SoftmaxKeep<T>::pack(e);  // in place: the row's x is dead
#endif
        });
        const float inv = 1.0f / sol_pipe_allreduce<SolRedSum>(sum, sh, 1, it);
        if (rank == 0 && t < rs.extras) sol_from_f32(yr + rs.extra_index(t), ex * inv);
#if defined(SOL_SOFTMAX_TWO_EXP)
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int i, int, const float (&v)[W]) {
            float o[W];
#pragma unroll
            for (int k = 0; k < W; ++k) o[k] = softmax_exp2(fmaf(v[k], SOL_LOG2E, -mx_l2)) * inv;
            sol_store<T, W, false, true>(yb + i * (CLUSTER * TPR * W), o);
        });
#else
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            if (sol_vec_index<TPR, CLUSTER>(i, rank, t) < rs.nb) {  // the vectors sol_pipe_each visited
                float o[W];
                SoftmaxKeep<T>::unpack(q[i], o);
#pragma unroll
                for (int k = 0; k < W; ++k) o[k] *= inv;
                sol_store<T, W, false, true>(yb + i * (CLUSTER * TPR * W), o);
            }
        }
#endif
    });
}

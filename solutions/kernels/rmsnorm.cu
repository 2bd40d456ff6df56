// RMSNorm forward, reference ("speed of light") version.
//   y[r, i] = x[r, i] * rrms_r * gamma[i],   rrms_r = 1 / sqrt(sum_i x^2 / N + eps)
// T = float (fp32) or unsigned short (bf16 bits); the statistic is always fp32.
// Launch shapes (chosen by solutions/kernels/dispatch.py from N), as in layernorm.cu:
//   rmsnorm_kernel          row cached in registers, 8-32 lanes per row or block per row: one read, one write
//   rmsnorm_cluster_kernel  a cluster of CLUSTER CTAs shares a row through distributed shared memory
//   rmsnorm_pipe_kernel     persistent CTAs / clusters, the next row's loads in flight (long rows)
//   rmsnorm_stream_kernel   any N: block per row, sum of squares, then the row is read again
// Compiled after common.cuh (the sol_* helpers): dispatch.source("rmsnorm") joins the two (no #include).

template <typename T, int W, int TPR, int RPB, int NV, int CLUSTER>
__device__ __forceinline__ void rmsnorm_cached_row(const T* __restrict__ x, const T* __restrict__ gamma,
                                                   T* __restrict__ y, int M, int N, float eps) {
    static_assert(TPR <= 32 || RPB == 1, "several rows per block only when a row fits in one warp");
    static_assert((TPR % 32 == 0 && TPR <= 1024) || TPR == 8 || TPR == 16, "TPR: 8, 16 or 32k <= 1024");
    static_assert(TPR >= 2 * W - 2, "a misaligned row's scalar head + tail (< 2 vectors) needs a lane each");
    __shared__ float warp_buf[TPR > 32 ? TPR / 32 : 1];
    __shared__ float cluster_buf[1];
    const int t = threadIdx.x % TPR;
    const int rank = sol_cta_rank<CLUSTER>();
    const long long row_id = (long long)(blockIdx.x / CLUSTER) * RPB + threadIdx.x / TPR;  // one row per thread group
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
    const float ex = has_ex ? sol_to_f32(SOL_LDCS(xr + ex_i)) : 0.0f;
    float sq = ex * ex;
    sol_load_cached_row<T, W, TPR, NV, CLUSTER>(xr, rs, rank, t, v, 0.0f, [&](float e) { sq = fmaf(e, e, sq); });
    // gamma is loaded before the reduction so its latency hides behind it (small per-thread rows only).
    constexpr bool kPrefetch = NV * W <= 16;
    float g[kPrefetch ? NV : 1][W];
    if constexpr (kPrefetch) {
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t);
            if (j < rs.nb) sol_load_param<T, W>(gamma, rs.shift + j * W, N, g[i]);
        }
    }
    const float ms = sol_row_allreduce<SolSum, TPR, CLUSTER>(sq, warp_buf, cluster_buf) / N;
    const float rrms = rsqrtf(ms + eps);

    if (has_ex && row_ok) sol_from_f32(yr + ex_i, ex * rrms * sol_to_f32(SOL_LDG(gamma + ex_i)));
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t);
        if (j < rs.nb && row_ok) {
            const int c = rs.shift + j * W;
            const int pi = kPrefetch ? i : 0;
            if constexpr (!kPrefetch) sol_load_param<T, W>(gamma, c, N, g[0]);
#pragma unroll
            for (int k = 0; k < W; ++k) v[i][k] = v[i][k] * rrms * g[pi][k];
            sol_store<T, W>(yr + c, v[i]);
        }
    }
}

template <typename T, int W, int TPR, int RPB, int NV>
__global__ void __launch_bounds__(TPR * RPB)
rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y, int M, int N, float eps) {
    rmsnorm_cached_row<T, W, TPR, RPB, NV, 1>(x, gamma, y, M, N, eps);
}

template <typename T, int W, int TPR, int NV, int CLUSTER>
__global__ void SOL_CLUSTER_DIMS(CLUSTER) __launch_bounds__(TPR)
rmsnorm_cluster_kernel(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y,
                       int M, int N, float eps) {
    rmsnorm_cached_row<T, W, TPR, 1, NV, CLUSTER>(x, gamma, y, M, N, eps);
    if constexpr (CLUSTER > 1) sol_cluster_exit_sync();  // peers may still read this CTA's cluster_buf
}

// Any N: one block per row; sum of squares, then a second read of the row (mostly an L2 hit).
template <typename T, int W, int TPR, int U>
__global__ void __launch_bounds__(TPR)
rmsnorm_stream_kernel(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y,
                      int M, int N, float eps) {
    __shared__ float warp_buf[TPR / 32];
    const int t = threadIdx.x;
    const long long row = blockIdx.x;
    const T* xr = x + row * N;
    T* yr = y + row * N;

    float sq = 0.0f;
    for (int base = t * W; base < N; base += TPR * W * U) {
        float v[U][W];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = base + u * TPR * W;
            if (c < N) sol_load<T, W, false>(xr + c, v[u]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (base + u * TPR * W < N) {
#pragma unroll
                for (int k = 0; k < W; ++k) sq = fmaf(v[u][k], v[u][k], sq);
            }
        }
    }
    const float rrms = rsqrtf(sol_row_allreduce<SolSum, TPR, 1>(sq, warp_buf, nullptr) / N + eps);

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
                float g[W];
                sol_load<T, W, false>(gamma + c, g);
#pragma unroll
                for (int k = 0; k < W; ++k) v[u][k] = v[u][k] * rrms * g[k];
                sol_store<T, W, true>(yr + c, v[u]);
            }
        }
    }
}

// Pipelined persistent kernel (rows that need a whole SM or a cluster): the next row's loads are in flight
// while this one is reduced and written (sol_pipe_rows); gamma from PSRC (SolPipeParams: 0 global, 1 shared
// memory, 2 registers, 3 spread fp32, 4 aligned rows). Dynamic shared memory: SolPipeParams<...>::kBytes.
// SCHED: rows static (0), by ticket (1) or by ticket for the last rows (2), see sol_pipe_rows; SPARE: registers
// the occupancy floor leaves besides the row buffers (sol_pipe_min_ctas); AHEAD: each row
// bulk-prefetched to L2 a row before its loads (sol_pipe_rows).
template <typename T, int W, int TPR, int NV, int CLUSTER, int PSRC, int SCHED, int SPARE, int AHEAD>
__global__ void SOL_CLUSTER_DIMS(CLUSTER)
__launch_bounds__(TPR, (sol_pipe_min_ctas<TPR, NV, PSRC == 2 ? 1 : 0, SCHED, SPARE>()))
rmsnorm_pipe_kernel(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y,
                    int M, int N, float eps, unsigned* __restrict__ tickets, unsigned base) {
    static_assert(TPR % 32 == 0 && TPR >= 2 * W - 2, "pipe kernels: whole warps, a lane per head/tail element");
    static_assert(PSRC >= 0 && PSRC <= 4, "parameter pairs (PSRC 5) are LayerNorm's");
    sol_diag_stamp(0);
    __shared__ SolPipeShared<TPR, CLUSTER, float, 1, SCHED != 0> sh;
    extern __shared__ uint4 sol_param_smem[];
    const int rank = sol_cta_rank<CLUSTER>();
    const int t = threadIdx.x;
    const long long first = blockIdx.x / CLUSTER;
    SolPipeParams<T, W, TPR, NV, CLUSTER, PSRC> pg;
    pg.fetch(gamma, reinterpret_cast<T*>(sol_param_smem), SolRowSplit<T, W>(x + (first < M ? first : 0) * N, N),
             rank, t, N);
    pg.commit();
    if constexpr (PSRC == 1 || PSRC >= 3) __syncthreads();
    constexpr bool kRows16 = PSRC == 4;  // planned only when every row starts on 16 bytes: no head/tail element
    const float inv_n = 1.0f / N;
    sol_pipe_rows<T, W, TPR, NV, CLUSTER, false, kRows16, SCHED == 2, AHEAD != 0>(x, M, N, 0.0f, tickets, base, sh,
                                          [&](const uint4 (&q)[NV], float ex, float, long long row, int it) {
        const SolRowSplit<T, W> rs(x + row * N, N);
        T* yr = y + row * N;
        T* yb = sol_pipe_out<T, W, TPR, CLUSTER>(yr, rs, rank, t);
        float sq = ex * ex;  // ex = 0 on threads without a head/tail element
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int, int, const float (&v)[W]) {
#pragma unroll
            for (int k = 0; k < W; ++k) sq = fmaf(v[k], v[k], sq);
        });
        const float rrms = rsqrtf(sol_pipe_allreduce<SolRedSum>(sq, sh, 0, it) * inv_n + eps);
        if (!kRows16 && rank == 0 && t < rs.extras) {
            const int e = rs.extra_index(t);
            sol_from_f32(yr + e, ex * rrms * sol_to_f32(SOL_LDG(gamma + e)));
        }
        pg.row(rs.shift);
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int i, int c, const float (&v)[W]) {
            float g[W], o[W];
            pg.load(gamma, i, c, N, g);
#pragma unroll
            for (int k = 0; k < W; ++k) o[k] = v[k] * rrms * g[k];
            sol_store<T, W, false, true>(yb + i * (CLUSTER * TPR * W), o);
        });
    });
}

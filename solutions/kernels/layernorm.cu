// LayerNorm forward, reference ("speed of light") version.
//   y[r, i] = (x[r, i] - mean_r) * rstd_r * gamma[i] + beta[i]
//   mean_r = sum_i x / N,  var_r = sum_i (x - mean_r)^2 / N,  rstd_r = 1 / sqrt(var_r + eps)
// T = float (fp32) or unsigned short (bf16 bits); statistics are always fp32.
// Four launch shapes, chosen by solutions/kernels/dispatch.py from the row length N:
//   layernorm_kernel          TPR threads per row, the row cached in registers (TPR = 8/16/32: part of a
//                             warp or a warp per row, RPB rows per block; TPR > 32: block per row). Exact
//                             two-pass statistics on the cached row: x is read from memory once, y written once.
//   layernorm_cluster_kernel  a thread-block cluster of CLUSTER CTAs (sm_90) shares one row (rows too long
//                             for one block's registers); partial sums cross CTAs via distributed shared memory.
//                             fp32 clusters: one reduction round of shifted sums (see kOnePass below).
//   layernorm_pipe_kernel     persistent CTAs / clusters (rows that need a whole SM or a cluster): the next
//                             row's loads are in flight while this one is reduced and written.
//   layernorm_stream_kernel   any N: block per row, chunked Welford over the row, then a second read of the
//                             row (mostly an L2 hit) for the output. Used when no cached shape fits.
// Compiled after common.cuh (the sol_* helpers): dispatch.source("layernorm") joins the two (no #include).

// Row cached in registers: thread t of the row owns body vectors j = (i * CLUSTER + rank) * TPR + t, i < NV
// (elements shift + j * W ...), so each load instruction of a warp covers 32 * 16 contiguous bytes; the few
// scalar extras of a misaligned row go to the first threads of rank 0.
template <typename T, int W, int TPR, int RPB, int NV, int CLUSTER>
__device__ __forceinline__ void layernorm_cached_row(const T* __restrict__ x, const T* __restrict__ gamma,
                                                     const T* __restrict__ beta, T* __restrict__ y,
                                                     int M, int N, float eps) {
    static_assert(TPR <= 32 || RPB == 1, "several rows per block only when a row fits in one warp");
    static_assert((TPR % 32 == 0 && TPR <= 1024) || TPR == 8 || TPR == 16, "TPR: 8, 16 or 32k <= 1024");
    static_assert(TPR >= 2 * W - 2, "a misaligned row's scalar head + tail (< 2 vectors) needs a lane each");
    constexpr bool kOnePass = CLUSTER > 1 && sizeof(T) == 4;
    __shared__ float warp_buf[kOnePass ? 1 : 2][TPR > 32 ? TPR / 32 : 1];
    __shared__ float cluster_buf[kOnePass ? 1 : 2];
    __shared__ float2 warp_buf2[kOnePass && TPR > 32 ? TPR / 32 : 1];
    __shared__ float2 cluster_buf2[1];
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
    const SolRowSplit<T, W> rs(xr, N);
    const bool has_ex = rank == 0 && t < rs.extras;
    const int ex_i = has_ex ? rs.extra_index(t) : 0;

    float v[NV][W];
    float ex = has_ex ? sol_to_f32(SOL_LDCS(xr + ex_i)) : 0.0f;
    // gamma/beta are loaded before the reductions so their (L1/L2) latency hides behind them; only for
    // small per-thread rows, where the extra 2 * NV * W registers do not cost occupancy.
    // (fp32 only: bf16 LayerNorm measured slower with it on the H200.)
    constexpr bool kPrefetch = NV * W <= 16 && sizeof(T) == 4;
    float g[kPrefetch ? NV : 1][W], b[kPrefetch ? NV : 1][W];
    auto prefetch_params = [&]() {
        if constexpr (kPrefetch) {
#pragma unroll
            for (int i = 0; i < NV; ++i) {
                const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t);
                if (j < rs.nb) {
                    sol_load_param<T, W>(gamma, rs.shift + j * W, N, g[i]);
                    sol_load_param<T, W>(beta, rs.shift + j * W, N, b[i]);
                }
            }
        }
    };
    float mean, rstd;
    if constexpr (kOnePass) {
        // fp32 cluster rows: ONE block + cluster reduction round for both statistics: sums of d = x - K and
        // d^2 about a shift K = the row's first element (a sample of the row: |mean - K| is a few standard
        // deviations at most, so var = E[d^2] - E[d]^2 keeps ~full fp32 accuracy, unlike E[x^2] - E[x]^2).
        // Measured on the H200: fp32 960 x 65536 68% -> 75% of copy; the same change on bf16 clusters and
        // on every single-CTA shape measured slower (docs/benchmarks/README.md), so they keep two passes.
        const float K = sol_to_f32(SOL_LDG(xr));
        float s1 = 0.0f, s2 = 0.0f;
        sol_load_cached_row<T, W, TPR, NV, CLUSTER, false>(xr, rs, rank, t, v, 0.0f, [&](float e) {
            const float d = e - K;  // padding is not a sample: not folded
            s1 += d;
            s2 = fmaf(d, d, s2);
        });
        if (has_ex) {
            const float d = ex - K;
            s1 += d;
            s2 = fmaf(d, d, s2);
        }
        prefetch_params();
        const float2 S = sol_row_allreduce_sum2<TPR, CLUSTER>(s1, s2, warp_buf2, cluster_buf2);
        const float dm = S.x / N;
        mean = K + dm;
        rstd = rsqrtf(fmaxf(S.y / N - dm * dm, 0.0f) + eps);
    } else {
        float sum = ex;
        sol_load_cached_row<T, W, TPR, NV, CLUSTER>(xr, rs, rank, t, v, 0.0f, [&](float e) { sum += e; });
        prefetch_params();
        mean = sol_row_allreduce<SolSum, TPR, CLUSTER>(sum, warp_buf[0], &cluster_buf[0]) / N;
        // Second pass over the registers: exact sum of squared deviations, no E[x^2] - E[x]^2 cancellation.
        float sq = has_ex ? (ex - mean) * (ex - mean) : 0.0f;
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t);
            if (j < rs.nb) {
#pragma unroll
                for (int k = 0; k < W; ++k) {
                    const float d = v[i][k] - mean;
                    sq = fmaf(d, d, sq);
                }
            }
        }
        const float var = sol_row_allreduce<SolSum, TPR, CLUSTER>(sq, warp_buf[1], &cluster_buf[1]) / N;
        rstd = rsqrtf(var + eps);
    }
    if (has_ex && row_ok)
        sol_from_f32(yr + ex_i, fmaf((ex - mean) * rstd, sol_to_f32(SOL_LDG(gamma + ex_i)),
                                     sol_to_f32(SOL_LDG(beta + ex_i))));
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        const int j = sol_vec_index<TPR, CLUSTER>(i, rank, t);
        if (j < rs.nb && row_ok) {
            const int c = rs.shift + j * W;
            const int pi = kPrefetch ? i : 0;
            if constexpr (!kPrefetch) {
                sol_load_param<T, W>(gamma, c, N, g[0]);
                sol_load_param<T, W>(beta, c, N, b[0]);
            }
#pragma unroll
            for (int k = 0; k < W; ++k) v[i][k] = fmaf((v[i][k] - mean) * rstd, g[pi][k], b[pi][k]);
            sol_store<T, W>(yr + c, v[i]);
        }
    }
}

template <typename T, int W, int TPR, int RPB, int NV>
__global__ void __launch_bounds__(TPR * RPB)
layernorm_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                 T* __restrict__ y, int M, int N, float eps) {
    layernorm_cached_row<T, W, TPR, RPB, NV, 1>(x, gamma, beta, y, M, N, eps);
}

template <typename T, int W, int TPR, int NV, int CLUSTER>
__global__ void SOL_CLUSTER_DIMS(CLUSTER) __launch_bounds__(TPR)
layernorm_cluster_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                         T* __restrict__ y, int M, int N, float eps) {
    layernorm_cached_row<T, W, TPR, 1, NV, CLUSTER>(x, gamma, beta, y, M, N, eps);
    if constexpr (CLUSTER > 1) sol_cluster_exit_sync();  // peers may still read this CTA's cluster_buf
}

// Pipelined persistent kernel (rows that need a whole SM or a cluster): the next row's loads are in flight
// while this one is reduced and written (sol_pipe_rows). One reduction round per row (measured faster than two
// exact rounds, docs/benchmarks), of sums of d = x - K and d^2 about K = the mean of the row's first 32
// elements (element 0 repeated in rows under 32: a multiply by 1/32, not a reciprocal kept in a register),
// which every warp computes alike from one prefetched element per lane. var = E[d^2] - E[d]^2 loses
// ~(K - mean)^2 / var ulps of var to cancellation: a few for typical rows, unlike E[x^2] - E[x]^2; a single
// sample as K (the fp32 cluster kernel) would lose up to N ulps when that sample is an outlier.
// gamma/beta from PSRC (SolPipeParams: 0 global, 1 shared memory, 2 registers, 3 spread fp32, 4 aligned rows;
// 5: the pairs of SolParamPairs). Dynamic shared memory: P::kBytes (dispatch.Plan.shared_bytes). SCHED: rows
// static (0), by ticket (1) or by ticket for the last rows (2), see sol_pipe_rows; SPARE: registers the
// occupancy floor leaves besides the row buffers (sol_pipe_min_ctas); AHEAD: each row
// bulk-prefetched to L2 a row before its loads (sol_pipe_rows).
template <typename T, int W, int TPR, int NV, int CLUSTER, int PSRC, int SCHED, int SPARE, int AHEAD>
__global__ void SOL_CLUSTER_DIMS(CLUSTER)
__launch_bounds__(TPR, (sol_pipe_min_ctas<TPR, NV, PSRC == 2 ? 2 : 0, SCHED, SPARE>()))
layernorm_pipe_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                      T* __restrict__ y, int M, int N, float eps, unsigned* __restrict__ tickets, unsigned base) {
    static_assert(TPR % 32 == 0 && TPR >= 2 * W - 2, "pipe kernels: whole warps, a lane per head/tail element");
    sol_diag_stamp(0);
    using P = typename SolIf<PSRC == 5, SolParamPairs<T, W, TPR, NV, CLUSTER>,
                             SolParamsTwo<T, SolPipeParams<T, W, TPR, NV, CLUSTER, PSRC>>>::type;
    __shared__ SolPipeShared<TPR, CLUSTER, float2, 1, SCHED != 0> sh;
    extern __shared__ uint4 sol_param_smem[];
    const int rank = sol_cta_rank<CLUSTER>();
    const int t = threadIdx.x;
    const long long first = blockIdx.x / CLUSTER;
    P pp;
    pp.fetch(gamma, beta, reinterpret_cast<T*>(sol_param_smem), SolRowSplit<T, W>(x + (first < M ? first : 0) * N, N),
             rank, t, N);
    pp.commit();
    if constexpr (PSRC == 1 || PSRC >= 3) __syncthreads();
    // PSRC 4 is only planned when every row starts on 16 bytes: no head/tail element, and no registers or code
    // for one (at the occupancy floor NVRTC 13.5 spilled 8 bytes without this)
    constexpr bool kRows16 = PSRC == 4;
    const float inv_n = 1.0f / N;  // a reciprocal once, not a division a row
    sol_pipe_rows<T, W, TPR, NV, CLUSTER, true, kRows16, SCHED == 2, AHEAD != 0>(x, M, N, 0.0f, tickets, base, sh,
                                                [&](const uint4 (&q)[NV], float ex, float head, long long row, int it) {
        const float K = sol_warp_allreduce<SolSum>(head) * (1.0f / 32);  // identical in every warp
        const SolRowSplit<T, W> rs(x + row * N, N);
        T* yr = y + row * N;
        T* yb = sol_pipe_out<T, W, TPR, CLUSTER>(yr, rs, rank, t);
        const bool has_ex = !kRows16 && rank == 0 && t < rs.extras;
        const float de = has_ex ? ex - K : 0.0f;
        float s1 = de, s2 = de * de;
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int, int, const float (&v)[W]) {
#pragma unroll
            for (int k = 0; k < W; ++k) {
                const float d = v[k] - K;
                s1 += d;
                s2 = fmaf(d, d, s2);
            }
        });
        const float2 S = sol_pipe_allreduce<SolRedSum2>(make_float2(s1, s2), sh, 0, it);
        const float dm = S.x * inv_n;
        const float mean = K + dm, rstd = rsqrtf(fmaxf(S.y * inv_n - dm * dm, 0.0f) + eps);
        if (has_ex) {
            const int e = rs.extra_index(t);
            sol_from_f32(yr + e, fmaf((ex - mean) * rstd, sol_to_f32(SOL_LDG(gamma + e)), sol_to_f32(SOL_LDG(beta + e))));
        }
        const float nmr = -mean * rstd;
        pp.row(rs.shift);
        sol_pipe_each<T, W, TPR, NV, CLUSTER>(q, rs, rank, t, [&](int i, int c, const float (&v)[W]) {
            float g[W], b[W], o[W];
            pp.load(gamma, beta, i, c, N, g, b);
#pragma unroll
            for (int k = 0; k < W; ++k) {
                // bf16: x * rstd - mean * rstd, one FFMA instead of a subtraction and a product (measured +1-1.4
                // points of copy). It rounds |mean| / std x 2^-24 off x-hat, where the bf16 input itself was
                // already rounded by |mean| / std x 2^-9; fp32 keeps (x - mean) * rstd, exact to 2^-24.
                const float xh = sizeof(T) == 2 ? fmaf(v[k], rstd, nmr) : (v[k] - mean) * rstd;
                o[k] = fmaf(xh, g[k], b[k]);
            }
            sol_store<T, W, false, true>(yb + i * (CLUSTER * TPR * W), o);
        });
    });
}

// Chan et al. merge of (count, mean, M2) statistics.
__device__ __forceinline__ void layernorm_welford_merge(float& n, float& mean, float& m2,
                                                        float nb, float meanb, float m2b) {
    const float tot = n + nb;
    if (tot == 0.0f) return;
    const float delta = meanb - mean;
    const float fb = nb / tot;
    mean = fmaf(delta, fb, mean);
    m2 = m2 + m2b + delta * delta * n * fb;
    n = tot;
}

// Warp tree of (count, mean, M2) statistics: lane 0 ends with the whole warp's.
__device__ __forceinline__ void layernorm_warp_welford(float& n, float& mean, float& m2) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float nb = __shfl_down_sync(0xffffffffu, n, o);
        const float mb = __shfl_down_sync(0xffffffffu, mean, o);
        const float m2b = __shfl_down_sync(0xffffffffu, m2, o);
        layernorm_welford_merge(n, mean, m2, nb, mb, m2b);
    }
}

// Any N: one block per row, U vectors of W elements in flight per thread and chunk. Each chunk's
// statistics are computed exactly in registers and merged (Welford/Chan), then the row is read again.
template <typename T, int W, int TPR, int U>
__global__ void __launch_bounds__(TPR)
layernorm_stream_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                        T* __restrict__ y, int M, int N, float eps) {
    constexpr int NW = TPR / 32;
    __shared__ float s_n[NW], s_mean[NW], s_m2[NW];
    const int t = threadIdx.x, lane = t & 31;
    const long long row = blockIdx.x;
    const T* xr = x + row * N;
    T* yr = y + row * N;

    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int base = t * W; base < N; base += TPR * W * U) {
        float v[U][W];
        float cnt = 0.0f, s = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int c = base + u * TPR * W;
            if (c < N) {
                sol_load<T, W, false>(xr + c, v[u]);
                cnt += W;
#pragma unroll
                for (int k = 0; k < W; ++k) s += v[u][k];
            }
        }
        const float cm = s / cnt;
        float cm2 = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (base + u * TPR * W < N) {
#pragma unroll
                for (int k = 0; k < W; ++k) {
                    const float d = v[u][k] - cm;
                    cm2 = fmaf(d, d, cm2);
                }
            }
        }
        layernorm_welford_merge(n, mean, m2, cnt, cm, cm2);
    }
    // Tree to lane 0 then broadcast, so every thread of the row uses the same statistics.
    layernorm_warp_welford(n, mean, m2);
    if (lane == 0) { s_n[t >> 5] = n; s_mean[t >> 5] = mean; s_m2[t >> 5] = m2; }
    __syncthreads();
    n = lane < NW ? s_n[lane] : 0.0f;
    mean = lane < NW ? s_mean[lane] : 0.0f;
    m2 = lane < NW ? s_m2[lane] : 0.0f;
    layernorm_warp_welford(n, mean, m2);
    mean = __shfl_sync(0xffffffffu, mean, 0);
    m2 = __shfl_sync(0xffffffffu, m2, 0);
    const float rstd = rsqrtf(m2 / N + eps);

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
                float g[W], b[W];
                sol_load<T, W, false>(gamma + c, g);
                sol_load<T, W, false>(beta + c, b);
#pragma unroll
                for (int k = 0; k < W; ++k) v[u][k] = fmaf((v[u][k] - mean) * rstd, g[k], b[k]);
                sol_store<T, W, true>(yr + c, v[u]);
            }
        }
    }
}

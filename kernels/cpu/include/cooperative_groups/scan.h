// cg::inclusive_scan / exclusive_scan for thread_block_tile<N <= 32> (Hillis-Steele over shfl_up).
#pragma once
#include "../cooperative_groups.h"
namespace cooperative_groups {
template <unsigned N, class P, class T, class Op>
__forceinline__ T inclusive_scan(const thread_block_tile<N, P>& g, T val, Op op, int line = __builtin_LINE()) {
    static_assert(N <= 32, "cg scans of tiles wider than a warp are not implemented by the emulator");
    for (unsigned d = 1; d < N; d *= 2) {
        T o = g.shfl_up(val, d, line);
        if (g.thread_rank() >= d) val = op(val, o);
    }
    return val;
}
template <unsigned N, class P, class T>
__forceinline__ T inclusive_scan(const thread_block_tile<N, P>& g, T val, int line = __builtin_LINE()) {
    return inclusive_scan(g, val, plus<T>(), line);
}
// Rank 0 gets T() (CUDA leaves it undefined for non-plus operators).
template <unsigned N, class P, class T, class Op>
__forceinline__ T exclusive_scan(const thread_block_tile<N, P>& g, T val, Op op, int line = __builtin_LINE()) {
    T inc = inclusive_scan(g, val, op, line);
    T prev = g.shfl_up(inc, 1, line);
    return g.thread_rank() == 0 ? T() : prev;
}
template <unsigned N, class P, class T>
__forceinline__ T exclusive_scan(const thread_block_tile<N, P>& g, T val, int line = __builtin_LINE()) {
    return exclusive_scan(g, val, plus<T>(), line);
}
}  // namespace cooperative_groups

// cg::reduce for the CPU emulator: every member gets the result.
//  * thread_block_tile<N <= 32>: butterfly over shfl_xor (any trivially copyable type);
//  * wider tiles: every member's value gathered in rank order, folded left to right;
//  * coalesced_group: the members' values by rank, folded left to right.
#pragma once
#include "../cooperative_groups.h"
namespace cooperative_groups {
template <unsigned N, class P, class T, class Op>
__forceinline__ T reduce(const thread_block_tile<N, P>& g, T val, Op op, int line = __builtin_LINE()) {
    if constexpr (N <= 32) {
        for (unsigned offset = N / 2; offset > 0; offset /= 2) val = op(val, g.shfl_xor(val, offset, line));
        return val;
    } else {
        T all[N];
        g.gather(val, all, line);
        T acc = all[0];
        for (unsigned r = 1; r < N; ++r) acc = op(acc, all[r]);
        return acc;
    }
}
template <class T, class Op>
__forceinline__ T reduce(const coalesced_group& g, T val, Op op, int line = __builtin_LINE()) {
    const unsigned n = g.size();
    T acc = g.shfl(val, 0, line);
    for (unsigned r = 1; r < n; ++r) acc = op(acc, g.shfl(val, r, line));
    return acc;
}
}  // namespace cooperative_groups

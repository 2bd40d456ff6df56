// cg::reduce for thread_block_tile<N>: butterfly over shfl_xor, every rank gets the result.
#pragma once
#include "../cooperative_groups.h"
namespace cooperative_groups {
template <unsigned N, class T, class Op>
__forceinline__ T reduce(const thread_block_tile<N>& g, T val, Op op, int line = __builtin_LINE()) {
    for (unsigned offset = N / 2; offset > 0; offset /= 2) val = op(val, g.shfl_xor(val, offset, line));
    return val;
}
}  // namespace cooperative_groups

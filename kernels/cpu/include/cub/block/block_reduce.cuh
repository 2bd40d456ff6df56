// cub::BlockReduce for the CPU emulator (API of CCCL 3.5; see cub/detail/emu_collective.h).
// Every thread of the block must call it; the result is valid in thread 0 only, as in CUB. The order is
// CUB's BLOCK_REDUCE_WARP_REDUCTIONS (the default) for every algorithm: a shuffle tree per warp, then
// thread 0 folds the warp aggregates in warp order. BLOCK_REDUCE_RAKING* reduce in another order on the
// GPU: float sums may then differ in the last bits.
#pragma once
#include "../detail/emu_collective.h"

namespace cub {
enum BlockReduceAlgorithm {
    BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
    BLOCK_REDUCE_RAKING,
    BLOCK_REDUCE_WARP_REDUCTIONS,
    BLOCK_REDUCE_WARP_REDUCTIONS_NONDETERMINISTIC,
};

namespace detail {
template <class T, int Warps> struct block_reduce_storage { T warp_aggregates[Warps]; };
}  // namespace detail

template <typename T, int BlockDimX, BlockReduceAlgorithm Algorithm = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BlockDimY = 1, int BlockDimZ = 1>
class BlockReduce
    : public detail::block_collective<
          BlockReduce<T, BlockDimX, Algorithm, BlockDimY, BlockDimZ>,
          detail::block_reduce_storage<T, (BlockDimX * BlockDimY * BlockDimZ + detail::warp_threads - 1) /
                                              detail::warp_threads>,
          BlockDimX, BlockDimY> {
    static constexpr int kThreads = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int kWarpSize = kThreads < detail::warp_threads ? kThreads : detail::warp_threads;
    static constexpr int kWarps = (kThreads + detail::warp_threads - 1) / detail::warp_threads;
    static constexpr bool kEvenWarps = kThreads % detail::warp_threads == 0;
    using Base = detail::block_collective<BlockReduce, detail::block_reduce_storage<T, kWarps>, BlockDimX, BlockDimY>;
    using Base::tid_;

public:
    using typename Base::TempStorage;

    __forceinline__ BlockReduce() : Base() {}
    __forceinline__ BlockReduce(TempStorage& temp_storage) : Base(temp_storage) {}

    __forceinline__ T Sum(T input, CUB_EMU_LINE) { return reduce<true>(input, kThreads, ::cuda::std::plus<>{}, line.v); }
    __forceinline__ T Sum(T input, int num_valid, CUB_EMU_LINE) {
        return reduce<false>(input, num_valid, ::cuda::std::plus<>{}, line.v);
    }
    template <int N> __forceinline__ T Sum(const T (&inputs)[N], CUB_EMU_LINE) {
        return reduce<true>(detail::thread_reduce(inputs, ::cuda::std::plus<>{}), kThreads, ::cuda::std::plus<>{},
                            line.v);
    }
    template <typename ReductionOp> __forceinline__ T Reduce(T input, ReductionOp op, CUB_EMU_LINE) {
        return reduce<true>(input, kThreads, op, line.v);
    }
    template <typename ReductionOp> __forceinline__ T Reduce(T input, ReductionOp op, int num_valid, CUB_EMU_LINE) {
        return reduce<false>(input, num_valid, op, line.v);
    }
    template <int N, typename ReductionOp> __forceinline__ T Reduce(const T (&inputs)[N], ReductionOp op, CUB_EMU_LINE) {
        return reduce<true>(detail::thread_reduce(inputs, op), kThreads, op, line.v);
    }

private:
    template <bool FullTile, class Op> __forceinline__ T reduce(T input, int num_valid, Op op, int line) {
        CUB_EMU_CHECK_BLOCK(kThreads, "cub::BlockReduce", line);
        const int warp = tid_ / detail::warp_threads, lane = tid_ % detail::warp_threads;
        const int warp_offset = warp * kWarpSize;
        int warp_valid = (FullTile && kEvenWarps) || warp_offset + kWarpSize <= num_valid ? kWarpSize
                                                                                        : num_valid - warp_offset;
        if (FullTile && !kEvenWarps && warp_offset + kWarpSize > kThreads) warp_valid = kThreads - warp_offset;
        T agg = detail::warp_reduce<kWarpSize>(input, op, lane, warp_valid - 1, 0xffffffffu, line);
        if (kWarps == 1) return agg;
        T* slots = this->storage().warp_aggregates;
        if (lane == 0) slots[warp] = agg;
        __syncthreads(line);
        if (tid_ == 0)
            for (int w = 1; w < kWarps; ++w)
                if (FullTile || w * kWarpSize < num_valid) agg = op(agg, slots[w]);
        return agg;
    }
};
}  // namespace cub

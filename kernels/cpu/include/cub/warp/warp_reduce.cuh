// cub::WarpReduce for the CPU emulator (API of CCCL 3.5; see cub/detail/emu_collective.h).
// Results are valid in lane 0 of each logical warp (for segmented reductions: the first lane of each
// segment), as in CUB; the other lanes hold partial values.
#pragma once
#include "../detail/emu_collective.h"

namespace cub {
template <typename T, int LogicalWarpThreads = detail::warp_threads>
class WarpReduce {
    static_assert(LogicalWarpThreads >= 1 && LogicalWarpThreads <= detail::warp_threads,
                  "LogicalWarpThreads must be in the range [1, 32]");
    static_assert((LogicalWarpThreads & (LogicalWarpThreads - 1)) == 0,
                  "the CPU emulator's cub::WarpReduce supports logical warps of a power-of-two size only");
    static constexpr int L = LogicalWarpThreads;

public:
    // Shuffle reductions need no shared memory; the type exists so `__shared__ TempStorage t[4];` compiles.
    struct TempStorage { unsigned char unused; };

    __forceinline__ WarpReduce(TempStorage& temp_storage) : temp_(temp_storage) {}

    __forceinline__ T Sum(T input, CUB_EMU_LINE) { return Reduce(input, ::cuda::std::plus<>{}, line); }
    __forceinline__ T Sum(T input, int valid_items, CUB_EMU_LINE) {
        return Reduce(input, ::cuda::std::plus<>{}, valid_items, line);
    }
    template <int N> __forceinline__ T Sum(const T (&input)[N], CUB_EMU_LINE) {
        return Reduce(detail::thread_reduce(input, ::cuda::std::plus<>{}), ::cuda::std::plus<>{}, line);
    }
    __forceinline__ T Max(T input, CUB_EMU_LINE) { return Reduce(input, ::cuda::maximum<>{}, line); }
    template <int N> __forceinline__ T Max(const T (&input)[N], CUB_EMU_LINE) {
        return Reduce(detail::thread_reduce(input, ::cuda::maximum<>{}), ::cuda::maximum<>{}, line);
    }
    __forceinline__ T Min(T input, CUB_EMU_LINE) { return Reduce(input, ::cuda::minimum<>{}, line); }
    template <int N> __forceinline__ T Min(const T (&input)[N], CUB_EMU_LINE) {
        return Reduce(detail::thread_reduce(input, ::cuda::minimum<>{}), ::cuda::minimum<>{}, line);
    }

    template <typename ReductionOp> __forceinline__ T Reduce(T input, ReductionOp op, CUB_EMU_LINE) {
        return detail::warp_reduce<L>(input, op, lane(), L - 1, detail::logical_warp_mask<L>(), line.v);
    }
    template <typename ReductionOp> __forceinline__ T Reduce(T input, ReductionOp op, int valid_items, CUB_EMU_LINE) {
        return detail::warp_reduce<L>(input, op, lane(), valid_items - 1, detail::logical_warp_mask<L>(), line.v);
    }
    template <int N, typename ReductionOp> __forceinline__ T Reduce(const T (&input)[N], ReductionOp op, CUB_EMU_LINE) {
        return Reduce(detail::thread_reduce(input, op), op, line);
    }

    // Segments start at lanes whose head_flag is set (lane 0 always starts one).
    template <typename FlagT> __forceinline__ T HeadSegmentedSum(T input, FlagT head_flag, CUB_EMU_LINE) {
        return HeadSegmentedReduce(input, head_flag, ::cuda::std::plus<>{}, line);
    }
    template <typename FlagT, typename ReductionOp>
    __forceinline__ T HeadSegmentedReduce(T input, FlagT head_flag, ReductionOp op, CUB_EMU_LINE) {
        unsigned heads = segment_flags(head_flag != FlagT{}, line.v);
        const int me = lane();
        unsigned later = heads & ~((2u << me) - 1u);          // heads after this lane
        int last = later ? __builtin_ctz(later) - 1 : L - 1;
        return detail::warp_reduce<L>(input, op, me, last, detail::logical_warp_mask<L>(), line.v);
    }
    // Segments end at lanes whose tail_flag is set.
    template <typename FlagT> __forceinline__ T TailSegmentedSum(T input, FlagT tail_flag, CUB_EMU_LINE) {
        return TailSegmentedReduce(input, tail_flag, ::cuda::std::plus<>{}, line);
    }
    template <typename FlagT, typename ReductionOp>
    __forceinline__ T TailSegmentedReduce(T input, FlagT tail_flag, ReductionOp op, CUB_EMU_LINE) {
        unsigned tails = segment_flags(tail_flag != FlagT{}, line.v);
        const int me = lane();
        unsigned here_on = tails & ~((1u << me) - 1u);       // tails at or after this lane
        int last = here_on ? __builtin_ctz(here_on) : L - 1;
        return detail::warp_reduce<L>(input, op, me, last, detail::logical_warp_mask<L>(), line.v);
    }

private:
    TempStorage& temp_;
    static __forceinline__ int lane() { return detail::lane_id() % L; }
    // The flags of this logical warp, bit i = logical lane i.
    static __forceinline__ unsigned segment_flags(bool flag, int line) {
        unsigned all = (unsigned)::emu::warp_op(::emu::OP_BALLOT, detail::logical_warp_mask<L>(), flag, 0, 32, line);
        if constexpr (L < 32) all = (all >> (L * (detail::lane_id() / L))) & ((1u << L) - 1u);
        return all;
    }
};
}  // namespace cub

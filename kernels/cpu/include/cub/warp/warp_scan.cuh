// cub::WarpScan for the CPU emulator (API of CCCL 3.5; see cub/detail/emu_collective.h).
// Every lane gets its prefix. Exclusive scans without an initial value leave logical lane 0's output
// undefined in CUB; here it is T{} (the emulator gives a defined value where the GPU gives any).
#pragma once
#include "../detail/emu_collective.h"

namespace cub {
template <typename T, int LogicalWarpThreads = detail::warp_threads>
class WarpScan {
    static_assert(LogicalWarpThreads >= 1 && LogicalWarpThreads <= detail::warp_threads,
                  "LogicalWarpThreads must be in the range [1, 32]");
    static_assert((LogicalWarpThreads & (LogicalWarpThreads - 1)) == 0,
                  "the CPU emulator's cub::WarpScan supports logical warps of a power-of-two size only");
    static constexpr int L = LogicalWarpThreads;
    using Plus = ::cuda::std::plus<>;

public:
    struct TempStorage { unsigned char unused; };

    __forceinline__ WarpScan(TempStorage& temp_storage) : temp_(temp_storage) {}

    // ---- sums
    __forceinline__ void InclusiveSum(T input, T& inclusive_output, CUB_EMU_LINE) {
        InclusiveScan(input, inclusive_output, Plus{}, line);
    }
    __forceinline__ void InclusiveSum(T input, T& inclusive_output, T& warp_aggregate, CUB_EMU_LINE) {
        InclusiveScan(input, inclusive_output, Plus{}, warp_aggregate, line);
    }
    __forceinline__ void ExclusiveSum(T input, T& exclusive_output, CUB_EMU_LINE) {
        ExclusiveScan(input, exclusive_output, T{}, Plus{}, line);
    }
    __forceinline__ void ExclusiveSum(T input, T& exclusive_output, T& warp_aggregate, CUB_EMU_LINE) {
        ExclusiveScan(input, exclusive_output, T{}, Plus{}, warp_aggregate, line);
    }

    // ---- inclusive scans
    template <typename ScanOp> __forceinline__ void InclusiveScan(T input, T& inclusive_output, ScanOp op, CUB_EMU_LINE) {
        inclusive_output = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
    }
    template <typename ScanOp>
    __forceinline__ void InclusiveScan(T input, T& inclusive_output, ScanOp op, T& warp_aggregate, CUB_EMU_LINE) {
        InclusiveScan(input, inclusive_output, op, line);
        warp_aggregate = detail::shfl(::emu::OP_SHFL_IDX, mask(), inclusive_output, L - 1, L, line.v);
    }

    // ---- exclusive scans
    template <typename ScanOp> __forceinline__ void ExclusiveScan(T input, T& exclusive_output, ScanOp op, CUB_EMU_LINE) {
        T inclusive = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
        exclusive_output = shift_up(inclusive, line.v);
        if (lane() == 0) exclusive_output = T{};
    }
    template <typename ScanOp>
    __forceinline__ void ExclusiveScan(T input, T& exclusive_output, T initial_value, ScanOp op, CUB_EMU_LINE) {
        T inclusive = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
        T prev = shift_up(inclusive, line.v);
        exclusive_output = lane() == 0 ? initial_value : op(initial_value, prev);
    }
    template <typename ScanOp>
    __forceinline__ void ExclusiveScan(T input, T& exclusive_output, ScanOp op, T& warp_aggregate, CUB_EMU_LINE) {
        T inclusive = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
        warp_aggregate = detail::shfl(::emu::OP_SHFL_IDX, mask(), inclusive, L - 1, L, line.v);
        exclusive_output = shift_up(inclusive, line.v);
        if (lane() == 0) exclusive_output = T{};
    }
    template <typename ScanOp>
    __forceinline__ void ExclusiveScan(T input, T& exclusive_output, T initial_value, ScanOp op, T& warp_aggregate,
                                       CUB_EMU_LINE) {
        T inclusive = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
        warp_aggregate = detail::shfl(::emu::OP_SHFL_IDX, mask(), inclusive, L - 1, L, line.v);
        T prev = shift_up(inclusive, line.v);
        exclusive_output = lane() == 0 ? initial_value : op(initial_value, prev);
    }

    // ---- both at once
    template <typename ScanOp>
    __forceinline__ void Scan(T input, T& inclusive_output, T& exclusive_output, ScanOp op, CUB_EMU_LINE) {
        inclusive_output = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
        exclusive_output = shift_up(inclusive_output, line.v);
        if (lane() == 0) exclusive_output = T{};
    }
    template <typename ScanOp>
    __forceinline__ void Scan(T input, T& inclusive_output, T& exclusive_output, T initial_value, ScanOp op,
                              CUB_EMU_LINE) {
        T inclusive = detail::warp_inclusive_scan<L>(input, op, lane(), mask(), line.v);
        T prev = shift_up(inclusive, line.v);
        exclusive_output = lane() == 0 ? initial_value : op(initial_value, prev);
        inclusive_output = op(initial_value, inclusive);
    }

    __forceinline__ T Broadcast(T input, unsigned int src_lane, CUB_EMU_LINE) {
        return detail::shfl(::emu::OP_SHFL_IDX, mask(), input, (int)src_lane, L, line.v);
    }

private:
    TempStorage& temp_;
    static __forceinline__ int lane() { return detail::lane_id() % L; }
    static __forceinline__ unsigned mask() { return detail::logical_warp_mask<L>(); }
    static __forceinline__ T shift_up(const T& v, int line) { return detail::shfl(::emu::OP_SHFL_UP, mask(), v, 1, L, line); }
};
}  // namespace cub

// cub::BlockScan for the CPU emulator (API of CCCL 3.5; see cub/detail/emu_collective.h).
// Every thread of the block must call it and gets its prefix. Orders follow CUB's algorithms:
//  * BLOCK_SCAN_RAKING / BLOCK_SCAN_RAKING_MEMOIZE (default): the first warp rakes segments of
//    ceil(threads / 32) consecutive inputs, scans the segment totals with a shuffle scan, then scans
//    each segment from its prefix;
//  * BLOCK_SCAN_WARP_SCANS: a shuffle scan per warp, then the warp totals folded in warp order.
// Exclusive scans without an initial value or prefix leave thread 0's output undefined in CUB; here it is
// T{}. A prefix callback is called by the first warp with the block's aggregate; lane 0's return value
// is the block's prefix, as in CUB.
#pragma once
#include "../detail/emu_collective.h"

namespace cub {
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

namespace detail {
struct no_prefix {
    template <class T> __forceinline__ T operator()(T v) const { return v; }
};
}  // namespace detail

namespace detail {
template <class T, int Slots> struct block_scan_storage {
    T grid[Slots];   // raking: every input; warp scans: the warp totals
    T aggregate;
    T prefix;
};
template <int Threads, bool WarpScans> constexpr int block_scan_slots() {
    return WarpScans ? (Threads + warp_threads - 1) / warp_threads : Threads;
}
}  // namespace detail

template <typename T, int BlockDimX, BlockScanAlgorithm Algorithm = BLOCK_SCAN_RAKING, int BlockDimY = 1,
          int BlockDimZ = 1>
class BlockScan
    : public detail::block_collective<
          BlockScan<T, BlockDimX, Algorithm, BlockDimY, BlockDimZ>,
          detail::block_scan_storage<T, detail::block_scan_slots<BlockDimX * BlockDimY * BlockDimZ,
                                                                 Algorithm == BLOCK_SCAN_WARP_SCANS>()>,
          BlockDimX, BlockDimY> {
    static constexpr int kThreads = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int kW = detail::warp_threads;
    static constexpr int kWarps = (kThreads + kW - 1) / kW;
    static constexpr int kMaxRaking = kThreads < kW ? kThreads : kW;
    static constexpr int kSegment = (kThreads + kMaxRaking - 1) / kMaxRaking;
    static constexpr int kRaking = (kThreads + kSegment - 1) / kSegment;
    static constexpr bool kWarpScans = Algorithm == BLOCK_SCAN_WARP_SCANS;
    using Storage = detail::block_scan_storage<T, detail::block_scan_slots<kThreads, kWarpScans>()>;
    using Base = detail::block_collective<BlockScan, Storage, BlockDimX, BlockDimY>;
    using Base::tid_;
    using Plus = ::cuda::std::plus<>;

public:
    using typename Base::TempStorage;

    __forceinline__ BlockScan() : Base() {}
    __forceinline__ BlockScan(TempStorage& temp_storage) : Base(temp_storage) {}

    // ---- sums (one item per thread)
    __forceinline__ void ExclusiveSum(T input, T& output, CUB_EMU_LINE) { ExclusiveScan(input, output, T{}, Plus{}, line); }
    __forceinline__ void ExclusiveSum(T input, T& output, T& block_aggregate, CUB_EMU_LINE) {
        ExclusiveScan(input, output, T{}, Plus{}, block_aggregate, line);
    }
    template <typename PrefixOp, typename = decltype(std::declval<PrefixOp&>()(std::declval<T>()))>
    __forceinline__ void ExclusiveSum(T input, T& output, PrefixOp& prefix_op, CUB_EMU_LINE) {
        ExclusiveScan(input, output, Plus{}, prefix_op, line);
    }
    __forceinline__ void InclusiveSum(T input, T& output, CUB_EMU_LINE) { InclusiveScan(input, output, Plus{}, line); }
    __forceinline__ void InclusiveSum(T input, T& output, T& block_aggregate, CUB_EMU_LINE) {
        InclusiveScan(input, output, Plus{}, block_aggregate, line);
    }
    template <typename PrefixOp, typename = decltype(std::declval<PrefixOp&>()(std::declval<T>()))>
    __forceinline__ void InclusiveSum(T input, T& output, PrefixOp& prefix_op, CUB_EMU_LINE) {
        InclusiveScan(input, output, Plus{}, prefix_op, line);
    }

    // ---- scans (one item per thread)
    template <typename ScanOp> __forceinline__ void ExclusiveScan(T input, T& output, T initial_value, ScanOp op, CUB_EMU_LINE) {
        T inc;
        run(input, output, inc, op, &initial_value, (T*)nullptr, (detail::no_prefix*)nullptr, line.v);
    }
    template <typename ScanOp>
    __forceinline__ void ExclusiveScan(T input, T& output, T initial_value, ScanOp op, T& block_aggregate, CUB_EMU_LINE) {
        T inc;
        run(input, output, inc, op, &initial_value, &block_aggregate, (detail::no_prefix*)nullptr, line.v);
    }
    template <typename ScanOp, typename PrefixOp,
              typename = decltype(std::declval<PrefixOp&>()(std::declval<T>()))>
    __forceinline__ void ExclusiveScan(T input, T& output, ScanOp op, PrefixOp& prefix_op, CUB_EMU_LINE) {
        T inc;
        run(input, output, inc, op, (T*)nullptr, (T*)nullptr, &prefix_op, line.v);
    }
    template <typename ScanOp> __forceinline__ void InclusiveScan(T input, T& output, ScanOp op, CUB_EMU_LINE) {
        T exc;
        run(input, exc, output, op, (T*)nullptr, (T*)nullptr, (detail::no_prefix*)nullptr, line.v);
    }
    template <typename ScanOp>
    __forceinline__ void InclusiveScan(T input, T& output, ScanOp op, T& block_aggregate, CUB_EMU_LINE) {
        T exc;
        run(input, exc, output, op, (T*)nullptr, &block_aggregate, (detail::no_prefix*)nullptr, line.v);
    }
    template <typename ScanOp, typename PrefixOp,
              typename = decltype(std::declval<PrefixOp&>()(std::declval<T>()))>
    __forceinline__ void InclusiveScan(T input, T& output, ScanOp op, PrefixOp& prefix_op, CUB_EMU_LINE) {
        T exc;
        run(input, exc, output, op, (T*)nullptr, (T*)nullptr, &prefix_op, line.v);
    }

    // ---- several items per thread (blocked arrangement): the thread totals are scanned across the block
    template <int N> __forceinline__ void ExclusiveSum(const T (&input)[N], T (&output)[N], CUB_EMU_LINE) {
        ExclusiveScan(input, output, T{}, Plus{}, line);
    }
    template <int N> __forceinline__ void ExclusiveSum(const T (&input)[N], T (&output)[N], T& block_aggregate, CUB_EMU_LINE) {
        ExclusiveScan(input, output, T{}, Plus{}, block_aggregate, line);
    }
    template <int N> __forceinline__ void InclusiveSum(const T (&input)[N], T (&output)[N], CUB_EMU_LINE) {
        InclusiveScan(input, output, Plus{}, line);
    }
    template <int N> __forceinline__ void InclusiveSum(const T (&input)[N], T (&output)[N], T& block_aggregate, CUB_EMU_LINE) {
        InclusiveScan(input, output, Plus{}, block_aggregate, line);
    }
    template <int N, typename ScanOp>
    __forceinline__ void ExclusiveScan(const T (&input)[N], T (&output)[N], T initial_value, ScanOp op, CUB_EMU_LINE) {
        T prefix;
        ExclusiveScan(detail::thread_reduce(input, op), prefix, initial_value, op, line);
        detail::thread_scan_exclusive(input, output, op, prefix, true);
    }
    template <int N, typename ScanOp>
    __forceinline__ void ExclusiveScan(const T (&input)[N], T (&output)[N], T initial_value, ScanOp op,
                                       T& block_aggregate, CUB_EMU_LINE) {
        T prefix;
        ExclusiveScan(detail::thread_reduce(input, op), prefix, initial_value, op, block_aggregate, line);
        detail::thread_scan_exclusive(input, output, op, prefix, true);
    }
    template <int N, typename ScanOp>
    __forceinline__ void InclusiveScan(const T (&input)[N], T (&output)[N], ScanOp op, CUB_EMU_LINE) {
        T prefix, inc;
        run(detail::thread_reduce(input, op), prefix, inc, op, (T*)nullptr, (T*)nullptr,
            (detail::no_prefix*)nullptr, line.v);
        detail::thread_scan_inclusive(input, output, op, prefix, tid_ != 0);
    }
    template <int N, typename ScanOp>
    __forceinline__ void InclusiveScan(const T (&input)[N], T (&output)[N], ScanOp op, T& block_aggregate, CUB_EMU_LINE) {
        T prefix, inc;
        run(detail::thread_reduce(input, op), prefix, inc, op, (T*)nullptr, &block_aggregate,
            (detail::no_prefix*)nullptr, line.v);
        detail::thread_scan_inclusive(input, output, op, prefix, tid_ != 0);
    }

private:
    // exclusive/inclusive prefix of `input`; `initial` (ExclusiveScan's initial value) or `prefix_op`
    // seeds every prefix; `aggregate` receives the block's total of the inputs.
    template <class Op, class PrefixOp>
    __forceinline__ void run(T input, T& exclusive, T& inclusive, Op op, const T* initial, T* aggregate,
                             PrefixOp* prefix_op, int line) {
        CUB_EMU_CHECK_BLOCK(kThreads, "cub::BlockScan", line);
        Storage& s = this->storage();
        const bool seeded = initial != nullptr || prefix_op != nullptr;
        if constexpr (kWarpScans) {
            const int warp = tid_ / kW, lane = tid_ % kW;
            const int warp_last = (warp + 1) * kW <= kThreads ? kW - 1 : kThreads - warp * kW - 1;
            T inc = detail::warp_inclusive_scan<kW>(input, op, lane, 0xffffffffu, line);
            T exc = detail::shfl(::emu::OP_SHFL_UP, 0xffffffffu, inc, 1, kW, line);
            if (lane == warp_last) s.grid[warp] = inc;
            __syncthreads(line);
            T warp_prefix = s.grid[0], total = s.grid[0];
            for (int w = 1; w < kWarps; ++w) {
                if (w == warp) warp_prefix = total;
                total = op(total, s.grid[w]);
            }
            T seed{};
            if (initial) seed = *initial;
            if (prefix_op) {
                if (warp == 0) {
                    T p = (*prefix_op)(total);
                    p = detail::shfl(::emu::OP_SHFL_IDX, 0xffffffffu, p, 0, kW, line);
                    if (lane == 0) s.prefix = p;
                }
                __syncthreads(line);
                seed = s.prefix;
            }
            if (warp == 0) {
                exclusive = lane == 0 ? (seeded ? seed : T{}) : (seeded ? op(seed, exc) : exc);
                inclusive = seeded ? op(seed, inc) : inc;
            } else {
                T p = seeded ? op(seed, warp_prefix) : warp_prefix;
                exclusive = lane == 0 ? p : op(p, exc);
                inclusive = op(p, inc);
            }
            if (aggregate) *aggregate = total;
        } else {
            s.grid[tid_] = input;
            __syncthreads(line);
            if (tid_ < kRaking) {
                const unsigned mask = kRaking == kW ? 0xffffffffu : (1u << kRaking) - 1u;
                const int base = tid_ * kSegment;
                T partial = s.grid[base];
                for (int i = 1; i < kSegment; ++i)
                    if (base + i < kThreads) partial = op(partial, s.grid[base + i]);
                T inc = detail::warp_inclusive_scan<kW>(partial, op, tid_, mask, line);
                T exc = detail::shfl(::emu::OP_SHFL_UP, mask, inc, 1, kW, line);
                T total = detail::shfl(::emu::OP_SHFL_IDX, mask, inc, kRaking - 1, kW, line);
                T seg_prefix = exc;
                if (initial) seg_prefix = tid_ == 0 ? *initial : op(*initial, exc);
                if (prefix_op) {
                    T p = (*prefix_op)(total);
                    p = detail::shfl(::emu::OP_SHFL_IDX, mask, p, 0, kW, line);
                    seg_prefix = tid_ == 0 ? p : op(p, exc);
                }
                const bool apply = seeded || tid_ != 0;
                T acc = seg_prefix;
                for (int i = 0; i < kSegment && base + i < kThreads; ++i) {
                    T x = s.grid[base + i];
                    s.grid[base + i] = (i == 0 && !apply) ? T{} : acc;
                    acc = (i == 0 && !apply) ? x : op(acc, x);
                }
                if (tid_ == 0) s.aggregate = total;
            }
            __syncthreads(line);
            exclusive = s.grid[tid_];
            inclusive = (tid_ == 0 && !seeded) ? input : op(exclusive, input);
            if (aggregate) *aggregate = s.aggregate;
        }
    }
};
}  // namespace cub

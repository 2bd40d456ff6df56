// Shared pieces of the CPU emulator's CUB collectives (cub::WarpReduce, WarpScan, BlockReduce, BlockScan).
//
// The collectives are written on the emulator's own warp shuffles and block barriers, so they are checked
// like the user's code: a lane that does not take part, a barrier some threads skip, a reuse of TempStorage
// without __syncthreads() are reported as for hand-written code. Each public member takes the caller's line
// (`::cub::detail::emu_line`, a defaulted last argument), so every report names the user's line.
//
// Reduction and scan orders follow CUB's default algorithms (shuffle trees with offsets 1, 2, 4, ...,
// warp aggregates folded in warp order, raking scans), so float results match the GPU's where CUB's order
// is the one described; CUB is free to change it between versions (docs/emulator.md, "CUB").
#pragma once
#include <cstring>
#include <type_traits>
#include <cuda/functional>
#include <cuda/std/functional>

#define CUB_NAMESPACE_BEGIN namespace cub {
#define CUB_NAMESPACE_END }
#define CUB_NS_QUALIFIER ::cub
#ifndef CUB_VERSION
#define CUB_VERSION 300500   // the CCCL release whose API the emulator's collectives follow (3.5)
#endif
#define CUB_PTX_ARCH __CUDA_ARCH__

namespace cub {
namespace detail {
constexpr int warp_threads = 32;

// The caller's line: an aggregate, so `Sum(x, 5)` stays the (input, valid_items) overload.
struct emu_line { int v; };
#define CUB_EMU_LINE ::cub::detail::emu_line line = {__builtin_LINE()}

__forceinline__ int lane_id() { return ::emu::g_cur->lane; }
__forceinline__ int row_major_tid(int bx, int by) {
    return (int)threadIdx.x + (int)threadIdx.y * bx + (int)threadIdx.z * bx * by;
}

// A block collective sized by its template arguments is only defined for blocks of exactly that many
// threads: smaller blocks leave TempStorage slots unwritten, larger ones write past them (on the GPU:
// a silently wrong result or a shared-memory overrun). The emulator stops the launch at the user's line
// with a DeviceAssertError that says so.
#define CUB_EMU_CHECK_BLOCK(threads, what, line)                                                          \
    do {                                                                                                   \
        if ((int)(blockDim.x * blockDim.y * blockDim.z) != (threads))                                      \
            ::emu::device_assert_fail("blockDim.x * blockDim.y * blockDim.z == BLOCK_DIM_X * BLOCK_DIM_Y * " \
                                      "BLOCK_DIM_Z (" what " needs a block of exactly the threads its "    \
                                      "template arguments name)", (line));                                 \
    } while (0)

// Shuffles of any trivially copyable T: 8-byte words (the emulator's shuffle width), as CUB shuffles
// wider types word by word.
template <class T> __forceinline__ T shfl(int op, unsigned mask, const T& v, int arg, int width, int line) {
    static_assert(std::is_trivially_copyable<T>::value, "cub collectives need a trivially copyable T");
    if constexpr (sizeof(T) <= 8) {
        return ::emu::from_bits<T>(::emu::warp_op(op, mask, ::emu::to_bits(v), arg, width, line));
    } else {
        constexpr unsigned words = (sizeof(T) + 7) / 8;
        unsigned long long in[words] = {}, out[words];
        std::memcpy(in, &v, sizeof(T));
        for (unsigned i = 0; i < words; ++i) out[i] = ::emu::warp_op(op, mask, in[i], arg, width, line);
        T r;
        std::memcpy(&r, out, sizeof(T));
        return r;
    }
}

// The member mask of the logical warp (of `L` lanes) the calling lane belongs to.
template <int L> __forceinline__ unsigned logical_warp_mask() {
    if constexpr (L >= 32) return 0xffffffffu;
    else return ((1u << L) - 1u) << (L * (lane_id() / L));
}

// CUB's shuffle reduction: lane i folds lane i + offset (offset 1, 2, 4, ...) while i + offset <= last_lane;
// lane 0 ends with the reduction of lanes [0, last_lane]. `last_lane` may differ per lane (segments).
// Shuffles span the logical warp (L a power of two) or the whole warp (a block of fewer than 32 threads).
template <int L> constexpr int shfl_width() { return (L & (L - 1)) == 0 ? L : 32; }

template <int L, class T, class Op>
__forceinline__ T warp_reduce(T v, Op op, int lane, int last_lane, unsigned mask, int line) {
    for (int offset = 1; offset < L; offset *= 2) {
        T other = shfl(::emu::OP_SHFL_DOWN, mask, v, offset, shfl_width<L>(), line);
        if (lane + offset <= last_lane) v = op(v, other);
    }
    return v;
}

// CUB's shuffle scan (Kogge-Stone): inclusive prefix of the logical warp, op(earlier, later).
template <int L, class T, class Op>
__forceinline__ T warp_inclusive_scan(T v, Op op, int lane, unsigned mask, int line) {
    for (int offset = 1; offset < L; offset *= 2) {
        T other = shfl(::emu::OP_SHFL_UP, mask, v, offset, shfl_width<L>(), line);
        if (lane >= offset) v = op(other, v);
    }
    return v;
}

// Thread-local folds of ITEMS values (cub::ThreadReduce / ThreadScan order: left to right).
template <int N, class T, class Op> __forceinline__ T thread_reduce(const T (&in)[N], Op op) {
    T acc = in[0];
    for (int i = 1; i < N; ++i) acc = op(acc, in[i]);
    return acc;
}
template <int N, class T, class Op>
__forceinline__ void thread_scan_inclusive(const T (&in)[N], T (&out)[N], Op op, T prefix, bool apply_prefix) {
    T acc = apply_prefix ? op(prefix, in[0]) : in[0];
    out[0] = acc;
    for (int i = 1; i < N; ++i) out[i] = acc = op(acc, in[i]);
}
template <int N, class T, class Op>
__forceinline__ void thread_scan_exclusive(const T (&in)[N], T (&out)[N], Op op, T prefix, bool apply_prefix) {
    T acc = prefix;
    for (int i = 0; i < N; ++i) {
        T x = in[i];
        out[i] = acc;
        acc = (i == 0 && !apply_prefix) ? x : op(acc, x);
    }
}

// Storage for T without constructing it (T need not be default-constructible), as cub::Uninitialized.
template <class T> struct alignas(T) uninitialized {
    unsigned char bytes[sizeof(T)];
    __forceinline__ T& get() { return *reinterpret_cast<T*>(bytes); }
};

// What BlockReduce and BlockScan share: the TempStorage type, the caller's storage (or a block-private
// __shared__ one when constructed without it) and the row-major thread rank over the template's block shape.
// `Self` (the collective's own type) gives each collective type its own private storage, as on the GPU.
template <class Self, class Storage, int BlockDimX, int BlockDimY> class block_collective {
public:
    struct TempStorage : uninitialized<Storage> {};

protected:
    __forceinline__ block_collective() : temp_(private_storage()), tid_(row_major_tid(BlockDimX, BlockDimY)) {}
    __forceinline__ explicit block_collective(TempStorage& temp_storage)
        : temp_(temp_storage), tid_(row_major_tid(BlockDimX, BlockDimY)) {}
    __forceinline__ Storage& storage() { return temp_.get(); }
    TempStorage& temp_;
    int tid_;

private:
    static __forceinline__ TempStorage& private_storage() {
        __shared__ TempStorage storage;
        return storage;
    }
};
}  // namespace detail

struct NullType {};
}  // namespace cub

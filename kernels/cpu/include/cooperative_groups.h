// cooperative_groups subset for the CPU emulator: thread_block and
// thread_block_tile<N> (N = 1..32, power of two) built on the warp runtime.
#pragma once
namespace cooperative_groups {

class thread_block {
public:
    __forceinline__ void sync(int line = __builtin_LINE()) const { __syncthreads(line); }
    __forceinline__ unsigned thread_rank() const {
        return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    }
    __forceinline__ unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    __forceinline__ unsigned num_threads() const { return size(); }
    __forceinline__ dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    __forceinline__ dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    __forceinline__ dim3 group_dim() const { return blockDim; }
    __forceinline__ dim3 dim_threads() const { return blockDim; }
};
__forceinline__ thread_block this_thread_block() { return thread_block(); }
__forceinline__ void sync(const thread_block& g, int line = __builtin_LINE()) { g.sync(line); }

template <unsigned N>
class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two <= 32");
    __forceinline__ unsigned linear() const { return ::emu::g_cur->linear; }
public:
    static constexpr unsigned num_threads() { return N; }
    static constexpr unsigned size() { return N; }
    __forceinline__ unsigned thread_rank() const { return linear() & (N - 1); }
    __forceinline__ unsigned meta_group_rank() const { return linear() / N; }
    __forceinline__ unsigned meta_group_size() const {
        return (blockDim.x * blockDim.y * blockDim.z + N - 1) / N;
    }
    // Lanes of the calling thread's warp that belong to this tile.
    __forceinline__ unsigned mask() const {
        unsigned base = (linear() & 31) & ~(N - 1);
        return (N == 32 ? 0xffffffffu : ((1u << N) - 1u)) << base;
    }
    __forceinline__ void sync(int line = __builtin_LINE()) const { __syncwarp(mask(), line); }
    template <class T> __forceinline__ T shfl(T v, int src_rank, int line = __builtin_LINE()) const {
        return __shfl_sync(mask(), v, src_rank, N, line);
    }
    template <class T> __forceinline__ T shfl_down(T v, unsigned delta, int line = __builtin_LINE()) const {
        return __shfl_down_sync(mask(), v, delta, N, line);
    }
    template <class T> __forceinline__ T shfl_up(T v, unsigned delta, int line = __builtin_LINE()) const {
        return __shfl_up_sync(mask(), v, delta, N, line);
    }
    template <class T> __forceinline__ T shfl_xor(T v, unsigned lane_mask, int line = __builtin_LINE()) const {
        return __shfl_xor_sync(mask(), v, (int)lane_mask, N, line);
    }
    __forceinline__ int any(int p, int line = __builtin_LINE()) const { return __any_sync(mask(), p, line); }
    __forceinline__ int all(int p, int line = __builtin_LINE()) const { return __all_sync(mask(), p, line); }
    // Bits are tile ranks, like CUDA.
    __forceinline__ unsigned ballot(int p, int line = __builtin_LINE()) const {
        unsigned base = (linear() & 31) & ~(N - 1);
        return __ballot_sync(mask(), p, line) >> base;
    }
};
template <unsigned N> __forceinline__ void sync(const thread_block_tile<N>& g, int line = __builtin_LINE()) { g.sync(line); }

template <unsigned N, class Parent>
__forceinline__ thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>(); }


// grid_group: ranks and sizes only (blocks run one after another here, so grid.sync() cannot work).
class grid_group {
public:
    __forceinline__ unsigned long long num_threads() const {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
    }
    __forceinline__ unsigned long long size() const { return num_threads(); }
    __forceinline__ unsigned long long block_rank() const {
        return ((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    }
    __forceinline__ unsigned long long thread_rank() const {
        return block_rank() * (blockDim.x * blockDim.y * blockDim.z) + this_thread_block().thread_rank();
    }
    __forceinline__ unsigned long long num_blocks() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    __forceinline__ dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    __forceinline__ dim3 dim_blocks() const { return gridDim; }
    __forceinline__ dim3 group_dim() const { return gridDim; }
    __forceinline__ bool is_valid() const { return true; }
    // Not supported by the emulator (blocks never run concurrently): reported as a device trap.
    [[noreturn]] __forceinline__ void sync(int line = __builtin_LINE()) const { ::emu::device_trap(line); }
};
__forceinline__ grid_group this_grid() { return grid_group(); }

namespace emu_cg {
__forceinline__ unsigned nth_set_bit(unsigned mask, unsigned n) {
    for (unsigned i = 0; i < n; ++i) mask &= mask - 1;
    return mask ? (unsigned)__builtin_ctz(mask) : 0u;
}
}  // namespace emu_cg

// coalesced_group: the lanes of the warp converged at coalesced_threads() (ranks among them).
class coalesced_group {
    unsigned m_;
    __forceinline__ unsigned lane() const { return ::emu::g_cur->linear & 31; }
public:
    explicit coalesced_group(unsigned m) : m_(m) {}
    __forceinline__ unsigned size() const { return __builtin_popcount(m_); }
    __forceinline__ unsigned num_threads() const { return size(); }
    __forceinline__ unsigned thread_rank() const { return __builtin_popcount(m_ & ((1u << lane()) - 1u)); }
    __forceinline__ unsigned meta_group_rank() const { return 0; }
    __forceinline__ unsigned meta_group_size() const { return 1; }
    __forceinline__ void sync(int line = __builtin_LINE()) const { __syncwarp(m_, line); }
    template <class T> __forceinline__ T shfl(T v, unsigned rank, int line = __builtin_LINE()) const {
        return __shfl_sync(m_, v, (int)emu_cg::nth_set_bit(m_, rank), 32, line);
    }
    __forceinline__ int any(int p, int line = __builtin_LINE()) const { return __any_sync(m_, p, line); }
    __forceinline__ int all(int p, int line = __builtin_LINE()) const { return __all_sync(m_, p, line); }
    __forceinline__ unsigned ballot(int p, int line = __builtin_LINE()) const {
        unsigned b = __ballot_sync(m_, p, line), r = 0, k = 0;   // bits in group ranks
        for (unsigned m = m_; m; m &= m - 1, ++k) if ((b >> __builtin_ctz(m)) & 1) r |= 1u << k;
        return r;
    }
};
__forceinline__ coalesced_group coalesced_threads(int line = __builtin_LINE()) {
    return coalesced_group(::emu::activemask(line));
}
__forceinline__ void sync(const coalesced_group& g, int line = __builtin_LINE()) { g.sync(line); }

// thread_group: the type-erased group (a whole block, or a tiled_partition(parent, n) with n <= 32).
class thread_group {
    unsigned n_;   // 0: the whole block
    __forceinline__ unsigned linear() const { return ::emu::g_cur->linear; }
public:
    thread_group(const thread_block&) : n_(0) {}
    template <unsigned N> thread_group(const thread_block_tile<N>&) : n_(N) {}
    explicit thread_group(unsigned n) : n_(n) {}
    __forceinline__ unsigned size() const { return n_ ? n_ : this_thread_block().size(); }
    __forceinline__ unsigned num_threads() const { return size(); }
    __forceinline__ unsigned thread_rank() const { return n_ ? linear() % n_ : linear(); }
    __forceinline__ void sync(int line = __builtin_LINE()) const {
        if (!n_) { __syncthreads(line); return; }
        unsigned base = (linear() & 31) & ~(n_ - 1);
        __syncwarp((n_ == 32 ? 0xffffffffu : ((1u << n_) - 1u)) << base, line);
    }
};
__forceinline__ thread_group tiled_partition(const thread_group& parent, unsigned n) {
    if (n == 0 || n > 32 || (n & (n - 1))) ::emu::device_trap(__builtin_LINE());   // emulator: n = 1..32, power of 2
    (void)parent;
    return thread_group(n);
}
__forceinline__ void sync(const thread_group& g, int line = __builtin_LINE()) { g.sync(line); }

template <class T> struct plus { __forceinline__ T operator()(const T& a, const T& b) const { return a + b; } };
template <class T> struct less { __forceinline__ T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T> struct greater { __forceinline__ T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __forceinline__ T operator()(const T& a, const T& b) const { return a & b; } };
template <class T> struct bit_or { __forceinline__ T operator()(const T& a, const T& b) const { return a | b; } };
template <class T> struct bit_xor { __forceinline__ T operator()(const T& a, const T& b) const { return a ^ b; } };

}  // namespace cooperative_groups

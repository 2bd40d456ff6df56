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

template <class T> struct plus { __forceinline__ T operator()(const T& a, const T& b) const { return a + b; } };
template <class T> struct less { __forceinline__ T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T> struct greater { __forceinline__ T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __forceinline__ T operator()(const T& a, const T& b) const { return a & b; } };
template <class T> struct bit_or { __forceinline__ T operator()(const T& a, const T& b) const { return a | b; } };
template <class T> struct bit_xor { __forceinline__ T operator()(const T& a, const T& b) const { return a ^ b; } };

}  // namespace cooperative_groups

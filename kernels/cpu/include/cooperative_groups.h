// cooperative_groups for the CPU emulator: thread_block, thread_block_tile<N> (N = 1..32 on the warp runtime;
// N = 64..1024 on a tile barrier and per-thread mailboxes, as real CG does with block_tile_memory),
// coalesced_group (coalesced_threads, binary_partition, labeled_partition), the type-erased thread_group,
// and grid_group (grid.sync() of a one-block grid).
#pragma once
namespace cooperative_groups {

namespace emu_cg {
// Values of any trivially copyable type cross lanes as 8-byte words (the runtime's warp ops carry 8 bytes).
template <class T, class F> __forceinline__ T by_words(const T& v, F&& move_word) {
    static_assert(std::is_trivially_copyable<T>::value, "cooperative groups exchange trivially copyable types");
    constexpr unsigned W = (sizeof(T) + 7) / 8;
    unsigned long long in[W] = {}, out[W];
    std::memcpy(in, &v, sizeof(T));
    for (unsigned k = 0; k < W; ++k) out[k] = move_word(in[k]);
    T r;
    std::memcpy(&r, out, sizeof(T));
    return r;
}
__forceinline__ unsigned nth_set_bit(unsigned mask, unsigned n) {
    for (unsigned i = 0; i < n; ++i) mask &= mask - 1;
    return mask ? (unsigned)__builtin_ctz(mask) : 0u;
}
__forceinline__ unsigned linear() { return (unsigned)::emu::g_cur->linear; }
}  // namespace emu_cg

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

// Scratch real CG needs for tiles wider than a warp (CUDA 11: <TileCommunicationSize, MaxBlockSize>,
// CUDA 12: <MaxBlockSize>); the emulator's tiles use the runtime's mailboxes instead.
template <unsigned... Args> struct block_tile_memory { unsigned char unused; };
template <unsigned... Args> __forceinline__ thread_block this_thread_block(block_tile_memory<Args...>&) {
    return thread_block();
}

template <unsigned N, class Parent = void>
class thread_block_tile {
    static_assert(N >= 1 && N <= 1024 && (N & (N - 1)) == 0, "tile size must be a power of two <= 1024");
    static constexpr bool kWarp = N <= 32;
    __forceinline__ static unsigned linear() { return emu_cg::linear(); }
    __forceinline__ static unsigned base() { return linear() & ~(N - 1); }   // first thread of this tile
    // one value of the member at tile rank `src` (src outside the tile: the caller's own value, like shfl)
    template <class T> __forceinline__ static T from_rank(const T& v, long src, int line) {
        if (src < 0 || src >= (long)N) src = (long)thread_rank_s();
        T out;
        unsigned char tmp[64];
        if (sizeof(T) <= 64) {
            std::memcpy(tmp, &v, sizeof(T));
            ::emu::tile_collective((int)base(), (int)N, line, tmp, sizeof(T), (int)src, &out);
        } else {
            unsigned char* o = reinterpret_cast<unsigned char*>(&out);
            const unsigned char* i = reinterpret_cast<const unsigned char*>(&v);
            for (size_t off = 0; off < sizeof(T); off += 64) {
                size_t n = sizeof(T) - off < 64 ? sizeof(T) - off : 64;
                ::emu::tile_collective((int)base(), (int)N, line, i + off, (unsigned)n, (int)src, o + off);
            }
        }
        return out;
    }
    __forceinline__ static unsigned thread_rank_s() { return linear() & (N - 1); }
public:
    static constexpr unsigned num_threads() { return N; }
    static constexpr unsigned size() { return N; }
    __forceinline__ unsigned thread_rank() const { return thread_rank_s(); }
    __forceinline__ unsigned meta_group_rank() const { return linear() / N; }
    __forceinline__ unsigned meta_group_size() const {
        return (blockDim.x * blockDim.y * blockDim.z + N - 1) / N;
    }
    // Lanes of the calling thread's warp that belong to this tile (tiles up to a warp).
    __forceinline__ unsigned mask() const {
        unsigned b = (linear() & 31) & ~((kWarp ? N : 32) - 1);
        return (N >= 32 ? 0xffffffffu : ((1u << N) - 1u)) << (N >= 32 ? 0 : b);
    }
    __forceinline__ void sync(int line = __builtin_LINE()) const {
        if (kWarp) __syncwarp(mask(), line);
        else ::emu::group_barrier((int)base(), (int)N, ::emu::BAR_SYNC, 1, line);
    }
    template <class T> __forceinline__ T shfl(const T& v, int src_rank, int line = __builtin_LINE()) const {
        if (kWarp) return emu_cg::by_words(v, [&](unsigned long long w) { return __shfl_sync(mask(), w, src_rank, (int)N, line); });
        return from_rank(v, src_rank & (int)(N - 1), line);
    }
    template <class T> __forceinline__ T shfl_down(const T& v, unsigned delta, int line = __builtin_LINE()) const {
        if (kWarp) return emu_cg::by_words(v, [&](unsigned long long w) { return __shfl_down_sync(mask(), w, delta, (int)N, line); });
        return from_rank(v, (long)thread_rank() + delta, line);
    }
    template <class T> __forceinline__ T shfl_up(const T& v, unsigned delta, int line = __builtin_LINE()) const {
        if (kWarp) return emu_cg::by_words(v, [&](unsigned long long w) { return __shfl_up_sync(mask(), w, delta, (int)N, line); });
        return from_rank(v, (long)thread_rank() - (long)delta, line);
    }
    template <class T> __forceinline__ T shfl_xor(const T& v, unsigned lane_mask, int line = __builtin_LINE()) const {
        if (kWarp) return emu_cg::by_words(v, [&](unsigned long long w) { return __shfl_xor_sync(mask(), w, (int)lane_mask, (int)N, line); });
        return from_rank(v, (long)(thread_rank() ^ lane_mask), line);
    }
    __forceinline__ int any(int p, int line = __builtin_LINE()) const {
        if (kWarp) return __any_sync(mask(), p, line);
        int all[N]; int mine = p != 0;
        ::emu::tile_collective((int)base(), (int)N, line, &mine, sizeof mine, -1, all);
        for (unsigned r = 0; r < N; ++r) if (all[r]) return 1;
        return 0;
    }
    __forceinline__ int all(int p, int line = __builtin_LINE()) const {
        if (kWarp) return __all_sync(mask(), p, line);
        int all[N]; int mine = p != 0;
        ::emu::tile_collective((int)base(), (int)N, line, &mine, sizeof mine, -1, all);
        for (unsigned r = 0; r < N; ++r) if (!all[r]) return 0;
        return 1;
    }
    // Bits are tile ranks, like CUDA (tiles up to a warp).
    __forceinline__ unsigned ballot(int p, int line = __builtin_LINE()) const {
        static_assert(N <= 32, "ballot of a tile wider than a warp");
        unsigned b = (linear() & 31) & ~(N - 1);
        return __ballot_sync(mask(), p, line) >> b;
    }
    template <class T> __forceinline__ unsigned match_any(const T& v, int line = __builtin_LINE()) const {
        static_assert(N <= 32, "match_any of a tile wider than a warp");
        unsigned b = (linear() & 31) & ~(N - 1);
        return __match_any_sync(mask(), v, line) >> b;
    }
    // cg::reduce of a wide tile: every member's value in rank order (emu_cg internals)
    template <class T> __forceinline__ void gather(const T& v, T* out, int line) const {
        static_assert(sizeof(T) <= 64, "cg::reduce of a tile wider than a warp on a type wider than 64 bytes");
        ::emu::tile_collective((int)base(), (int)N, line, &v, sizeof(T), -1, out);
    }
};
template <unsigned N, class P> __forceinline__ void sync(const thread_block_tile<N, P>& g, int line = __builtin_LINE()) {
    g.sync(line);
}

template <unsigned N, class Parent>
__forceinline__ thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>(); }


// grid_group: blocks run one after another here, so grid.sync() works only when the grid is one block.
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
    __forceinline__ void sync(int line = __builtin_LINE()) const {
        if (num_blocks() == 1) { __syncthreads(line); return; }
        ::emu::unsupported("cg::grid_group::sync() across blocks (the emulator runs a grid's blocks one after "
                           "another; a cooperative launch of one block works)", line);
    }
};
__forceinline__ grid_group this_grid() { return grid_group(); }
__forceinline__ void sync(const grid_group& g, int line = __builtin_LINE()) { g.sync(line); }

// coalesced_group: a set of lanes of one warp (converged at coalesced_threads(), or a partition); ranks are
// positions in the mask.
class coalesced_group {
    unsigned m_;
    __forceinline__ unsigned lane() const { return emu_cg::linear() & 31; }
public:
    explicit coalesced_group(unsigned m) : m_(m) {}
    __forceinline__ unsigned size() const { return __builtin_popcount(m_); }
    __forceinline__ unsigned num_threads() const { return size(); }
    __forceinline__ unsigned thread_rank() const { return __builtin_popcount(m_ & ((1u << lane()) - 1u)); }
    __forceinline__ unsigned meta_group_rank() const { return 0; }
    __forceinline__ unsigned meta_group_size() const { return 1; }
    __forceinline__ unsigned get_mask() const { return m_; }
    __forceinline__ void sync(int line = __builtin_LINE()) const { __syncwarp(m_, line); }
    template <class T> __forceinline__ T shfl(const T& v, unsigned rank, int line = __builtin_LINE()) const {
        int src = (int)emu_cg::nth_set_bit(m_, rank);
        return emu_cg::by_words(v, [&](unsigned long long w) { return __shfl_sync(m_, w, src, 32, line); });
    }
    template <class T> __forceinline__ T shfl_down(const T& v, unsigned delta, int line = __builtin_LINE()) const {
        unsigned r = thread_rank() + delta;
        return shfl(v, r < size() ? r : thread_rank(), line);
    }
    template <class T> __forceinline__ T shfl_up(const T& v, unsigned delta, int line = __builtin_LINE()) const {
        unsigned r = thread_rank();
        return shfl(v, r >= delta ? r - delta : r, line);
    }
    __forceinline__ int any(int p, int line = __builtin_LINE()) const { return __any_sync(m_, p, line); }
    __forceinline__ int all(int p, int line = __builtin_LINE()) const { return __all_sync(m_, p, line); }
    __forceinline__ unsigned ballot(int p, int line = __builtin_LINE()) const {
        unsigned b = __ballot_sync(m_, p, line), r = 0, k = 0;   // bits in group ranks
        for (unsigned m = m_; m; m &= m - 1, ++k) if ((b >> __builtin_ctz(m)) & 1) r |= 1u << k;
        return r;
    }
    template <class T> __forceinline__ unsigned match_any(const T& v, int line = __builtin_LINE()) const {
        return __match_any_sync(m_, v, line);
    }
};
__forceinline__ coalesced_group coalesced_threads(int line = __builtin_LINE()) {
    return coalesced_group(::emu::activemask(line));
}
__forceinline__ void sync(const coalesced_group& g, int line = __builtin_LINE()) { g.sync(line); }

namespace emu_cg {
template <unsigned N, class P> __forceinline__ unsigned lanes_of(const thread_block_tile<N, P>& g) {
    static_assert(N <= 32, "partitions of a tile wider than a warp");
    return g.mask();
}
__forceinline__ unsigned lanes_of(const coalesced_group& g) { return g.get_mask(); }
}  // namespace emu_cg

// The lanes of `parent` whose pred is equal to the caller's.
template <class Group> __forceinline__ coalesced_group binary_partition(const Group& parent, bool pred,
                                                                        int line = __builtin_LINE()) {
    unsigned m = emu_cg::lanes_of(parent);
    unsigned yes = __ballot_sync(m, pred, line);
    return coalesced_group(pred ? yes : (m & ~yes));
}
// The lanes of `parent` whose label is equal to the caller's.
template <class Group, class Label> __forceinline__ coalesced_group labeled_partition(const Group& parent, Label label,
                                                                                      int line = __builtin_LINE()) {
    return coalesced_group(__match_any_sync(emu_cg::lanes_of(parent), label, line));
}

// thread_group: the type-erased group (a whole block, or a tiled_partition(parent, n) with n <= 32).
class thread_group {
    unsigned n_;   // 0: the whole block
    __forceinline__ unsigned linear() const { return emu_cg::linear(); }
public:
    thread_group(const thread_block&) : n_(0) {}
    template <unsigned N, class P> thread_group(const thread_block_tile<N, P>&) : n_(N) {}
    explicit thread_group(unsigned n) : n_(n) {}
    __forceinline__ unsigned size() const { return n_ ? n_ : this_thread_block().size(); }
    __forceinline__ unsigned num_threads() const { return size(); }
    __forceinline__ unsigned thread_rank() const { return n_ ? linear() % n_ : linear(); }
    __forceinline__ void sync(int line = __builtin_LINE()) const {
        if (!n_) { __syncthreads(line); return; }
        if (n_ > 32) { ::emu::group_barrier((int)(linear() & ~(n_ - 1)), (int)n_, ::emu::BAR_SYNC, 1, line); return; }
        unsigned base = (linear() & 31) & ~(n_ - 1);
        __syncwarp((n_ == 32 ? 0xffffffffu : ((1u << n_) - 1u)) << base, line);
    }
};
__forceinline__ thread_group tiled_partition(const thread_group& parent, unsigned n, int line = __builtin_LINE()) {
    if (n == 0 || n > 32 || (n & (n - 1)))   // CUDA: a power of two up to 32
        ::emu::unsupported("tiled_partition(parent, n) with n not a power of two up to 32", line);
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

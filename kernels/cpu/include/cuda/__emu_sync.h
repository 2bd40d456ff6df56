// Shared pieces of the emulator's <cuda/barrier> and <cuda/pipeline>: thread scopes, aligned_size_t, and the
// blocking wait every synchronisation object uses (the waiting thread stops until the word it watches changes,
// so a wait that can never end is a DeadlockError, not a timeout).
#pragma once
namespace cuda {
enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };

template <std::size_t Alignment> struct aligned_size_t {
    static constexpr std::size_t align = Alignment;
    std::size_t value;
    constexpr explicit aligned_size_t(std::size_t size) : value(size) {}
    constexpr operator std::size_t() const { return value; }
};

namespace __emu {
inline std::size_t bytes(std::size_t n) { return n; }
template <std::size_t A> inline std::size_t bytes(aligned_size_t<A> n) { return n.value; }
// An asynchronous copy lands when it is waited for (emu::async_copy): the latest the GPU may complete it, so a
// program that reads the destination before its wait sees the old data, as it can on the GPU.
inline void copy(void* dst, const void* src, std::size_t n) { ::emu::async_copy(dst, src, n); }
// A group's copy, one collective: each member issues one contiguous 16-byte-aligned share.
template <class Group> inline void group_copy(const Group& g, void* dst, const void* src, std::size_t n) {
    std::size_t share = ((n + g.size() - 1) / g.size() + 15) & ~std::size_t(15);
    std::size_t lo = share * g.thread_rank(), hi = lo + share < n ? lo + share : n;
    if (lo < hi)
        ::emu::async_copy(static_cast<unsigned char*>(dst) + lo, static_cast<const unsigned char*>(src) + lo, hi - lo);
}
// Synchronisation state is updated outside the instrumented code: racecheck does not see it as data, and
// lockstep does not park on it.
#define EMU_SYNC_FN __attribute__((noinline, no_sanitize_thread))
}  // namespace __emu
}  // namespace cuda

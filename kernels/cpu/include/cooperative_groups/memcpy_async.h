// cg::memcpy_async / cg::wait / cg::wait_prior for the CPU emulator: the copy is done synchronously,
// split across the group's threads (it is a collective); wait() is the group's barrier, which is what
// makes the data visible to the whole group on the GPU too.
#pragma once
#include "../cooperative_groups.h"
#include "../cuda/__emu_sync.h"
namespace cooperative_groups {
template <class Group>
__forceinline__ void memcpy_async(const Group& g, void* dst, const void* src, size_t bytes) {
    unsigned r = g.thread_rank(), n = g.size();
    unsigned char* d = static_cast<unsigned char*>(dst);
    const unsigned char* s = static_cast<const unsigned char*>(src);
    for (size_t i = r; i < bytes; i += n) d[i] = s[i];
}
template <class Group, class T>
__forceinline__ void memcpy_async(const Group& g, T* dst, size_t dst_count, const T* src, size_t src_count) {
    memcpy_async(g, (void*)dst, (const void*)src, (dst_count < src_count ? dst_count : src_count) * sizeof(T));
}
template <class Group, std::size_t A>
__forceinline__ void memcpy_async(const Group& g, void* dst, const void* src, ::cuda::aligned_size_t<A> bytes) {
    memcpy_async(g, dst, src, (size_t)bytes.value);
}
template <class Group> __forceinline__ void wait(const Group& g, int line = __builtin_LINE()) { g.sync(line); }
template <unsigned N, class Group> __forceinline__ void wait_prior(const Group& g, int line = __builtin_LINE()) { g.sync(line); }
}  // namespace cooperative_groups

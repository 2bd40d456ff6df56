// cg::memcpy_async / cg::wait / cg::wait_prior for the CPU emulator: a collective copy split across the group's
// threads, one stage per call; it lands at the wait that covers it (each member lands its part, then the group's
// barrier makes it visible to all), as late as the GPU may complete it.
#pragma once
#include "../cooperative_groups.h"
#include "../cuda/__emu_sync.h"
namespace cooperative_groups {
template <class Group>
__forceinline__ void memcpy_async(const Group& g, void* dst, const void* src, size_t bytes) {
    ::cuda::__emu::group_copy(g, dst, src, bytes);
    ::emu::async_commit();
}
template <class Group, class T>
__forceinline__ void memcpy_async(const Group& g, T* dst, size_t dst_count, const T* src, size_t src_count) {
    memcpy_async(g, (void*)dst, (const void*)src, (dst_count < src_count ? dst_count : src_count) * sizeof(T));
}
template <class Group, std::size_t A>
__forceinline__ void memcpy_async(const Group& g, void* dst, const void* src, ::cuda::aligned_size_t<A> bytes) {
    memcpy_async(g, dst, src, (size_t)bytes.value);
}
template <class Group> __forceinline__ void wait(const Group& g, int line = __builtin_LINE()) {
    ::emu::async_wait_prior(0);
    g.sync(line);
}
template <unsigned N, class Group> __forceinline__ void wait_prior(const Group& g, int line = __builtin_LINE()) {
    ::emu::async_wait_prior(N);
    g.sync(line);
}
}  // namespace cooperative_groups

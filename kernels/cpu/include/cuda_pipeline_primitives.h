// The pipeline primitives API: __pipeline_memcpy_async copies land at the __pipeline_wait_prior that covers them
// (stages close at __pipeline_commit), as late as the GPU may complete them.
#pragma once
__forceinline__ void __pipeline_memcpy_async(void* dst, const void* src, std::size_t size, std::size_t zfill = 0) {
    static const unsigned char zeros[16] = {};
    unsigned char* d = static_cast<unsigned char*>(dst);
    ::emu::async_copy(d, src, size - zfill);
    if (zfill) ::emu::async_copy(d + size - zfill, zeros, zfill);
}
__forceinline__ void __pipeline_commit() { ::emu::async_commit(); }
__forceinline__ void __pipeline_wait_prior(std::size_t prior) { ::emu::async_wait_prior((unsigned)prior); }

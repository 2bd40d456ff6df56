// <cuda_pipeline.h>: the pipeline primitives API (__pipeline_memcpy_async / __pipeline_commit / __pipeline_wait_prior): copies are
// done when issued, so commits and waits have nothing left to wait for.
#pragma once
__forceinline__ void __pipeline_memcpy_async(void* dst, const void* src, std::size_t size, std::size_t zfill = 0) {
    unsigned char* d = static_cast<unsigned char*>(dst);
    const unsigned char* s = static_cast<const unsigned char*>(src);
    for (std::size_t i = 0; i < size - zfill; ++i) d[i] = s[i];
    for (std::size_t i = size - zfill; i < size; ++i) d[i] = 0;
}
__forceinline__ void __pipeline_commit() {}
__forceinline__ void __pipeline_wait_prior(std::size_t) {}

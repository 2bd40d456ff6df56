// CUDA cuda_fp8.h subset for the CPU emulator: __nv_fp8_e4m3 / __nv_fp8_e5m2 (+x2, x4) and the
// __nv_cvt_* conversions, round-to-nearest-even, with __NV_SATFINITE / __NV_NOSAT like CUDA.
#pragma once
#include "cuda_fp16.h"
#include "cuda_bf16.h"
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace emu {
// e4m3: bias 7, no inf, NaN = S.1111.111, max 448. e5m2: bias 15, IEEE-like inf/NaN, max 57344.
inline __nv_fp8_storage_t float_to_fp8(double x, __nv_saturation_t sat, __nv_fp8_interpretation_t k) {
    const bool e4 = k != __NV_E5M2;
    const int M = e4 ? 3 : 2, B = e4 ? 7 : 15;
    const double maxf = e4 ? 448.0 : 57344.0;
    const unsigned char nan = e4 ? 0x7F : 0x7F, inf = e4 ? 0x7F : 0x7C, maxbits = e4 ? 0x7E : 0x7B;
    if (x != x) return nan;
    unsigned char s = std::signbit(x) ? 0x80 : 0;
    double a = std::fabs(x);
    if (std::isinf(a)) return sat == __NV_SATFINITE ? (unsigned char)(s | maxbits) : (unsigned char)(s | inf);
    int e; std::frexp(a, &e); e -= 1;                       // a = 1.f * 2^e
    if (e < 1 - B) e = 1 - B;                              // subnormal range: fixed quantum
    double q = std::ldexp(std::nearbyint(std::ldexp(a, M - e)), e - M);
    if (q > maxf) {
        if (sat == __NV_SATFINITE) return (unsigned char)(s | maxbits);
        return (unsigned char)(s | (e4 ? nan : inf));
    }
    if (q == 0) return s;
    int e2; std::frexp(q, &e2); e2 -= 1;
    unsigned bits;
    if (e2 < 1 - B) bits = (unsigned)std::ldexp(q, B - 1 + M);                        // subnormal
    else bits = ((unsigned)(e2 + B) << M) | ((unsigned)std::ldexp(q, M - e2) & ((1u << M) - 1));
    return (unsigned char)(s | bits);
}
inline float fp8_to_float(__nv_fp8_storage_t v, __nv_fp8_interpretation_t k) {
    const bool e4 = k != __NV_E5M2;
    const int M = e4 ? 3 : 2, B = e4 ? 7 : 15;
    float sign = (v & 0x80) ? -1.0f : 1.0f;
    unsigned ex = (v & 0x7F) >> M, man = v & ((1u << M) - 1);
    if (e4 && (v & 0x7F) == 0x7F) return NAN;
    if (!e4 && ex == 0x1F) return man ? NAN : sign * INFINITY;
    if (ex == 0) return sign * std::ldexp((float)man, 1 - B - M);
    return sign * std::ldexp((float)((1u << M) | man), (int)ex - B - M);
}
}  // namespace emu

__forceinline__ __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return ::emu::float_to_fp8(x, s, k);
}
__forceinline__ __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return ::emu::float_to_fp8(x, s, k);
}
__forceinline__ __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return (__nv_fp8x2_storage_t)(::emu::float_to_fp8(x.x, s, k) | (::emu::float_to_fp8(x.y, s, k) << 8));
}
__forceinline__ __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return ::emu::float_to_fp8(float(x), s, k);
}
__forceinline__ __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return ::emu::float_to_fp8(float(x), s, k);
}
__forceinline__ __half __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k) {
    return __half(::emu::fp8_to_float(x, k));
}
__forceinline__ __half2 __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k) {
    return __half2(__half(::emu::fp8_to_float(x & 0xff, k)), __half(::emu::fp8_to_float(x >> 8, k)));
}

#define EMU_FP8_TYPE(NAME, KIND)                                                                    \
struct __attribute__((aligned(1))) NAME {                                                          \
    __nv_fp8_storage_t __x;                                                                         \
    NAME() = default;                                                                               \
    explicit NAME(float f) : __x(::emu::float_to_fp8(f, __NV_SATFINITE, KIND)) {}                  \
    explicit NAME(double f) : __x(::emu::float_to_fp8(f, __NV_SATFINITE, KIND)) {}                 \
    explicit NAME(__half h) : __x(::emu::float_to_fp8(float(h), __NV_SATFINITE, KIND)) {}          \
    explicit NAME(__nv_bfloat16 h) : __x(::emu::float_to_fp8(float(h), __NV_SATFINITE, KIND)) {}   \
    explicit NAME(int i) : __x(::emu::float_to_fp8((double)i, __NV_SATFINITE, KIND)) {}            \
    explicit operator float() const { return ::emu::fp8_to_float(__x, KIND); }                     \
    explicit operator double() const { return ::emu::fp8_to_float(__x, KIND); }                    \
    explicit operator __half() const { return __half(::emu::fp8_to_float(__x, KIND)); }            \
    explicit operator __nv_bfloat16() const { return __nv_bfloat16(::emu::fp8_to_float(__x, KIND)); } \
};                                                                                                  \
struct __attribute__((aligned(2))) NAME##_x2_emu {                                                  \
    __nv_fp8x2_storage_t __x;                                                                       \
    NAME##_x2_emu() = default;                                                                      \
    explicit NAME##_x2_emu(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, KIND)) {}   \
    explicit operator float2() const {                                                              \
        return make_float2(::emu::fp8_to_float(__x & 0xff, KIND), ::emu::fp8_to_float(__x >> 8, KIND)); } \
};                                                                                                  \
struct __attribute__((aligned(4))) NAME##_x4_emu {                                                  \
    __nv_fp8x4_storage_t __x;                                                                       \
    NAME##_x4_emu() = default;                                                                      \
    explicit NAME##_x4_emu(float4 f) : __x((unsigned)::emu::float_to_fp8(f.x, __NV_SATFINITE, KIND)  \
        | ((unsigned)::emu::float_to_fp8(f.y, __NV_SATFINITE, KIND) << 8)                          \
        | ((unsigned)::emu::float_to_fp8(f.z, __NV_SATFINITE, KIND) << 16)                         \
        | ((unsigned)::emu::float_to_fp8(f.w, __NV_SATFINITE, KIND) << 24)) {}                     \
    explicit operator float4() const {                                                              \
        return make_float4(::emu::fp8_to_float(__x & 0xff, KIND), ::emu::fp8_to_float((__x >> 8) & 0xff, KIND), \
                           ::emu::fp8_to_float((__x >> 16) & 0xff, KIND), ::emu::fp8_to_float(__x >> 24, KIND)); } \
};
EMU_FP8_TYPE(__nv_fp8_e4m3, __NV_E4M3)
EMU_FP8_TYPE(__nv_fp8_e5m2, __NV_E5M2)
#undef EMU_FP8_TYPE
typedef __nv_fp8_e4m3_x2_emu __nv_fp8x2_e4m3;
typedef __nv_fp8_e4m3_x4_emu __nv_fp8x4_e4m3;
typedef __nv_fp8_e5m2_x2_emu __nv_fp8x2_e5m2;
typedef __nv_fp8_e5m2_x4_emu __nv_fp8x4_e5m2;
static_assert(sizeof(__nv_fp8_e4m3) == 1 && sizeof(__nv_fp8x4_e4m3) == 4, "fp8 layout");

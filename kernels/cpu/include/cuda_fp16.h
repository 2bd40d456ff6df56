// CUDA cuda_fp16.h subset for the CPU emulator.
#pragma once
#include "emu_half.h"
EMU_F16_TYPE(__half, float_to_half_bits, half_bits_to_float)
EMU_F16X2_TYPE(__half2, __half)
typedef __half half;
typedef __half2 half2;
static_assert(sizeof(__half) == 2 && sizeof(__half2) == 4, "half layout");
__forceinline__ __half __float2half(float f) { return __half(f); }
__forceinline__ __half __float2half_rn(float f) { return __half(f); }
__forceinline__ __half __double2half(double d) { return __half((float)d); }
__forceinline__ float __half2float(__half h) { return float(h); }
__forceinline__ __half __int2half_rn(int i) { return __half((float)i); }
__forceinline__ int __half2int_rn(__half h) { return __float2int_rn(float(h)); }
__forceinline__ int __half2int_rz(__half h) { return __float2int_rz(float(h)); }
__forceinline__ __half __ushort_as_half(unsigned short b) { return __half::from_bits(b); }
__forceinline__ unsigned short __half_as_ushort(__half h) { return h.__x; }
__forceinline__ __half __short_as_half(short b) { return __half::from_bits((unsigned short)b); }
__forceinline__ short __half_as_short(__half h) { return (short)h.__x; }
__forceinline__ __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
__forceinline__ __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
__forceinline__ __half2 __float22half2_rn(float2 v) { return __half2(__half(v.x), __half(v.y)); }
__forceinline__ float2 __half22float2(__half2 v) { return make_float2(float(v.x), float(v.y)); }
__forceinline__ float __low2float(__half2 v) { return float(v.x); }
__forceinline__ float __high2float(__half2 v) { return float(v.y); }
__forceinline__ __half2 __half2half2(__half h) { return __half2(h, h); }
__forceinline__ __half2 make_half2(__half a, __half b) { return __half2(a, b); }
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
__forceinline__ __half atomicAdd(__half* p, __half v) {
    EMU_ATOMIC_BEGIN __half o = *p; *p = __hadd(o, v); ::emu::note_float_atomic(float(o), float(v), float(*p)); EMU_ATOMIC_END return o; }
__forceinline__ __half2 atomicAdd(__half2* p, __half2 v) {
    EMU_ATOMIC_BEGIN __half2 o = *p; *p = __hadd2(o, v); ::emu::note_float_atomic(float(o.x) + float(o.y), float(v.x) + float(v.y), 0); EMU_ATOMIC_END return o; }
// CUDA's names for the pair helpers (__half2)
__forceinline__ __half __low2half(__half2 a) { return a.x; }
__forceinline__ __half __high2half(__half2 a) { return a.y; }
__forceinline__ __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
__forceinline__ __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
__forceinline__ __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
__forceinline__ __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
__forceinline__ __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }

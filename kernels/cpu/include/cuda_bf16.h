// CUDA cuda_bf16.h subset for the CPU emulator.
#pragma once
#include "emu_half.h"
EMU_F16_TYPE(__nv_bfloat16, float_to_bf16_bits, bf16_bits_to_float)
EMU_F16X2_TYPE(__nv_bfloat162, __nv_bfloat16)
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
static_assert(sizeof(__nv_bfloat16) == 2 && sizeof(__nv_bfloat162) == 4, "bf16 layout");
__forceinline__ __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
__forceinline__ __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
__forceinline__ __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16((float)d); }
__forceinline__ float __bfloat162float(__nv_bfloat16 h) { return float(h); }
__forceinline__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16::from_bits(b); }
__forceinline__ unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
__forceinline__ __nv_bfloat162 __float2bfloat162_rn(float f) { return __nv_bfloat162(__nv_bfloat16(f), __nv_bfloat16(f)); }
__forceinline__ __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b)); }
__forceinline__ float2 __bfloat1622float2(__nv_bfloat162 v) { return make_float2(float(v.x), float(v.y)); }
__forceinline__ __nv_bfloat162 __float22bfloat162_rn(float2 v) { return __nv_bfloat162(__nv_bfloat16(v.x), __nv_bfloat16(v.y)); }
__forceinline__ float __low2float(__nv_bfloat162 v) { return float(v.x); }
__forceinline__ float __high2float(__nv_bfloat162 v) { return float(v.y); }
__forceinline__ __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 h) { return __nv_bfloat162(h, h); }
__forceinline__ __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
    EMU_ATOMIC_BEGIN __nv_bfloat16 o = *p; *p = __hadd(o, v); ::emu::note_float_atomic(float(o), float(v), float(*p)); EMU_ATOMIC_END return o; }
__forceinline__ __nv_bfloat162 atomicAdd(__nv_bfloat162* p, __nv_bfloat162 v) {
    EMU_ATOMIC_BEGIN __nv_bfloat162 o = *p; *p = __hadd2(o, v); ::emu::note_float_atomic(float(o.x) + float(o.y), float(v.x) + float(v.y), 0); EMU_ATOMIC_END return o; }
// CUDA's names for the pair helpers (__nv_bfloat162)
__forceinline__ __nv_bfloat16 __low2bfloat16(__nv_bfloat162 a) { return a.x; }
__forceinline__ __nv_bfloat16 __high2bfloat16(__nv_bfloat162 a) { return a.y; }
__forceinline__ __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
__forceinline__ __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
__forceinline__ __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
__forceinline__ __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
__forceinline__ __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }

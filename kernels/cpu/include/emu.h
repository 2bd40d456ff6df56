// Prelude of every kernel compiled by the CPU emulator (g++ -include emu.h).
// Gives device code the CUDA names it uses (NVRTC-compatible subset) with
// CUDA semantics; warp/barrier primitives call the fiber runtime.
#pragma once
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900   // the build passes the architecture NVRTC compiles for (kernels/cpu/build.py)
#endif
#define __CUDA_EMU__ 1
#define __NVCC__ 1

#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <ctime>
#include <cfloat>
#include <type_traits>
#include <utility>
#include <tuple>
#include <limits>

#include "emu_rt.h"

// ---- qualifiers -----------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __inline_hint__ inline
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#define __managed__
// Blocks run one after another, so block-shared variables can be static storage.
#define __shared__ static
#ifdef EMU_RACECHECK
#define EMU_ATOMIC_BEGIN ::emu::g_in_atomic = 1;
#define EMU_ATOMIC_END ::emu::g_in_atomic = 0;
#else
#define EMU_ATOMIC_BEGIN
#define EMU_ATOMIC_END
#endif
#define __grid_constant__
#ifndef __restrict__
#define __restrict__ __restrict
#endif

// ---- built-in variables ---------------------------------------------------
// ---- vector types (CUDA sizes and alignments) ------------------------------
#define EMU_VEC1(T, N, A) struct __attribute__((aligned(A))) N##1 { T x; }; \
    __forceinline__ N##1 make_##N##1(T x) { return N##1{x}; }
#define EMU_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; }; \
    __forceinline__ N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define EMU_VEC3(T, N) struct N##3 { T x, y, z; }; \
    __forceinline__ N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define EMU_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
    __forceinline__ N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define EMU_VECS(T, N, A1, A2, A4) EMU_VEC1(T, N, A1) EMU_VEC2(T, N, A2) EMU_VEC3(T, N) EMU_VEC4(T, N, A4)
EMU_VECS(signed char, char, 1, 2, 4)
EMU_VECS(unsigned char, uchar, 1, 2, 4)
EMU_VECS(short, short, 2, 4, 8)
EMU_VECS(unsigned short, ushort, 2, 4, 8)
EMU_VECS(int, int, 4, 8, 16)
EMU_VECS(unsigned int, uint, 4, 8, 16)
EMU_VECS(long long, longlong, 8, 16, 16)
EMU_VECS(unsigned long long, ulonglong, 8, 16, 16)
EMU_VECS(float, float, 4, 8, 16)
EMU_VECS(double, double, 8, 16, 16)
#undef EMU_VECS
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 layout");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3 layout");

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
#define threadIdx (reinterpret_cast<const uint3&>(::emu::g_cur->idx))
#define blockIdx (reinterpret_cast<const uint3&>(::emu::g_blockIdx))
#define blockDim (reinterpret_cast<const dim3&>(::emu::g_blockDim))
#define gridDim (reinterpret_cast<const dim3&>(::emu::g_gridDim))
constexpr int warpSize = 32;

namespace emu { extern unsigned char dyn_smem[] __attribute__((visibility("hidden"))); }

typedef struct CUstream_st* cudaStream_t;
typedef int cudaError_t;

// ---- integer / float intrinsics -------------------------------------------
template <class To, class From> __forceinline__ To emu_bit_cast(const From& f) {
    static_assert(sizeof(To) == sizeof(From), "bit cast size");
    To t; std::memcpy(&t, &f, sizeof t); return t;
}
__forceinline__ int __float_as_int(float x) { return emu_bit_cast<int>(x); }
__forceinline__ unsigned __float_as_uint(float x) { return emu_bit_cast<unsigned>(x); }
__forceinline__ float __int_as_float(int x) { return emu_bit_cast<float>(x); }
__forceinline__ float __uint_as_float(unsigned x) { return emu_bit_cast<float>(x); }
__forceinline__ long long __double_as_longlong(double x) { return emu_bit_cast<long long>(x); }
__forceinline__ double __longlong_as_double(long long x) { return emu_bit_cast<double>(x); }
__forceinline__ int __popc(unsigned x) { return __builtin_popcount(x); }
__forceinline__ int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__forceinline__ int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
__forceinline__ int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
__forceinline__ int __ffs(int x) { return __builtin_ffs(x); }
__forceinline__ int __ffsll(long long x) { return __builtin_ffsll(x); }
__forceinline__ unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
__forceinline__ int __mul24(int a, int b) { return (int)(((long long)(a << 8 >> 8)) * (b << 8 >> 8)); }
__forceinline__ unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
__forceinline__ int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
__forceinline__ unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
__forceinline__ int __dp4a(int a, int b, int c) {
    for (int k = 0; k < 4; ++k) c += (int)(signed char)(a >> (8 * k)) * (int)(signed char)(b >> (8 * k));
    return c;
}
__forceinline__ unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (int k = 0; k < 4; ++k) c += ((a >> (8 * k)) & 0xffu) * ((b >> (8 * k)) & 0xffu);
    return c;
}
__forceinline__ int __dp2a_lo(int a, int b, int c) {
    return c + (int)(short)a * (int)(signed char)b + (int)(short)(a >> 16) * (int)(signed char)(b >> 8);
}
__forceinline__ unsigned __sad(int x, int y, unsigned z) { return z + (unsigned)(x > y ? x - y : y - x); }
__forceinline__ unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
__forceinline__ unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x; unsigned r = 0;
    for (int k = 0; k < 4; ++k) r |= (unsigned)((v >> (8 * ((s >> (4 * k)) & 7))) & 0xffu) << (8 * k);
    return r;
}
__forceinline__ int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
__forceinline__ int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
__forceinline__ unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b) >> 1); }
__forceinline__ unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b + 1) >> 1); }
__forceinline__ unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)((v << (s & 31)) >> 32);
}
__forceinline__ unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)((v << (s > 32 ? 32 : s)) >> 32);
}
__forceinline__ unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)(v >> (s > 32 ? 32 : s));
}
__forceinline__ unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)(v >> (s & 31));
}

// ---- math -------------------------------------------------------------------
// Fast intrinsics use the accurate libm functions (documented precision gap).
__forceinline__ float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
__forceinline__ double rsqrt(double x) { return 1.0 / std::sqrt(x); }
__forceinline__ float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
__forceinline__ float __expf(float x) { return std::exp(x); }
__forceinline__ float __exp10f(float x) { return std::pow(10.0f, x); }
__forceinline__ float __logf(float x) { return std::log(x); }
__forceinline__ float __log2f(float x) { return std::log2(x); }
__forceinline__ float __log10f(float x) { return std::log10(x); }
__forceinline__ float __powf(float a, float b) { return std::pow(a, b); }
__forceinline__ float __sinf(float x) { return std::sin(x); }
__forceinline__ float __cosf(float x) { return std::cos(x); }
__forceinline__ float __tanf(float x) { return std::tan(x); }
__forceinline__ void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
__forceinline__ float __fdividef(float a, float b) { return a / b; }
__forceinline__ float __fdiv_rn(float a, float b) { return a / b; }
__forceinline__ float __fadd_rn(float a, float b) { return a + b; }
__forceinline__ float __fsub_rn(float a, float b) { return a - b; }
__forceinline__ float __fmul_rn(float a, float b) { return a * b; }
__forceinline__ float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
__forceinline__ double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
__forceinline__ double __dadd_rn(double a, double b) { return a + b; }
__forceinline__ double __dmul_rn(double a, double b) { return a * b; }
__forceinline__ float __frcp_rn(float x) { return 1.0f / x; }
__forceinline__ double __drcp_rn(double x) { return 1.0 / x; }
__forceinline__ float __fsqrt_rn(float x) { return std::sqrt(x); }
__forceinline__ float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
__forceinline__ float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0
__forceinline__ float exp10f(float x) { return std::pow(10.0f, x); }
__forceinline__ float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678118654752f); }
__forceinline__ double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }
// GPU conversions saturate (cvt.*i.sat semantics): out of range -> the type's min/max, NaN -> 0.
template <class I> __forceinline__ I emu_sat_int(double v) {
    if (v != v) return 0;
    if (v <= (double)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (v >= (double)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)v;
}
__forceinline__ int __float2int_rn(float x) { return emu_sat_int<int>(std::nearbyint((double)x)); }
__forceinline__ int __float2int_rz(float x) { return emu_sat_int<int>(std::trunc((double)x)); }
__forceinline__ int __float2int_rd(float x) { return emu_sat_int<int>(std::floor((double)x)); }
__forceinline__ int __float2int_ru(float x) { return emu_sat_int<int>(std::ceil((double)x)); }
__forceinline__ unsigned __float2uint_rn(float x) { return emu_sat_int<unsigned>(std::nearbyint((double)x)); }
__forceinline__ unsigned __float2uint_rz(float x) { return emu_sat_int<unsigned>(std::trunc((double)x)); }
__forceinline__ unsigned __float2uint_rd(float x) { return emu_sat_int<unsigned>(std::floor((double)x)); }
__forceinline__ unsigned __float2uint_ru(float x) { return emu_sat_int<unsigned>(std::ceil((double)x)); }
// 64-bit signed conversions give 0x8000000000000000 for NaN on the GPU (measured: __float2ll_rn on an H200).
__forceinline__ long long emu_sat_ll(double v) { return v != v ? std::numeric_limits<long long>::min() : emu_sat_int<long long>(v); }
__forceinline__ long long __float2ll_rn(float x) { return emu_sat_ll(std::nearbyint((double)x)); }
__forceinline__ long long __float2ll_rz(float x) { return emu_sat_ll(std::trunc((double)x)); }
__forceinline__ long long __double2ll_rn(double x) { return emu_sat_ll(std::nearbyint(x)); }
__forceinline__ int __double2int_rz(double x) { return emu_sat_int<int>(std::trunc(x)); }
__forceinline__ unsigned __double2uint_rn(double x) { return emu_sat_int<unsigned>(std::nearbyint(x)); }
__forceinline__ float __int2float_rn(int x) { return (float)x; }
__forceinline__ float __uint2float_rn(unsigned x) { return (float)x; }
__forceinline__ double __int2double_rn(int x) { return (double)x; }
__forceinline__ float __double2float_rn(double x) { return (float)x; }
__forceinline__ int __double2int_rn(double x) { return emu_sat_int<int>(std::nearbyint(x)); }
// erfinv by Newton iterations on erf (double precision, enough for float results).
inline double emu_erfinv_d(double y) {
    if (y <= -1.0) return y == -1.0 ? -HUGE_VAL : NAN;
    if (y >= 1.0) return y == 1.0 ? HUGE_VAL : NAN;
    double w = -std::log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) { w -= 2.5; x = 2.81022636e-08; x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w; x = 0.00021858087 + x * w; x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w; x = 0.246640727 + x * w; x = 1.50140941 + x * w; }
    else { w = std::sqrt(w) - 3.0; x = -0.000200214257; x = 0.000100950558 + x * w; x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w; x = 0.00573950773 + x * w; x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w; x = 1.00167406 + x * w; x = 2.83297682 + x * w; }
    x *= y;
    for (int i = 0; i < 3; ++i) x -= (std::erf(x) - y) / (1.1283791670955126 * std::exp(-x * x));
    return x;
}
__forceinline__ float sinpif(float x) { return (float)std::sin(3.14159265358979323846 * (double)x); }
__forceinline__ float cospif(float x) { return (float)std::cos(3.14159265358979323846 * (double)x); }
__forceinline__ void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
__forceinline__ double sinpi(double x) { return std::sin(3.14159265358979323846 * x); }
__forceinline__ double cospi(double x) { return std::cos(3.14159265358979323846 * x); }
__forceinline__ void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
__forceinline__ float norm3df(float a, float b, float c) { return (float)std::sqrt((double)a * a + (double)b * b + (double)c * c); }
__forceinline__ float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
__forceinline__ float norm4df(float a, float b, float c, float d) {
    return (float)std::sqrt((double)a * a + (double)b * b + (double)c * c + (double)d * d); }
__forceinline__ float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
__forceinline__ float rhypotf(float a, float b) { return 1.0f / std::hypot(a, b); }
__forceinline__ double rhypot(double a, double b) { return 1.0 / std::hypot(a, b); }
__forceinline__ float normf(int n, const float* a) { double s = 0; for (int i = 0; i < n; ++i) s += (double)a[i] * a[i]; return (float)std::sqrt(s); }
__forceinline__ float rnormf(int n, const float* a) { return 1.0f / normf(n, a); }
__forceinline__ float erfcinvf(float y) { return emu_erfinv_d(1.0 - (double)y); }
__forceinline__ float erfinvf(float y) { return emu_erfinv_d((double)y); }
__forceinline__ double erfinv(double y) { return emu_erfinv_d(y); }
__forceinline__ float normcdfinvf(float p) { return -1.41421356237309505f * erfcinvf(2.0f * p); }
__forceinline__ double rcbrt(double x) { return 1.0 / std::cbrt(x); }
using std::isnan;
using std::isinf;
using std::isfinite;
using std::signbit;

// CUDA's global min/max overloads.
#define EMU_MINMAX(T) \
    __forceinline__ T min(T a, T b) { return a < b ? a : b; } \
    __forceinline__ T max(T a, T b) { return a > b ? a : b; }
EMU_MINMAX(int) EMU_MINMAX(unsigned int) EMU_MINMAX(long) EMU_MINMAX(unsigned long)
EMU_MINMAX(long long) EMU_MINMAX(unsigned long long) EMU_MINMAX(short) EMU_MINMAX(unsigned short)
#undef EMU_MINMAX
__forceinline__ float min(float a, float b) { return std::fmin(a, b); }
__forceinline__ float max(float a, float b) { return std::fmax(a, b); }
__forceinline__ double min(double a, double b) { return std::fmin(a, b); }
__forceinline__ double max(double a, double b) { return std::fmax(a, b); }
__forceinline__ float min(float a, double b) { return (float)std::fmin((double)a, b); }
__forceinline__ double max(double a, float b) { return std::fmax(a, (double)b); }
__forceinline__ float max(float a, double b) { return (float)std::fmax((double)a, b); }
__forceinline__ unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
__forceinline__ unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
__forceinline__ unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
__forceinline__ unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }

// ---- memory access hints (plain accesses: one address space) --------------
template <class T> __forceinline__ T __ldg(const T* p) { return *p; }
template <class T> __forceinline__ T __ldcg(const T* p) { return *p; }
template <class T> __forceinline__ T __ldca(const T* p) { return *p; }
template <class T> __forceinline__ T __ldcs(const T* p) { return *p; }
template <class T> __forceinline__ T __ldlu(const T* p) { return *p; }
template <class T> __forceinline__ T __ldcv(const T* p) { return *p; }
template <class T> __forceinline__ void __stcs(T* p, T v) { *p = v; }
template <class T> __forceinline__ void __stcg(T* p, T v) { *p = v; }
template <class T> __forceinline__ void __stwb(T* p, T v) { *p = v; }
template <class T> __forceinline__ void __stwt(T* p, T v) { *p = v; }

// ---- atomics (fibers never switch inside a plain read-modify-write) --------
#define EMU_ATOMIC_INT(T) \
    __forceinline__ T atomicAdd(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = o + v; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicSub(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = o - v; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicExch(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = v; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicMin(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = v < o ? v : o; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicMax(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = v > o ? v : o; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicAnd(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = o & v; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicOr(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = o | v; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicXor(T* p, T v) { EMU_ATOMIC_BEGIN T o = *p; *p = o ^ v; EMU_ATOMIC_END return o; } \
    __forceinline__ T atomicCAS(T* p, T cmp, T v) { EMU_ATOMIC_BEGIN T o = *p; if (o == cmp) *p = v; EMU_ATOMIC_END return o; }
EMU_ATOMIC_INT(int)
EMU_ATOMIC_INT(unsigned int)
EMU_ATOMIC_INT(unsigned long long)
EMU_ATOMIC_INT(long long)
#undef EMU_ATOMIC_INT
__forceinline__ unsigned short atomicCAS(unsigned short* p, unsigned short cmp, unsigned short v) {
    EMU_ATOMIC_BEGIN unsigned short o = *p; if (o == cmp) *p = v; EMU_ATOMIC_END return o; }
__forceinline__ float atomicAdd(float* p, float v) { EMU_ATOMIC_BEGIN float o = *p; *p = o + v; ::emu::note_float_atomic(o, v, o + v); EMU_ATOMIC_END return o; }
__forceinline__ double atomicAdd(double* p, double v) { EMU_ATOMIC_BEGIN double o = *p; *p = o + v; ::emu::note_float_atomic(o, v, o + v); EMU_ATOMIC_END return o; }
__forceinline__ float atomicExch(float* p, float v) { EMU_ATOMIC_BEGIN float o = *p; *p = v; EMU_ATOMIC_END return o; }
__forceinline__ unsigned atomicInc(unsigned* p, unsigned v) { EMU_ATOMIC_BEGIN unsigned o = *p; *p = (o >= v) ? 0 : o + 1; EMU_ATOMIC_END return o; }
__forceinline__ unsigned atomicDec(unsigned* p, unsigned v) { EMU_ATOMIC_BEGIN unsigned o = *p; *p = (o == 0 || o > v) ? v : o - 1; EMU_ATOMIC_END return o; }
#define EMU_ATOMIC_SCOPED(name) \
    template <class... A> __forceinline__ auto name##_block(A... a) { return name(a...); } \
    template <class... A> __forceinline__ auto name##_system(A... a) { return name(a...); }
EMU_ATOMIC_SCOPED(atomicAdd) EMU_ATOMIC_SCOPED(atomicSub) EMU_ATOMIC_SCOPED(atomicExch)
EMU_ATOMIC_SCOPED(atomicMin) EMU_ATOMIC_SCOPED(atomicMax) EMU_ATOMIC_SCOPED(atomicCAS)
#undef EMU_ATOMIC_SCOPED

__forceinline__ void __threadfence() {}
__forceinline__ void __threadfence_block() {}
__forceinline__ void __threadfence_system() {}
__forceinline__ unsigned long long emu_clock() {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    unsigned long long v; asm volatile("mrs %0, cntvct_el0" : "=r"(v)); return v;
#endif
}
__forceinline__ long long clock64() { return (long long)emu_clock(); }
// A spin-wait's back-off: lets the other threads of the block run (fibers are never preempted).
__forceinline__ void __nanosleep(unsigned) { ::emu::yield_now(); }

// ---- barriers ---------------------------------------------------------------
__forceinline__ void __syncthreads(int line = __builtin_LINE()) { ::emu::barrier(::emu::BAR_SYNC, 1, line); }
__forceinline__ int __syncthreads_count(int p, int line = __builtin_LINE()) { return ::emu::barrier(::emu::BAR_COUNT, p, line); }
__forceinline__ int __syncthreads_and(int p, int line = __builtin_LINE()) { return ::emu::barrier(::emu::BAR_AND, p, line); }
__forceinline__ int __syncthreads_or(int p, int line = __builtin_LINE()) { return ::emu::barrier(::emu::BAR_OR, p, line); }

// ---- warp operations --------------------------------------------------------
namespace emu {
template <class T> __forceinline__ unsigned long long to_bits(const T& v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "warp shuffle of a type wider than 8 bytes");
    unsigned long long b = 0; std::memcpy(&b, &v, sizeof v); return b;
}
template <class T> __forceinline__ T from_bits(unsigned long long b) { T v; std::memcpy(&v, &b, sizeof v); return v; }
}  // namespace emu
__forceinline__ void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
    ::emu::warp_op(::emu::OP_SYNC, mask, 0, 0, 32, line);
}
template <class T> __forceinline__ T __shfl_sync(unsigned mask, T v, int src, int width = warpSize, int line = __builtin_LINE()) {
    return ::emu::from_bits<T>(::emu::warp_op(::emu::OP_SHFL_IDX, mask, ::emu::to_bits(v), src, width, line));
}
template <class T> __forceinline__ T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize, int line = __builtin_LINE()) {
    return ::emu::from_bits<T>(::emu::warp_op(::emu::OP_SHFL_UP, mask, ::emu::to_bits(v), (int)delta, width, line));
}
template <class T> __forceinline__ T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize, int line = __builtin_LINE()) {
    return ::emu::from_bits<T>(::emu::warp_op(::emu::OP_SHFL_DOWN, mask, ::emu::to_bits(v), (int)delta, width, line));
}
template <class T> __forceinline__ T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize, int line = __builtin_LINE()) {
    return ::emu::from_bits<T>(::emu::warp_op(::emu::OP_SHFL_XOR, mask, ::emu::to_bits(v), lane_mask, width, line));
}
__forceinline__ unsigned __ballot_sync(unsigned mask, int p, int line = __builtin_LINE()) {
    return (unsigned)::emu::warp_op(::emu::OP_BALLOT, mask, p != 0, 0, 32, line);
}
__forceinline__ int __any_sync(unsigned mask, int p, int line = __builtin_LINE()) {
    return (int)::emu::warp_op(::emu::OP_ANY, mask, p != 0, 0, 32, line);
}
__forceinline__ int __all_sync(unsigned mask, int p, int line = __builtin_LINE()) {
    return (int)::emu::warp_op(::emu::OP_ALL, mask, p != 0, 0, 32, line);
}
#define EMU_WARP_REDUCE(name, T, OP) \
    __forceinline__ T name(unsigned mask, T v, int line = __builtin_LINE()) { \
        return (T)::emu::warp_op(::emu::OP, mask, (unsigned)v, 0, 32, line); }
EMU_WARP_REDUCE(__reduce_add_sync, unsigned, OP_RED_ADD)
EMU_WARP_REDUCE(__reduce_add_sync, int, OP_RED_ADD)
EMU_WARP_REDUCE(__reduce_min_sync, unsigned, OP_RED_MIN_U)
EMU_WARP_REDUCE(__reduce_min_sync, int, OP_RED_MIN_S)
EMU_WARP_REDUCE(__reduce_max_sync, unsigned, OP_RED_MAX_U)
EMU_WARP_REDUCE(__reduce_max_sync, int, OP_RED_MAX_S)
EMU_WARP_REDUCE(__reduce_and_sync, unsigned, OP_RED_AND)
EMU_WARP_REDUCE(__reduce_or_sync, unsigned, OP_RED_OR)
EMU_WARP_REDUCE(__reduce_xor_sync, unsigned, OP_RED_XOR)
#undef EMU_WARP_REDUCE
template <class T> __forceinline__ unsigned __match_any_sync(unsigned mask, T v, int line = __builtin_LINE()) {
    return (unsigned)::emu::warp_op(::emu::OP_MATCH_ANY, mask, ::emu::to_bits(v), 0, 32, line);
}
template <class T> __forceinline__ unsigned __match_all_sync(unsigned mask, T v, int* pred, int line = __builtin_LINE()) {
    unsigned r = (unsigned)::emu::warp_op(::emu::OP_MATCH_ALL, mask, ::emu::to_bits(v), 0, 32, line);
    *pred = r != 0;
    return r;
}
__forceinline__ unsigned __activemask(int line = __builtin_LINE()) { return ::emu::activemask(line); }
__forceinline__ unsigned __lanemask_lt() { return (1u << (::emu::g_cur->lane)) - 1u; }

// ---- assert / trap / printf -----------------------------------------------
#include "emu_assert.h"
[[noreturn]] __forceinline__ void __trap(int line = __builtin_LINE()) { ::emu::device_trap(line); }
[[noreturn]] __forceinline__ void __brkpt(int line = __builtin_LINE()) { ::emu::device_trap(line); }
#define printf(...) ::emu::device_printf(__VA_ARGS__)

// ---- launch glue used by the generated entry stubs ---------------------------
namespace emu {
template <class... P, std::size_t... I>
int launch_impl(void (*fn)(P...), const emu_launch_cfg* cfg, void** args, emu_result* res, std::index_sequence<I...>) {
    // Kernel parameters are copied once per launch from CUDA-style kernelParams;
    // each thread then receives its own copies through the by-value call.
    struct Ctx { void (*fn)(P...); std::tuple<std::decay_t<P>...> a; };
    Ctx ctx{fn, std::tuple<std::decay_t<P>...>(*static_cast<std::decay_t<P>*>(args[I])...)};
    return emu_run_grid(cfg, res, [](void* c) { Ctx* x = static_cast<Ctx*>(c); std::apply(x->fn, x->a); }, &ctx);
}
template <class... P>
int launch(void (*fn)(P...), const emu_launch_cfg* cfg, void** args, emu_result* res) {
    return launch_impl(fn, cfg, args, res, std::index_sequence_for<P...>{});
}
template <class... P> constexpr int arity(void (*)(P...)) { return (int)sizeof...(P); }
}  // namespace emu

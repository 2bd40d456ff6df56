// __half and __nv_bfloat16 with GPU rounding (round-to-nearest-even).
// Arithmetic is done in float and rounded once: for +, -, *, / this equals the
// correctly rounded 16-bit result (float has > 2*11+2 significand bits).
#pragma once
namespace emu {
__forceinline__ unsigned short float_to_half_bits(float f) {
    unsigned x = __float_as_uint(f);
    unsigned sign = (x >> 16) & 0x8000u;
    unsigned ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (unsigned short)(sign | (ax > 0x7f800000u ? 0x7fffu : 0x7c00u));
    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);   // rounds to >= 65520: inf
    if (ax < 0x38800000u) {                                          // subnormal half or zero
        if (ax < 0x33000000u) return (unsigned short)sign;           // < 2^-25: rounds to 0
        unsigned e = ax >> 23;
        unsigned m = (ax & 0x7fffffu) | 0x800000u;
        unsigned shift = 126 - e;                                    // 14 + (113 - e) - 1
        unsigned h = m >> (shift);
        unsigned rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (unsigned short)(sign | h);
    }
    unsigned h = ((ax - 0x38000000u) >> 13);
    unsigned rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (unsigned short)(sign | h);
}
__forceinline__ float half_bits_to_float(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16;
    unsigned e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    if (e == 0x1f) return __uint_as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return __uint_as_float(sign);
        float v = (float)m * 5.9604644775390625e-08f;  // m * 2^-24
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}
__forceinline__ unsigned short float_to_bf16_bits(float f) {
    unsigned x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);   // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return (unsigned short)(x >> 16);
}
__forceinline__ float bf16_bits_to_float(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
// double -> float with round-to-odd: a following float -> half/bf16 rounding
// is then a single correct rounding of the double (used by the fused __hfma).
__forceinline__ float double_to_float_odd(double r) {
    float f = (float)r;
    if ((double)f == r || std::isnan(r) || std::isinf(f)) return f;
    unsigned bits = __float_as_uint(f);
    if (std::fabs((double)f) > std::fabs(r)) bits -= 1;   // toward zero (same sign, magnitude - 1 ulp)
    return __uint_as_float(bits | 1u);
}
}  // namespace emu

#define EMU_F16_TYPE(T, TO_BITS, TO_FLOAT)                                                        \
struct T {                                                                                        \
    unsigned short __x;                                                                           \
    T() = default;                                                                                \
    __forceinline__ T(float f) : __x(::emu::TO_BITS(f)) {}                                        \
    __forceinline__ T(double f) : __x(::emu::TO_BITS((float)f)) {}                                \
    __forceinline__ T(int i) : __x(::emu::TO_BITS((float)i)) {}                                   \
    __forceinline__ T(unsigned i) : __x(::emu::TO_BITS((float)i)) {}                              \
    __forceinline__ T(long long i) : __x(::emu::TO_BITS((float)i)) {}                             \
    __forceinline__ operator float() const { return ::emu::TO_FLOAT(__x); }                      \
    __forceinline__ T& operator+=(const T& o) { return *this = T(float(*this) + float(o)); }     \
    __forceinline__ T& operator-=(const T& o) { return *this = T(float(*this) - float(o)); }     \
    __forceinline__ T& operator*=(const T& o) { return *this = T(float(*this) * float(o)); }     \
    __forceinline__ T& operator/=(const T& o) { return *this = T(float(*this) / float(o)); }     \
    static __forceinline__ T from_bits(unsigned short b) { T t; t.__x = b; return t; }            \
};                                                                                                \
__forceinline__ T operator+(const T& a, const T& b) { return T(float(a) + float(b)); }            \
__forceinline__ T operator-(const T& a, const T& b) { return T(float(a) - float(b)); }            \
__forceinline__ T operator*(const T& a, const T& b) { return T(float(a) * float(b)); }            \
__forceinline__ T operator/(const T& a, const T& b) { return T(float(a) / float(b)); }            \
__forceinline__ T operator-(const T& a) { return T::from_bits((unsigned short)(a.__x ^ 0x8000u)); } \
__forceinline__ T operator+(const T& a) { return a; }                                             \
__forceinline__ bool operator==(const T& a, const T& b) { return float(a) == float(b); }          \
__forceinline__ bool operator!=(const T& a, const T& b) { return float(a) != float(b); }          \
__forceinline__ bool operator<(const T& a, const T& b) { return float(a) < float(b); }            \
__forceinline__ bool operator>(const T& a, const T& b) { return float(a) > float(b); }            \
__forceinline__ bool operator<=(const T& a, const T& b) { return float(a) <= float(b); }          \
__forceinline__ bool operator>=(const T& a, const T& b) { return float(a) >= float(b); }          \
__forceinline__ T __hadd(T a, T b) { return a + b; }                                              \
__forceinline__ T __hsub(T a, T b) { return a - b; }                                              \
__forceinline__ T __hmul(T a, T b) { return a * b; }                                              \
__forceinline__ T __hdiv(T a, T b) { return a / b; }                                              \
__forceinline__ T __hneg(T a) { return -a; }                                                      \
__forceinline__ T __habs(T a) { return T::from_bits((unsigned short)(a.__x & 0x7fffu)); }         \
__forceinline__ T __hfma(T a, T b, T c) { return T(::emu::double_to_float_odd((double)float(a) * float(b) + float(c))); } \
__forceinline__ T __hmax(T a, T b) { return T(std::fmax(float(a), float(b))); }                  \
__forceinline__ T __hmin(T a, T b) { return T(std::fmin(float(a), float(b))); }                  \
__forceinline__ bool __heq(T a, T b) { return a == b; }                                           \
__forceinline__ bool __hne(T a, T b) { return a != b; }                                           \
__forceinline__ bool __hlt(T a, T b) { return a < b; }                                            \
__forceinline__ bool __hle(T a, T b) { return a <= b; }                                           \
__forceinline__ bool __hgt(T a, T b) { return a > b; }                                            \
__forceinline__ bool __hge(T a, T b) { return a >= b; }                                           \
__forceinline__ bool __hisnan(T a) { return std::isnan(float(a)); }                               \
__forceinline__ int __hisinf(T a) { float f = float(a); return std::isinf(f) ? (f < 0 ? -1 : 1) : 0; } \
__forceinline__ T hexp(T a) { return T(std::exp(float(a))); }                                     \
__forceinline__ T hexp2(T a) { return T(std::exp2(float(a))); }                                   \
__forceinline__ T hlog(T a) { return T(std::log(float(a))); }                                     \
__forceinline__ T hlog2(T a) { return T(std::log2(float(a))); }                                   \
__forceinline__ T hsqrt(T a) { return T(std::sqrt(float(a))); }                                   \
__forceinline__ T hrsqrt(T a) { return T(1.0f / std::sqrt(float(a))); }                           \
__forceinline__ T hrcp(T a) { return T(1.0f / float(a)); }                                        \
__forceinline__ T hsin(T a) { return T(std::sin(float(a))); }                                     \
__forceinline__ T hcos(T a) { return T(std::cos(float(a))); }                                     \
__forceinline__ T htanh(T a) { return T(std::tanh(float(a))); }                                   \
__forceinline__ T hfloor(T a) { return T(std::floor(float(a))); }                                 \
__forceinline__ T hceil(T a) { return T(std::ceil(float(a))); }                                   \
__forceinline__ T htrunc(T a) { return T(std::trunc(float(a))); }                                 \
__forceinline__ T hrint(T a) { return T(std::nearbyint(float(a))); }

#define EMU_F16X2_TYPE(T2, T)                                                                    \
struct __attribute__((aligned(4))) T2 {                                                           \
    T x, y;                                                                                       \
    T2() = default;                                                                               \
    __forceinline__ T2(T a, T b) : x(a), y(b) {}                                                  \
};                                                                                                \
__forceinline__ T2 operator+(const T2& a, const T2& b) { return T2(a.x + b.x, a.y + b.y); }       \
__forceinline__ T2 operator-(const T2& a, const T2& b) { return T2(a.x - b.x, a.y - b.y); }       \
__forceinline__ T2 operator*(const T2& a, const T2& b) { return T2(a.x * b.x, a.y * b.y); }       \
__forceinline__ T2 operator/(const T2& a, const T2& b) { return T2(a.x / b.x, a.y / b.y); }       \
__forceinline__ T2 __hadd2(T2 a, T2 b) { return a + b; }                                          \
__forceinline__ T2 __hsub2(T2 a, T2 b) { return a - b; }                                          \
__forceinline__ T2 __hmul2(T2 a, T2 b) { return a * b; }                                          \
__forceinline__ T2 __h2div(T2 a, T2 b) { return a / b; }                                          \
__forceinline__ T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
__forceinline__ T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }         \
__forceinline__ T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }         \
__forceinline__ T2 __hneg2(T2 a) { return T2(-a.x, -a.y); }                                       \
__forceinline__ T2 h2exp(T2 a) { return T2(hexp(a.x), hexp(a.y)); }                               \
__forceinline__ T2 h2sqrt(T2 a) { return T2(hsqrt(a.x), hsqrt(a.y)); }                            \
__forceinline__ T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                        \
__forceinline__ T2 h2log(T2 a) { return T2(hlog(a.x), hlog(a.y)); }                               \
__forceinline__ T2 h2exp2(T2 a) { return T2(hexp2(a.x), hexp2(a.y)); }                            \
__forceinline__ T2 h2log2(T2 a) { return T2(hlog2(a.x), hlog2(a.y)); }                            \
__forceinline__ T2 h2rcp(T2 a) { return T2(hrcp(a.x), hrcp(a.y)); }                               \
__forceinline__ T2 h2rsqrt(T2 a) { return T2(hrsqrt(a.x), hrsqrt(a.y)); }                         \
__forceinline__ T2 emu_cmp2(T2 a, T2 b, int op) {                                                 \
    auto c = [op](T u, T v) { bool r = op == 0 ? u == v : op == 1 ? u != v : op == 2 ? u < v      \
        : op == 3 ? u <= v : op == 4 ? u > v : u >= v; return T(r ? 1.0f : 0.0f); };              \
    return T2(c(a.x, b.x), c(a.y, b.y)); }                                                        \
__forceinline__ T2 __heq2(T2 a, T2 b) { return emu_cmp2(a, b, 0); }                               \
__forceinline__ T2 __hne2(T2 a, T2 b) { return emu_cmp2(a, b, 1); }                               \
__forceinline__ T2 __hlt2(T2 a, T2 b) { return emu_cmp2(a, b, 2); }                               \
__forceinline__ T2 __hle2(T2 a, T2 b) { return emu_cmp2(a, b, 3); }                               \
__forceinline__ T2 __hgt2(T2 a, T2 b) { return emu_cmp2(a, b, 4); }                               \
__forceinline__ T2 __hge2(T2 a, T2 b) { return emu_cmp2(a, b, 5); }                               \
__forceinline__ bool __hbeq2(T2 a, T2 b) { return a.x == b.x && a.y == b.y; }                     \
__forceinline__ bool __hbgt2(T2 a, T2 b) { return a.x > b.x && a.y > b.y; }                       \
__forceinline__ bool __hblt2(T2 a, T2 b) { return a.x < b.x && a.y < b.y; }                       \
__forceinline__ T __hadd_sat(T a, T b) { return T(__saturatef(float(a + b))); }                  \
__forceinline__ T __hmul_sat(T a, T b) { return T(__saturatef(float(a * b))); }                  \
__forceinline__ T2 __hadd2_sat(T2 a, T2 b) { return T2(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); } \
__forceinline__ T2 __hmul2_sat(T2 a, T2 b) { return T2(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); } \
__forceinline__ T2 __lowhigh2highlow(T2 a) { return T2(a.y, a.x); }

#pragma once
// log of a float row's sum of exponentials, inline: log-softmax's short rows wait on this one
// scalar between the horizontal sum and the last pass, and a call to libm's log there costs its
// latency plus the spill of every register the row lives in (the ABI has no callee-saved vector
// registers). 41 % of a 16-element log-softmax row's samples were in glibc's log (perf, AVX-512).
//
// s = 2^e·m with m in [1, 2); c = 1 + i/64 for the six leading bits i of m's fraction, so that
// m·(1/c) = 1 + r with 0 <= r < 2^-6; then log s = e·ln2 - log(1/c) + log1p(r), with log(1/c)
// from a table (for 1/c rounded to double, so the rounding of 1/c cancels) and log1p(r) a
// degree-5 Taylor polynomial (Estrin's scheme: the chain is short). Everything in double: the truncation error is below r^6/6 <= 2^-38.6
// absolute and 2^-32.5 relative; the roundings are a few units of 2^-53·|log s|, except e·ln2,
// 2^-54·|e|. Far below the unit roundoff of float (2^-24), which is the only precision the
// callers ask for (double rows call libm's log). i = 0 has c = 1 and an exact r = m - 1, so
// log 1 = 0 exactly, and a dominated row's largest entry keeps its exact 0.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../detail/xsimd_compat.hpp"

namespace smax {
namespace primitives {

// {1/c rounded to double, -log of that double rounded to double} for c = 1 + i/64 (computed in
// long double; see the header comment).
template <class = void>
struct log_table {
  static constexpr double entry[64][2] = {
      {0x1p+0, 0x0p+0},
      {0x1.f81f81f81f82p-1, 0x1.fc0a8b0fc03c4p-7},
      {0x1.f07c1f07c1f08p-1, 0x1.f829b0e7832f8p-6},
      {0x1.e9131abf0b767p-1, 0x1.77458f632dcffp-5},
      {0x1.e1e1e1e1e1e1ep-1, 0x1.f0a30c01162a2p-5},
      {0x1.dae6076b981dbp-1, 0x1.341d7961bd1d1p-4},
      {0x1.d41d41d41d41dp-1, 0x1.6f0d28ae56b4cp-4},
      {0x1.cd85689039b0bp-1, 0x1.a926d3a4ad563p-4},
      {0x1.c71c71c71c71cp-1, 0x1.e27076e2af2e6p-4},
      {0x1.c0e070381c0ep-1, 0x1.0d77e7cd08e59p-3},
      {0x1.bacf914c1bacfp-1, 0x1.29552f81ff523p-3},
      {0x1.b4e81b4e81b4fp-1, 0x1.44d2b6ccb7d1ep-3},
      {0x1.af286bca1af28p-1, 0x1.5ff3070a793d4p-3},
      {0x1.a98ef606a63bep-1, 0x1.7ab890210d909p-3},
      {0x1.a41a41a41a41ap-1, 0x1.9525a9cf456b4p-3},
      {0x1.9ec8e951033d9p-1, 0x1.af3c94e80bff3p-3},
      {0x1.999999999999ap-1, 0x1.c8ff7c79a9a22p-3},
      {0x1.948b0fcd6e9ep-1, 0x1.e27076e2af2e6p-3},
      {0x1.8f9c18f9c18fap-1, 0x1.fb9186d5e3e2bp-3},
      {0x1.8acb90f6bf3aap-1, 0x1.0a324e27390e3p-2},
      {0x1.8618618618618p-1, 0x1.1675cababa60ep-2},
      {0x1.8181818181818p-1, 0x1.22941fbcf7966p-2},
      {0x1.7d05f417d05f4p-1, 0x1.2e8e2bae11d31p-2},
      {0x1.78a4c8178a4c8p-1, 0x1.3a64c556945eap-2},
      {0x1.745d1745d1746p-1, 0x1.4618bc21c5ec2p-2},
      {0x1.702e05c0b817p-1, 0x1.51aad872df82dp-2},
      {0x1.6c16c16c16c17p-1, 0x1.5d1bdbf5809cap-2},
      {0x1.6816816816817p-1, 0x1.686c81e9b14afp-2},
      {0x1.642c8590b2164p-1, 0x1.739d7f6bbd007p-2},
      {0x1.6058160581606p-1, 0x1.7eaf83b82afc3p-2},
      {0x1.5c9882b931057p-1, 0x1.89a3386c1425bp-2},
      {0x1.58ed2308158edp-1, 0x1.947941c2116fbp-2},
      {0x1.5555555555555p-1, 0x1.9f323ecbf984cp-2},
      {0x1.51d07eae2f815p-1, 0x1.a9cec9a9a084ap-2},
      {0x1.4e5e0a72f0539p-1, 0x1.b44f77bcc8f63p-2},
      {0x1.4afd6a052bf5bp-1, 0x1.beb4d9da71b7cp-2},
      {0x1.47ae147ae147bp-1, 0x1.c8ff7c79a9a22p-2},
      {0x1.446f86562d9fbp-1, 0x1.d32fe7e00ebd5p-2},
      {0x1.4141414141414p-1, 0x1.dd46a04c1c4a1p-2},
      {0x1.3e22cbce4a902p-1, 0x1.e744261d68788p-2},
      {0x1.3b13b13b13b14p-1, 0x1.f128f5faf06edp-2},
      {0x1.3813813813814p-1, 0x1.faf588f78f31fp-2},
      {0x1.3521cfb2b78c1p-1, 0x1.02552a5a5d0ffp-1},
      {0x1.323e34a2b10bfp-1, 0x1.0723e5c1cdf4p-1},
      {0x1.2f684bda12f68p-1, 0x1.0be72e4252a83p-1},
      {0x1.2c9fb4d812cap-1, 0x1.109f39e2d4c97p-1},
      {0x1.29e4129e4129ep-1, 0x1.154c3d2f4d5eap-1},
      {0x1.27350b8812735p-1, 0x1.19ee6b467c96fp-1},
      {0x1.2492492492492p-1, 0x1.1e85f5e7040d1p-1},
      {0x1.21fb78121fb78p-1, 0x1.23130d7bebf43p-1},
      {0x1.1f7047dc11f7p-1, 0x1.2795e1289b11bp-1},
      {0x1.1cf06ada2811dp-1, 0x1.2c0e9ed448e8cp-1},
      {0x1.1a7b9611a7b96p-1, 0x1.307d7334f10bep-1},
      {0x1.1811811811812p-1, 0x1.34e289d9ce1d3p-1},
      {0x1.15b1e5f75270dp-1, 0x1.393e0d3562a1ap-1},
      {0x1.135c81135c811p-1, 0x1.3d9026a7156fbp-1},
      {0x1.111111111111p-1, 0x1.41d8fe84672aep-1},
      {0x1.0ecf56be69c9p-1, 0x1.4618bc21c5ec2p-1},
      {0x1.0c9714fbcda3bp-1, 0x1.4a4f85db03ebbp-1},
      {0x1.0a6810a6810a7p-1, 0x1.4e7d811b75bb1p-1},
      {0x1.0842108421084p-1, 0x1.52a2d265bc5abp-1},
      {0x1.0624dd2f1a9fcp-1, 0x1.56bf9d5b3f399p-1},
      {0x1.041041041041p-1, 0x1.5ad404c359f2dp-1},
      {0x1.0204081020408p-1, 0x1.5ee02a9241e75p-1},
  };
};

// log s within the bound above for positive s (the callers' sums are >= 1: their largest term is
// exactly 1), including subnormals; log 0 = -inf, log(+inf) = +inf, NaN for NaN and negative s
// (libm's results). No call on any path: a call anywhere in the function makes the compiler spill
// the row's registers around it. Templated on A like every kernel helper (table.hpp).
template <class A>
SMAX_ALWAYS_INLINE double log_of_sum(double s) noexcept {
  const double inf = __builtin_huge_val();
  int bias = 1023;
  if (__builtin_expect(!(s >= 0x1p-1022 && s < inf), 0)) {
    if (s == 0) return -inf;
    if (!(s > 0) || s == inf) return s == inf ? s : __builtin_nan("");
    s *= 0x1p54;  // subnormal: normalised, and its exponent corrected below
    bias += 54;
  }
  std::uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  const int e = static_cast<int>(bits >> 52) - bias;
  const unsigned i = static_cast<unsigned>(bits >> 46) & 63u;
  bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  double m;
  std::memcpy(&m, &bits, sizeof m);
  const double r = m * log_table<>::entry[i][0] - 1.0;  // exact for i = 0; else within 2^-53
  // log1p(r) = r + r²·((r/3 - 1/2) + r²·(r/5 - 1/4)): two multiply-adds deep after r² (Estrin).
  const double r2 = r * r;
  const double a = r * (1.0 / 3) - 1.0 / 2;
  const double b = r * (1.0 / 5) - 1.0 / 4;
  const double log1p_r = (a + r2 * b) * r2 + r;
  return (e * 0x1.62e42fefa39efp-1 + log_table<>::entry[i][1]) + log1p_r;
}

// The log of a row's sum as the log-softmax kernels take it: log_of_sum for float rows, libm's
// log for double rows (whose precision the polynomial does not reach).
template <class A, class T>
SMAX_ALWAYS_INLINE double log_of_row_sum(double s) noexcept {
  if constexpr (sizeof(T) == 4)
    return log_of_sum<A>(s);
  else
    return ::log(s);
}

// The constants of log_normal for float and double lanes.
template <class T>
struct log_constants;
template <>
struct log_constants<float> {
  using bits = std::uint32_t;
  static constexpr bits sqrt_half = 0x3f3504f3u;  // √2/2 rounded down
  static constexpr bits one_minus_sqrt_half = 0x3f800000u - sqrt_half;
  static constexpr bits mantissa = 0x007fffffu;
  static constexpr int mantissa_bits = 23;
  static constexpr bits two_to_mantissa_bits = 0x4b000000u;  // 2^23
  static constexpr float exponent_offset = 8388608.0f + 127.0f;
  static constexpr float ln2_hi = 0.693145751953125f;  // 16 bits: k·ln2_hi is exact
  static constexpr float ln2_lo = 1.42860676533018704e-06f;
};
template <>
struct log_constants<double> {
  using bits = std::uint64_t;
  static constexpr bits sqrt_half = 0x3fe6a09e667f3bcdull;
  static constexpr bits one_minus_sqrt_half = 0x3ff0000000000000ull - sqrt_half;
  static constexpr bits mantissa = 0x000fffffffffffffull;
  static constexpr int mantissa_bits = 52;
  static constexpr bits two_to_mantissa_bits = 0x4330000000000000ull;  // 2^52
  static constexpr double exponent_offset = 4503599627370496.0 + 1023.0;
  static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 bits: k·ln2_hi is exact
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
};

// log t for a batch of positive normal finite t, on every instruction set with the same bits,
// without a call and without an integer-to-floating conversion of 64-bit lanes (SSE2 and AVX2
// have none; xsimd emulates it with an addition of 2^52 that -ffast-math folds away):
// t = 2^k·m with m in [√2/2, √2) taken on the bits, f = m - 1 (exact), and
// log t = k·ln2 + 2·atanh(s), s = f/(2 + f), |s| < 0.1716, the series 2s·(1 + s²/3 + s⁴/5 + ...)
// to s^9 (float) or s^21 (double): its truncation is below 2^-28 (2^-56) relative. The rounding
// of 2 + f and of the quotient make s's relative error at most 2 units of the element type;
// log t is within 3.5 ulp of |log t| on every instruction set (measured: x86 float 1.97 over every
// normal float, double 1.90 over 10 million samples; NEON float 3.09, whose excess over x86 is
// not yet explained; tests/primitives/log_test.cpp). log 1 = 0 exactly. Lanes with t subnormal, zero,
// infinite or NaN give unspecified values: the caller selects them away.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> log_normal(xsimd::batch<T, A> const& t) noexcept {
  using batch = xsimd::batch<T, A>;
  using c = log_constants<T>;
  using ubatch = xsimd::batch<typename c::bits, A>;
  // Adding 1 - √2/2 to the bits carries into the exponent exactly when m >= √2 (see above).
  const ubatch j = smax::detail::bitcast<typename c::bits>(t) + ubatch(c::one_minus_sqrt_half);
  const ubatch biased_k = j >> c::mantissa_bits;
  const batch m = smax::detail::bitcast<T>((j & ubatch(c::mantissa)) + ubatch(c::sqrt_half));
  // k from its biased value without a conversion: 2^23 (2^52) plus it, minus 2^23 (2^52) + bias.
  // Opaque: under -ffast-math clang distributed k·ln2 over the subtraction, (2^23 + k')·ln2 -
  // (2^23 + 127)·ln2, which cancels catastrophically.
  const batch k =
      smax::detail::opaque(smax::detail::bitcast<T>(biased_k | ubatch(c::two_to_mantissa_bits)) -
                           batch(c::exponent_offset));
  const batch f = m - batch(T(1));
  const batch s = f / (batch(T(2)) + f);
  const batch w = s * s;
  batch p;
  if constexpr (sizeof(T) == 4) {
    p = smax::detail::mul_add(w, batch(T(1.0 / 9)), batch(T(1.0 / 7)));
    p = smax::detail::mul_add(w, p, batch(T(1.0 / 5)));
    p = smax::detail::mul_add(w, p, batch(T(1.0 / 3)));
  } else {
    p = smax::detail::mul_add(w, batch(T(1.0 / 21)), batch(T(1.0 / 19)));
    for (double d : {17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0})
      p = smax::detail::mul_add(w, p, batch(T(1.0 / d)));
  }
  const batch two_s = s + s;
  const batch log1p_f = smax::detail::mul_add(two_s, w * p, two_s);
  return smax::detail::mul_add(k, batch(c::ln2_hi),
                               smax::detail::mul_add(k, batch(c::ln2_lo), log1p_f));
}

// log(1 + a) for a batch of a >= 0 (+inf gives +inf; NaN unspecified): log_normal(u), u = 1 + a
// rounded, corrected by (a - (u - 1))/u, the first-order term of the rounding of u (u - 1 and
// the difference are exact). Within 4 ulp of |log1p a|: log_normal's bound and the rounding of
// the sum (measured: x86 2.3, NEON 3.34 for float; tests/primitives/log_test.cpp).
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> log1p_nonnegative(xsimd::batch<T, A> const& a) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch u = a + batch(T(1));
  const batch r = log_normal<A>(u) + (a - (u - batch(T(1)))) / u;
  return xsimd::select(u == batch(static_cast<T>(__builtin_huge_val())), u, r);
}

// log(1 + a) for a batch of a in [0, 1] (softplus's log1p(e^-|u|)): a·p(2a - 1), p a Chebyshev
// fit of log1p(a)/a on [0, 1] (degree 9 for float, 20 for double; truncation below 2^-27, 2^-56,
// relative), evaluated by Horner's scheme without a division (log1p_nonnegative takes two).
// Within 3 ulp (measured: x86 float 1.8, double 1.3; tests/primitives/log_test.cpp); 0 gives 0
// exactly; arguments outside [0, 1] give unspecified values.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> log1p_unit(xsimd::batch<T, A> const& a) noexcept {
  using batch = xsimd::batch<T, A>;
  using smax::detail::mul_add;
  const batch t = mul_add(a, batch(T(2)), batch(T(-1)));
  batch p;
  if constexpr (sizeof(T) == 4) {
    static constexpr float c[] = {
        -0x1.a04acap-18f, 0x1.5814ecp-16f, -0x1.bcdc06p-15f, 0x1.7b60aap-13f, -0x1.50e83ep-11f,
        0x1.2c1da8p-9f,   -0x1.154036p-7f, 0x1.0f9550p-5f,   -0x1.2773a6p-3f, 0x1.9f323ep-1f};
    p = batch(c[0]);
    for (std::size_t k = 1; k < sizeof c / sizeof c[0]; ++k) p = mul_add(p, t, batch(c[k]));
  } else {
    static constexpr double c[] = {
        0x1.9a004c84084e0p-36,  -0x1.41ce9263aa3b0p-34, 0x1.da6d71b6afabdp-34,
        -0x1.780c594e32d50p-32, 0x1.76b09d6cf58dep-30,  -0x1.2a015e6f8b787p-28,
        0x1.cfdf64feee5f6p-27,  -0x1.740e66424b377p-25, 0x1.2c70bed1f5192p-23,
        -0x1.e6fd22346bd39p-22, 0x1.8d3fc5df8233cp-20,  -0x1.469c50e081538p-18,
        0x1.0f11916785076p-16,  -0x1.c72c64467e5acp-15, 0x1.83c50b0fd64f8p-13,
        -0x1.50abf6ca8389dp-11, 0x1.2bec9fba50fb6p-9,   -0x1.1540afd54c993p-7,
        0x1.0f95b3dc0a12ap-5,   -0x1.2773a5da90bd5p-3,  0x1.9f323ecbf984cp-1};
    p = batch(c[0]);
    for (std::size_t k = 1; k < sizeof c / sizeof c[0]; ++k) p = mul_add(p, t, batch(c[k]));
  }
  return a * p;
}

}  // namespace primitives
}  // namespace smax

#pragma once
// Two-pass softmax (Dukhan & Ablavatski 2020; docs/softmax.md): exp(u) = p·2^k with p in [2^-1/2,
// 2^1/2] and an integer k, accumulated per lane as (V, E) with V·2^E = sum of exp(u): no max pass,
// so the row is read twice and written once. Pass 2 writes p·2^(k - E)/V.
//
// Domain: the decomposition is exact while k·ln2 reduces exactly, |u| <= 2^23 with a fused
// multiply-add and |u| <= 1024 without one (k·ln2_lo is then rounded). A row outside it (or
// holding +inf) is computed by the three-pass kernel instead; so is
// T != 1 without a fused multiply-add, and float log-softmax with sum exponent |E| >= 2^14.
// Masked entries (-inf) contribute nothing (XNNPACK's kernel would give NaN).
//
// Accuracy: as three-pass for softmax; log-softmax z within 2^-22·(|z| + 1 + log n), but with
// no max subtracted an exactly-0 output of one dominant entry comes out as ~1e-8 (n = 1 is
// exact: it goes to the three-pass kernel).

#include <cmath>
#include <cstdint>

#include "../primitives/exp.hpp"
#include "../primitives/partial.hpp"
#include "softmax_three_pass.hpp"

namespace smax {
namespace kernels {

template <class T, bool NativeFma>
struct two_pass_constants;
template <>
struct two_pass_constants<float, true> {
  static constexpr float ln2_hi =
      0.693147182464599609375f;  // ln 2 rounded: k·ln2_hi is exact in the FMA
  static constexpr float ln2_lo = -1.904654299957768e-09f;
  static constexpr float domain = 8388608.0f;     // 2^23
  static constexpr float min_exponent = -127.0f;  // 2^-127 is built as 0
};
template <>
struct two_pass_constants<float, false> {
  static constexpr float ln2_hi = 0.693359375f;  // 9 bits: k·ln2_hi exact for |k| < 2^15
  static constexpr float ln2_lo = -2.12194440e-4f;
  static constexpr float domain = 1024.0f;
  static constexpr float min_exponent = -127.0f;
};
template <>
struct two_pass_constants<double, true> {
  static constexpr double ln2_hi = 6.93147180369123816490e-01;
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double domain = 1073741824.0;  // 2^30
  static constexpr double min_exponent = -1023.0;
};
template <>
struct two_pass_constants<double, false> {
  static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 bits: exact for |k| < 2^21
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double domain = 1048576.0;  // 2^20
  static constexpr double min_exponent = -1023.0;
};

template <class A, class T>
struct two_pass_exp {
  using batch = xsimd::batch<T, A>;
  using integer = smax::detail::integer_of_t<T>;
  using c = two_pass_constants<T, smax::detail::has_native_fma<A>::value>;
  using e = primitives::exp_constants<T>;

  // u + u_err = k·ln2 + r; returns p = exp(r) and k (as an integer-valued float).
  static void split(batch const& u, batch const& u_err, batch& p, batch& k) noexcept {
    k = smax::detail::nearbyint(u * batch(e::log2e));
    const batch r_hi = smax::detail::mul_add(k, batch(-c::ln2_hi), u);
    const batch r_lo = smax::detail::mul_add(k, batch(-c::ln2_lo), u_err);
    p = primitives::expm1_reduced(r_hi, r_lo) + batch(T(1));
  }

  // 2^d for an integer-valued d <= 0; 0 below the smallest normal exponent.
  static batch exp2_nonpositive(batch const& d) noexcept {
    const batch biased = xsimd::max(d, batch(c::min_exponent)) + batch(e::magic);
    return smax::detail::bitcast<T>(smax::detail::bitcast<integer>(biased) << e::exponent_shift);
  }
};

// u = x·(1/T) as an unevaluated sum u + u_err: with a fused multiply-add the product's rounding
// error is recovered exactly, so only the rounding of 1/T remains, which cancels in the
// normalisation like a temperature error.
template <class A, class T, bool Scaled>
struct two_pass_input {
  using batch = xsimd::batch<T, A>;
  batch inv;
  SMAX_ALWAYS_INLINE void operator()(batch const& x, batch& u, batch& u_err) const noexcept {
    if (!Scaled) {
      u = x;
      u_err = batch(T(0));
      return;
    }
    u = x * inv;
    u_err = smax::detail::mul_sub(x, inv, u);
  }
};

// ln 2 = ln2_hi + ln2_lo with ln2_hi short enough that E·ln2_hi is exact for |E| < max_exponent.
template <class T>
struct log_constants;
template <>
struct log_constants<float> {
  static constexpr float ln2_hi = 0.693359375f;  // 10 significant bits
  static constexpr double ln2_lo = -2.12194440054690582e-4;
  static constexpr double max_exponent = 16384.0;
};
template <>
struct log_constants<double> {
  static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 significant bits
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double max_exponent = 2097152.0;  // 2^21
};

// Per-lane accumulator of pass 1.
template <class A, class T>
struct extended_sum {
  using batch = xsimd::batch<T, A>;
  batch value;     // V
  batch exponent;  // E; the lowest finite value until a lane sees an unmasked entry
  batch max_abs;   // largest |u| over unmasked entries, for the domain check
  primitives::nan_mask<A, T> has_nan;

  extended_sum() noexcept : max_abs(T(0)), has_nan(false) { reset(); }

  void reset() noexcept {
    value = batch(T(0));
    exponent = batch(-primitives::exp_constants<T>::largest);
  }

  void add(batch const& u, batch const& u_err) noexcept {
    using ops = two_pass_exp<A, T>;
    batch p, k;
    ops::split(u, u_err, p, k);
    const auto masked = u == batch(-__builtin_huge_val());
    p = xsimd::select(masked, batch(T(0)), p);  // -inf: k = -inf and p = NaN; contribute nothing
    max_abs = xsimd::max(max_abs, xsimd::select(masked, batch(T(0)), xsimd::abs(u)));
    has_nan = has_nan | primitives::is_nan(u);
    const batch new_exponent = xsimd::max(exponent, k);
    value = smax::detail::mul_add(p, ops::exp2_nonpositive(k - new_exponent),
                                  value * ops::exp2_nonpositive(exponent - new_exponent));
    exponent = new_exponent;
  }

  // Moves the lane sums into `carry` (whose exponents are never above these) and zeroes them,
  // keeping the exponents: each lane sum then takes only a few additions before it is carried,
  // which bounds its rounding error, and the carry costs five operations.
  void carry_into(extended_sum& carry) noexcept {
    using ops = two_pass_exp<A, T>;
    carry.value =
        smax::detail::mul_add(carry.value, ops::exp2_nonpositive(carry.exponent - exponent), value);
    carry.exponent = exponent;
    value = batch(T(0));
  }
};

// The row total V·2^E in double, folded from the lanes after every block, so the float lane sums
// never accumulate more than a block (the same two-level summation as the other kernels).
template <class A>
struct extended_total {
  double value = 0.0;
  double exponent = 0.0;

  // 2^d for an integer-valued d <= 0, 0 below the double range.
  static double exp2_nonpositive(double d) noexcept {
    if (d < -1022.0) return 0.0;
    const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(d) + 1023) << 52;
    double r;
    __builtin_memcpy(&r, &bits, sizeof r);
    return r;
  }

  template <class T>
  void add(extended_sum<A, T> const& s) noexcept {
    constexpr std::size_t width = xsimd::batch<T, A>::size;
    alignas(64) T values[width];
    alignas(64) T exponents[width];
    s.value.store_unaligned(values);
    s.exponent.store_unaligned(exponents);
    for (std::size_t l = 0; l < width; ++l) {
      if (!(values[l] > T(0))) continue;
      const double e = exponents[l];
      if (value == 0.0) {
        value = values[l];
        exponent = e;
        continue;
      }
      const double top = e > exponent ? e : exponent;
      value = value * exp2_nonpositive(exponent - top) + values[l] * exp2_nonpositive(e - top);
      exponent = top;
    }
  }
};

// Pass 1 sums in three levels, so that no float lane sum takes many additions (a lane sum of m
// terms is off by up to (m - 1)·2^-24 relative: 128 terms a lane cost rows of 4095 equal
// entries 1.9e-6 on AVX-512, beyond the softmax bound): each accumulator's lanes take
// two_pass_lane_iterations terms, are then carried into a second (V, E) register, which takes
// two_pass_carries of them before the block's lanes are folded into the double total.
constexpr std::size_t two_pass_lane_iterations = 8;
constexpr std::size_t two_pass_carries = 16;

template <class A, class T, bool Scaled>
inline void two_pass_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  using ops = two_pass_exp<A, T>;
  using c = two_pass_constants<T, smax::detail::has_native_fma<A>::value>;
  constexpr std::size_t width = batch::size;
  const T inf = __builtin_huge_val();
  // Without a fused multiply-add the product x·(1/T) cannot be carried exactly (its rounding
  // would cost |x/T|·2^-24, not |x - max|/T·2^-24): use the three-pass kernel.
  // A single entry is exactly [1] ([0] for log-softmax); with no maximum subtracted, p·2^(k - E)/V
  // would only come within an ulp of it.
  if (n == 1 || (Scaled && !smax::detail::has_native_fma<A>::value))
    return three_pass_row<A, T, Scaled>(x, y, n, p);
  const two_pass_input<A, T, Scaled> input{batch(p.inv_temperature)};

  // Pass 1: two accumulators for instruction-level parallelism, carried and folded as above.
  constexpr std::size_t lane_run = 2 * width * two_pass_lane_iterations;
  constexpr std::size_t block = lane_run * two_pass_carries;
  extended_sum<A, T> s0, s1, carry0, carry1;
  extended_total<A> total;
  batch u, u_err;
  std::size_t i = 0;
  while (i + 2 * width <= n) {
    const std::size_t block_end = n - i > block ? i + block : n;
    while (i + 2 * width <= block_end) {
      const std::size_t run_end = block_end - i > lane_run ? i + lane_run : block_end;
      for (; i + 2 * width <= run_end; i += 2 * width) {
        input(batch::load_unaligned(x + i), u, u_err);
        s0.add(u, u_err);
        input(batch::load_unaligned(x + i + width), u, u_err);
        s1.add(u, u_err);
      }
      s0.carry_into(carry0);
      s1.carry_into(carry1);
    }
    total.add(carry0);
    total.add(carry1);
    carry0.reset();
    carry1.reset();
    s0.reset();
    s1.reset();
  }
  for (; i + width <= n; i += width) {
    input(batch::load_unaligned(x + i), u, u_err);
    s0.add(u, u_err);
  }
  if (i < n) {
    input(primitives::load_partial<A>(x + i, n - i, -inf), u, u_err);
    s1.add(u, u_err);
  }
  total.add(s0);
  total.add(s1);

  if (xsimd::any(s0.has_nan | s1.has_nan)) {
    fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const T max_abs = smax::detail::horizontal_max(xsimd::max(s0.max_abs, s1.max_abs));
  if (!(max_abs <= c::domain)) {  // outside the exact decomposition, or +inf
    three_pass_row<A, T, Scaled>(x, y, n, p);
    return;
  }
  if (total.value == 0.0) {
    // Every u is -inf: the row is fully masked, or every x/T is below the lowest finite value
    // (x = -1e30, T = 1e-30), which only the max-subtracting kernel can tell apart.
    three_pass_row<A, T, Scaled>(x, y, n, p);
    return;
  }
  const T exponent = static_cast<T>(total.exponent);

  if (p.log) {
    // z = u - (E·ln2 + log V) = (u - E·ln2_hi) - (E·ln2_lo + log V): E·ln2_hi is exact in T and
    // close to u, so the only roundings are those of the small second term and of z.
    using lc = log_constants<T>;
    if (!((total.exponent) < lc::max_exponent && (total.exponent) > -lc::max_exponent)) {
      three_pass_row<A, T, Scaled>(x, y, n, p);  // E·ln2_hi would not be exact
      return;
    }
    const batch c1(static_cast<T>(exponent * lc::ln2_hi));
    const batch c2(static_cast<T>(total.exponent * lc::ln2_lo + ::log(total.value)));
    primitives::map<A>(x, y, n, [&](batch const& v) {
      batch a, a_err;
      input(v, a, a_err);
      // A masked entry has a = -inf and a NaN product error: it stays -inf.
      return xsimd::select(a == batch(-inf), a, ((a - c1) - c2) + a_err);
    });
    return;
  }
  // Pass 2: y = p·(1/V)·2^(k - E). Masked entries are clamped to a value whose 2^(k - E) is 0.
  const batch inv_sum(static_cast<T>(1.0 / total.value)), neg_exponent(-exponent);
  const batch floor(T(-2) * c::domain - T(1024));
  primitives::map<A>(x, y, n, [&](batch const& v) {
    batch a, a_err, q, k;
    input(v, a, a_err);
    const auto masked = a < floor;
    ops::split(xsimd::select(masked, floor, a), xsimd::select(masked, batch(T(0)), a_err), q, k);
    return (q * inv_sum) * ops::exp2_nonpositive(k + neg_exponent);
  });
}

}  // namespace kernels
}  // namespace smax

#pragma once
// Softplus + l1 with the length scale (LSSA; docs/softplus_l1.md) for one instruction set A:
// y_i = softplus(λ·x_i)/Σ_j softplus(λ·x_j), softplus(u) = log(1 + e^u), λ = ln n/ln base.
//
// One exponential and one log1p an element, on terms taken relative to the row's largest one
// (softplus is increasing, so that is the term of the row maximum m, u_m = λ·m):
// * u_m > 0: t = max(u, 0) + log1p(e^-|u|), the stable form of softplus, times a power of two
//   c: 2 for u_m < 1 (so that the largest term exceeds 1), 1 up to 2^100 (2^900 for double),
//   and one that brings c·u_m below that beyond, so that neither λ·x nor the sum overflows
//   ([3e38, 1e38] at λ = 1 -> [0.75, 0.25]);
// * u_m <= 0: with a = e^(λ·(x - m)) <= 1 and E = e^(u_m) <= 1, softplus(u) = log1p(a·E), and
//   t = 4·log1p(a·E)/E, or 4·a where a·E < 2^-26 (2^-55) and log1p(z)/z = 1 within a unit of
//   the last place; where E itself is that small every term is a (softplus(u) = e^u to the
//   precision of T), which keeps rows of very negative u (e^u far below the smallest normal
//   number) exact.
// log1p is taken of arguments in [0, 1] only, by a polynomial without division
// (primitives::log1p_unit; the general log1p_nonnegative takes two divisions, which made the
// term cost about three exponentials).
// Either way the largest term is at least 1, so an output >= FLT_MIN never comes from a
// subnormal term, and Σt <= 2^110 cannot overflow. The sum is blocked and folded into double;
// y = t·(1/Σt) with 1/Σt as a two-part factor. -inf entries give t = 0 exactly (masked); NaN,
// +inf and all-masked rows give NaN rows (0 for the last with zero_masked_rows). λ = 0 (n = 1)
// gives the uniform distribution over the unmasked entries; a λ that is not finite and >= 0 (a
// base that is not finite and > 1) gives NaN rows.
//
// Backward, from x and y: dx_i = λ·σ(u_i)·(dy_i - <dy, y>)/S = λ·y_i·r(u_i)·(dy_i - <dy, y>) with
// r = σ/softplus, recomputed from x without S (which may overflow). With g = y_i·(dy_i - <dy, y>),
//   dx_i = g/((1 + e)·(x + log1p(e)/λ))  for u > 0,   g/((1 + e)·(log1p(e)/e)/λ)  for u <= 0,
// e = e^-|u|, and log1p(e)/e = 1 where e < 2^-26 (2^-55) (r -> 1 as u -> -inf, where σ and
// softplus both underflow). For u > 0, λ is divided out of λ·r ~ 1/x, and for u <= 0 the
// divisor takes 1/λ: neither λ·g nor λ·x is formed, which overflow T for a large λ or x where dx
// does not, and dx is one division (dx ~ g/x for u > 0),
// exact down to the subnormal range (a product by r ~ 1/(λx) would be flushed or lose its digits
// there). Masked entries (y = 0) get 0.

#include <cmath>
#include <cstddef>
#include <limits>

#include "../primitives/exp.hpp"
#include "../primitives/log.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "../primitives/special.hpp"
#include "row_driver.hpp"

namespace smax {
namespace kernels {

template <class A>
struct softplus_l1_table {
  // λ = ln(keys)/ln(base) in double, rounded once to the element type (float: both logs inline,
  // within 2^-32 relative; double: libm's log); NaN unless base is finite and > 1. Here, not in
  // the API layer, so that the runtime form computes it with the same bits as the header-only
  // form.
  static float lambda(double base, double keys, float*) noexcept;
  static double lambda(double base, double keys, double*) noexcept;
  // y for a rows × cols block (x == y allowed).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, float lambda, bool zero_masked_rows) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, double lambda,
                      bool zero_masked_rows) noexcept;
  // dx from x, the forward output y and dy; any of them may alias dx.
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, float lambda) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, double lambda) noexcept;
};

namespace detail {

// Below this, log1p(z)/z = 1 - z/2 + ... is 1 within an eighth of a unit of the last place.
template <class T>
constexpr T softplus_tiny = sizeof(T) == 4 ? T(0x1p-26) : T(0x1p-55);

// c·u_m stays below 2^softplus_scale_exponent: 1024 terms of that size (a lane of map_sum's
// blocks, then the horizontal sum) stay finite in T, and 2^64 of them in double.
template <class T>
constexpr int softplus_scale_exponent = sizeof(T) == 4 ? 100 : 900;

// u_m in [1, 2^softplus_scale_exponent), no scaling: t = max(u, 0) + log1p(e^-|u|), u = λ·x.
template <class A, class T>
struct softplus_term {
  using batch = xsimd::batch<T, A>;
  batch lambda;
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch u = lambda * x;
    const batch e = primitives::exp_nonpositive(-xsimd::abs(u));
    return xsimd::max(u, batch(T(0))) + primitives::log1p_unit<A>(e);
  }
};

// u_m above 2^softplus_scale_exponent, or in (0, 1) (c = 2: the largest term >= 2·ln 2 > 1):
// c·t = max(cλ·x, 0) + c·log1p(e^-|λ·x|) (λ·x may overflow to ±inf, whose exponential is 0).
template <class A, class T>
struct softplus_scaled_term {
  using batch = xsimd::batch<T, A>;
  batch lambda, scaled_lambda, scale;
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch e = primitives::exp_nonpositive(-xsimd::abs(lambda * x));
    return smax::detail::mul_add(scale, primitives::log1p_unit<A>(e),
                                 xsimd::max(scaled_lambda * x, batch(T(0))));
  }
};

// u_m <= 0: t = 4·log1p(a·E)/E, a = e^(λ·(x - m)), E = e^u_m <= 1, or 4·a where a·E <
// softplus_tiny.
template <class A, class T>
struct softplus_low_term {
  using batch = xsimd::batch<T, A>;
  batch lambda, max, e_max, four_over_e_max;
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch a = primitives::exp_nonpositive(lambda * (x - max));
    const batch z = a * e_max;
    return xsimd::select(z < batch(softplus_tiny<T>), a * batch(T(4)),
                         primitives::log1p_unit<A>(z) * four_over_e_max);
  }
};

// e^u_m below softplus_tiny: t = a = e^(λ·(x - m)) (softplus(u) = e^u in T).
template <class A, class T>
struct softplus_exp_term {
  using batch = xsimd::batch<T, A>;
  batch lambda, max;
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    return primitives::exp_nonpositive(lambda * (x - max));
  }
};

// Calls f(term) with the term of a row of finite maximum m at λ > 0 (finite).
template <class A, class T, class F>
SMAX_ALWAYS_INLINE void with_softplus_term(T lambda, T m, F&& f) noexcept {
  using batch = xsimd::batch<T, A>;
  const double u_max = static_cast<double>(lambda) * static_cast<double>(m);
  if (u_max > 0.0) {
    if (u_max < 1.0)
      return f(softplus_scaled_term<A, T>{batch(lambda), batch(lambda * T(2)), batch(T(2))});
    if (u_max < std::ldexp(1.0, softplus_scale_exponent<T>))
      return f(softplus_term<A, T>{batch(lambda)});
    // λ·m < 2^(eλ + em) and >= 2^(eλ + em - 2): c = 2^(P - eλ - em) gives c·λ·m in
    // [2^(P - 2), 2^P), and c, c·λ stay normal (λ < 2^64 for any base > 1).
    int e_lambda = 0, e_m = 0;
    (void)std::frexp(static_cast<double>(lambda), &e_lambda);
    (void)std::frexp(static_cast<double>(m), &e_m);
    const int k = softplus_scale_exponent<T> - e_lambda - e_m;
    return f(softplus_scaled_term<A, T>{batch(lambda), batch(std::ldexp(lambda, k)),
                                        batch(static_cast<T>(std::ldexp(1.0, k)))});
  }
  const double e_max = std::exp(u_max);
  if (e_max < static_cast<double>(softplus_tiny<T>))
    return f(softplus_exp_term<A, T>{batch(lambda), batch(m)});
  f(softplus_low_term<A, T>{batch(lambda), batch(m), batch(static_cast<T>(e_max)),
                            batch(static_cast<T>(4.0 / e_max))});
}

template <class A, class T>
SMAX_ALWAYS_INLINE void fill_softplus_special(T* y, std::size_t n, bool masked,
                                              bool zero_masked_rows) noexcept {
  const T value = masked && zero_masked_rows ? T(0) : static_cast<T>(__builtin_nan(""));
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

template <class A, class T>
inline void softplus_l1_row(const T* x, T* y, std::size_t n, T lambda, bool zero_masked_rows,
                            next_rows next) noexcept {
  using batch = xsimd::batch<T, A>;
  const auto r = primitives::reduce_max<A>(x, n);
  // NaN, +inf, or every entry masked (bit tests: -ffast-math may fold comparisons with inf).
  if (r.has_nan || !primitives::is_finite(r.max))
    return fill_softplus_special<A>(y, n, !r.has_nan && primitives::is_neg_inf(r.max),
                                    zero_masked_rows);
  with_softplus_term<A>(lambda, r.max, [&](auto const& term) {
    const double sum = primitives::map_sum<A, true>(x, y, n, T(0), term, next.x);
    // y = t·(1/Σt), the factor in two parts (hi + lo): its rounding does not add to the ulps.
    const double inv = 1.0 / sum;
    const batch hi(static_cast<T>(inv)), lo(static_cast<T>(inv - static_cast<T>(inv)));
    primitives::map<A>(y, y, n,
                       [&](batch const& t) { return smax::detail::mul_add(t, hi, t * lo); });
  });
}

// A row of at most four registers of A, in registers: one load and one store of each element.
// The lanes past n hold -inf, whose term is 0. Special rows as softplus_l1_row.
template <class A, class T, std::size_t Count>
SMAX_FLATTEN inline void softplus_l1_short_row(const T* x, T* y, std::size_t n, T lambda,
                                               bool zero_masked_rows) noexcept {
  using batch = xsimd::batch<T, A>;
  primitives::register_row<A, T, Count> row(x, n, -std::numeric_limits<T>::infinity());
  const auto lanes = row.lane_max();
  const T m = smax::detail::horizontal_max(lanes.max);
  if (lanes.has_nan || !primitives::is_finite(m))
    return fill_softplus_special<A>(y, n, !lanes.has_nan && primitives::is_neg_inf(m),
                                    zero_masked_rows);
  with_softplus_term<A>(lambda, m, [&](auto const& term) {
    const double sum = smax::detail::horizontal_sum(row.transform_sum(term));
    const double inv = 1.0 / sum;
    const batch hi(static_cast<T>(inv)), lo(static_cast<T>(inv - static_cast<T>(inv)));
    row.transform([&](batch const& t) { return smax::detail::mul_add(t, hi, t * lo); });
  });
  row.store(y);
}

template <class A, class T>
SMAX_ALWAYS_INLINE void softplus_l1_short_row(const T* x, T* y, std::size_t n, T lambda,
                                              bool zero_masked_rows) noexcept {
  primitives::with_register_count<A, T>(n, [&](auto count) {
    softplus_l1_short_row<A, T, decltype(count)::value>(x, y, n, lambda, zero_masked_rows);
  });
}

// The policy for the row driver (row_driver.hpp), for λ > 0 and finite. No flush to zero: a row
// of very negative u keeps its terms relative to e^(u_m), but its subnormal intermediate results
// are not needed either way; the flush would only cost the MXCSR writes.
template <class A, class T>
struct softplus_l1_rows {
  static constexpr bool flush_subnormals = false;
  static constexpr bool register_kernels = true;
  T lambda;
  bool zero_masked_rows;

  bool in_registers() const noexcept { return true; }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    softplus_l1_short_row<B>(x, y, n, lambda, zero_masked_rows);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
      softplus_l1_short_row<B>(x + k * ldx, y + k * ldy, n, lambda, zero_masked_rows);
    });
  }
  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    f([this](const T* x, T* y, std::size_t n, next_rows next) {
      softplus_l1_row<A>(x, y, n, lambda, zero_masked_rows, next);
    });
  }
};

// λ = 0: 1/(number of unmasked entries) each, masked 0; NaN or +inf: NaN row; all masked: NaN,
// or 0 with zero_masked_rows.
template <class A, class T>
inline void softplus_l1_uniform_row(const T* x, T* y, std::size_t n,
                                    bool zero_masked_rows) noexcept {
  std::size_t count = 0;
  bool bad = false;
  for (std::size_t i = 0; i < n; ++i) {
    bad = bad || primitives::is_nan(x[i]) || primitives::is_pos_inf(x[i]);
    count += !primitives::is_neg_inf(x[i]);
  }
  if (bad || count == 0) return fill_softplus_special<A>(y, n, !bad, zero_masked_rows);
  const T p = static_cast<T>(1.0 / static_cast<double>(count));
  for (std::size_t i = 0; i < n; ++i) y[i] = primitives::is_neg_inf(x[i]) ? T(0) : p;
}

template <class A, class T>
SMAX_ALWAYS_INLINE void softplus_l1_forward(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t rows, std::size_t cols, T lambda,
                                            bool zero_masked_rows) noexcept {
  if (lambda > T(0) && lambda < std::numeric_limits<T>::infinity())
    return drive_rows<A>(x, ldx, y, ldy, rows, cols,
                         softplus_l1_rows<A, T>{lambda, zero_masked_rows});
  for (std::size_t r = 0; r < rows; ++r) {
    if (lambda == T(0))
      softplus_l1_uniform_row<A>(x + r * ldx, y + r * ldy, cols, zero_masked_rows);
    else
      fill_row<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
  }
}

// dx for a vector of x and g = y·(dy - <dy, y>) (see the header comment); λ > 0.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> softplus_gradient(xsimd::batch<T, A> const& x,
                                                        xsimd::batch<T, A> const& g,
                                                        xsimd::batch<T, A> const& lambda,
                                                        xsimd::batch<T, A> const& inv_lambda) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch one(T(1));
  const batch u = lambda * x;
  const batch e = primitives::exp_nonpositive(-xsimd::abs(u));
  const batch l = primitives::log1p_unit<A>(e);
  const auto positive = u > batch(T(0));
  const batch h = xsimd::select(positive, smax::detail::mul_add(l, inv_lambda, x),
                                xsimd::select(e < batch(softplus_tiny<T>), one, l / e));
  // u <= 0: λ·g/((1 + e)·h) as g/((1 + e)·h·(1/λ)), so that λ·g, which may overflow where dx
  // does not, is never formed (h >= ln 2 and λ <= 2^64 keep the divisor normal).
  return g / (((one + e) * h) * xsimd::select(positive, one, inv_lambda));
}

template <class A, class T>
inline void softplus_l1_backward_row(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                                     T lambda) noexcept {
  using batch = xsimd::batch<T, A>;
  const double dot =
      primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
  const batch d(static_cast<T>(dot)), l(lambda), inv_l(static_cast<T>(1.0 / lambda));
  // λ = 0: y does not depend on x; 0 times y·(dy - <dy, y>) keeps NaN rows NaN. λ·(-inf) would
  // be NaN there.
  const bool flat = lambda == T(0);
  for (std::size_t i = 0; i < n; i += batch::size) {
    const std::size_t k = n - i < batch::size ? n - i : batch::size;
    const batch xv = primitives::load_partial<A>(x + i, k, T(0));
    const batch yv = primitives::load_partial<A>(y + i, k, T(0));
    const batch dyv = primitives::load_partial<A>(dy + i, k, T(0));
    const batch g = yv * (dyv - d);
    primitives::store_partial<A>(
        dx + i, k, flat ? g * batch(T(0)) : softplus_gradient<A>(xv, g, l, inv_l));
  }
}

}  // namespace detail

template <class A>
float softplus_l1_table<A>::lambda(double base, double keys, float*) noexcept {
  if (!(base > 1.0 && base < __builtin_huge_val())) return __builtin_nanf("");
  return static_cast<float>(primitives::log_of_sum<A>(keys) / primitives::log_of_sum<A>(base));
}
template <class A>
double softplus_l1_table<A>::lambda(double base, double keys, double*) noexcept {
  if (!(base > 1.0 && base < __builtin_huge_val())) return __builtin_nan("");
  return std::log(keys) / std::log(base);
}

template <class A>
void softplus_l1_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                   std::size_t rows, std::size_t cols, float lambda,
                                   bool zero_masked_rows) noexcept {
  detail::softplus_l1_forward<A>(x, ldx, y, ldy, rows, cols, lambda, zero_masked_rows);
}
template <class A>
void softplus_l1_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                   std::size_t rows, std::size_t cols, double lambda,
                                   bool zero_masked_rows) noexcept {
  detail::softplus_l1_forward<A>(x, ldx, y, ldy, rows, cols, lambda, zero_masked_rows);
}
template <class A>
void softplus_l1_table<A>::backward(const float* x, std::size_t ldx, const float* y,
                                    std::size_t ldy, const float* dy, std::size_t lddy, float* dx,
                                    std::size_t lddx, std::size_t rows, std::size_t cols,
                                    float lambda) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::softplus_l1_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx,
                                        cols, lambda);
}
template <class A>
void softplus_l1_table<A>::backward(const double* x, std::size_t ldx, const double* y,
                                    std::size_t ldy, const double* dy, std::size_t lddy, double* dx,
                                    std::size_t lddx, std::size_t rows, std::size_t cols,
                                    double lambda) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::softplus_l1_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx,
                                        cols, lambda);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(softplus_l1_table)

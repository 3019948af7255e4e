#pragma once
// StableMax and log-StableMax (docs/stablemax.md) for one instruction set A: y = s(x)/Σ s(x) with
// s(x) = x + 1 for x >= 0 and 1/(1 - x) for x < 0. No exponential: one division an element.
//
// The terms are taken relative to the largest one, t = s(x)/s(m) with m the row maximum (s is
// increasing), so the sum never overflows ([3e38, 1e38] -> [0.75, 0.25]) and a row of very
// negative entries keeps its precision (s(-3e38) is subnormal in float, t is not):
//   m >= 0:  t = (x + 1)/(m + 1) for x >= 0,  1/((1 - x)·(m + 1)) for x < 0,
//   m <  0:  t = (1 - m)/(1 - x),
// each one division of two operands that carry one rounding each (about 2 ulp). The sum of t is
// blocked and folded into double; y = t·(1/Σt) with 1/Σt as a two-part factor. -inf entries give
// t = 0 exactly (masked); NaN, +inf and all-masked rows give NaN rows.
//
// log-StableMax: z = log t - log Σt where t >= FLT_MIN (DBL_MIN), and log s(x) - log s(m) - log Σt
// below (log s(x) = log1p(x) for x >= 0, -log1p(-x) for x < 0), where t underflows but z is finite.
//
// Backward passes (both from x and the forward output): with g = 1/(1 + |x|), which is s'(x)/s(x)
// on both sides of 0,
//   StableMax:      dx = g·y·(dy - <dy, y>)
//   log-StableMax:  dx = g·(dy - exp(z)·Σdy)
// Masked entries get 0 (g = 0), which is the true derivative for both.

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
struct stablemax_table {
  // y = stablemax(x), or z = log_stablemax(x) with log set, for a rows × cols block (x == y
  // allowed).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, bool log) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, bool log) noexcept;
  // dx from x, the forward output y (z with log) and dy; any of them may alias dx.
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, bool log) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, bool log) noexcept;
};

namespace detail {

// v with the lanes where x is -inf (masked) set to `value`. Ordinary builds get there by IEEE
// arithmetic alone (1/inf = 0), so this is the identity; under -ffinite-math-only the compiler
// may divide through a reciprocal estimate (1/inf -> NaN) or fold comparisons with inf, so the
// masked lanes are found on their bits and set.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> set_masked_lanes(xsimd::batch<T, A> const& x,
                                                       xsimd::batch<T, A> const& v,
                                                       T value) noexcept {
#if SMAX_FINITE_MATH_ONLY
  using I = smax::detail::integer_of_t<T>;
  using ibatch = xsimd::batch<I, A>;
  const auto masked =
      smax::detail::bitcast<I>(x) ==
      ibatch(static_cast<I>(primitives::sign_bit<T> | primitives::exponent_bits<T>));
  return smax::detail::bitcast<T>(
      xsimd::select(masked, ibatch(smax::detail::bitcast<I>(xsimd::batch<T, A>(value))),
                    smax::detail::bitcast<I>(v)));
#else
  (void)x;
  (void)value;
  return v;
#endif
}

// t = s(x)/s(m) for the row maximum m (see the header comment).
template <class A, class T>
struct stablemax_term {
  using batch = xsimd::batch<T, A>;
  batch m1;          // m + 1 (m >= 0) or 1 - m (m < 0)
  bool nonnegative;  // m >= 0

  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch one(T(1));
    if (nonnegative) {
      const auto positive = x >= batch(T(0));
      const batch num = xsimd::select(positive, x + one, one);
      const batch den = xsimd::select(positive, m1, (one - x) * m1);
      return set_masked_lanes<A>(x, num / den, T(0));
    }
    return set_masked_lanes<A>(x, m1 / (one - x), T(0));
  }
};

// log s(x) = log1p(x) for x >= 0, -log1p(-x) for x < 0.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> stablemax_log_s(xsimd::batch<T, A> const& x) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch a = primitives::log1p_nonnegative<A>(xsimd::abs(x));
  return xsimd::select(x >= batch(T(0)), a, -a);
}

template <class A, class T>
inline void stablemax_row(const T* x, T* y, std::size_t n, bool log, next_rows next) noexcept {
  using batch = xsimd::batch<T, A>;
  const T nan = __builtin_nan("");
  const auto r = primitives::reduce_max<A>(x, n);
  // NaN, +inf, or every entry masked (bit tests: -ffast-math may fold comparisons with inf).
  if (r.has_nan || !primitives::is_finite(r.max)) {
    for (std::size_t i = 0; i < n; ++i) y[i] = nan;
    return;
  }
  const T m = r.max;
  const stablemax_term<A, T> term{batch(m >= T(0) ? m + T(1) : T(1) - m), m >= T(0)};
  if (!log) {
    // y = t·(1/Σt), the factor in two parts (hi + lo): its rounding does not add to the ulps.
    const double sum = primitives::map_sum<A, true>(x, y, n, T(0), term, next.x);
    const double inv = 1.0 / sum;
    const batch hi(static_cast<T>(inv)), lo(static_cast<T>(inv - static_cast<T>(inv)));
    primitives::map<A>(y, y, n,
                       [&](batch const& t) { return smax::detail::mul_add(t, hi, t * lo); });
    return;
  }
  // log: the sum first, then t again from x (one more division an element), so that x is still
  // there where t underflows, in place too.
  const double sum = primitives::map_sum<A, false>(x, y, n, T(0), term, next.x);
  // The logs run on 256-bit registers on AVX-512 (short_row_arch): xsimd's AVX-512 log and
  // log1p select on integer lanes through intrinsics that GCC defines as macros without
  // optimisation, which do not compile at -O0 (a Debug build of a dispatch translation unit).
  using LA = smax::detail::short_row_arch<A>;
  using lbatch = xsimd::batch<T, LA>;
  const stablemax_term<LA, T> lterm{lbatch(term.m1.get(0)), term.nonnegative};
  const lbatch ls(static_cast<T>(primitives::log_of_row_sum<A, T>(sum)));
  const lbatch tiny(std::numeric_limits<T>::min()), log_s_max(stablemax_log_s<LA>(lbatch(m)));
  primitives::map<LA>(x, y, n, [&](lbatch const& v) {
    const lbatch t = lterm(v);
    const auto underflow = t < tiny;
    // The log1p form only for the vectors that need it (t below the smallest normal number).
    if (xsimd::any(underflow))
      return set_masked_lanes<LA>(v,
                                  xsimd::select(underflow, stablemax_log_s<LA>(v) - log_s_max,
                                                primitives::log_normal<LA>(t)) -
                                      ls,
                                  -std::numeric_limits<T>::infinity());
    return primitives::log_normal<LA>(t) - ls;
  });
}

// A StableMax row of at most four registers of A, in registers: the maximum, the terms and their
// sum, y = t·(1/Σt), with one load and one store of each element (stablemax_row's passes cost
// a short row more in loads, loops and calls than in arithmetic). The lanes past n hold -inf,
// whose term is 0. Special rows as stablemax_row.
template <class A, class T, std::size_t Count>
SMAX_FLATTEN inline void stablemax_short_row(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  primitives::register_row<A, T, Count> row(x, n, -std::numeric_limits<T>::infinity());
  const auto lanes = row.lane_max();
  const T m = smax::detail::horizontal_max(lanes.max);
  if (lanes.has_nan || !primitives::is_finite(m)) {  // NaN, +inf, or every entry masked
    for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<T>(__builtin_nan(""));
    return;
  }
  const stablemax_term<A, T> term{batch(m >= T(0) ? m + T(1) : T(1) - m), m >= T(0)};
  const double sum = smax::detail::horizontal_sum(row.transform_sum(term));
  const double inv = 1.0 / sum;
  const batch hi(static_cast<T>(inv)), lo(static_cast<T>(inv - static_cast<T>(inv)));
  row.transform([&](batch const& t) { return smax::detail::mul_add(t, hi, t * lo); });
  row.store(y);
}

template <class A, class T>
SMAX_ALWAYS_INLINE void stablemax_short_row(const T* x, T* y, std::size_t n) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { stablemax_short_row<A, T, decltype(count)::value>(x, y, n); });
}

// StableMax's policy for the row driver (row_driver.hpp). Short StableMax rows take the register
// kernel above; log-StableMax rows, whose logs run on 256-bit registers (stablemax_row), take
// stablemax_row at every length. No flush to zero: a row of entries near -FLT_MAX has only
// subnormal terms 1/(1 - x), which carry the whole result.
template <class A, class T>
struct stablemax_rows {
  static constexpr bool flush_subnormals = false;
  static constexpr bool register_kernels = true;
  bool log;

  bool in_registers() const noexcept { return !log; }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    stablemax_short_row<B>(x, y, n);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    primitives::unroll<K>(
        [&](auto k) SMAX_INLINE_LAMBDA { stablemax_short_row<B>(x + k * ldx, y + k * ldy, n); });
  }

  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    f([this](const T* x, T* y, std::size_t n, next_rows next) {
      stablemax_row<A>(x, y, n, log, next);
    });
  }
};

template <class A, class T>
inline void stablemax_backward_row(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                                   bool log) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch one(T(1));
  if (!log) {
    const double dot =
        primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
    const batch d(static_cast<T>(dot));
    for (std::size_t i = 0; i < n; i += batch::size) {
      const std::size_t k = n - i < batch::size ? n - i : batch::size;
      const batch xv = primitives::load_partial<A>(x + i, k, T(0));
      const batch yv = primitives::load_partial<A>(y + i, k, T(0));
      const batch dyv = primitives::load_partial<A>(dy + i, k, T(0));
      primitives::store_partial<A>(
          dx + i, k, set_masked_lanes<A>(xv, yv * (dyv - d) / (one + xsimd::abs(xv)), T(0)));
    }
    return;
  }
  // Blocked (primitives::map_sum, as log-softmax's): a sequential sum in double let a double row's
  // rounding grow with n (2803 elements: 3.7e-15 of dx, over 16ε).
  const double total = primitives::map_sum<A, false>(dy, static_cast<T*>(nullptr), n, T(0),
                                                     [](batch const& v) { return v; });
  const batch s(static_cast<T>(total));
  for (std::size_t i = 0; i < n; i += batch::size) {
    const std::size_t k = n - i < batch::size ? n - i : batch::size;
    const batch xv = primitives::load_partial<A>(x + i, k, T(0));
    const batch zv = primitives::load_partial<A>(y + i, k, T(0));
    const batch dyv = primitives::load_partial<A>(dy + i, k, T(0));
    const batch p = primitives::exp_nonpositive(zv);
    primitives::store_partial<A>(
        dx + i, k,
        set_masked_lanes<A>(xv, smax::detail::neg_mul_add(p, s, dyv) / (one + xsimd::abs(xv)),
                            T(0)));
  }
}

}  // namespace detail

template <class A>
void stablemax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                 std::size_t rows, std::size_t cols, bool log) noexcept {
  drive_rows<A>(x, ldx, y, ldy, rows, cols, detail::stablemax_rows<A, float>{log});
}
template <class A>
void stablemax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                 std::size_t rows, std::size_t cols, bool log) noexcept {
  drive_rows<A>(x, ldx, y, ldy, rows, cols, detail::stablemax_rows<A, double>{log});
}
template <class A>
void stablemax_table<A>::backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                                  const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                                  std::size_t rows, std::size_t cols, bool log) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::stablemax_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols,
                                      log);
}
template <class A>
void stablemax_table<A>::backward(const double* x, std::size_t ldx, const double* y,
                                  std::size_t ldy, const double* dy, std::size_t lddy, double* dx,
                                  std::size_t lddx, std::size_t rows, std::size_t cols,
                                  bool log) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::stablemax_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols,
                                      log);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(stablemax_table)

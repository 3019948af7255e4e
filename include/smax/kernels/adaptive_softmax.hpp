#pragma once
// Adaptive-temperature softmax (docs/adaptive_softmax.md) for one instruction set A:
//   p = softmax(x),  H = -Σ p_i·log(p_i + 1e-9),  β = max(P(H), 1) if H > 0.5 else 1,
//   y = softmax(β·x) = softmax with temperature 1/β,
// P(H) = -0.037H^4 + 0.481H^3 - 2.3H^2 + 4.917H - 1.791.
//
// One row, fused:
//   1. the maximum m and minimum (softmax's max pass);
//   2. e = exp(x - σ) stored in y (softmax's exponential, σ = m or the power-of-two shift), its sum
//      S and D = Σ e·(x - m), which give the entropy without the 1e-9,
//      H0 = log S - D/S - (m - σ) = -Σ p·log p;
//   3. H differs from H0 by Σ p·log(1 + 1e-9/p), in [0, n·1e-9]. Where H0 shows that β = 1 anyway
//      (H0 below the lower gate, or above the upper gate by more than n·1e-9, each with a margin
//      far beyond H0's rounding), the row is softmax: y = e/S. Otherwise float rows of at most
//      1024 elements take H = H0 - n·1e-9/2 (within 5.2e-7 of H, adaptive_midpoint_max), and the
//      others the entropy pass: the definition's H = log S - Σ e·log(e + 1e-9·S)/S (one log an
//      element); β from H;
//   4. β = 1: y = e/S. β > 1: softmax's exponential pass again with the scale β
//      (exp(β·(x - m)), where x - m overflowing to -inf gives exactly the 0 it should), then y/S'.
// In place (x == y) the stored e would overwrite x, which pass 4 reads: such rows keep nothing in
// y and recompute e where they need it.
//
// β(H) is continuous (P = 1 at both gates, and P(0.5) < 1 makes the H > 0.5 test redundant), and
// |P'| <= 2.5255 where β > 1: an error δ in H moves β by at most 2.5255·δ.
//
// Backward (from x, y and dy), the gradient flowing through β: gu = y ⊙ (dy - <dy, y>),
// dx = β·gu; where β > 1, dβ = <gu, x - m> (= <gu, x>: Σ gu = 0), dH = dβ·P'(H) and
//   dx_i += p_i·dH·(-log(p_i + 1e-9) - p_i/(p_i + 1e-9) + H - Q),  Q = Σ p_j²/(p_j + 1e-9)
// (H - Q = <g, p>/dH, the centring of the definition), evaluated on e = p·S as
//   dx_i += (e_i/S)·dH·(K - log(e_i + 1e-9·S) - e_i/(e_i + 1e-9·S)),  K = log S - H + Q.
// p, S, H and β are recomputed from x by the forward's own arithmetic (the same bits as the long
// rows' forward). Masked entries get 0.

#include <cmath>
#include <cstddef>
#include <limits>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/log.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "../primitives/special.hpp"
#include "row_driver.hpp"

namespace smax {
namespace kernels {

template <class A>
struct adaptive_softmax_table {
  // y = adaptive_softmax(x) for a rows × cols block (x == y allowed).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols) noexcept;
  // dx from x, the forward output y and dy; any of them may alias dx.
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols) noexcept;
};

namespace detail {

// The paper's fit, highest degree first (Horner), and its derivative.
inline double adaptive_polynomial(double h) noexcept {
  return (((-0.037 * h + 0.481) * h - 2.3) * h + 4.917) * h - 1.791;
}
inline double adaptive_polynomial_slope(double h) noexcept {
  return ((-0.148 * h + 1.443) * h - 4.6) * h + 4.917;
}

// The ε of the definition's log(p + ε).
constexpr double adaptive_entropy_eps = 1e-9;

// β and P'(H) for an entropy H; active: β > 1 (the gradient flows through it).
struct adaptive_temperature {
  double beta = 1.0;
  double slope = 0.0;
  double entropy = 0.0;
  bool active = false;
};

inline adaptive_temperature adaptive_temperature_of(double h) noexcept {
  adaptive_temperature t;
  t.entropy = h;
  if (h > 0.5) {
    const double p = adaptive_polynomial(h);
    if (p > 1.0) {
      t.beta = p;
      t.slope = adaptive_polynomial_slope(h);
      t.active = true;
    }
  }
  return t;
}

// Whether the entropy without the 1e-9, h0 = -Σ p·log p (computed as log S - D/S - (m - σ)),
// already decides β = 1: the definition's H lies in [h0 - n·1e-9, h0], and P(H) <= 1 outside
// (0.84858, 5.94453). The margin covers h0's rounding (a few units of T times 1 + log S + |h0|)
// many times over; rows inside it take the exact entropy pass.
inline bool adaptive_certainly_plain(double h0, double log_sum, std::size_t n) noexcept {
  const double margin = 0x1p-12 * (1.0 + std::fabs(log_sum) + std::fabs(h0));
  return h0 + margin < 0.848 || h0 - margin - static_cast<double>(n) * adaptive_entropy_eps > 5.945;
}

// (m - σ) for an exp functor with shift σ (0 for exp_minus_max, in [0, ln 2) for
// exp_minus_shift), in double.
template <class E, class T>
SMAX_ALWAYS_INLINE double adaptive_shift_offset(E const& e, T max) noexcept {
  const primitives::log_shift s = e.shift();
  return (static_cast<double>(max) - s.hi) - s.lo;
}

// e·(x - m) for a batch x and its exp values e: x - m below the lowest finite value (overflow
// to -inf, masked lanes) is clamped, where e = 0, so that the product is 0 and not NaN.
template <class A, class T>
struct adaptive_dot_term {
  using batch = xsimd::batch<T, A>;
  batch neg_max, lowest;
  explicit adaptive_dot_term(T max) noexcept
      : neg_max(-max), lowest(std::numeric_limits<T>::lowest()) {}
  SMAX_ALWAYS_INLINE batch operator()(batch const& v, batch const& e) const noexcept {
    return e * xsimd::max(v + neg_max, lowest);
  }
};

struct adaptive_sums {
  double sum;  // S = Σ e
  double dot;  // D = Σ e·(x - m)
};

// Pass 2: e = f(x) stored in y (when Store), S = Σ e and D = Σ e·(x - m), blocked as map_sum.
template <class A, bool Store, class T, class F>
SMAX_FLATTEN inline adaptive_sums adaptive_exp_sums(const T* x, T* y, std::size_t n, T max,
                                                    F const& f, next_rows next) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const adaptive_dot_term<A, T> term(max);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  T* const write_ahead = Store && next.y ? y + next.y : nullptr;
  double total = 0.0, dot = 0.0;
  std::size_t i = 0;
  while (i + 4 * width <= n) {
    const std::size_t block_end =
        n - i > primitives::sum_block<T, A> ? i + primitives::sum_block<T, A> : n;
    batch s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0)), d0(T(0)), d1(T(0));
    for (; i + 4 * width <= block_end; i += 4 * width) {
      if (next.x) primitives::prefetch<A>(x + i + next.x, 4 * width * sizeof(T));
      if (write_ahead) primitives::prefetch_for_write<A>(write_ahead + i, 4 * width * sizeof(T));
      const batch v0 = batch::load_unaligned(x + i);
      const batch v1 = batch::load_unaligned(x + i + width);
      const batch v2 = batch::load_unaligned(x + i + 2 * width);
      const batch v3 = batch::load_unaligned(x + i + 3 * width);
      const batch e0 = f(v0), e1 = f(v1), e2 = f(v2), e3 = f(v3);
      if (Store) {
        e0.store_unaligned(y + i);
        e1.store_unaligned(y + i + width);
        e2.store_unaligned(y + i + 2 * width);
        e3.store_unaligned(y + i + 3 * width);
      }
      s0 += e0;
      s1 += e1;
      s2 += e2;
      s3 += e3;
      d0 += term(v0, e0) + term(v1, e1);
      d1 += term(v2, e2) + term(v3, e3);
    }
    total += smax::detail::horizontal_sum((s0 + s1) + (s2 + s3));
    dot += smax::detail::horizontal_sum(d0 + d1);
  }
  batch s(T(0)), d(T(0));
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
    const batch e = f(v);
    if (Store) e.store_unaligned(y + i);
    s += e;
    d += term(v, e);
  }
  if (i < n) {
    const batch v = primitives::load_partial<A>(x + i, n - i, neg_inf);
    const batch e = primitives::zero_from<A>(f(v), n - i);
    if (Store) primitives::store_partial<A>(y + i, n - i, e);
    s += e;
    d += term(v, e);
  }
  return {total + smax::detail::horizontal_sum(s), dot + smax::detail::horizontal_sum(d)};
}

// e·log(e + r) for the entropy pass; e = 0 (masked lanes, padding) gives 0 (r > 0 is normal).
template <class A, class T>
struct adaptive_entropy_term {
  using batch = xsimd::batch<T, A>;
  batch r;
  explicit adaptive_entropy_term(double r_) noexcept : r(static_cast<T>(r_)) {}
  SMAX_ALWAYS_INLINE batch operator()(batch const& e) const noexcept {
    return e * primitives::log_normal<A>(e + r);
  }
};

template <class A, class T>
inline void adaptive_fill(T* y, std::size_t n, T value) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

// Float rows of at most this many elements take H = H0 - n·1e-9/2 instead of the entropy pass:
// the definition's H lies in [H0 - n·1e-9, H0], so the midpoint is within n·0.5e-9 <= 5.2e-7 of
// it, about one unit in the last place of a float H in the range where β > 1 (and far inside the
// entropy's error bound, 16ε·(1 + ln n)). Double rows that H0 does not decide always take the
// entropy pass: n·0.5e-9 is never that small beside double's unit.
template <class T>
constexpr std::size_t adaptive_midpoint_max = sizeof(T) == 4 ? 1024 : 0;

// log S: inline for float (log-softmax's log_of_sum, 2^-32 relative), libm's for double.
template <class A, class T>
SMAX_ALWAYS_INLINE double adaptive_log_sum(double s) noexcept {
  if constexpr (sizeof(T) == 4)
    return primitives::log_of_sum<A>(s);
  else
    return std::log(s);
}

// The temperature of a row whose pass 2 gave `sums` (offset = m - σ); entropy_sum() runs the
// entropy pass and returns Σ e·log(e + 1e-9·S) (only called where H0 does not decide and the row
// is too long for the midpoint).
template <class T, class F>
SMAX_ALWAYS_INLINE adaptive_temperature adaptive_decide(adaptive_sums sums, double log_sum,
                                                        double offset, std::size_t n,
                                                        F&& entropy_sum) noexcept {
  const double inv_sum = 1.0 / sums.sum;
  const double h0 = log_sum - sums.dot * inv_sum - offset;
  if (adaptive_certainly_plain(h0, log_sum, n)) return adaptive_temperature{};
  if (n <= adaptive_midpoint_max<T>)
    return adaptive_temperature_of(h0 - 0.5 * adaptive_entropy_eps * static_cast<double>(n));
  return adaptive_temperature_of(log_sum - entropy_sum() * inv_sum);
}

// Rows longer than four registers (see the header comment). NaN is found through the sum, as
// softmax's three_pass_row does.
template <class A, class T>
inline void adaptive_softmax_row(const T* x, T* y, std::size_t n, next_rows next) noexcept {
  const T nan = static_cast<T>(__builtin_nan("")), neg_inf = -std::numeric_limits<T>::infinity();
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (!primitives::is_finite(r.max)) return adaptive_fill<A>(y, n, nan);  // NaN, +inf, all masked
  const bool store = x != y;
  const double beta =
      primitives::with_shifted_exp<A, T, false>(r.max, r.min, T(1), [&](auto const& e) -> double {
        const adaptive_sums sums = store ? adaptive_exp_sums<A, true>(x, y, n, r.max, e, next)
                                         : adaptive_exp_sums<A, false>(x, y, n, r.max, e, next);
        if (primitives::is_nan(sums.sum) || nan_unseen_by_sum<A>(x, n)) {
          adaptive_fill<A>(y, n, nan);
          return 0.0;
        }
        const double log_sum = adaptive_log_sum<A, T>(sums.sum);
        const adaptive_entropy_term<A, T> entropy_term(adaptive_entropy_eps * sums.sum);
        const adaptive_temperature t =
            adaptive_decide<T>(sums, log_sum, adaptive_shift_offset(e, r.max), n, [&] {
              using batch = xsimd::batch<T, A>;
              if (store)
                return primitives::map_sum<A, false>(y, static_cast<T*>(nullptr), n, T(0),
                                                     entropy_term);
              return primitives::map_sum<A, false>(
                  x, static_cast<T*>(nullptr), n, neg_inf,
                  [&](batch const& v) SMAX_INLINE_LAMBDA { return entropy_term(e(v)); });
            });
        if (t.active) return t.beta;
        const primitives::normalizer<A, T> normalize(1.0, sums.sum);
        if (store)
          primitives::map<A>(y, y, n, normalize);
        else
          primitives::map<A>(x, y, n, [&](xsimd::batch<T, A> const& v) SMAX_INLINE_LAMBDA {
            return normalize(e(v));
          });
        return 1.0;
      });
  if (!(beta > 1.0)) return;  // written (softmax, or a NaN row)
  const T b = static_cast<T>(beta);
  const double s = primitives::with_shifted_exp<A, T, true>(r.max, r.min, b, [&](auto const& e) {
    return primitives::map_sum<A, true>(x, y, n, neg_inf, e);
  });
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(1.0, s));
}

// A row of at most four registers of A, in registers: the same steps, with one load and one store
// of each element. The lanes past n hold -inf (masked). n = 1 gives exactly [1].
template <class A, class T, std::size_t Count>
SMAX_FLATTEN inline void adaptive_softmax_short_row(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  primitives::register_row<A, T, Count> row(x, n, neg_inf);
  const auto lanes = row.lane_max();
  const T max = smax::detail::horizontal_max(lanes.max);
  if (lanes.has_nan || !primitives::is_finite(max)) {  // NaN, +inf, or every entry masked
    for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<T>(__builtin_nan(""));
    return;
  }
  if (n == 1) {
    y[0] = T(1);
    return;
  }
  const double beta =
      primitives::with_short_row_exp<A, T, false, Count>(max, T(1), [&](auto const& ex) -> double {
        using E = std::decay_t<decltype(ex)>;
        const adaptive_dot_term<A, T> term(max);
        batch e[Count], d[Count];
        primitives::unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA {
          e[j] = ex(row.v[j]);
          d[j] = term(row.v[j], e[j]);
        });
        const adaptive_sums sums{smax::detail::horizontal_sum(primitives::tree_sum(e)),
                                 smax::detail::horizontal_sum(primitives::tree_sum(d))};
        const double log_sum = adaptive_log_sum<A, T>(sums.sum);
        const adaptive_temperature t =
            adaptive_decide<T>(sums, log_sum, adaptive_shift_offset(ex, max), n, [&] {
              const adaptive_entropy_term<A, T> entropy_term(adaptive_entropy_eps * sums.sum);
              batch l[Count];
              primitives::unroll<Count>([&](auto j)
                                            SMAX_INLINE_LAMBDA { l[j] = entropy_term(e[j]); });
              return smax::detail::horizontal_sum(primitives::tree_sum(l));
            });
        if (t.active) return t.beta;
        const primitives::short_normalizer<A, T, E::exact_max> normalize(sums.sum);
        primitives::unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA { row.v[j] = normalize(e[j]); });
        return 1.0;
      });
  if (beta > 1.0) {
    const T b = static_cast<T>(beta);
    primitives::with_short_row_exp<A, T, true, Count>(max, b, [&](auto const& ex) {
      using E = std::decay_t<decltype(ex)>;
      const double sum = smax::detail::horizontal_sum(row.transform_sum(ex));
      row.transform(primitives::short_normalizer<A, T, E::exact_max>(sum));
    });
  }
  row.store(y);
}

template <class A, class T>
SMAX_ALWAYS_INLINE void adaptive_softmax_short_row(const T* x, T* y, std::size_t n) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { adaptive_softmax_short_row<A, T, decltype(count)::value>(x, y, n); });
}

// The policy for the row driver (row_driver.hpp): the register kernel for short rows, the fused
// passes for longer ones. Subnormal results may be flushed, as softmax's (β <= 2.43 is far below
// flush_max_scale); a flushed e below FLT_MIN changes H by less than 1e-36.
template <class A, class T>
struct adaptive_softmax_rows {
  static constexpr bool flush_subnormals = true;
  static constexpr bool register_kernels = true;

  std::size_t flush_elements(std::size_t elements) const noexcept { return elements; }
  bool in_registers() const noexcept { return true; }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    adaptive_softmax_short_row<B>(x, y, n);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
      adaptive_softmax_short_row<B>(x + k * ldx, y + k * ldy, n);
    });
  }
  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    f([](const T* x, T* y, std::size_t n, next_rows next) {
      adaptive_softmax_row<A>(x, y, n, next);
    });
  }
};

// Sum over i < n of f(a[i], b[i], c[i]) (blocked as map_sum); the tail pads every input with 0,
// which f must map to 0.
template <class A, class T, class F>
SMAX_FLATTEN inline double adaptive_zip3_sum(const T* a, const T* b, const T* c, std::size_t n,
                                             F const& f) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  double total = 0.0;
  std::size_t i = 0;
  while (i + 2 * width <= n) {
    const std::size_t block_end =
        n - i > primitives::sum_block<T, A> ? i + primitives::sum_block<T, A> : n;
    batch s0(T(0)), s1(T(0));
    for (; i + 2 * width <= block_end; i += 2 * width) {
      s0 += f(batch::load_unaligned(a + i), batch::load_unaligned(b + i),
              batch::load_unaligned(c + i));
      s1 += f(batch::load_unaligned(a + i + width), batch::load_unaligned(b + i + width),
              batch::load_unaligned(c + i + width));
    }
    total += smax::detail::horizontal_sum(s0 + s1);
  }
  batch s(T(0));
  for (; i + width <= n; i += width)
    s +=
        f(batch::load_unaligned(a + i), batch::load_unaligned(b + i), batch::load_unaligned(c + i));
  if (i < n)
    s += f(primitives::load_partial<A>(a + i, n - i, T(0)),
           primitives::load_partial<A>(b + i, n - i, T(0)),
           primitives::load_partial<A>(c + i, n - i, T(0)));
  return total + smax::detail::horizontal_sum(s);
}

// out[i] = f(a[i], b[i], c[i]) for i < n; any of the pointers may alias (element by element).
template <class A, class T, class F>
SMAX_FLATTEN inline void adaptive_zip3_map(const T* a, const T* b, const T* c, T* out,
                                           std::size_t n, F const& f) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  std::size_t i = 0;
  for (; i + width <= n; i += width)
    f(batch::load_unaligned(a + i), batch::load_unaligned(b + i), batch::load_unaligned(c + i))
        .store_unaligned(out + i);
  if (i < n)
    primitives::store_partial<A>(out + i, n - i,
                                 f(primitives::load_partial<A>(a + i, n - i, T(0)),
                                   primitives::load_partial<A>(b + i, n - i, T(0)),
                                   primitives::load_partial<A>(c + i, n - i, T(0))));
}

// One row's backward pass (see the header comment). The padding of the tails is 0 in x: its
// e is exp(-σ)-ish, nonzero, so every term that uses e is multiplied by y (0 there) or e is
// selected away where the padding could reach a sum.
template <class A, class T>
inline void adaptive_softmax_backward_row(const T* x, const T* y, const T* dy, T* dx,
                                          std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  const T nan = static_cast<T>(__builtin_nan("")), neg_inf = -std::numeric_limits<T>::infinity();
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (!primitives::is_finite(r.max)) return adaptive_fill<A>(dx, n, nan);
  // <dy, y>, before dx (which may alias y or dy) is written.
  const double dot_y =
      primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
  const batch c(static_cast<T>(dot_y));
  primitives::with_shifted_exp<A, T, false>(r.max, r.min, T(1), [&](auto const& e) {
    const adaptive_sums sums =
        adaptive_exp_sums<A, false>(x, static_cast<T*>(nullptr), n, r.max, e, next_rows{});
    if (primitives::is_nan(sums.sum) || nan_unseen_by_sum<A>(x, n))
      return adaptive_fill<A>(dx, n, nan);
    const double log_sum = adaptive_log_sum<A, T>(sums.sum);
    const adaptive_entropy_term<A, T> entropy_term(adaptive_entropy_eps * sums.sum);
    const adaptive_temperature t =
        adaptive_decide<T>(sums, log_sum, adaptive_shift_offset(e, r.max), n, [&] {
          return primitives::map_sum<A, false>(
              x, static_cast<T*>(nullptr), n, neg_inf,
              [&](batch const& v) SMAX_INLINE_LAMBDA { return entropy_term(e(v)); });
        });
    const batch beta(static_cast<T>(t.beta));
    if (!t.active) {
      // softmax's VJP (β = 1)
      primitives::zip_map<A>(y, dy, dx, n,
                             [&](batch const& yv, batch const& d) { return yv * (d - c); });
      return;
    }
    // dβ = Σ y·(dy - c)·(x - m), where y = 0 contributes nothing (masked entries, padding).
    const adaptive_dot_term<A, T> term(r.max);
    const double dbeta = adaptive_zip3_sum<A>(
        x, y, dy, n, [&](batch const& v, batch const& yv, batch const& d) SMAX_INLINE_LAMBDA {
          return xsimd::select(yv == batch(T(0)), batch(T(0)), term(v, yv * (d - c)));
        });
    const double dh = dbeta * t.slope;
    // Q·S = Σ e²/(e + r); masked lanes and padding give e = 0 (padding: x = -inf).
    const batch rr(static_cast<T>(adaptive_entropy_eps * sums.sum));
    const double q_sum = primitives::map_sum<A, false>(x, static_cast<T*>(nullptr), n, neg_inf,
                                                       [&](batch const& v) SMAX_INLINE_LAMBDA {
                                                         const batch ev = e(v);
                                                         return ev * (ev / (ev + rr));
                                                       });
    const double k = log_sum - t.entropy + q_sum / sums.sum;
    const batch kk(static_cast<T>(k)), scale(static_cast<T>(dh / sums.sum));
    adaptive_zip3_map<A>(x, y, dy, dx, n,
                         [&](batch const& v, batch const& yv, batch const& d) SMAX_INLINE_LAMBDA {
                           const batch ev = xsimd::select(v == batch(neg_inf), batch(T(0)), e(v));
                           const batch er = ev + rr;
                           const batch g = kk - primitives::log_normal<A>(er) - ev / er;
                           return smax::detail::mul_add(beta, yv * (d - c), (ev * scale) * g);
                         });
  });
}

}  // namespace detail

template <class A>
void adaptive_softmax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                        std::size_t rows, std::size_t cols) noexcept {
  drive_rows<A>(x, ldx, y, ldy, rows, cols, detail::adaptive_softmax_rows<A, float>{});
}
template <class A>
void adaptive_softmax_table<A>::forward(const double* x, std::size_t ldx, double* y,
                                        std::size_t ldy, std::size_t rows,
                                        std::size_t cols) noexcept {
  drive_rows<A>(x, ldx, y, ldy, rows, cols, detail::adaptive_softmax_rows<A, double>{});
}
template <class A>
void adaptive_softmax_table<A>::backward(const float* x, std::size_t ldx, const float* y,
                                         std::size_t ldy, const float* dy, std::size_t lddy,
                                         float* dx, std::size_t lddx, std::size_t rows,
                                         std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::adaptive_softmax_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx,
                                             cols);
}
template <class A>
void adaptive_softmax_table<A>::backward(const double* x, std::size_t ldx, const double* y,
                                         std::size_t ldy, const double* dy, std::size_t lddy,
                                         double* dx, std::size_t lddx, std::size_t rows,
                                         std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::adaptive_softmax_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx,
                                             cols);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(adaptive_softmax_table)

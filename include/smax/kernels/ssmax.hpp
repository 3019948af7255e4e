#pragma once
// Scalable-Softmax (docs/ssmax.md): y = softmax(λ·x), λ = s·ln n + b, on the softmax core. λ > 0 is
// softmax with 1/T = λ (the pre-max scale of the three-pass / online kernels: the same cost as
// softmax with a temperature); λ < 0 is softmax(|λ|·(-x)) (the max of -x is the min of x), with
// masks kept; λ = 0 is uniform over the unmasked entries.

#include <cmath>

#include "../primitives/log.hpp"
#include "softmax.hpp"

namespace smax {
namespace kernels {

template <class A>
struct ssmax_table {
  // λ = s·ln(n) + bias rounded once to the element type (float: ln n inline, within 2^-32
  // relative; double: libm's log). Here, not in the API layer, so that the runtime form computes
  // it with the same instruction set (and so the same bits) as the header-only form.
  static float lambda(double s, double bias, double n, float*) noexcept;
  static double lambda(double s, double bias, double n, double*) noexcept;
  // y = softmax(λ·x) for a rows × cols block (x == y allowed); flags as softmax_table<A>::forward.
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, float lambda, unsigned flags) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, double lambda, unsigned flags) noexcept;
  // dx = λ·y ⊙ (dy - <dy, y>); when dlambda is not null, adds sum_i x_i·y_i·(dy_i - <dy, y>) over
  // the unmasked entries of every row to *dlambda (the gradient of λ).
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, float lambda, double* dlambda) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, double lambda, double* dlambda) noexcept;
};

namespace detail {

// λ = 0: 1/(number of unmasked entries) each, masked 0; the E-rules otherwise (NaN or +inf:
// NaN row; all masked: NaN, or 0 with zero_masked_rows).
template <class A, class T>
inline void ssmax_uniform_row(const T* x, T* y, std::size_t n, unsigned flags) noexcept {
  std::size_t count = 0;
  bool bad = false;
  for (std::size_t i = 0; i < n; ++i) {
    bad = bad || primitives::is_nan(x[i]) || primitives::is_pos_inf(x[i]);
    count += !primitives::is_neg_inf(x[i]);
  }
  if (bad || count == 0) {
    const T fill =
        !bad && (flags & flag_zero_masked_rows) ? T(0) : static_cast<T>(__builtin_nan(""));
    fill_row<A>(y, n, fill);
    return;
  }
  const T p = static_cast<T>(1.0 / static_cast<double>(count));
  for (std::size_t i = 0; i < n; ++i) y[i] = primitives::is_neg_inf(x[i]) ? T(0) : p;
}

// λ <= 0 or not finite (ssmax_rows).
template <class A, class T>
inline void ssmax_rows_nonpositive(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                   std::size_t rows, std::size_t cols, T lambda,
                                   unsigned flags) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = __builtin_huge_val();
  if (!primitives::is_finite(lambda)) {
    for (std::size_t r = 0; r < rows; ++r)
      fill_row<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
    return;
  }
  if (lambda == T(0)) {
    for (std::size_t r = 0; r < rows; ++r)
      ssmax_uniform_row<A>(x + r * ldx, y + r * ldy, cols, flags);
    return;
  }
  // λ < 0: y = -x on the finite entries (±inf and NaN keep their meaning: -inf stays a mask,
  // +inf and NaN still make the row NaN), then softmax in place with 1/T = -λ.
  for (std::size_t r = 0; r < rows; ++r) {
    primitives::map<A>(x + r * ldx, y + r * ldy, cols, [inf](batch const& v) {
      return xsimd::select(xsimd::abs(v) == batch(inf), v, -v);
    });
  }
  forward_rows_scaled<A>(y, ldy, y, ldy, rows, cols, -lambda, lambda != T(-1), flags,
                         algorithm_id::automatic);
}

// Inlined into the table's entry points with softmax's forward_rows_scaled for λ > 0 (finite),
// so that SSMax pays no call level more than softmax; other λ out of line.
template <class A, class T>
SMAX_ALWAYS_INLINE void ssmax_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                   std::size_t rows, std::size_t cols, T lambda,
                                   unsigned flags) noexcept {
  if (lambda > T(0) && lambda < T(__builtin_huge_val()))
    return forward_rows_scaled<A>(x, ldx, y, ldy, rows, cols, lambda, lambda != T(1), flags,
                                  algorithm_id::automatic);
  ssmax_rows_nonpositive<A>(x, ldx, y, ldy, rows, cols, lambda, flags);
}

template <class A, class T>
inline void ssmax_backward_rows(const T* x, std::size_t ldx, const T* y, std::size_t ldy,
                                const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                std::size_t rows, std::size_t cols, T lambda,
                                double* dlambda) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = __builtin_huge_val();
  for (std::size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * ldx;
    const T* yr = y + r * ldy;
    const T* dyr = dy + r * lddy;
    T* dxr = dx + r * lddx;
    const double dot =
        primitives::zip_sum<A>(yr, dyr, cols, [](batch const& a, batch const& b) { return a * b; });
    if (dlambda) {  // before dx is written: dx may be dy
      double g = 0;
      for (std::size_t i = 0; i < cols; ++i)
        if (!primitives::is_neg_inf(xr[i]))
          g += static_cast<double>(xr[i]) * static_cast<double>(yr[i]) *
               (static_cast<double>(dyr[i]) - dot);
      *dlambda += g;
    }
    const batch d(static_cast<T>(dot)), l(lambda);
    primitives::zip_map<A>(yr, dyr, dxr, cols,
                           [&](batch const& a, batch const& b) { return (a * (b - d)) * l; });
  }
}

}  // namespace detail

template <class A>
float ssmax_table<A>::lambda(double s, double bias, double n, float*) noexcept {
  return static_cast<float>(s * primitives::log_of_sum<A>(n) + bias);
}
template <class A>
double ssmax_table<A>::lambda(double s, double bias, double n, double*) noexcept {
  return s * std::log(n) + bias;
}

template <class A>
void ssmax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                             std::size_t rows, std::size_t cols, float lambda,
                             unsigned flags) noexcept {
  detail::ssmax_rows<A>(x, ldx, y, ldy, rows, cols, lambda, flags);
}
template <class A>
void ssmax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                             std::size_t rows, std::size_t cols, double lambda,
                             unsigned flags) noexcept {
  detail::ssmax_rows<A>(x, ldx, y, ldy, rows, cols, lambda, flags);
}
template <class A>
void ssmax_table<A>::backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                              const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                              std::size_t rows, std::size_t cols, float lambda,
                              double* dlambda) noexcept {
  detail::ssmax_backward_rows<A>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, lambda, dlambda);
}
template <class A>
void ssmax_table<A>::backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                              const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                              std::size_t rows, std::size_t cols, double lambda,
                              double* dlambda) noexcept {
  detail::ssmax_backward_rows<A>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, lambda, dlambda);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(ssmax_table)

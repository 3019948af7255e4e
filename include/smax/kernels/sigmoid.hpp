#pragma once
// Sigmoid and sigmoid attention (docs/sigmoid.md), elementwise: y = σ(x + b), dx = dy·y·(1 - y).
// σ(t) = 1/(1 + e) for t >= 0 and e/(1 + e) for t < 0 with e = exp(-|t|), so the exponential
// never overflows and 1 - σ is never formed by subtraction.

#include "../primitives/exp.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/special.hpp"

namespace smax {
namespace kernels {

// 1/s for s in [1, 2], accurate enough for the Newton correction below (relative error well under
// 2^-24 after it): on AVX-512 and AVX2 (float) a hardware estimate (2^-14, or 2^-12 refined once)
// instead of a division, which is the slowest instruction of the kernel; elsewhere a division.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> reciprocal(xsimd::batch<T, A> const& s) noexcept {
  using batch = xsimd::batch<T, A>;
#if defined(SMAX_X86_REDUCTIONS)
  if constexpr (sizeof(T) == 4 && sizeof(batch) == 64) {
    return batch(_mm512_rcp14_ps(s));
  } else if constexpr (sizeof(T) == 4 && sizeof(batch) == 32 &&
                       smax::detail::has_native_fma<A>::value) {
    const batch r0(_mm256_rcp_ps(s));
    return smax::detail::mul_add(r0, smax::detail::neg_mul_add(s, r0, batch(T(1))), r0);
  }
#endif
  return batch(T(1)) / s;
}

// σ(t + t_err) for t = x + b rounded and t_err its exact rounding error. With e = exp(-|t|)
// (<= 1 ulp), 1 + e is carried as s + s_err (exact: 1 >= e), and num/(s + s_err) is one division
// refined by one Newton step, so the quotient adds 0.5 ulp instead of the 1 ulp that rounding
// 1 + e would cost.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> sigmoid_of(xsimd::batch<T, A> const& t,
                                                 xsimd::batch<T, A> const& t_err) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch one(T(1));
  const auto negative = t < batch(T(0));
  // exp(-|t + t_err|): the error term follows the sign flip. NaN stays NaN, -inf -> 0.
  const batch e =
      primitives::exp_nonpositive(-xsimd::abs(t), xsimd::select(negative, t_err, -t_err));
  const batch s = one + e;
  const batch s_err = (one - s) + e;
  const batch num = xsimd::select(negative, e, one);
  const batch r = reciprocal<A>(s);
  const batch q = num * r;
  const batch residual = smax::detail::neg_mul_add(q, s_err, smax::detail::neg_mul_add(q, s, num));
  return smax::detail::mul_add(r, residual, q);
}

// y = σ(x + bias) with x + bias carried exactly (TwoSum) into the exponential: rounding it alone
// would cost up to |x + b|/2 ulp.
template <class A, class T>
inline void sigmoid_row(const T* x, T* y, std::size_t n, T bias) noexcept {
  using batch = xsimd::batch<T, A>;
  if (bias == T(0)) {
    primitives::map<A>(x, y, n, [](batch const& v) {
      return primitives::keep_nan(v, sigmoid_of<A>(v, batch(T(0))));
    });
  } else {
    const batch b(bias);
    primitives::map<A>(x, y, n, [&](batch const& v) {
      const batch t = v + b;
      const batch b_part = t - v;
      const batch err = (v - (t - b_part)) + (b - b_part);
      return primitives::keep_nan(v, sigmoid_of<A>(t, err));
    });
  }
}

// dx = dy·y·(1 - y) (PyTorch's formula). With an FMA, y·(1 - y) = y - y·y is one rounding for
// every y, so dx is within 1.5 ulp of the value for the given y. Without one (SSE2) it is
// y·(1 - y): 1 - y is exact for y >= 1/2 but rounded below, so up to 2.5 ulp there.
template <class A, class T>
inline void sigmoid_backward_row(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  primitives::zip_map<A>(y, dy, dx, n, [](batch const& s, batch const& g) {
    if constexpr (smax::detail::has_native_fma<A>::value)
      return g * smax::detail::neg_mul_add(s, s, s);
    else
      return g * (s * (batch(T(1)) - s));
  });
}

// The sigmoid kernels for one instruction set A (see table.hpp for why members are out of
// class and not inline).
template <class A>
struct sigmoid_table {
  // y = σ(x + bias) for a rows × cols block (x == y allowed).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, float bias) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, double bias) noexcept;
  static void backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                       float* dx, std::size_t lddx, std::size_t rows, std::size_t cols) noexcept;
  static void backward(const double* y, std::size_t ldy, const double* dy, std::size_t lddy,
                       double* dx, std::size_t lddx, std::size_t rows, std::size_t cols) noexcept;
};

namespace detail {

template <class A, class T>
inline void sigmoid_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                         std::size_t cols, T bias) noexcept {
  if (ldx == cols && ldy == cols) return sigmoid_row<A>(x, y, rows * cols, bias);  // contiguous
  for (std::size_t r = 0; r < rows; ++r) sigmoid_row<A>(x + r * ldx, y + r * ldy, cols, bias);
}

template <class A, class T>
inline void sigmoid_backward_rows(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                  std::size_t lddx, std::size_t rows, std::size_t cols) noexcept {
  if (ldy == cols && lddy == cols && lddx == cols)
    return sigmoid_backward_row<A>(y, dy, dx, rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    sigmoid_backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols);
}

}  // namespace detail

template <class A>
void sigmoid_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                               std::size_t rows, std::size_t cols, float bias) noexcept {
  detail::sigmoid_rows<A>(x, ldx, y, ldy, rows, cols, bias);
}
template <class A>
void sigmoid_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                               std::size_t rows, std::size_t cols, double bias) noexcept {
  detail::sigmoid_rows<A>(x, ldx, y, ldy, rows, cols, bias);
}
template <class A>
void sigmoid_table<A>::backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                                float* dx, std::size_t lddx, std::size_t rows,
                                std::size_t cols) noexcept {
  detail::sigmoid_backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols);
}
template <class A>
void sigmoid_table<A>::backward(const double* y, std::size_t ldy, const double* dy,
                                std::size_t lddy, double* dx, std::size_t lddx, std::size_t rows,
                                std::size_t cols) noexcept {
  detail::sigmoid_backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(sigmoid_table)

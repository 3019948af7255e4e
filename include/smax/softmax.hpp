#pragma once
// softmax: y_i = exp(x_i/T) / sum_j exp(x_j/T)  (spec §1, §3-§5).
//
// Evaluated as exp((x_i - m)/T) / sum with m the row maximum, so nothing overflows (the largest
// term is exactly 1), with the rounding error of x_i - m carried into the exponential and the sum
// accumulated in blocks folded into double.
//
// Accuracy (float, T = 1, every algorithm and instruction set, checked by tests/softmax_test.cpp
// against a long-double reference): relative error <= 1e-6 for every output >= FLT_MIN, for
// rows of any length up to 10^6 and spreads of 20 and 200 (offsets ±1000); the sum of a
// 16M-element row is within 1e-5 of 1. With T != 1 the rounding of 1/T and of (x - m)·(1/T)
// adds up to |x - m|/T·2^-22. double: relative error <= 1e-14.
//
// Bad input (spec §0.2): n = 0 does nothing. -inf entries are masked: output 0, excluded from
// every reduction. A row of only -inf gives NaN (or 0 with zero_masked_rows). Any NaN or +inf
// gives a NaN row. Finite values up to ±FLT_MAX give the exact result ([3e38, -3e38, 1e38] ->
// [1, 0, 0]). Outputs below FLT_MIN may be flushed to 0.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "algorithm.hpp"
#include "detail/api.hpp"

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#define SMAX_HAS_SPAN 1
#endif

SMAX_BEGIN_NAMESPACE

// Softmax of one row of n elements with the algorithm best for n: three-pass up to 4 MiB (by 8 KiB
// blocks beyond 16 KiB), the blocked online normaliser beyond.
template <class T, detail::if_real_t<T> = 0>
inline void softmax(const T* x, T* y, std::size_t n, softmax_options const& opts = {}) noexcept {
  api::forward<api::default_table>(x, n, y, n, 1, n, false, opts, kernels::algorithm_id::automatic);
}

// Softmax with an explicit algorithm: smax::three_pass, smax::online or smax::two_pass. All give
// the same result within the stated bound. two_pass computes rows holding values beyond
// |x/T| > 2^23 (1024 without FMA) with the three-pass algorithm.
template <class Algorithm, class T, detail::if_real_t<T> = 0>
inline auto softmax(Algorithm algorithm, const T* x, T* y, std::size_t n,
                    softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  api::forward<api::default_table>(x, n, y, n, 1, n, false, opts, api::algorithm_of(algorithm));
}

// Softmax of each row of a row-major rows × cols matrix whose rows start ld elements apart
// (ld >= cols), for x and y alike.
template <class T, detail::if_real_t<T> = 0>
inline void softmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                         softmax_options const& opts = {}) noexcept {
  api::forward<api::default_table>(x, ld, y, ld, rows, cols, false, opts,
                                   kernels::algorithm_id::automatic);
}

template <class Algorithm, class T, detail::if_real_t<T> = 0>
inline auto softmax_rows(Algorithm algorithm, const T* x, T* y, std::size_t rows,
                         std::size_t cols, std::size_t ld, softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  api::forward<api::default_table>(x, ld, y, ld, rows, cols, false, opts,
                                   api::algorithm_of(algorithm));
}

// Backward pass: dx = (1/T)·y ⊙ (dy - <dy, y>) for y = softmax(x) (spec §1(4)). Masked entries
// (y = 0) get 0; sum(dx) = 0. Any of y, dy, dx may be the same array.
// Error: |dx_i - dx*_i| <= 2^-19·(1/T)·y_i·(|dy_i| + sum_j |dy_j·y_j|) (float; 2^-48 for double):
// <dy, y> is summed with an error relative to the sum of its terms' magnitudes.
template <class T, detail::if_real_t<T> = 0>
inline void softmax_backward(const T* y, const T* dy, T* dx, std::size_t n,
                             softmax_options const& opts = {}) noexcept {
  api::backward<api::default_table>(y, n, dy, n, dx, n, 1, n, false, opts);
}

template <class T, detail::if_real_t<T> = 0>
inline void softmax_backward_rows(const T* y, const T* dy, T* dx, std::size_t rows,
                                  std::size_t cols, std::size_t ld,
                                  softmax_options const& opts = {}) noexcept {
  api::backward<api::default_table>(y, ld, dy, ld, dx, ld, rows, cols, false, opts);
}

#if defined(SMAX_HAS_SPAN)
// std::span forms (C++20): x.size() == y.size() is a precondition.
inline void softmax(std::span<const float> x, std::span<float> y,
                    softmax_options const& opts = {}) noexcept {
  SMAX_ASSERT(x.size() == y.size());
  softmax(x.data(), y.data(), x.size(), opts);
}
inline void softmax(std::span<const double> x, std::span<double> y,
                    softmax_options const& opts = {}) noexcept {
  SMAX_ASSERT(x.size() == y.size());
  softmax(x.data(), y.data(), x.size(), opts);
}
#endif

SMAX_END_NAMESPACE

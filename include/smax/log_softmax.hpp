#pragma once
// log_softmax: z_i = x_i/T - log sum_j exp(x_j/T)  (spec §2).
//
// Evaluated as (x_i - m)/T - log s with s = sum exp((x_j - m)/T) in [1, n], never as log(y_i)
// (which underflows below -103) and never as x_i - (m + log s) (off by 0.69 for rows holding
// FLT_MAX). Results below -FLT_MAX are -inf.
//
// Accuracy (float, T = 1): |error| <= 2^-22·(|z_i| + 1 + log n), checked by
// tests/softmax_test.cpp against a long-double reference. Rows longer than four registers sum
// exp(x - m) without carrying the rounding of x - m (it moves log s by at most 2^-24·log n).
//
// Bad input: as softmax (softmax.hpp), except that masked entries give -inf, and a fully masked
// row gives NaN (or -inf everywhere with zero_masked_rows).

#include <cstddef>

#include "softmax.hpp"

SMAX_BEGIN_NAMESPACE

template <class T, detail::if_real_t<T> = 0>
inline void log_softmax(const T* x, T* y, std::size_t n, softmax_options const& opts = {}) noexcept {
  api::forward<api::default_table>(x, n, y, n, 1, n, true, opts, kernels::algorithm_id::automatic);
}

template <class Algorithm, class T, detail::if_real_t<T> = 0>
inline auto log_softmax(Algorithm algorithm, const T* x, T* y, std::size_t n,
                        softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  api::forward<api::default_table>(x, n, y, n, 1, n, true, opts, api::algorithm_of(algorithm));
}

template <class T, detail::if_real_t<T> = 0>
inline void log_softmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols,
                             std::size_t ld, softmax_options const& opts = {}) noexcept {
  api::forward<api::default_table>(x, ld, y, ld, rows, cols, true, opts,
                                   kernels::algorithm_id::automatic);
}

template <class Algorithm, class T, detail::if_real_t<T> = 0>
inline auto log_softmax_rows(Algorithm algorithm, const T* x, T* y, std::size_t rows,
                             std::size_t cols, std::size_t ld,
                             softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  api::forward<api::default_table>(x, ld, y, ld, rows, cols, true, opts,
                                   api::algorithm_of(algorithm));
}

// Backward pass: dx = (1/T)·(dy - softmax(x/T)·sum(dy)), given z = log_softmax(x) (spec §2(4)).
// At a masked entry (z = -inf) dx = dy/T, the true derivative, as PyTorch gives.
// Error: |dx_i - dx*_i| <= 2^-19·(1/T)·(|dy_i| + e^(z_i)·sum_j |dy_j|) (float; 2^-48 for double).
template <class T, detail::if_real_t<T> = 0>
inline void log_softmax_backward(const T* z, const T* dy, T* dx, std::size_t n,
                                 softmax_options const& opts = {}) noexcept {
  api::backward<api::default_table>(z, n, dy, n, dx, n, 1, n, true, opts);
}

template <class T, detail::if_real_t<T> = 0>
inline void log_softmax_backward_rows(const T* z, const T* dy, T* dx, std::size_t rows,
                                      std::size_t cols, std::size_t ld,
                                      softmax_options const& opts = {}) noexcept {
  api::backward<api::default_table>(z, ld, dy, ld, dx, ld, rows, cols, true, opts);
}

#if defined(SMAX_HAS_SPAN)
inline void log_softmax(std::span<const float> x, std::span<float> y,
                        softmax_options const& opts = {}) noexcept {
  SMAX_ASSERT(x.size() == y.size());
  log_softmax(x.data(), y.data(), x.size(), opts);
}
inline void log_softmax(std::span<const double> x, std::span<double> y,
                        softmax_options const& opts = {}) noexcept {
  SMAX_ASSERT(x.size() == y.size());
  log_softmax(x.data(), y.data(), x.size(), opts);
}
#endif

SMAX_END_NAMESPACE

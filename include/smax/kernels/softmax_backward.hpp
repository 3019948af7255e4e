#pragma once
// Backward passes (vector-Jacobian products, docs/softmax.md): softmax
// dx = (1/T)·y ⊙ (dy - <dy, y>), log-softmax dx = (dy - exp(z)·sum(dy))/T. Two sweeps, no exp for
// softmax; one exp per element for log-softmax (recomputing p = exp(z) from its output).

#include <cmath>

#include "../primitives/exp.hpp"
#include "../primitives/map_reduce.hpp"

namespace smax {
namespace kernels {

// dx = (1/T)·y·(dy - <dy, y>). Masked entries (y = 0) get 0; a NaN row gives NaN.
template <class A, class T>
inline void softmax_backward_row(const T* y, const T* dy, T* dx, std::size_t n, T inv_t) noexcept {
  using batch = xsimd::batch<T, A>;
  const double dot =
      primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
  const batch d(static_cast<T>(dot)), inv(inv_t);
  primitives::zip_map<A>(y, dy, dx, n,
                         [&](batch const& a, batch const& b) { return (a * (b - d)) * inv; });
}

// dx = (1/T)·(dy - exp(z)·sum(dy)) for z = log_softmax(x). At a masked entry (z = -inf) this is
// dy/T, the true derivative (PyTorch's value).
template <class A, class T>
inline void log_softmax_backward_row(const T* z, const T* dy, T* dx, std::size_t n,
                                     T inv_t) noexcept {
  using batch = xsimd::batch<T, A>;
  const double sum = primitives::map_sum<A, false>(dy, static_cast<T*>(nullptr), n, T(0),
                                                   [](batch const& v) { return v; });
  const batch s(static_cast<T>(sum)), inv(inv_t);
  primitives::zip_map<A>(z, dy, dx, n, [&](batch const& a, batch const& b) {
    return smax::detail::neg_mul_add(primitives::exp_nonpositive(a), s, b) * inv;
  });
}

// Both passes for a temperature whose reciprocal overflows T (T < 1/FLT_MAX), in scalar double
// code dividing by T: with 1/T = inf a masked entry's 0·inf would be NaN. A rare path.
template <class A, class T>
inline void backward_row_dividing(const T* y, const T* dy, T* dx, std::size_t n, T temperature,
                                  bool log) noexcept {
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    acc +=
        log ? static_cast<double>(dy[i]) : static_cast<double>(y[i]) * static_cast<double>(dy[i]);
  for (std::size_t i = 0; i < n; ++i) {
    const double v = log ? static_cast<double>(dy[i]) - ::exp(static_cast<double>(y[i])) * acc
                         : static_cast<double>(y[i]) * (static_cast<double>(dy[i]) - acc);
    dx[i] = static_cast<T>(v / static_cast<double>(temperature));
  }
}

}  // namespace kernels
}  // namespace smax

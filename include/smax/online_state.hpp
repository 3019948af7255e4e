#pragma once
// The online normaliser's state and its merge (used by online.hpp's chunk forms and by the
// chunked long-row split of softmax and log-softmax under an executor, api/entry.hpp).
// Scalar code on doubles: it depends on no instruction set.

#include <cmath>
#include <cstddef>

#include "algorithm.hpp"
#include "primitives/special.hpp"

namespace smax {

template <class T>
struct online_state {
  T max = -static_cast<T>(__builtin_huge_val());  // row maximum; -inf: nothing unmasked yet
  double sum = 0.0;                               // sum of exp((x - max)/T), kept in double
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE

// (m_a, d_a) ⊕ (m_b, d_b) = (M, d_a·e^((m_a - M)/T) + d_b·e^((m_b - M)/T)), M = max(m_a, m_b).
template <class T, detail::if_real_t<T> = 0>
inline online_state<T> merge(online_state<T> const& a, online_state<T> const& b,
                             softmax_options const& opts = {}) noexcept {
  if (primitives::is_nan(a.max)) return a;  // on the bits: survives -ffinite-math-only
  if (primitives::is_nan(b.max)) return b;
  if (a.sum == 0.0) return b;  // the identity, or a fully masked chunk
  if (b.sum == 0.0) return a;
  const T max = a.max > b.max ? a.max : b.max;
  // Halves: m - M can overflow double where (m - M)/T does not (double maxima ±1.6e308 at
  // T = 5e307); halving is exact, so this is (m - M)/T with one rounding of the difference.
  const double inv_t = 1.0 / opts.temperature, half_max = 0.5 * static_cast<double>(max);
  online_state<T> s;
  s.max = max;
  // Where 1/T overflows double (T < 1/DBL_MAX), the difference is divided by T instead (0·inf at
  // the maximum would be NaN); m - M overflows then only where (m - M)/T does.
  auto ratio = [&](T m) {
    if (__builtin_isinf(inv_t))
      return std::exp((static_cast<double>(m) - static_cast<double>(max)) / opts.temperature);
    return std::exp((0.5 * static_cast<double>(m) - half_max) * inv_t * 2.0);
  };
  s.sum = a.sum * ratio(a.max) + b.sum * ratio(b.max);
  return s;
}

SMAX_END_NAMESPACE

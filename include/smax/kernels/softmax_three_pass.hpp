#pragma once
// Three-pass ("safe") softmax, reloading form (spec §3): max; exp + store + sum fused in one pass;
// scale in place by the reciprocal of the sum. One exp per element; the fastest form while the
// row stays in cache. log-softmax: max; exp + sum; (x - m)/T - log s.

#include <cmath>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "row_policy.hpp"

namespace smax {
namespace kernels {

template <class A, class T, bool Scaled>
inline void three_pass_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  const auto r = primitives::reduce_max<A>(x, n);
  if (finish_special_row<A>(r.max, r.has_nan, y, n, p)) return;
  const primitives::exp_minus_max<A, T, Scaled> e(r.max, p.inv_temperature);
  const T neg_inf = -__builtin_huge_val();
  if (p.log) {
    const double s = primitives::map_sum<A, false>(x, y, n, neg_inf, e);
    write_log_softmax<A>(x, y, n, r.max, p.inv_temperature, ::log(s));
    return;
  }
  const double s = primitives::map_sum<A, true>(x, y, n, neg_inf, e);
  const batch c(static_cast<T>(1.0 / s));
  primitives::map<A>(y, y, n, [&](batch const& v) { return v * c; });
}

}  // namespace kernels
}  // namespace smax

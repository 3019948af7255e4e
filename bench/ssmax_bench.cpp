// SSMax beside softmax: the same core with λ = s·ln(n) as its pre-max scale (s = 0.43), one
// thread, inputs U[-8, 8]. Names: ssmax/smax/<n>; compare with softmax/smax/<n>.

#include <cmath>

#include <smax/ssmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

// Largest relative error against softmax(λ·x) in double.
double ssmax_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  const double lambda = static_cast<float>(0.43 * std::log(static_cast<double>(cols)));
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = -HUGE_VAL, s = 0;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, lambda * xr[i]);
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(lambda * xr[i] - m);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = std::exp(lambda * xr[i] - m) / s;
      if (e >= 1e-30) worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / e);
    }
  }
  return worst;
}

const bool registered = [] {
  register_variant("ssmax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return
                         [=](const float* x, float* y) { smax::ssmax_rows(x, y, r, c, c, {0.43}); };
                   },
                   ssmax_error, 1e-5, {64, 1000, 4096, 32768, 1048576});
  return true;
}();

}  // namespace

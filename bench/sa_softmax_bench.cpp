// Self-Adjust Softmax beside softmax: softmax's passes and one multiply more an element, one
// thread, inputs U[-8, 8]. Names: sa_softmax/smax/<n> (normalised, the default) and
// sa_softmax_plain/smax/<n>; compare with softmax/smax/<n>.

#include <cmath>

#include <smax/sa_softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

// Largest relative error against the definition in double (outputs above 1e-30).
template <bool Normalized>
double sa_softmax_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = xr[0], lo = xr[0], s = 0;
    for (std::size_t i = 0; i < cols; ++i) {
      m = std::fmax(m, xr[i]);
      lo = std::fmin(lo, xr[i]);
    }
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(xr[i] - m);
    const double a = std::fmin(lo, 0.0), c = std::fmax(m, 0.0);
    for (std::size_t i = 0; i < cols; ++i) {
      const double w = Normalized ? (c > a ? (xr[i] - a) / (c - a) : 0.0) : xr[i];
      const double e = w * std::exp(xr[i] - m) / s;
      if (std::fabs(e) > 1e-30)
        worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / std::fabs(e));
    }
  }
  return worst;
}

const bool registered = [] {
  register_variant("sa_softmax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) { smax::sa_softmax_rows(x, y, r, c, c); };
                   },
                   sa_softmax_error<true>, 1e-5, {64, 1000, 4096, 32768, 1048576});
  register_variant("sa_softmax_plain", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) {
                       smax::sa_softmax_rows(x, y, r, c, c, smax::sa_softmax_options{false});
                     };
                   },
                   sa_softmax_error<false>, 1e-5, {64, 1000, 4096, 32768, 1048576});
  return true;
}();

}  // namespace

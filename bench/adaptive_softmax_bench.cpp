// Adaptive-temperature softmax beside softmax and beside the implementation a user would write
// with smax alone (softmax, an entropy loop, softmax again at temperature 1/β), one thread,
// inputs U[-8, 8] (β > 1 at n = 64 and 1000, where H is 2.4 and 5.1; β = 1 from 4096 on).
// Names: adaptive_softmax/smax/<n> and adaptive_softmax/two_softmax_baseline/<n>; compare with
// softmax/smax/<n>.

#include <cmath>

#include <smax/adaptive_softmax.hpp>
#include <smax/softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

double adaptive_beta(double h) {
  const double p = (((-0.037 * h + 0.481) * h - 2.3) * h + 4.917) * h - 1.791;
  return h > 0.5 && p > 1 ? p : 1.0;
}

// Largest relative error against the definition in double (outputs above 1e-30).
double adaptive_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = xr[0], s = 0, h = 0, s2 = 0;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, xr[i]);
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(xr[i] - m);
    for (std::size_t i = 0; i < cols; ++i) {
      const double p = std::exp(xr[i] - m) / s;
      h -= p * std::log(p + 1e-9);
    }
    const double beta = adaptive_beta(h);
    for (std::size_t i = 0; i < cols; ++i) s2 += std::exp(beta * (xr[i] - m));
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = std::exp(beta * (xr[i] - m)) / s2;
      if (e > 1e-30) worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / e);
    }
  }
  return worst;
}

// What a user writes with smax's softmax: p, its entropy in a scalar loop, β, and softmax at
// temperature 1/β when β > 1.
void two_softmax_baseline(const float* x, float* y, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    smax::softmax(xr, yr, cols);
    float h = 0;
    for (std::size_t i = 0; i < cols; ++i) h -= yr[i] * std::log(yr[i] + 1e-9f);
    const double beta = adaptive_beta(h);
    if (beta > 1) {
      smax::softmax_options opts;
      opts.temperature = 1.0 / beta;
      smax::softmax(xr, yr, cols, opts);
    }
  }
}

const bool registered = [] {
  register_variant("adaptive_softmax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) {
                       smax::adaptive_softmax_rows(x, y, r, c, c);
                     };
                   },
                   adaptive_error, 1e-4, {64, 1000, 4096, 32768, 1048576});
  register_variant("adaptive_softmax", "two_softmax_baseline",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) { two_softmax_baseline(x, y, r, c); };
                   },
                   adaptive_error, 1e-3, {64, 1000, 4096, 32768, 1048576});
  return true;
}();

}  // namespace

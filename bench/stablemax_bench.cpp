// StableMax and log-StableMax beside softmax: one division an element instead of an exponential,
// one thread, inputs U[-8, 8]. Names: stablemax/smax/<n>, log_stablemax/smax/<n>; compare with
// softmax/smax/<n> and log_softmax/smax/<n>.

#include <cmath>

#include <smax/stablemax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

double stablemax_s(double x) {
  return x >= 0 ? x + 1 : 1 / (1 - x);
}

// Largest relative error (log: absolute) against the definition in double.
template <bool Log>
double stablemax_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double s = 0;
    for (std::size_t i = 0; i < cols; ++i) s += stablemax_s(xr[i]);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = stablemax_s(xr[i]) / s;
      const double got = y[r * cols + i];
      worst = std::fmax(worst, Log ? std::fabs(got - std::log(e)) : std::fabs(got - e) / e);
    }
  }
  return worst;
}

const bool registered = [] {
  register_variant("stablemax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) { smax::stablemax_rows(x, y, r, c, c); };
                   },
                   stablemax_error<false>, 1e-5, {64, 1000, 4096, 32768, 1048576});
  register_variant("log_stablemax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return
                         [=](const float* x, float* y) { smax::log_stablemax_rows(x, y, r, c, c); };
                   },
                   stablemax_error<true>, 1e-4, {64, 1000, 4096, 32768, 1048576});
  return true;
}();

}  // namespace

// Softplus + l1 with the length scale beside softmax: an exponential and a log1p an element, one
// thread, inputs U[-8, 8], base 64 (λ = ln n/ln 64). Names: softplus_l1/smax/<n>; compare with
// softmax/smax/<n>.

#include <cmath>

#include <smax/softplus_l1.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

constexpr double bench_base = 64;

double softplus(double u) {
  return u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u));
}

// Largest relative error against the definition in double.
double softplus_l1_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  const double lambda = std::log(static_cast<double>(cols)) / std::log(bench_base);
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double s = 0;
    for (std::size_t i = 0; i < cols; ++i) s += softplus(lambda * xr[i]);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = softplus(lambda * xr[i]) / s;
      if (e < 1e-30) continue;
      worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / e);
    }
  }
  return worst;
}

const bool registered = [] {
  register_variant("softplus_l1", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) {
                       smax::softplus_l1_rows(x, y, r, c, c, {bench_base});
                     };
                   },
                   softplus_l1_error, 1e-5, {64, 1000, 4096, 32768, 1048576});
  return true;
}();

}  // namespace

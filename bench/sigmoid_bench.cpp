// sigmoid and sigmoid attention: smax beside a plain scalar loop (1/(1 + exp(-x)) with libm, the
// loop a user would write), one thread, inputs U[-8, 8]. Names: sigmoid/<implementation>/<n>.

#include <cmath>

#include <smax/sigmoid.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

// Largest relative error against σ in double (outputs here are >= 3e-4, all normal).
double sigmoid_error(const float* x, const float* y, std::size_t rows, std::size_t cols,
                     double bias) {
  double worst = 0;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const double t = static_cast<double>(x[i]) + bias;
    const double e = t >= 0 ? 1 / (1 + std::exp(-t)) : std::exp(t) / (1 + std::exp(t));
    worst = std::fmax(worst, std::fabs(y[i] - e) / e);
  }
  return worst;
}

const bool registered = [] {
  const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};
  register_variant(
      "sigmoid", "smax",
      [](std::size_t r, std::size_t c) -> kernel {
        return [=](const float* x, float* y) { smax::sigmoid_rows(x, y, r, c, c); };
      },
      [](const float* x, const float* y, std::size_t r, std::size_t c) {
        return sigmoid_error(x, y, r, c, 0);
      },
      3e-7, lengths);
  register_variant(
      "sigmoid", "scalar_libm",
      [](std::size_t r, std::size_t c) -> kernel {
        return [=](const float* x, float* y) {
          for (std::size_t i = 0; i < r * c; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
        };
      },
      [](const float* x, const float* y, std::size_t r, std::size_t c) {
        return sigmoid_error(x, y, r, c, 0);
      },
      1e-6, lengths);
  register_variant(
      "sigmoid_attention", "smax",
      [](std::size_t r, std::size_t c) -> kernel {
        return
            [=](const float* x, float* y) { smax::sigmoid_attention_rows(x, y, r, c, c, {8192}); };
      },
      [](const float* x, const float* y, std::size_t r, std::size_t c) {
        return sigmoid_error(x, y, r, c, static_cast<float>(-std::log(8192.0)));
      },
      3e-7, lengths);
  return true;
}();

}  // namespace

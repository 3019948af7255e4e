// softpick: smax's kernels (header-only, and each algorithm) beside the anchor, the naive
// reference code's form (e^(x-m) - e^-m, scalar, as in zaydzuhri/softpick-attention
// naive_softpick_attn.py), one thread each, same inputs (U[-8, 8]).
// Names: softpick/<implementation>/<n>. softpick/softmax_smax/<n> is smax::softmax_rows on the
// same rows at the same lengths (softmax's own suite has no 1048576): the 1.3x yardstick.

#include <smax/softmax.hpp>
#include <smax/softpick.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};

// Largest relative error of y against a double evaluation of the expm1 form, over outputs the
// relative bound covers (>= FLT_MIN); outputs that must be 0 (x <= 0) must be 0.
double check_softpick(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* yr = y + r * cols;
    double m = -HUGE_VAL;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, xr[i]);
    if (!(m > 0)) {
      for (std::size_t i = 0; i < cols; ++i)
        if (yr[i] != 0.0f) return HUGE_VAL;
      continue;
    }
    std::vector<double> a(cols);
    double s = 1e-8;
    for (std::size_t i = 0; i < cols; ++i) {
      const double v = xr[i];
      a[i] = v > 0 ? std::exp(v - m) * -std::expm1(-v) : std::expm1(v) * std::exp(-m);
      s += std::fabs(a[i]);
    }
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = a[i] > 0 ? a[i] / s : 0.0;
      if (e == 0.0) {
        if (yr[i] != 0.0f) return HUGE_VAL;
      } else if (e >= 1.17549435e-38) {
        worst = std::fmax(worst, std::fabs(yr[i] - e) / e);
      }
    }
  }
  return worst;
}

// The reference code's form, scalar: relu(e^(x-m) - e^-m) / (sum |e^(x-m) - e^-m| + eps).
void naive_softpick(const float* x, float* y, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -HUGE_VALF;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, xr[i]);
    const float e_neg_m = std::exp(-m);
    float s = 0;
    for (std::size_t i = 0; i < cols; ++i) {
      const float a = std::exp(xr[i] - m) - e_neg_m;
      yr[i] = a;
      s += std::fabs(a);
    }
    const float inv = 1.0f / (s + 1e-8f);
    for (std::size_t i = 0; i < cols; ++i) yr[i] = std::fmax(yr[i], 0.0f) * inv;
  }
}

kernel smax_kernel(std::size_t rows, std::size_t cols, smax::kernels::softpick_algorithm a) {
  return [=](const float* x, float* y) {
    if (a == smax::kernels::softpick_algorithm::automatic)
      smax::softpick_rows(x, y, rows, cols, cols);
    else
      smax::kernels::softpick_table<xsimd::default_arch>::forward(x, cols, y, cols, rows, cols,
                                                                  1e-8, a);
  };
}

double check_softmax(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = -HUGE_VAL, s = 0;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, xr[i]);
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(xr[i] - m);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = std::exp(xr[i] - m) / s;
      worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / e);
    }
  }
  return worst;
}

const bool registered = [] {
  using smax::kernels::softpick_algorithm;
  // smax's bound is 1e-6 (softpick.hpp); the naive form's cancellation near x = 0 costs it
  // about 3 digits on these rows, so it is checked to 1e-2 only.
  register_variant(
      "softpick", "smax",
      [](std::size_t r, std::size_t c) { return smax_kernel(r, c, softpick_algorithm::automatic); },
      check_softpick, 1e-6, lengths);
  register_variant(
      "softpick", "smax_three_pass",
      [](std::size_t r, std::size_t c) {
        return smax_kernel(r, c, softpick_algorithm::three_pass);
      },
      check_softpick, 1e-6, lengths, false);
  register_variant(
      "softpick", "smax_online",
      [](std::size_t r, std::size_t c) { return smax_kernel(r, c, softpick_algorithm::online); },
      check_softpick, 1e-6, lengths, false);
  register_variant(
      "softpick", "naive_scalar",
      [](std::size_t r, std::size_t c) -> kernel {
        return [=](const float* x, float* y) { naive_softpick(x, y, r, c); };
      },
      check_softpick, 1e-2, lengths, false);
  register_variant(
      "softpick", "softmax_smax",
      [](std::size_t r, std::size_t c) -> kernel {
        return [=](const float* x, float* y) { smax::softmax_rows(x, y, r, c, c); };
      },
      check_softmax, 1e-6, lengths, false);
  return true;
}();

}  // namespace

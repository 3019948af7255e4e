// α-entmax by bisection at α = 1.5 beside the algorithm a user would otherwise write
// (deep-spin/entmax's EntmaxBisectFunction in plain C++: 50 full sweeps with std::pow, the last
// iterate renormalised, with the max subtracted so that the bench rows do not give NaN), same
// inputs (U[-8, 8]), one thread. Names: entmax_bisect/smax/<n> and entmax_bisect/pow_baseline/<n>;
// compare with softmax/smax/<n>.

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include <smax/entmax_bisect.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};

// Largest absolute error of y against the exact sort-based 1.5-entmax of each row, in double.
double check(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  std::vector<double> z(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const double m = *std::max_element(xr, xr + cols);
    for (std::size_t i = 0; i < cols; ++i) z[i] = (double(xr[i]) - m) / 2;
    std::sort(z.begin(), z.end(), std::greater<double>());
    double s = 0, q = 0, tau = z[0] - 1;
    for (std::size_t k = 1; k <= cols; ++k) {
      s += z[k - 1];
      q += z[k - 1] * z[k - 1];
      const double mean = s / double(k), d = (1 - double(k) * (q / double(k) - mean * mean)) / double(k);
      const double t = mean - std::sqrt(std::max(d, 0.0));
      if (t <= z[k - 1]) tau = t;
    }
    for (std::size_t i = 0; i < cols; ++i) {
      const double u = std::max((double(xr[i]) - m) / 2 - tau, 0.0);
      worst = std::max(worst, std::fabs(y[r * cols + i] - u * u));
    }
  }
  return worst;
}

// deep-spin/entmax's bisection, one row at a time in float: X = (α - 1)·(x - max), bracket
// [-1, -n^(1-α)], 50 halvings, each a full sweep p = pow(max(X - tau, 0), 1/(α - 1)) into y and
// its sum; the last p divided by its sum.
struct pow_baseline {
  float alpha = 1.5f;
  void operator()(const float* x, float* y, std::size_t n) const {
    const float a1 = alpha - 1, p = 1 / a1;
    const float m = *std::max_element(x, x + n);
    auto sweep = [&](float tau) {
      float s = 0;
      for (std::size_t i = 0; i < n; ++i) {
        y[i] = std::pow(std::max(a1 * (x[i] - m) - tau, 0.0f), p);
        s += y[i];
      }
      return s;
    };
    float lo = -1, dm = -std::pow(float(n), 1 - alpha) - lo;
    const float f_lo = sweep(lo) - 1;
    float sum = 1;
    for (int it = 0; it < 50; ++it) {
      dm /= 2;
      const float mid = lo + dm;
      sum = sweep(mid);
      if ((sum - 1) * f_lo >= 0) lo = mid;
    }
    for (std::size_t i = 0; i < n; ++i) y[i] /= sum;
  }
};

const bool registered = [] {
  register_variant(
      "entmax_bisect", "smax",
      [](std::size_t rows, std::size_t cols) -> kernel {
        return [=](const float* x, float* y) { smax::entmax_bisect_rows(x, y, rows, cols, cols); };
      },
      check, 1e-5, lengths, true);
  register_variant(
      "entmax_bisect", "pow_baseline",
      [](std::size_t rows, std::size_t cols) -> kernel {
        return [=](const float* x, float* y) {
          const pow_baseline b;
          for (std::size_t r = 0; r < rows; ++r) b(x + r * cols, y + r * cols, cols);
        };
      },
      check, 1e-4, lengths, false);
  return true;
}();

}  // namespace

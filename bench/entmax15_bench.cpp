// 1.5-entmax: smax beside the exact algorithm a user would otherwise write (deep-spin/entmax's
// sort-based Entmax15Function: z = (x - max)/2, std::sort descending, prefix means of z and z²,
// tau_k = mean_k - sqrt(max((1 - ss_k)/k, 0)), support = #{tau_k <= z_(k)}, write; one thread,
// its prefix sums in double so that it stays correct at 10^6), same inputs (U[-8, 8]).
// Names: entmax15/smax/<n> and entmax15/sort_baseline/<n>; compare with softmax/smax/<n>.

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include <smax/entmax15.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};

// Threshold of z = (x - m)/2 by the sorted prefix scan, in double (the check's reference).
double sorted_tau(std::vector<double>& z) {
  std::sort(z.begin(), z.end(), std::greater<double>());
  double mean = 0, squares = 0, tau = -1;
  for (std::size_t j = 0; j < z.size(); ++j) {
    const double count = double(j + 1), delta = z[j] - mean;
    mean += delta / count;
    squares += delta * (z[j] - mean);
    const double t = mean - std::sqrt(std::max((1 - squares) / count, 0.0));
    if (!(z[j] > t)) break;
    tau = t;
  }
  return tau;
}

// Largest absolute error of y against a double sort-based 1.5-entmax of each row.
double check(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  std::vector<double> z(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const double m = *std::max_element(xr, xr + cols);
    for (std::size_t i = 0; i < cols; ++i) z[i] = (double(xr[i]) - m) / 2;
    const double tau = sorted_tau(z);
    for (std::size_t i = 0; i < cols; ++i) {
      const double u = std::max((double(xr[i]) - m) / 2 - tau, 0.0);
      worst = std::max(worst, std::fabs(y[r * cols + i] - u * u));
    }
  }
  return worst;
}

// deep-spin/entmax's _entmax_threshold_and_support, one row at a time: float z, sorted in float,
// the cumulative sums in double.
struct sort_entmax15 {
  std::vector<float> sorted;
  void operator()(const float* x, float* y, std::size_t n) {
    const float m = *std::max_element(x, x + n);
    sorted.resize(n);
    for (std::size_t i = 0; i < n; ++i) sorted[i] = (x[i] - m) / 2;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    double sum = 0, sum_squares = 0, tau = 0;
    std::size_t support = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double v = sorted[j], k = double(j + 1);
      sum += v;
      sum_squares += v * v;
      const double mean = sum / k, mean_squares = sum_squares / k;
      const double ss = k * (mean_squares - mean * mean);
      const double t = mean - std::sqrt(std::max((1 - ss) / k, 0.0));
      if (t <= v) {
        support = j + 1;
        tau = t;
      }
    }
    (void)support;
    const float tau_f = float(tau);
    for (std::size_t i = 0; i < n; ++i) {
      const float u = std::max((x[i] - m) / 2 - tau_f, 0.0f);
      y[i] = u * u;
    }
  }
};

const double smax_max_error = std::ldexp(1.0, -21);  // entmax15.hpp's bound

void register_entmax15() {
  register_variant(
      "entmax15", "smax",
      [](std::size_t rows, std::size_t cols) -> kernel {
        return [=](const float* x, float* y) { smax::entmax15_rows(x, y, rows, cols, cols); };
      },
      check, smax_max_error, lengths);
  register_variant(
      "entmax15", "sort_baseline",
      [](std::size_t rows, std::size_t cols) -> kernel {
        auto s = std::make_shared<sort_entmax15>();
        return [=](const float* x, float* y) {
          for (std::size_t r = 0; r < rows; ++r) (*s)(x + r * cols, y + r * cols, cols);
        };
      },
      check, 1e-5, lengths);
}

const bool registered = (register_entmax15(), true);

}  // namespace

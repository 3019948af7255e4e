// MultiMax (docs/multimax.md) through the header-only API, with nonzero parameters of every order,
// timed at the row lengths softmax/smax/n is reported at (compare the two in one run). Checked
// first against a double reference: relative error of every output above 1e-30.
// Names: multimax/smax/<n>, multimax/smax/<rows>x<cols>, and the anchor multimax/softmax_anchor/...
// (smax::softmax_rows on the same rows: the ratio multimax/softmax is the cost of σ).

#include <smax/multimax.hpp>
#include <smax/softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

// The benchmark's parameters: every term active on U[-8, 8] rows, σ still increasing.
smax::multimax_options bench_options() {
  smax::multimax_options o;
  o.t = {0.1, 0.1, -0.01, 0.01};
  o.r = {-1, 1, -2, 2};
  return o;
}

double sigma(double x, smax::multimax_options const& o) {
  auto relu = [](double u) { return u > 0 ? u : 0.0; };
  const double b0 = relu(o.r[0] - x), a1 = relu(x - o.r[1]), b2 = relu(o.r[2] - x),
               a3 = relu(x - o.r[3]);
  return x + o.t[0] * b0 + o.t[1] * a1 + o.t[2] * b2 * b2 + o.t[3] * a3 * a3;
}

double check(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  const auto o = bench_options();
  double worst = 0;
  std::vector<double> z(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = -HUGE_VAL, s = 0;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, z[i] = sigma(xr[i], o));
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(z[i] - m);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = std::exp(z[i] - m) / s;
      if (e > 1e-30) worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / e);
    }
  }
  return worst;
}

const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};

const bool registered = [] {
  register_variant(
      "multimax", "smax",
      [](std::size_t rows, std::size_t cols) -> kernel {
        const auto o = bench_options();
        return [=](const float* x, float* y) { smax::multimax_rows(x, y, rows, cols, cols, o); };
      },
      // multimax.hpp's bound on U[-8, 8] with these parameters (W <= 1.2·10 + 0.02·10² = 14):
      // 1e-6 + 2^-20·2·14 < 3e-5.
      check, 3e-5, lengths);
  // The anchor: smax::softmax on the same rows and lengths (softmax/smax/n has no 1048576).
  register_variant(
      "multimax", "softmax_anchor",
      [](std::size_t rows, std::size_t cols) -> kernel {
        return [=](const float* x, float* y) { smax::softmax_rows(x, y, rows, cols, cols); };
      },
      [](const float* x, const float* y, std::size_t rows, std::size_t cols) {
        return error_against_reference(x, y, rows, cols, false);
      },
      1e-6, lengths);
  return true;
}();

}  // namespace

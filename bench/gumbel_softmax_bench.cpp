// Gumbel-softmax beside softmax, one thread, inputs as softmax's (bench_support.hpp), tau = 1.
// Names: gumbel_softmax/smax/<n> (the caller's noise: x + g, then softmax's kernels in place) and
// gumbel_softmax_seeded/smax/<n> (Philox-4×32-10 noise drawn in the call); compare with
// softmax/smax/<n>. The noise form reads a noise array of the same size as x (drawn once, outside
// the timing).

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include <smax/gumbel_softmax.hpp>
#include <smax/reference/gumbel_softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

constexpr std::uint64_t seed = 20261204;

// Largest relative error of y against softmax(x + g) in double (outputs above 1e-30), with g the
// row's noise (noise[k] for element k, or the reference generator's when noise is null).
double gumbel_error(const float* x, const float* y, std::size_t rows, std::size_t cols,
                    const float* noise) {
  double worst = 0;
  std::vector<double> z(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (std::size_t i = 0; i < cols; ++i) {
      const std::size_t k = r * cols + i;
      const double g = noise ? double(noise[k])
                             : static_cast<double>(smax::reference::gumbel_noise<float>(seed, k));
      z[i] = double(x[k]) + g;
      m = std::fmax(m, z[i]);
    }
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(z[i] - m);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = std::exp(z[i] - m) / s;
      if (e > 1e-30) worst = std::fmax(worst, std::fabs(y[r * cols + i] - e) / e);
    }
  }
  return worst;
}

const bool registered = [] {
  const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};
  // One noise array for every shape (the largest one: rows·cols <= its length).
  static std::vector<float> noise;
  auto noise_for = [](std::size_t elements) {
    if (noise.size() < elements) {
      noise.resize(elements);
      smax::gumbel_noise(noise.data(), elements, seed, 0);
    }
    return noise.data();
  };
  register_variant(
      "gumbel_softmax", "smax",
      [=](std::size_t r, std::size_t c) -> kernel {
        const float* g = noise_for(r * c);
        return [=](const float* x, float* y) {
          smax::gumbel_softmax_rows(x, g, y, r, c, c, smax::gumbel_softmax_options{});
        };
      },
      [=](const float* x, const float* y, std::size_t r, std::size_t c) {
        return gumbel_error(x, y, r, c, noise_for(r * c));
      },
      1e-5, lengths);
  register_variant(
      "gumbel_softmax_seeded", "smax",
      [](std::size_t r, std::size_t c) -> kernel {
        return [=](const float* x, float* y) {
          smax::gumbel_softmax_rows(x, y, r, c, c, smax::gumbel_softmax_options{}, seed, 0);
        };
      },
      [](const float* x, const float* y, std::size_t r, std::size_t c) {
        return gumbel_error(x, y, r, c, nullptr);
      },
      1e-5, lengths);
  return true;
}();

}  // namespace

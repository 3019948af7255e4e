// The inline log of a float row's sum (primitives/log.hpp) on every compiled instruction set:
// log 1 = 0 exactly, libm's results for 0, negatives, +inf and NaN, subnormals, every float in [1, 128) (the sums of short rows),
// the table's interval ends and sampled doubles up to 2^60, within 2^-32 relative of long double.

#include <cstdint>
#include <cstring>

#include "primitive_probe.hpp"
#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class log_of_sum_test : public ::testing::Test {};
TYPED_TEST_SUITE(log_of_sum_test, compiled::floats, config_names);

// The bound of primitives/log.hpp: the degree-5 truncation (r^5/6 relative, r < 2^-6) plus a few
// roundings of 2^-53.
constexpr double bound = 0x1p-32;

template <class C>
double worst_relative_error(std::vector<double> const& s, double* worst_at) {
  std::vector<double> y(s.size());
  probe_of<C>::log_of_sum(s.data(), y.data(), s.size());
  double worst = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const long double r = std::log(static_cast<long double>(s[i]));
    // s = 1 (r = 0) is checked exactly elsewhere; here it counts as an absolute error.
    const long double scale = r != 0 ? std::fabs(r) : 1.0L;
    const double err = static_cast<double>(std::fabs(static_cast<long double>(y[i]) - r) / scale);
    if (!(err <= worst)) {
      worst = err;
      *worst_at = s[i];
    }
  }
  return worst;
}

TYPED_TEST(log_of_sum_test, special_values) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::vector<double> s = {1.0, infinity<double>, quiet_nan<double>, 2.0, 0x1p-1, 0.0, -1.0, 0x1p-1060};
  std::vector<double> y(s.size());
  probe_of<TypeParam>::log_of_sum(s.data(), y.data(), s.size());
  EXPECT_EQ(y[0], 0.0);
  EXPECT_FALSE(std::signbit(y[0]));
  EXPECT_EQ(y[1], infinity<double>);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_NEAR(y[3], std::log(2.0), 1e-16);
  EXPECT_NEAR(y[4], -std::log(2.0), 1e-16);  // below 1 works too (not a caller's case)
  EXPECT_EQ(y[5], -infinity<double>);           // and libm's results for what is not positive
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_NEAR(y[7], std::log(0x1p-1060), 1e-12);
}

// Every float in [1, 128) (SMAX_TEST_EXHAUSTIVE_STRIDE samples): a short row's sum is one
// (n <= 64 float lanes, so s <= 64). Measured: 2^-32.59, the truncation at s just below
// 1 + 2^-6 (i = 0, r at its largest).
TYPED_TEST(log_of_sum_test, every_float_sum_of_a_short_row) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t stride = exhaustive_stride();
  constexpr std::size_t chunk = 1 << 20;
  std::uint32_t first, last;
  const float lo = 1.0f, hi = 128.0f;
  std::memcpy(&first, &lo, 4);
  std::memcpy(&last, &hi, 4);
  std::vector<double> s;
  s.reserve(chunk);
  double worst = 0, worst_at = 0;
  for (std::uint64_t b = first; b < last;) {
    s.clear();
    for (; s.size() < chunk && b < last; b += stride) {
      const auto bits = static_cast<std::uint32_t>(b);
      float v;
      std::memcpy(&v, &bits, 4);
      s.push_back(v);
    }
    double at = 0;
    const double e = worst_relative_error<TypeParam>(s, &at);
    if (e > worst) {
      worst = e;
      worst_at = at;
    }
  }
  std::printf("[ log_of_sum ] %s: max relative error 2^%.2f at %.17g\n", TypeParam::arch::name(),
              std::log2(worst), worst_at);
  EXPECT_LE(worst, bound) << "at s = " << worst_at;
}

// Each interval end c = 1 + i/64 scaled by 2^e, its neighbours, and 10^6 log-uniform doubles in
// [1, 2^60] (the long rows' sums; the callers never pass more than n).
TYPED_TEST(log_of_sum_test, interval_ends_and_sampled_doubles) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<double> s;
  for (int e : {0, 1, 5, 20, 59})
    for (int i = 0; i < 64; ++i) {
      const double c = std::ldexp(1.0 + i / 64.0, e);
      for (double v : {c, std::nextafter(c, 0.0), std::nextafter(c, 1e300)})
        if (v >= 1.0) s.push_back(v);
    }
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> exponent(0.0, 60.0);
  for (int k = 0; k < 1000000; ++k) s.push_back(std::exp2(exponent(rng)));
  double at = 0;
  const double worst = worst_relative_error<TypeParam>(s, &at);
  EXPECT_LE(worst, bound) << "at s = " << at;
}

}  // namespace

// The softmax-domain exp (primitives/exp.hpp) on every compiled instruction set: every float in
// [-87.3, 0] within 1 ulp, and the special values.

#include <cstdint>
#include <cstring>

#include "primitive_probe.hpp"
#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class exp_test : public ::testing::Test {};
TYPED_TEST_SUITE(exp_test, all_configs, config_names);
template <class C>
class exp_float_test : public ::testing::Test {};
TYPED_TEST_SUITE(exp_float_test, compiled::floats, config_names);
template <class C>
class exp_double_test : public ::testing::Test {};
TYPED_TEST_SUITE(exp_double_test, compiled::doubles, config_names);

// ulp of the real number r in the format of T: 2^(exponent(r) - mantissa bits).
template <class T>
double ulp_of(double r) {
  int e;
  std::frexp(r, &e);
  return std::ldexp(1.0, e - std::numeric_limits<T>::digits);
}

TYPED_TEST(exp_test, special_values) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::vector<T> x = {-infinity<T>, quiet_nan<T>, T(0), T(-0.0), T(-1000), T(-88), T(-1e-30)};
  std::vector<T> y(x.size());
  probe_of<TypeParam>::exp_nonpositive(x.data(), y.data(), x.size());
  EXPECT_EQ(y[0], T(0));  // masked entries are exactly 0
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], T(1));
  EXPECT_EQ(y[3], T(1));
  EXPECT_EQ(y[4], T(0));
  EXPECT_EQ(y[5], sizeof(T) == 4 ? T(0) : static_cast<T>(std::exp(-88.0L)));
  EXPECT_EQ(y[6], T(1));
}

// Every float in [-87.3, 0] (about 1.1e9 inputs): max error <= 1 ulp of the exact result.
TYPED_TEST(exp_float_test, within_one_ulp_everywhere) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::uint32_t first = 0x80000000u;  // -0
  std::uint32_t last;
  const float bottom = -87.3f;
  std::memcpy(&last, &bottom, 4);
  const std::size_t stride = exhaustive_stride();
  constexpr std::size_t chunk = 1 << 20;
  std::vector<float> x(chunk), y(chunk);
  double max_ulp = 0;
  float worst = 0;
  for (std::uint64_t b = first; b <= last;) {
    std::size_t n = 0;
    for (; n < chunk && b <= last; ++n, b += stride) {
      const auto bits = static_cast<std::uint32_t>(b);
      std::memcpy(&x[n], &bits, 4);
    }
    probe_of<TypeParam>::exp_nonpositive(x.data(), y.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const double r = std::exp(static_cast<double>(x[i]));
      const double err = std::fabs(static_cast<double>(y[i]) - r) / ulp_of<float>(r);
      if (err > max_ulp) {
        max_ulp = err;
        worst = x[i];
      }
    }
  }
  this->RecordProperty("max_ulp", std::to_string(max_ulp));
  EXPECT_LE(max_ulp, 1.0) << "at x = " << worst;
}

// double: 2e7 random inputs in [-708.39, 0] and [-1, 0], against long double: <= 2 ulp.
TYPED_TEST(exp_double_test, within_two_ulp) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double lo : {-708.39, -1.0}) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> u(lo, 0.0);
    std::vector<double> x(sampled(1 << 20)), y(x.size());
    double max_ulp = 0;
    for (int rep = 0; rep < 10; ++rep) {
      for (auto& v : x) v = u(rng);
      probe_of<TypeParam>::exp_nonpositive(x.data(), y.data(), x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const long double r = std::exp(static_cast<long double>(x[i]));
        const double err =
            static_cast<double>(std::fabs(y[i] - r) / ulp_of<double>(static_cast<double>(r)));
        max_ulp = std::max(max_ulp, err);
      }
    }
    EXPECT_LE(max_ulp, 2.0) << "on [" << lo << ", 0]";
  }
}

}  // namespace

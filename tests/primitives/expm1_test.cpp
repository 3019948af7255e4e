// expm1 (primitives/expm1.hpp) on every compiled instruction set: every float in
// [-40, 88.37] within 2 ulp, sampled doubles within 2 ulp, and the special values.

#include <cstdint>
#include <cstring>

#include "primitive_probe.hpp"
#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class expm1_test : public ::testing::Test {};
TYPED_TEST_SUITE(expm1_test, all_configs, config_names);
template <class C>
class expm1_float_test : public ::testing::Test {};
TYPED_TEST_SUITE(expm1_float_test, compiled::floats, config_names);
template <class C>
class expm1_double_test : public ::testing::Test {};
TYPED_TEST_SUITE(expm1_double_test, compiled::doubles, config_names);

// ulp of the real number r in the format of T (normal range).
template <class T>
double ulp_of(double r) {
  int e;
  std::frexp(r, &e);
  return std::ldexp(1.0, e - std::numeric_limits<T>::digits);
}

TYPED_TEST(expm1_test, special_values) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max();
  const T sub = std::numeric_limits<T>::denorm_min();
  const std::vector<T> x = {-infinity<T>, quiet_nan<T>, T(0),      T(-1000), -big,    T(-40),
                            T(-41),       T(1e-30),     T(-1e-30), sub,      T(1e-7), T(-1e-7)};
  std::vector<T> y(x.size());
  probe_of<TypeParam>::expm1(x.data(), y.data(), x.size());
  EXPECT_EQ(y[0], T(-1));
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], T(0));
  EXPECT_EQ(y[3], T(-1));
  EXPECT_EQ(y[4], T(-1));
  EXPECT_EQ(y[5], T(-1));
  EXPECT_EQ(y[6], T(-1));
  EXPECT_EQ(y[7], T(1e-30));  // expm1(t) = t below half an ulp of t^2/2
  EXPECT_EQ(y[8], T(-1e-30));
  EXPECT_EQ(y[9], sub);
  EXPECT_NEAR(y[10], static_cast<T>(std::expm1(static_cast<long double>(T(1e-7)))), 1e-7 * 2e-7);
  EXPECT_NEAR(y[11], static_cast<T>(std::expm1(static_cast<long double>(T(-1e-7)))), 1e-7 * 2e-7);
}

// Every float in [-40, 88.37] with |t| >= 2^-40 (below that expm1(t) = t to far below an ulp),
// every one (SMAX_TEST_EXHAUSTIVE_STRIDE samples): <= 2 ulp (measured 1.65).
TYPED_TEST(expm1_float_test, within_two_ulp_on_a_dense_sweep) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t stride = exhaustive_stride();
  constexpr std::size_t chunk = 1 << 20;
  std::vector<float> x(chunk), y(chunk);
  double max_ulp = 0;
  float worst = 0;
  for (float sign : {-1.0f, 1.0f}) {
    std::uint32_t first, last;
    const float lo = std::ldexp(1.0f, -40), hi = sign < 0 ? 40.0f : 88.37f;
    std::memcpy(&first, &lo, 4);
    std::memcpy(&last, &hi, 4);
    for (std::uint64_t b = first; b <= last;) {
      std::size_t n = 0;
      for (; n < chunk && b <= last; ++n, b += stride) {
        const auto bits = static_cast<std::uint32_t>(b);
        float v;
        std::memcpy(&v, &bits, 4);
        x[n] = sign * v;
      }
      probe_of<TypeParam>::expm1(x.data(), y.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const double r = std::expm1(static_cast<double>(x[i]));
        const double err = std::fabs(static_cast<double>(y[i]) - r) / ulp_of<float>(r);
        if (err > max_ulp) {
          max_ulp = err;
          worst = x[i];
        }
      }
    }
  }
  this->RecordProperty("max_ulp", std::to_string(max_ulp));
  EXPECT_LE(max_ulp, 2.0) << "at x = " << worst;
  std::printf("[ expm1 ] %s float: max error %.3f ulp at %.9g\n", TypeParam::arch::name(), max_ulp,
              worst);
}

// double: 10^7 inputs, log-uniform in magnitude over [2^-60, 40] on both sides and uniform on
// [0, 709.43], against long double: <= 2 ulp.
TYPED_TEST(expm1_double_test, within_two_ulp_sampled) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> log_magnitude(-60.0, std::log2(40.0)), sign(-1.0, 1.0),
      upper(0.0, 709.43);
  std::vector<double> x(sampled(1 << 20)), y(x.size());
  double max_ulp = 0, worst = 0;
  for (int rep = 0; rep < 10; ++rep) {
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = i % 4 == 3 ? upper(rng) : std::copysign(std::exp2(log_magnitude(rng)), sign(rng));
    probe_of<TypeParam>::expm1(x.data(), y.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const long double r = std::expm1(static_cast<long double>(x[i]));
      const double err =
          static_cast<double>(std::fabs(y[i] - r) / ulp_of<double>(static_cast<double>(r)));
      if (err > max_ulp) {
        max_ulp = err;
        worst = x[i];
      }
    }
  }
  EXPECT_LE(max_ulp, 2.0) << "at x = " << worst;
  std::printf("[ expm1 ] %s double: max error %.3f ulp at %.17g\n", TypeParam::arch::name(),
              max_ulp, worst);
}

}  // namespace

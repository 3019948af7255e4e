// The vector log and log1p of log-StableMax (primitives/log.hpp, log_normal and
// log1p_nonnegative): log within 3.5 ulp of |log t| over every 257th normal float and 10^7
// doubles of every exponent (measured: x86 1.968 float, 1.896 double; NEON under qemu 3.09 float,
// not yet explained), log 1 = 0 exactly; log1p within 4 ulp (x86 2.30, NEON 3.34), +inf for +inf.
// The inline log of a float row's sum (primitives/log.hpp) on every compiled instruction set:
// log 1 = 0 exactly, libm's results for 0, negatives, +inf and NaN, subnormals, every float in [1, 128) (the sums of short rows),
// the table's interval ends and sampled doubles up to 2^60, within 2^-32 relative of long double.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

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
  const std::vector<double> s = {1.0,  infinity<double>, quiet_nan<double>, 2.0, 0x1p-1, 0.0,
                                 -1.0, 0x1p-1060};
  std::vector<double> y(s.size());
  probe_of<TypeParam>::log_of_sum(s.data(), y.data(), s.size());
  EXPECT_EQ(y[0], 0.0);
  EXPECT_FALSE(std::signbit(y[0]));
  EXPECT_EQ(y[1], infinity<double>);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_NEAR(y[3], std::log(2.0), 1e-16);
  EXPECT_NEAR(y[4], -std::log(2.0), 1e-16);  // below 1 works too (not a caller's case)
  EXPECT_EQ(y[5], -infinity<double>);        // and libm's results for what is not positive
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

template <class C>
class log_normal_test : public ::testing::Test {};
TYPED_TEST_SUITE(log_normal_test, all_configs, config_names);

// |y - log t| in units of the last place of max(|log t|, smallest normal).
template <class T>
double log_ulps(T y, long double want) {
  const long double scale =
      std::max(std::fabs(want), static_cast<long double>(std::numeric_limits<T>::min()));
  const long double ulp = std::ldexp(1.0L, std::ilogb(scale) - std::numeric_limits<T>::digits + 1);
  return static_cast<double>(std::fabs(static_cast<long double>(y) - want) / ulp);
}

TYPED_TEST(log_normal_test, within_two_ulp) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  double worst = 0;
  T at = 0;
  std::vector<T> t, y;
  auto check = [&] {
    y.resize(t.size());
    probe_of<TypeParam>::log_normal(t.data(), y.data(), t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double e = log_ulps(y[i], std::log(static_cast<long double>(t[i])));
      if (!(e <= worst)) {
        worst = e;
        at = t[i];
      }
    }
    t.clear();
  };
  constexpr std::size_t chunk = 1 << 20;
  if (sizeof(T) == 4) {  // every 257th normal float (times the sampling stride), a chunk at a time
    const std::uint64_t stride = 257 * exhaustive_stride();
    for (std::uint64_t b = 0x00800000u; b < 0x7f800000u; b += stride) {
      const auto bits = static_cast<std::uint32_t>(b);
      float v;
      std::memcpy(&v, &bits, 4);
      t.push_back(static_cast<T>(v));
      if (t.size() == chunk) check();
    }
  } else {  // 10^7 doubles (divided by the sampling stride), uniform mantissa and exponent
    std::mt19937_64 rng(20261203);
    std::uniform_real_distribution<double> mantissa(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(-1022, 1023);
    const std::size_t count = sampled(10000000);
    for (std::size_t k = 0; k < count; ++k) {
      t.push_back(static_cast<T>(std::ldexp(mantissa(rng), exponent(rng))));
      if (t.size() == chunk) check();
    }
  }
  // The neighbours of 1, √2/2 and √2, where the mantissa's interval wraps.
  for (double c : {1.0, std::sqrt(0.5), std::sqrt(2.0)}) {
    T v = static_cast<T>(c), w = static_cast<T>(c);
    for (int k = 0; k < 1000; ++k) {
      t.push_back(v = std::nextafter(v, T(0)));
      t.push_back(w = std::nextafter(w, T(4)));
    }
  }
  check();
  std::printf("[ log_normal ] %s %s: max error %.3f ulp at %.17g\n", TypeParam::arch::name(),
              sizeof(T) == 4 ? "float" : "double", worst, static_cast<double>(at));
  EXPECT_LE(worst, 3.5) << "at t = " << at;
  const T one = 1;
  T z = -7;
  probe_of<TypeParam>::log_normal(&one, &z, 1);
  EXPECT_EQ(z, T(0));
  EXPECT_FALSE(std::signbit(z));
}

// log1p(a) for a >= 0: within 4 ulp of |log1p a| (log_normal's bound on log(1 + a) and the
// rounding of the corrected sum), a itself below ulp(1), +inf for +inf.
TYPED_TEST(log_normal_test, log1p_of_nonnegative) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<T> a = {T(0),
                      infinity<T>,
                      std::numeric_limits<T>::max(),
                      std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::denorm_min(),
                      std::numeric_limits<T>::epsilon()};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(
      -60.0, std::log2(static_cast<double>(std::numeric_limits<T>::max())) - 1);
  for (std::size_t k = 0, m = sampled(1000000); k < m; ++k)
    a.push_back(static_cast<T>(std::exp2(exponent(rng))));
  std::vector<T> y(a.size());
  probe_of<TypeParam>::log1p_nonnegative(a.data(), y.data(), a.size());
  EXPECT_EQ(y[0], T(0));
  EXPECT_EQ(y[1], infinity<T>);
  double worst = 0;
  T at = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    const double e = log_ulps(y[i], std::log1p(static_cast<long double>(a[i])));
    if (!(e <= worst)) {
      worst = e;
      at = a[i];
    }
  }
  std::printf("[ log1p_nonnegative ] %s %s: max error %.3f ulp at %.17g\n", TypeParam::arch::name(),
              sizeof(T) == 4 ? "float" : "double", worst, static_cast<double>(at));
  EXPECT_LE(worst, 4.0) << "at a = " << at;
}

// log1p(a) for a in [0, 1] by the polynomial (log1p_unit): within 3 ulp of log1p a over every
// 64th float of [0, 1] (every float's bits at that stride: each binade down to the subnormals) and
// 10^6 doubles spread over 80 binades; log1p(0) = 0 exactly.
TYPED_TEST(log_normal_test, log1p_of_unit_interval) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<T> a = {T(0), T(1)};
  if (sizeof(T) == 4) {
    const std::uint32_t stride = 64 * static_cast<std::uint32_t>(exhaustive_stride());
    for (std::uint32_t b = stride; b < 0x3f800000u; b += stride) {
      float f;
      std::memcpy(&f, &b, sizeof f);
      a.push_back(static_cast<T>(f));
    }
  } else {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0.5, 1.0);
    for (std::size_t k = 0, m = sampled(1000000); k < m; ++k)
      a.push_back(static_cast<T>(std::ldexp(u(rng), -static_cast<int>(k % 80))));
  }
  std::vector<T> y(a.size());
  probe_of<TypeParam>::log1p_unit(a.data(), y.data(), a.size());
  EXPECT_EQ(y[0], T(0));
  double worst = 0;
  T at = 0;
  for (std::size_t i = 1; i < a.size(); ++i) {
    const double e = log_ulps(y[i], std::log1p(static_cast<long double>(a[i])));
    if (!(e <= worst)) {
      worst = e;
      at = a[i];
    }
  }
  std::printf("[ log1p_unit ] %s %s: max error %.3f ulp at %.17g\n", TypeParam::arch::name(),
              sizeof(T) == 4 ? "float" : "double", worst, static_cast<double>(at));
  EXPECT_LE(worst, 3.0) << "at a = " << at;
}

}  // namespace

// The forms of the x - max error (primitives/exp_minus_max.hpp) on every compiled instruction set:
// which form a row gets, that each form gives TwoSum's result bit for bit on every row it is
// chosen for (including the entries at the edge of its condition), and that outside its
// condition it would not (so the check can fail).

#include <cmath>

#include "primitive_probe.hpp"
#include "test_support.hpp"

namespace {

using namespace smax_test;
using smax::primitives::choose_difference_error;
using smax::primitives::difference_error;

template <class C>
class exp_minus_max_test : public ::testing::Test {};
TYPED_TEST_SUITE(exp_minus_max_test, all_configs, config_names);

template <class T>
class difference_choice_test : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(difference_choice_test, value_types);

TYPED_TEST(difference_choice_test, follows_the_exponent_of_the_max) {
  using T = TypeParam;
  const T below8 = std::nextafter(T(8), T(0));
  EXPECT_EQ(choose_difference_error(T(-3), T(-100)), difference_error::x_larger);
  EXPECT_EQ(choose_difference_error(T(0), T(-5)), difference_error::x_larger);
  EXPECT_EQ(choose_difference_error(T(5), -below8), difference_error::max_larger);
  EXPECT_EQ(choose_difference_error(T(4), -below8), difference_error::max_larger);
  EXPECT_EQ(choose_difference_error(T(5), T(-8)), difference_error::two_sum);
  EXPECT_EQ(choose_difference_error(std::nextafter(T(4), T(0)), T(-4)), difference_error::two_sum);
  EXPECT_EQ(choose_difference_error(T(1000), T(990)), difference_error::max_larger);
  EXPECT_EQ(choose_difference_error(T(10), -infinity<T>), difference_error::two_sum);
  const T big = std::numeric_limits<T>::max();
  EXPECT_EQ(choose_difference_error(big, -big), difference_error::max_larger);
  const T tiny = std::numeric_limits<T>::denorm_min();
  EXPECT_EQ(choose_difference_error(tiny, -tiny), difference_error::max_larger);
  EXPECT_EQ(choose_difference_error(tiny, T(-2) * tiny), difference_error::two_sum);
}

// Entries whose low bits the subtraction drops: random mantissas in [lo, hi], plus the ends.
template <class T>
std::vector<T> row_between(T lo, T hi, T max, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(static_cast<double>(lo), static_cast<double>(hi));
  std::vector<T> x(4099);
  for (auto& v : x) v = static_cast<T>(u(rng));
  x[0] = max;
  x[1] = lo;
  x[2] = hi;
  x[3] = std::nextafter(lo, hi);
  return x;
}

template <class C, class T>
std::size_t count_differences(std::vector<T> const& x, T max, difference_error form) {
  std::vector<T> expected(x.size()), got(x.size());
  probe_of<C>::exp_minus_max(x.data(), expected.data(), x.size(), max, difference_error::two_sum);
  probe_of<C>::exp_minus_max(x.data(), got.data(), x.size(), max, form);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += got[i] != expected[i];
  return differ;
}

TYPED_TEST(exp_minus_max_test, each_form_equals_two_sum_where_chosen) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  unsigned seed = 1;
  // max > 0: every |x| below the next power of two above the max.
  for (T max : {T(5.3), T(4), T(7.99), T(1000.25), T(0.0123), T(3e30)}) {
    const T bound = std::ldexp(T(1), std::ilogb(max) + 1);
    const T lo = -std::nextafter(bound, T(0));
    const auto x = row_between<T>(lo, max, max, seed++);
    ASSERT_EQ(choose_difference_error(max, lo), difference_error::max_larger);
    EXPECT_EQ((count_differences<TypeParam>(x, max, difference_error::max_larger)), 0u) << max;
  }
  // max <= 0: every |x| >= |max|.
  for (T max : {T(0), T(-2.7), T(-1000.5), T(-1e-20)}) {
    const auto x = row_between<T>(T(-5000), max, max, seed++);
    ASSERT_EQ(choose_difference_error(max, T(-5000)), difference_error::x_larger);
    EXPECT_EQ((count_differences<TypeParam>(x, max, difference_error::x_larger)), 0u) << max;
  }
}

// Outside their conditions the two-operation forms lose the error, and TwoSum is what keeps it:
// the comparison above can fail, and TwoSum itself matches the long-double exp.
TYPED_TEST(exp_minus_max_test, outside_their_conditions_the_short_forms_differ) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T max = T(5.3);
  const auto x = row_between<T>(T(-40), T(-8), max, 99);
  EXPECT_EQ(choose_difference_error(max, T(-40)), difference_error::two_sum);
  EXPECT_GT((count_differences<TypeParam>(x, max, difference_error::max_larger)), 0u);
  EXPECT_GT((count_differences<TypeParam>(x, max, difference_error::dropped)), 0u);
  std::vector<T> y(x.size());
  probe_of<TypeParam>::exp_minus_max(x.data(), y.data(), x.size(), max, difference_error::two_sum);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double r = std::exp(static_cast<long double>(x[i]) - static_cast<long double>(max));
    EXPECT_LE(std::fabs(static_cast<long double>(y[i]) - r) / r,
              sizeof(T) == 4 ? 1.2e-7L : 4.5e-16L)
        << "at " << x[i];
  }
}

// exp_minus_shift: exp(x/T - j·ln2) with j = floor(max/T·log2e), for rows with |max/T| below its
// limit. Its values relative to the maximum's (the row constant cancels in a normalised row)
// match the long-double exp((x - max)/T) to about one ulp each, at the maxima's both signs, near
// the limit and with temperatures (the scaled form); -inf gives 0, NaN stays NaN, entries far
// below the maximum give 0.
TYPED_TEST(exp_minus_max_test, power_of_two_shift_against_long_double) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const bool fma = smax::detail::has_native_fma<typename TypeParam::arch>::value;
  const double limit = smax::primitives::power_of_two_shift_limit<typename TypeParam::arch, T>();
  const long double tol = sizeof(T) == 4 ? 2.5e-7L : 1e-15L;  // two values' errors
  unsigned seed = 7;
  for (T t : {T(1), T(0.3), T(2.5)}) {
    if (t != T(1) && !fma) continue;  // the scaled form needs a fused multiply-add
    for (double m : {0.0, 5.3, -2.7, 1000.25, -1000.5, 0.9 * limit, -0.9 * limit}) {
      const T max = static_cast<T>(m * static_cast<double>(t));
      auto x =
          row_between<T>(static_cast<T>(static_cast<double>(max) - 80.0 * static_cast<double>(t)),
                         max, max, seed++);
      x.push_back(-infinity<T>);
      x.push_back(quiet_nan<T>);
      x.push_back(static_cast<T>(static_cast<double>(max) - 2000.0 * static_cast<double>(t)));
      std::vector<T> y(x.size());
      probe_of<TypeParam>::exp_minus_shift(x.data(), y.data(), x.size(), max, t);
      EXPECT_GE(y[0], T(1)) << max;  // exp(max/T - σ) is in [1, 2)
      EXPECT_LT(y[0], T(2)) << max;
      const std::size_t n = x.size();
      EXPECT_EQ(y[n - 3], T(0));
      EXPECT_TRUE(std::isnan(y[n - 2]));
      EXPECT_EQ(y[n - 1], T(0));
      const long double inv_t = static_cast<long double>(T(1) / t);
      const long double top = y[0];  // the maximum's value: exp(max/T - σ)·(1 + error)
      for (std::size_t i = 0; i + 3 < n; ++i) {
        const long double r =
            std::exp((static_cast<long double>(x[i]) - static_cast<long double>(max)) * inv_t);
        EXPECT_LE(std::fabs(static_cast<long double>(y[i]) / top / r - 1), tol)
            << "x = " << x[i] << ", max = " << max << ", T = " << t;
      }
    }
  }
}

}  // namespace

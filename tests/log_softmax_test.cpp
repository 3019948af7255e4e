// log_softmax (smax/log_softmax.hpp): the properties specific to the log domain. The shared
// kernels are also checked against the reference, with every algorithm, length and special
// value, in softmax_test.cpp (its `forms` loop runs both).

#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class log_softmax_test : public ::testing::Test {};
TYPED_TEST_SUITE(log_softmax_test, all_configs, config_names);

TYPED_TEST(log_softmax_test, spec_values) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max();
  for (auto a : all_algorithms) {
    // two_pass subtracts no maximum, so its exact zeros come out as ~1e-8 (its stated bound).
    const T tol = a == algorithm_id::two_pass ? T(1e-6) : T(0);
    std::vector<T> y(3);
    const std::vector<T> x = {1000, -1000, 0};
    forward<TypeParam>(a, true, x.data(), y.data(), 3);
    EXPECT_NEAR(y[0], T(0), tol) << name_of(a);
    EXPECT_NEAR(y[1], T(-2000), tol * 2000) << name_of(a);
    EXPECT_NEAR(y[2], T(-1000), tol * 1000) << name_of(a);
    // A row holding FLT_MAX: x - (m + log s) would be off by 0.69; (x - m) - log s is exact.
    const std::vector<T> top = {big, big, -big};
    forward<TypeParam>(a, true, top.data(), y.data(), 3);
    EXPECT_NEAR(y[0], -std::log(2.0), 1e-7) << name_of(a);
    EXPECT_EQ(y[2], -infinity<T>) << name_of(a);  // -2·FLT_MAX is beyond the range
    const std::vector<T> one = {T(-5)};
    forward<TypeParam>(a, true, one.data(), y.data(), 1);
    EXPECT_NEAR(y[0], T(0), tol);  // E2
  }
}

// Invariants: z <= 0, logsumexp(z) = 0, exp(z) = softmax(x), shift invariance.
TYPED_TEST(log_softmax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 3 * TypeParam::width + 5;
  const auto x = random_row<T>(n, 30.0, 0.0, 17);
  for (auto a : all_algorithms) {
    std::vector<T> z(n), y(n);
    forward<TypeParam>(a, true, x.data(), z.data(), n);
    forward<TypeParam>(a, false, x.data(), y.data(), n);
    long double lse = 0;
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_LE(z[i], T(0));
      lse += std::exp(static_cast<long double>(z[i]));
      EXPECT_NEAR(std::exp(static_cast<double>(z[i])), y[i], 4 * softmax_rtol<T> * y[i] + 1e-30);
    }
    EXPECT_NEAR(static_cast<double>(std::log(lse)), 0.0, 8 * std::numeric_limits<T>::epsilon());
  }
}

TEST(log_softmax_api, overloads) {
  std::vector<float> x = {1, 2, 3}, y(3);
  smax::log_softmax(x.data(), y.data(), 3);
  EXPECT_NEAR(y[2], -0.40760596f, 1e-7f);
  std::vector<float> z(3);
  smax::log_softmax(smax::two_pass, x.data(), z.data(), 3);
  EXPECT_NEAR(z[0], y[0], 1e-6f);
  smax::log_softmax(smax::online, x.data(), z.data(), 3, {0.5, false});
  EXPECT_NEAR(z[2], -0.14293163f, 1e-6f);  // 6 - log(e^2 + e^4 + e^6)
  std::vector<double> m = {-HUGE_VAL, -HUGE_VAL}, my(2);
  smax::log_softmax_rows(m.data(), my.data(), 1, 2, 2, {1.0, true});
  EXPECT_EQ(my[0], -HUGE_VAL);
  std::vector<float> dy = {1, 1, 1}, dx(3);
  smax::log_softmax_backward(y.data(), dy.data(), dx.data(), 3);
  EXPECT_NEAR(dx[0] + dx[1] + dx[2], 0.0f, 1e-6f);  // sum(dx) = (1 - sum p)·sum(dy) = 0
  EXPECT_NEAR(dx[2], 1 - 3 * std::exp(y[2]), 1e-6f);
}

}  // namespace

// StableMax and log-StableMax (smax/stablemax.hpp) on every compiled instruction set, float and
// double: against the long-double reference at every length around the vector width, with wide
// spreads, extreme values, masks and special values; the invariants of the definition; the
// backward passes against the reference VJP with the bound the header states.

#include <cstring>

#include <smax/reference/stablemax.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class stablemax_test : public ::testing::Test {};
TYPED_TEST_SUITE(stablemax_test, all_configs, config_names);

template <class C, class T>
std::vector<T> stablemax_of(std::vector<T> const& x, bool log) {
  std::vector<T> y(x.size() + 1, T(-7));  // one guard element past the end
  smax::kernels::stablemax_table<typename C::arch>::forward(x.data(), x.size(), y.data(), x.size(),
                                                            x.empty() ? 0 : 1, x.size(), log);
  EXPECT_EQ(y.back(), T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// The header's bounds: relative 1e-6 / 1e-14 for outputs >= the smallest normal number; log:
// |error| <= 2^-22·(|z| + 1 + log n) (double: 1e-14·(...)).
template <class C, class T>
::testing::AssertionResult matches_stablemax_reference(std::vector<T> const& x, bool log) {
  const auto y = stablemax_of<C>(x, log);
  const auto r = smax::reference::stablemax(x.data(), x.size(), log);
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : 1e-14;
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto ok =
        log ? matches(y[i], r[i], 0.0,
                      eps * (std::fabs(static_cast<double>(r[i])) + 1 + std::log(double(x.size()))),
                      i, false)
            : matches(y[i], r[i], softmax_rtol<T>, std::numeric_limits<T>::min(), i);
    if (!ok) return ok << " [" << (log ? "log, " : "") << "n = " << x.size() << "]";
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(stablemax_test, every_length_and_spread) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (bool log : {false, true}) {
    for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
      for (double spread : {2.0, 20.0, 2000.0})
        for (double offset : {0.0, -5.0, 7.0}) {
          const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + 7 * spread));
          EXPECT_TRUE((matches_stablemax_reference<TypeParam>(x, log)));
        }
    for (std::size_t n : {std::size_t(1000), std::size_t(65537)}) {
      EXPECT_TRUE((matches_stablemax_reference<TypeParam>(random_row<T>(n, 200.0, -50.0, 3), log)));
      EXPECT_TRUE((matches_stablemax_reference<TypeParam>(random_row<T>(n, 1e6, 0.0, 4), log)));
    }
  }
}

TYPED_TEST(stablemax_test, extreme_values_masks_and_special_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, g},                   // the sum of s overflows float: [0.75, 0.25]
      {big, -big, T(0), T(1)},  // s(-max) underflows; log stays finite
      {-big, -big, -big},       // every s subnormal in float: uniform
      {-f, T(-1), T(-1e30)},
      {T(5)},                              // n = 1: [1] / [0]
      {-inf, T(2), -inf, T(-3)},           // masked entries
      {T(1e-30), T(-1e-30), T(0), -T(0)},  // ties around 0
      {-inf, -inf},                        // all masked: NaN
      {T(1), nan, T(2)},                   // NaN: NaN row
      {T(1), inf, T(2)},                   // +inf: NaN row
      {std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min()},
  };
  for (bool log : {false, true})
    for (auto const& x : rows) {
      EXPECT_TRUE((matches_stablemax_reference<TypeParam>(x, log)));
      for (std::size_t lane = 0; lane < 2 * TypeParam::width + 3; lane += 3) {
        // The same values at every lane position of a longer row of ordinary entries.
        auto row = random_row<T>(2 * TypeParam::width + 3, 4.0, 0.0, static_cast<unsigned>(lane));
        for (std::size_t k = 0; k < x.size() && lane + k < row.size(); ++k) row[lane + k] = x[k];
        EXPECT_TRUE((matches_stablemax_reference<TypeParam>(row, log)));
      }
    }
  // The exact figures of the definition.
  const auto y = stablemax_of<TypeParam>(std::vector<T>{f, g}, false);
  EXPECT_NEAR(y[0], 0.75, 1e-6);
  EXPECT_EQ(stablemax_of<TypeParam>(std::vector<T>{T(5)}, false)[0], T(1));
  EXPECT_EQ(stablemax_of<TypeParam>(std::vector<T>{T(5)}, true)[0], T(0));
  EXPECT_EQ(stablemax_of<TypeParam>(std::vector<T>{T(-4), -inf}, false)[1], T(0));
  EXPECT_EQ(stablemax_of<TypeParam>(std::vector<T>{T(-4), -inf}, true)[1], -inf);
}

// Batches: every row of a rows × cols call (short rows go through the register kernels four at
// a time, then one by one) equals the same row alone, bit for bit, with a special row (NaN,
// all masked) inside a group, padding between rows left untouched, and in place.
TYPED_TEST(stablemax_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::stablemax_table<typename TypeParam::arch>;
  const std::size_t w = TypeParam::width;
  for (bool log : {false, true})
    for (std::size_t cols :
         {std::size_t(1), std::size_t(2), w - 1, w, w + 1, 3 * w + 2, 4 * w, 4 * w + 1, 9 * w + 3})
      for (std::size_t rows : {std::size_t(1), std::size_t(3), std::size_t(4), std::size_t(9)}) {
        if (cols == 0) continue;
        const std::size_t ld = cols + 3;
        auto x = random_row<T>(rows * ld, 6.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
        if (rows > 4) {
          x[5 * ld + cols / 2] = quiet_nan<T>;                                  // row 5: NaN
          for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;  // row 6: masked
        }
        std::vector<T> y(rows * ld, T(-7)), inplace = x;
        table::forward(x.data(), ld, y.data(), ld, rows, cols, log);
        table::forward(inplace.data(), ld, inplace.data(), ld, rows, cols, log);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
          const auto alone = stablemax_of<TypeParam>(row, log);
          for (std::size_t i = 0; i < cols; ++i) {
            ASSERT_TRUE(same_bits_or_both_nan(y[r * ld + i], alone[i]))
                << "row " << r << " of " << rows << ", cols " << cols << ", at " << i
                << (log ? ", log" : "");
            ASSERT_TRUE(same_bits_or_both_nan(inplace[r * ld + i], alone[i])) << "in place";
          }
          for (std::size_t i = cols; i < ld && r * ld + i < y.size(); ++i)
            ASSERT_EQ(y[r * ld + i], T(-7)) << "padding written";
        }
      }
}

// Σy = 1, order kept, y ∝ x + 1 on nonnegative rows; not shift invariant.
TYPED_TEST(stablemax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto x = random_row<T>(777, 10.0, 0.0, 11);
  const auto y = stablemax_of<TypeParam>(x, false);
  double s = 0;
  for (T v : y) s += v;
  EXPECT_NEAR(s, 1.0, sizeof(T) == 4 ? 1e-6 : 1e-14);
  for (std::size_t i = 1; i < x.size(); ++i)
    if (x[i] > x[i - 1]) {
      EXPECT_GE(y[i], y[i - 1]);
    }
  const std::vector<T> pos = {T(0), T(1), T(3)};
  const auto yp = stablemax_of<TypeParam>(pos, false);
  EXPECT_NEAR(yp[0], 1.0 / 7, 1e-7);
  EXPECT_NEAR(yp[2], 4.0 / 7, 1e-7);
  const auto shifted = stablemax_of<TypeParam>(std::vector<T>{T(10), T(11), T(13)}, false);
  EXPECT_GT(std::fabs(shifted[0] - yp[0]), 0.1);
}

// Backward: against the long-double VJP, with the header's bound.
TYPED_TEST(stablemax_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::stablemax_table<typename TypeParam::arch>;
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
  for (bool log : {false, true})
    for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(TypeParam::width + 1),
                          std::size_t(100), std::size_t(4099)}) {
      auto x = random_row<T>(n, 30.0, 0.0, static_cast<unsigned>(n));
      if (n > 2) x[1] = -infinity<T>;
      const auto dy = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 1));
      const auto y = stablemax_of<TypeParam>(x, log);
      std::vector<T> dx(n);
      table::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, log);
      const auto want = smax::reference::stablemax_backward(x.data(), dy.data(), n, log);
      const auto p = smax::reference::stablemax(x.data(), n, false);
      long double weighted = 0, total = 0;
      for (std::size_t i = 0; i < n; ++i) {
        weighted += p[i] * std::fabs(static_cast<long double>(dy[i]));
        total += std::fabs(static_cast<long double>(dy[i]));
      }
      for (std::size_t i = 0; i < n; ++i) {
        const long double gi =
            std::isinf(x[i]) ? 0 : 1 / (1 + std::fabs(static_cast<long double>(x[i])));
        const long double bound =
            16 * eps * gi *
            (log ? std::fabs(static_cast<long double>(dy[i])) + p[i] * total
                 : p[i] * std::fabs(static_cast<long double>(dy[i])) + p[i] * weighted);
        EXPECT_LE(std::fabs(dx[i] - want[i]), bound)
            << (log ? "log, " : "") << "n = " << n << ", i = " << i << ": " << dx[i] << " vs "
            << static_cast<double>(want[i]);
      }
    }
}

// The public forms: a row of the _rows form equals the single-row form.
TEST(stablemax_api, rows_and_in_place) {
  const auto x = random_row<float>(300, 20.0, 0.0, 5);
  std::vector<float> a(300), b(x);
  smax::stablemax(x.data(), a.data(), x.size());
  smax::stablemax(b.data(), b.data(), b.size());
  EXPECT_EQ(a, b);
  smax::log_stablemax(x.data(), a.data(), x.size());
  b = x;
  smax::log_stablemax(b.data(), b.data(), b.size());
  EXPECT_EQ(a, b);
}

}  // namespace

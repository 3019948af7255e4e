// Softplus + l1 with the length scale (smax/softplus_l1.hpp) on every compiled instruction set,
// float and double: against the long-double reference at every length around the vector width,
// with wide spreads, large scales (base near 1), extreme values, masks and special values; the
// invariants of the definition; the backward pass against its formula at the y passed in (with
// the header's bound) and the reference VJP against central differences of the reference.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <smax/reference/softplus_l1.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class softplus_l1_test : public ::testing::Test {};
TYPED_TEST_SUITE(softplus_l1_test, all_configs, config_names);

template <class C>
using table_of = smax::kernels::softplus_l1_table<typename C::arch>;

// λ as the kernels take it (rounded to T) and exactly (long double).
template <class C, class T>
T lambda_of(double base, double keys) {
  return table_of<C>::lambda(base, keys, static_cast<T*>(nullptr));
}
inline long double exact_lambda(double base, double keys) {
  return std::log(static_cast<long double>(keys)) / std::log(static_cast<long double>(base));
}

template <class C, class T>
std::vector<T> softplus_l1_of(std::vector<T> const& x, double base, double keys = 0,
                              bool zero_masked_rows = false) {
  std::vector<T> y(x.size() + 1, T(-7));  // one guard element past the end
  const T lambda = lambda_of<C, T>(base, keys ? keys : static_cast<double>(x.size()));
  table_of<C>::forward(x.data(), x.size(), y.data(), x.size(), x.empty() ? 0 : 1, x.size(), lambda,
                       zero_masked_rows);
  EXPECT_EQ(y.back(), T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// The largest error seen, as a fraction of the bound (printed by the last test of a type).
template <class T>
double worst_fraction = 0;

// The header's bound: relative 1e-6 + 2^-21·(g_i + Σ_j y_j·g_j), g = 1 + max(0, -λx) (double:
// 1e-14 + 2^-50·(...)), for outputs >= the smallest normal number, against the reference at the
// exact λ.
template <class C, class T>
::testing::AssertionResult matches_softplus_l1_reference(std::vector<T> const& x, double base,
                                                         double keys = 0) {
  const double n = keys ? keys : static_cast<double>(x.size());
  const auto y = softplus_l1_of<C>(x, base, n);
  const long double lambda = x.size() ? exact_lambda(base, n) : 0;
  const auto r = smax::reference::softplus_l1(x.data(), x.size(), lambda);
  const double e = sizeof(T) == 4 ? std::ldexp(1.0, -21) : std::ldexp(1.0, -50);
  long double spread_g = 0;
  auto g = [&](T v) {
    const long double u = lambda * static_cast<long double>(v);
    return 1 + (u < 0 ? -u : 0.0L);
  };
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(static_cast<double>(x[i])) && std::isfinite(static_cast<double>(r[i])))
      spread_g += r[i] * g(x[i]);
  for (std::size_t i = 0; i < x.size(); ++i) {
    double rtol = softmax_rtol<T>;
    if (std::isfinite(static_cast<double>(x[i])))
      rtol += e * static_cast<double>(g(x[i]) + spread_g);
    const T tiny = std::numeric_limits<T>::min();
    auto ok = matches(y[i], r[i], rtol, tiny, i);
    if (!ok)
      return ok << " [n = " << x.size() << ", base = " << base << ", keys = " << n
                << ", x = " << x[i] << "]";
    if (std::isfinite(static_cast<double>(r[i])) && r[i] >= tiny)
      worst_fraction<T> =
          std::max(worst_fraction<T>, static_cast<double>(std::fabs(y[i] - r[i]) / (rtol * r[i])));
  }
  return ::testing::AssertionSuccess();
}

constexpr double bases[] = {64.0, 2.0, 1.001, 1e10};

TYPED_TEST(softplus_l1_test, every_length_and_spread) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double base : bases)
    for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
      for (double spread : {2.0, 20.0, 2000.0})
        for (double offset : {0.0, -5.0, 7.0}) {
          const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + 7 * spread));
          EXPECT_TRUE((matches_softplus_l1_reference<TypeParam>(x, base)));
        }
  for (double base : bases)
    for (std::size_t n : {std::size_t(1000), long_row(65537)}) {
      EXPECT_TRUE(
          (matches_softplus_l1_reference<TypeParam>(random_row<T>(n, 200.0, -50.0, 3), base)));
      EXPECT_TRUE((matches_softplus_l1_reference<TypeParam>(random_row<T>(n, 1e6, 0.0, 4), base)));
      EXPECT_TRUE((matches_softplus_l1_reference<TypeParam>(random_row<T>(n, 4.0, 0.0, 5), base)));
    }
  EXPECT_TRUE(
      (matches_softplus_l1_reference<TypeParam>(random_row<T>(long_row(1 << 20), 30.0, -10.0, 6), 64.0)));
}

// Large λ (base near 1, huge n_keys), near-zero inputs, very negative rows (softplus = e^u, far
// below the smallest normal number), values near ±FLT_MAX, where the sum or λ·x overflow.
TYPED_TEST(softplus_l1_test, scales_and_extreme_values) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const T sub = std::numeric_limits<T>::denorm_min();
  const std::vector<std::vector<T>> rows = {
      {f, g},
      {big, -big, T(0), T(1)},
      {big, big / 2, big / 4},
      {-big, -big, -big},
      {-f, T(-1), T(-1e30)},
      {T(-100), T(-101), T(-150)},
      {T(-60), T(-61.5), T(-80), T(-95)},
      {T(-20), T(-18), T(-17.5), T(-40)},
      {T(0.5), T(0.25), T(-3), T(-90)},
      {T(1e-30), T(-1e-30), T(0), -T(0)},
      {T(1e-6), T(-1e-6), T(3e-7), T(-2e-4)},
      {sub, -sub, T(0)},
      {T(5)},
      {-inf, T(2), -inf, T(-3)},
      {-inf, T(-200), -inf, T(-201)},
      {-inf, -inf},
      {T(1), nan, T(2)},
      {T(1), inf, T(2)},
      {nan, -inf},
  };
  for (double base : {64.0, 2.0, 1.0 + 1e-6, 1.0 + std::ldexp(1.0, -40), 1e300})
    for (double keys : {0.0, 1e18})
      for (auto const& x : rows) {
        EXPECT_TRUE((matches_softplus_l1_reference<TypeParam>(x, base, keys)));
        for (std::size_t lane = 0; lane < 2 * TypeParam::width + 3; lane += 3) {
          // The same values at every lane position of a longer row of small entries.
          auto row =
              random_row<T>(2 * TypeParam::width + 3, 0.02, -0.01, static_cast<unsigned>(lane));
          for (std::size_t k = 0; k < x.size() && lane + k < row.size(); ++k) row[lane + k] = x[k];
          EXPECT_TRUE((matches_softplus_l1_reference<TypeParam>(row, base, keys)));
        }
      }
  // The exact figures of the definition: λ = 1 at n = base.
  const auto y = softplus_l1_of<TypeParam>(std::vector<T>{f, g}, 2.0);
  EXPECT_NEAR(y[0], 0.75, 1e-6);
  EXPECT_EQ(softplus_l1_of<TypeParam>(std::vector<T>{T(-5)}, 64.0)[0], T(1));
  const auto masked = softplus_l1_of<TypeParam>(std::vector<T>{T(-4), -inf, T(3)}, 64.0);
  EXPECT_EQ(masked[1], T(0));
  EXPECT_GT(masked[0], T(0));
  // Very negative: y_1/y_0 = e^(λ·(x_1 - x_0)) (softplus(u) = e^u), with both far below the
  // smallest normal number when formed alone.
  const auto neg = softplus_l1_of<TypeParam>(std::vector<T>{T(-200), T(-201)}, 2.0);
  EXPECT_NEAR(neg[1] / neg[0], std::exp(-1.0), 1e-6);
}

TYPED_TEST(softplus_l1_test, special_rows_and_bad_base) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T inf = infinity<T>;
  const std::vector<T> all_masked = {-inf, -inf, -inf};
  for (T v : softplus_l1_of<TypeParam>(all_masked, 64.0)) EXPECT_TRUE(std::isnan(v));
  for (T v : softplus_l1_of<TypeParam>(all_masked, 64.0, 0, true)) EXPECT_EQ(v, T(0));
  // A NaN row stays NaN with zero_masked_rows.
  for (T v : softplus_l1_of<TypeParam>(std::vector<T>{-inf, quiet_nan<T>}, 64.0, 0, true))
    EXPECT_TRUE(std::isnan(v));
  // λ = 0 (n_keys = 1): uniform over the unmasked entries, the E-rules otherwise.
  const auto u = softplus_l1_of<TypeParam>(std::vector<T>{T(1e30), -inf, T(-3), T(0)}, 64.0, 1);
  EXPECT_EQ(u[0], T(1.0 / 3));
  EXPECT_EQ(u[1], T(0));
  EXPECT_EQ(u[3], T(1.0 / 3));
  for (T v : softplus_l1_of<TypeParam>(std::vector<T>{T(1), inf}, 64.0, 1))
    EXPECT_TRUE(std::isnan(v));
  for (T v : softplus_l1_of<TypeParam>(all_masked, 64.0, 1, true)) EXPECT_EQ(v, T(0));
  // A base that is not finite and > 1: NaN rows, forward and backward.
  const std::vector<T> x = {T(1), T(2), T(-3)}, dy = {T(1), T(0), T(-1)};
  for (double base : {1.0, 0.5, 0.0, -2.0, double(INFINITY), double(NAN)}) {
    EXPECT_TRUE(std::isnan(lambda_of<TypeParam, T>(base, 3)));
    for (T v : softplus_l1_of<TypeParam>(x, base)) EXPECT_TRUE(std::isnan(v)) << base;
    std::vector<T> dx(3);
    table_of<TypeParam>::backward(x.data(), 3, x.data(), 3, dy.data(), 3, dx.data(), 3, 1, 3,
                                  lambda_of<TypeParam, T>(base, 3));
    for (T v : dx) EXPECT_TRUE(std::isnan(v)) << base;
  }
}

// Batches: every row of a rows × cols call (short rows go through the register kernels four at
// a time, then one by one) equals the same row alone, bit for bit, with special rows (NaN, all
// masked, very negative, huge) inside a group, padding between rows left untouched, and in place.
TYPED_TEST(softplus_l1_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t w = TypeParam::width;
  for (bool zero_masked_rows : {false, true})
    for (std::size_t cols :
         {std::size_t(1), std::size_t(2), w - 1, w, w + 1, 3 * w + 2, 4 * w, 4 * w + 1, 9 * w + 3})
      for (std::size_t rows : {std::size_t(1), std::size_t(3), std::size_t(4), std::size_t(9)}) {
        if (cols == 0) continue;
        const std::size_t ld = cols + 3;
        auto x = random_row<T>(rows * ld, 6.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
        if (rows > 4) {
          x[5 * ld + cols / 2] = quiet_nan<T>;                                  // row 5: NaN
          for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;  // row 6: masked
          for (std::size_t i = 0; i < cols; ++i) x[7 * ld + i] -= T(300);       // row 7: e^u
          x[8 * ld] = std::numeric_limits<T>::max();                            // row 8: scaled
        }
        const T lambda = lambda_of<TypeParam, T>(1.5, static_cast<double>(cols));
        std::vector<T> y(rows * ld, T(-7)), inplace = x;
        table_of<TypeParam>::forward(x.data(), ld, y.data(), ld, rows, cols, lambda,
                                     zero_masked_rows);
        table_of<TypeParam>::forward(inplace.data(), ld, inplace.data(), ld, rows, cols, lambda,
                                     zero_masked_rows);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
          const auto alone = softplus_l1_of<TypeParam>(row, 1.5, 0, zero_masked_rows);
          for (std::size_t i = 0; i < cols; ++i) {
            ASSERT_TRUE(same_bits_or_both_nan(y[r * ld + i], alone[i]))
                << "row " << r << " of " << rows << ", cols " << cols << ", at " << i;
            ASSERT_TRUE(same_bits_or_both_nan(inplace[r * ld + i], alone[i])) << "in place";
          }
          for (std::size_t i = cols; i < ld && r * ld + i < y.size(); ++i)
            ASSERT_EQ(y[r * ld + i], T(-7)) << "padding written";
        }
      }
}

// Σy = 1, y > 0 for finite entries, order kept; not shift invariant; λ -> ∞ gives relu(x)/Σ
// relu(x) where some x > 0.
TYPED_TEST(softplus_l1_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto x = random_row<T>(777, 10.0, 0.0, 11);
  const auto y = softplus_l1_of<TypeParam>(x, 64.0);
  double s = 0;
  for (T v : y) {
    s += v;
    EXPECT_GT(v, T(0));
  }
  EXPECT_NEAR(s, 1.0, sizeof(T) == 4 ? 1e-6 : 1e-14);
  for (std::size_t i = 1; i < x.size(); ++i)
    if (x[i] > x[i - 1]) {
      EXPECT_GE(y[i], y[i - 1]);
    }
  const std::vector<T> a = {T(0), T(1), T(3)}, b = {T(10), T(11), T(13)};
  EXPECT_GT(std::fabs(softplus_l1_of<TypeParam>(a, 3.0)[0] - softplus_l1_of<TypeParam>(b, 3.0)[0]),
            0.1);
  const std::vector<T> mixed = {T(-1), T(1), T(3), T(-0.5)};
  const auto sharp = softplus_l1_of<TypeParam>(mixed, 1.0 + 1e-9);  // λ ~ 1.4e9
  EXPECT_EQ(sharp[0], T(0));
  EXPECT_NEAR(sharp[1], 0.25, 1e-6);
  EXPECT_NEAR(sharp[2], 0.75, 1e-6);
}

// The reference VJP against central differences of the reference forward pass (long double).
TEST(softplus_l1_reference, backward_matches_finite_differences) {
  for (long double lambda : {0.7L, 1.0L, 3.3L})
    for (std::size_t n : {std::size_t(2), std::size_t(5), std::size_t(17)}) {
      auto x = random_row<double>(n, 6.0, -1.0, static_cast<unsigned>(n));
      if (n > 2) x[1] = -INFINITY;
      const auto dy = random_row<double>(n, 2.0, 0.0, static_cast<unsigned>(n + 9));
      const auto dx = smax::reference::softplus_l1_backward(x.data(), dy.data(), n, lambda);
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isinf(x[i])) {
          EXPECT_EQ(dx[i], 0.0L);
          continue;
        }
        const double h = 1e-6;
        auto plus = x, minus = x;
        plus[i] += h;
        minus[i] -= h;
        const auto yp = smax::reference::softplus_l1(plus.data(), n, lambda);
        const auto ym = smax::reference::softplus_l1(minus.data(), n, lambda);
        long double fd = 0;
        for (std::size_t j = 0; j < n; ++j)
          fd += dy[j] * (yp[j] - ym[j]) / (static_cast<long double>(plus[i]) - minus[i]);
        EXPECT_NEAR(static_cast<double>(dx[i]), static_cast<double>(fd), 1e-8)
            << "n = " << n << ", λ = " << static_cast<double>(lambda) << ", i = " << i;
      }
    }
}

// Backward: dx against λ·y·r(λx)·(dy - <dy, y>) in long double at the y passed in, with the
// header's bound 16ε·λ·r_i·y_i·(|dy_i| + Σ_j y_j·|dy_j|) + 2·(1 + λ)·(smallest subnormal).
TYPED_TEST(softplus_l1_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
  const auto check = [&](std::vector<T> const& x, std::vector<T> const& dy, double base,
                         double keys) {
    const std::size_t n = x.size();
    const auto y = softplus_l1_of<TypeParam>(x, base, keys);
    const T lambda = lambda_of<TypeParam, T>(base, keys);
    std::vector<T> dx(n);
    table_of<TypeParam>::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n,
                                  lambda);
    const long double l = exact_lambda(base, keys);
    long double dot = 0, weighted = 0;
    for (std::size_t i = 0; i < n; ++i) {
      dot += static_cast<long double>(y[i]) * dy[i];
      weighted += static_cast<long double>(y[i]) * std::fabs(static_cast<long double>(dy[i]));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const long double r = std::isinf(x[i]) ? 0 : smax::reference::softplus_ratio(l * x[i]);
      const long double want = l * y[i] * r * (dy[i] - dot);
      const long double bound =
          16 * eps * l * r * y[i] * (std::fabs(static_cast<long double>(dy[i])) + weighted) +
          2 * (1 + l) * std::numeric_limits<T>::denorm_min();
      EXPECT_LE(std::fabs(dx[i] - want), bound)
          << "base " << base << ", keys " << keys << ", n = " << n << ", i = " << i
          << ", x = " << x[i] << ": " << dx[i] << " vs " << static_cast<double>(want);
    }
  };
  for (double base : {64.0, 2.0, 1.0 + 1e-6})
    for (double spread : {30.0, 1e-3, 1e30})
      for (double offset : {0.0, -200.0})
        for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(TypeParam::width + 1),
                              std::size_t(100), std::size_t(4099)}) {
          auto x =
              random_row<T>(n, spread, offset * (spread < 1 ? 0 : 1), static_cast<unsigned>(n));
          if (n > 2) x[1] = -infinity<T>;
          check(x, random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 1)), base,
                static_cast<double>(n));
        }
  // Where λ·x, λ·y·(dy - <dy, y>) or r ~ 1/(λx) leave T's normal range although dx does not:
  // λ = 1.2e16 with dy ~ big·1e-8; x near ±T's largest value (λx overflows; dx ~ g/x, down to
  // subnormal for x ~ 3e38 and y ~ 1/185).
  const double big = static_cast<double>(std::numeric_limits<T>::max());
  for (std::size_t n : {std::size_t(13), std::size_t(TypeParam::width + 3), std::size_t(1000)}) {
    auto dy = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 3));
    for (T& v : dy) v = static_cast<T>(v * big * 1e-8);
    check(random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n)), dy, 1.0 + 0x1p-52, 13.0);
    const auto unit = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 5));
    check(random_row<T>(n, big, 0.0, static_cast<unsigned>(n + 4)), unit, 64.0, 0x1p40);
    check(std::vector<T>(n, static_cast<T>(0.9 * big)), unit, 64.0, static_cast<double>(n));
  }
  // Masked entries and λ = 0: 0; an all-masked (NaN) row: NaN.
  const T inf = infinity<T>;
  const std::vector<T> x = {T(1), -inf, T(2)}, dy = {T(1), T(5), T(-1)};
  const auto y = softplus_l1_of<TypeParam>(x, 64.0);
  std::vector<T> dx(3);
  table_of<TypeParam>::backward(x.data(), 3, y.data(), 3, dy.data(), 3, dx.data(), 3, 1, 3,
                                lambda_of<TypeParam, T>(64.0, 3));
  EXPECT_EQ(dx[1], T(0));
  table_of<TypeParam>::backward(x.data(), 3, y.data(), 3, dy.data(), 3, dx.data(), 3, 1, 3, T(0));
  for (T v : dx) EXPECT_EQ(v, T(0));
  const std::vector<T> masked = {-inf, -inf}, ny = {quiet_nan<T>, quiet_nan<T>};
  table_of<TypeParam>::backward(masked.data(), 2, ny.data(), 2, dy.data(), 2, dx.data(), 2, 1, 2,
                                lambda_of<TypeParam, T>(64.0, 2));
  EXPECT_TRUE(std::isnan(dx[0]) && std::isnan(dx[1]));
  std::printf("[ softplus_l1 ] %s %s: worst forward error %.3f of the bound\n",
              TypeParam::arch::name(), sizeof(T) == 4 ? "float" : "double", worst_fraction<T>);
}

// The public forms: opts.base and opts.n_keys reach the kernels; rows equal single rows; in place.
TEST(softplus_l1_api, options_rows_and_in_place) {
  const auto x = random_row<float>(300, 20.0, 0.0, 5);
  std::vector<float> a(300), b(x), c(300);
  smax::softplus_l1(x.data(), a.data(), x.size(), {64.0});
  smax::softplus_l1(b.data(), b.data(), b.size(), {64.0});
  EXPECT_EQ(a, b);
  const auto want =
      smax::reference::softplus_l1(x.data(), x.size(), std::log(300.0L) / std::log(64.0L));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(a[i], want[i], 1e-6 * want[i]);
  smax::softplus_l1(x.data(), c.data(), x.size(), {64.0, 64});  // λ = 1
  const auto want1 = smax::reference::softplus_l1(x.data(), x.size(), 1.0L);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(c[i], want1[i], 1e-6 * want1[i]);
  std::vector<float> dy(300, 0.5f), dx(300);
  dy[3] = -2;
  smax::softplus_l1_backward(x.data(), a.data(), dy.data(), dx.data(), x.size(), {64.0});
  const auto dwant = smax::reference::softplus_l1_backward(x.data(), dy.data(), x.size(),
                                                           std::log(300.0L) / std::log(64.0L));
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(dx[i], dwant[i], 1e-5 * std::fabs(dwant[i]) + 1e-12);
    // Without a base: NaN rows (asserted in debug builds).
#ifdef NDEBUG
  smax::softplus_l1(x.data(), a.data(), x.size());
  EXPECT_TRUE(std::isnan(a[0]));
#endif
}

}  // namespace

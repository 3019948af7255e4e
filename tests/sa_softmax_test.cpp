// Self-Adjust Softmax (smax/sa_softmax.hpp) on every compiled instruction set, float and double,
// both forms: against the long-double reference at every length around the vector width and on
// long rows, with masks at every lane, extreme values and special rows; the invariants of the
// definition; the backward pass against the reference VJP with the bound the header states, and
// the reference VJP against central differences of the reference.

#include <cstring>

#include <smax/reference/sa_softmax.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class sa_softmax_test : public ::testing::Test {};
TYPED_TEST_SUITE(sa_softmax_test, all_configs, config_names);

template <class C, class T>
std::vector<T> sa_softmax_of(std::vector<T> const& x, bool normalized) {
  std::vector<T> y(x.size() + 1, T(-7));  // one guard element past the end
  smax::kernels::sa_softmax_table<typename C::arch>::forward(
      x.data(), x.size(), y.data(), x.size(), x.empty() ? 0 : 1, x.size(), normalized);
  EXPECT_EQ(y.back(), T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// The header's bound: relative 1e-6 / 1e-14 for outputs >= the smallest normal number (below it
// they may be flushed); masked outputs exactly 0, NaN rows NaN.
template <class C, class T>
::testing::AssertionResult matches_sa_reference(std::vector<T> const& x, bool normalized) {
  const auto y = sa_softmax_of<C>(x, normalized);
  const auto r = smax::reference::sa_softmax(x.data(), x.size(), normalized);
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Plain: x·p is a normal number where p may have been flushed (|y| < |x|·FLT_MIN).
    const double floor = normalized ? 1.0 : std::fmax(1.0, std::fabs(static_cast<double>(x[i])));
    auto ok = matches(y[i], r[i], softmax_rtol<T>, std::numeric_limits<T>::min() * floor, i);
    if (!ok)
      return ok << " [" << (normalized ? "normalised" : "plain") << ", n = " << x.size() << "]";
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(sa_softmax_test, every_length_and_spread) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (bool normalized : {true, false}) {
    for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
      for (double spread : {2.0, 20.0, 150.0})
        for (double offset : {0.0, -5.0, 7.0}) {
          const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + 7 * spread));
          EXPECT_TRUE((matches_sa_reference<TypeParam>(x, normalized)));
        }
    for (std::size_t n : {std::size_t(1000), std::size_t(65537)}) {
      EXPECT_TRUE((matches_sa_reference<TypeParam>(random_row<T>(n, 200.0, -50.0, 3), normalized)));
      EXPECT_TRUE((matches_sa_reference<TypeParam>(random_row<T>(n, 8.0, 3.0, 4), normalized)));
      auto masked = random_row<T>(n, 30.0, 0.0, 5);
      for (std::size_t i = 0; i < n; i += 3) masked[i] = -infinity<T>;
      EXPECT_TRUE((matches_sa_reference<TypeParam>(masked, normalized)));
    }
  }
}

TYPED_TEST(sa_softmax_test, extreme_values_masks_and_special_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T tiny = std::numeric_limits<T>::denorm_min(), small = std::numeric_limits<T>::min();
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, -f, g},                          // c - a = 6e38 overflows float: [1, 0, 0]
      {big, -big, T(0), T(1)},             // c - a = 2·FLT_MAX
      {big, big},                          // ties at FLT_MAX
      {-big, -big, T(-3)},                 // x_max < 0: w = (x + big)/big
      {-f, T(-1), T(-1e30)},               //
      {T(1000), T(-1000), T(0)},           //
      {T(1), T(2), T(3)},                  //
      {T(2), T(2), T(2), T(2)},            // all ties
      {T(-4), T(-4), T(1), T(1)},          // partial ties
      {T(5)},                              // n = 1: [1] / [5]
      {T(-5)},                             // n = 1: [0] / [-5]
      {T(0)},                              // n = 1, D = 0
      {T(0), T(0), -inf, T(0)},            // D = 0: zeros
      {-inf, T(2), -inf, T(-3)},           // masked entries
      {-inf, T(-2), -inf, T(-3)},          //
      {T(1e-30), T(-1e-30), T(0), -T(0)},  // ties around 0
      {small, T(2) * small, tiny},         // D near the smallest normal number
      {tiny, T(3) * tiny, T(0)},           // D subnormal
      {T(-1e-6), T(-3e-7), T(1e-7)},       // values near zero
      {-inf, -inf},                        // all masked: NaN
      {T(1), nan, T(2)},                   // NaN: NaN row
      {T(1), inf, T(2)},                   // +inf: NaN row
      {T(0), nan, T(0)},                   // NaN in a D = 0 row
      {-inf, nan},                         // NaN beside masks
  };
  for (bool normalized : {true, false})
    for (auto const& x : rows) {
      EXPECT_TRUE((matches_sa_reference<TypeParam>(x, normalized)));
      for (std::size_t lane = 0; lane < 5 * TypeParam::width + 3; ++lane) {
        // The same values at every lane position of longer rows (register kernels and the three
        // passes) of ordinary entries.
        for (std::size_t len : {2 * TypeParam::width + 3, 5 * TypeParam::width + 3}) {
          if (lane >= len) continue;
          auto row = random_row<T>(len, 4.0, 0.0, static_cast<unsigned>(lane + len));
          for (std::size_t k = 0; k < x.size() && lane + k < row.size(); ++k) row[lane + k] = x[k];
          EXPECT_TRUE((matches_sa_reference<TypeParam>(row, normalized))) << "lane " << lane;
        }
      }
    }
  // The exact figures of the definition.
  const auto y = sa_softmax_of<TypeParam>(std::vector<T>{f, -f, g}, true);
  EXPECT_NEAR(y[0], 1.0, 2 * std::numeric_limits<T>::epsilon());
  EXPECT_EQ(y[1], T(0));
  EXPECT_EQ(y[2], T(0));
  EXPECT_EQ(sa_softmax_of<TypeParam>(std::vector<T>{T(5)}, true)[0], T(1));
  EXPECT_EQ(sa_softmax_of<TypeParam>(std::vector<T>{T(-5)}, true)[0], T(0));
  EXPECT_EQ(sa_softmax_of<TypeParam>(std::vector<T>{T(0)}, true)[0], T(0));
  // n = 1 gives exactly 1 for any x > 0 (the general path's (x·s)·fl(1/(x·s)) is 1 - 2^-24 for
  // 2.9 and 123.456 in float).
  for (T v : {T(2.9), T(123.456), T(0.7), T(1e-30)})
    EXPECT_EQ(sa_softmax_of<TypeParam>(std::vector<T>{v}, true)[0], T(1)) << v;
  // D = 0 in rows of every length (register kernels and the three passes): zeros, or NaN with a
  // NaN in the row.
  for (std::size_t len :
       {std::size_t(2), TypeParam::width + 1, 5 * TypeParam::width + 3, std::size_t(1000)}) {
    std::vector<T> zeros(len, T(0));
    zeros[len / 2] = -inf;
    for (T v : sa_softmax_of<TypeParam>(zeros, true)) EXPECT_EQ(v, T(0)) << "n = " << len;
    zeros[len - 1] = nan;
    for (T v : sa_softmax_of<TypeParam>(zeros, true)) EXPECT_TRUE(std::isnan(v)) << "n = " << len;
  }
  EXPECT_EQ(sa_softmax_of<TypeParam>(std::vector<T>{T(-5.5)}, false)[0], T(-5.5));
  EXPECT_EQ(sa_softmax_of<TypeParam>(std::vector<T>{big}, false)[0], big);
  for (bool normalized : {true, false})
    for (std::size_t len : {std::size_t(3), 5 * TypeParam::width + 3}) {
      // Masked outputs are +0 (not -0, not NaN), at every position.
      std::vector<T> x = random_row<T>(len, 10.0, -3.0, 9);
      for (std::size_t i = 0; i < len; i += 2) x[i] = -inf;
      const auto ym = sa_softmax_of<TypeParam>(x, normalized);
      for (std::size_t i = 0; i < len; i += 2) EXPECT_FALSE(std::signbit(ym[i])) << i;
    }
}

// A subnormal extreme in a call long enough for the flush-to-zero guard (fuzz findings): the
// float row [-inf, -denorm ×2478, -0, -denorm ×553] (a = -denorm, c = 0: the -0 entry has weight
// 1) and the double row [-denorm ×2, 0, -denorm ×2585, DBL_MIN ×725] (a subnormal, c normal) gave
// zero rows or zero outputs.
TYPED_TEST(sa_softmax_test, subnormal_extremes_in_long_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T tiny = std::numeric_limits<T>::denorm_min();
  std::vector<T> first{-infinity<T>};
  first.insert(first.end(), 2478, -tiny);
  first.push_back(-T(0));
  first.insert(first.end(), 553, -tiny);
  std::vector<T> second(2, -tiny);
  second.push_back(T(0));
  second.insert(second.end(), 2585, -tiny);
  second.insert(second.end(), 725, std::numeric_limits<T>::min());
  for (auto const& x : {first, second}) EXPECT_TRUE((matches_sa_reference<TypeParam>(x, true)));
}

// Batches: every row of a rows × cols call (short rows go through the register kernels four at
// a time, then one by one) equals the same row alone, bit for bit, with special rows (NaN, all
// masked) inside a group, padding between rows left untouched, and in place.
TYPED_TEST(sa_softmax_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::sa_softmax_table<typename TypeParam::arch>;
  const std::size_t w = TypeParam::width;
  for (bool normalized : {true, false})
    for (std::size_t cols : {std::size_t(1), std::size_t(2), w - 1, w, w + 1, 3 * w + 2, 4 * w,
                             4 * w + 1, 9 * w + 3, std::size_t(300)})
      for (std::size_t rows : {std::size_t(1), std::size_t(3), std::size_t(4), std::size_t(9)}) {
        if (cols == 0) continue;
        const std::size_t ld = cols + 3;
        auto x = random_row<T>(rows * ld, 6.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
        if (rows > 4) {
          x[5 * ld + cols / 2] = quiet_nan<T>;                                  // row 5: NaN
          for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;  // row 6: masked
          x[7 * ld] = -infinity<T>;                                             // row 7: a mask
        }
        std::vector<T> y(rows * ld, T(-7)), inplace = x;
        table::forward(x.data(), ld, y.data(), ld, rows, cols, normalized);
        table::forward(inplace.data(), ld, inplace.data(), ld, rows, cols, normalized);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
          const auto alone = sa_softmax_of<TypeParam>(row, normalized);
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

// Normalised: 0 <= y_i <= p_i (p = softmax), y at the maximum = p there when x_max > 0. Plain:
// y_i has the sign of x_i. Neither form is shift invariant.
TYPED_TEST(sa_softmax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(7), std::size_t(2 * TypeParam::width + 1), std::size_t(777)}) {
    const auto x = random_row<T>(n, 10.0, 1.0, static_cast<unsigned>(n));
    const auto y = sa_softmax_of<TypeParam>(x, true);
    std::vector<T> p(n);
    smax::softmax(x.data(), p.data(), n);
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_GE(y[i], T(0)) << i;
      EXPECT_LE(y[i], p[i] * (1 + 4 * std::numeric_limits<T>::epsilon())) << i;
      if (x[i] > x[k]) k = i;
    }
    EXPECT_NEAR(y[k], p[k], 4 * std::numeric_limits<T>::epsilon() * p[k]);
    const auto yp = sa_softmax_of<TypeParam>(x, false);
    for (std::size_t i = 0; i < n; ++i)
      if (x[i] != 0) {
        EXPECT_EQ(std::signbit(yp[i]), std::signbit(x[i])) << i;
      }
    // Shifted past 0 (every entry positive, so a = 0 instead of x_min): p and the maximum's y
    // are unchanged, the other weights are not. (A shift that keeps x_min < 0 < x_max leaves
    // (x - x_min)/(x_max - x_min) as it was.)
    auto shifted = x;
    for (auto& v : shifted) v += T(20);
    const auto ys = sa_softmax_of<TypeParam>(shifted, true);
    double moved = 0;
    for (std::size_t i = 0; i < n; ++i) moved += std::fabs(ys[i] - y[i]);
    EXPECT_GT(moved, 1e-3);
  }
}

// The header's backward bound, from the reference's p and w.
template <class T>
std::vector<long double> backward_bound(std::vector<T> const& x, std::vector<T> const& dy,
                                        bool normalized) {
  const std::size_t n = x.size();
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
  const auto r = smax::reference::sa_softmax_parts_of(x.data(), n, normalized);
  long double pw = 0, p1w = 0, py = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double d = std::fabs(static_cast<long double>(dy[i]));
    pw += r.p[i] * r.w[i] * d;
    p1w += r.p[i] * (1 + r.w[i]) * d;
    py += d * std::fabs(r.p[i] * r.w[i]);
  }
  const long double D = r.c - r.a;
  // A subnormal dx has no relative accuracy: two of T's smallest subnormals absolute.
  const long double tiny = 2 * static_cast<long double>(std::numeric_limits<T>::denorm_min());
  std::vector<long double> bound(n);
  for (std::size_t i = 0; i < n; ++i) {
    const long double d = std::fabs(static_cast<long double>(dy[i]));
    if (!normalized) {
      bound[i] =
          16 * eps * r.p[i] * (d * (1 + std::fabs(static_cast<long double>(x[i]))) + py) + tiny;
      continue;
    }
    if (D == 0) {
      bound[i] = 0;
      continue;
    }
    bound[i] =
        16 * eps *
            (r.p[i] * (d * (1 / D + r.w[i]) + pw) +
             (i == r.first_min && r.x_min < 0 ? p1w / D : 0) +
             (i == r.first_max && r.x_max > 0 ? pw / D : 0)) +
        tiny + tiny / 2 * (1 + r.w[i]) / D;
  }
  return bound;
}

// Whether the interval want ± bound reaches past T's largest finite number, where a result
// within the bound may round to ±inf.
template <class T>
bool reaches_past_range(long double want, long double bound) {
  return std::fabs(want) + bound > static_cast<long double>(std::numeric_limits<T>::max());
}

// The exact VJP at the y passed in (the forward's own output): dx depends on y only through
// B = <dy, y>, linearly.
template <class T>
std::vector<long double> backward_at_given_y(std::vector<T> const& x, std::vector<T> const& y,
                                             std::vector<T> const& dy, bool normalized) {
  const std::size_t n = x.size();
  auto want = smax::reference::sa_softmax_backward(x.data(), dy.data(), n, normalized);
  const auto r = smax::reference::sa_softmax_parts_of(x.data(), n, normalized);
  long double b_exact = 0, b_given = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isinf(x[i])) {
      b_exact += static_cast<long double>(dy[i]) * r.p[i] * r.w[i];
      b_given += static_cast<long double>(dy[i]) * y[i];
    }
  const long double D = r.c - r.a, db = b_given - b_exact;
  for (std::size_t i = 0; i < n && !r.nan_row; ++i) {
    if (std::isinf(x[i]) || (normalized && D == 0)) continue;
    long double d_by_b = -r.p[i];
    if (normalized && i == r.first_min && r.x_min < 0) d_by_b += 1 / D;
    if (normalized && i == r.first_max && r.x_max > 0) d_by_b -= 1 / D;
    want[i] += d_by_b * db;
  }
  return want;
}

// Backward: against the long-double VJP, with the header's bound; masked entries 0; special rows
// NaN.
TYPED_TEST(sa_softmax_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::sa_softmax_table<typename TypeParam::arch>;
  const T big = std::numeric_limits<T>::max();
  std::vector<std::vector<T>> rows;
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3),
                        std::size_t(TypeParam::width + 1), std::size_t(100), std::size_t(4099)})
    for (double offset : {0.0, 6.0, -6.0}) {
      auto x = random_row<T>(n, 12.0, offset, static_cast<unsigned>(n));
      if (n > 2) x[1] = -infinity<T>;
      rows.push_back(x);
    }
  rows.push_back({T(3), T(-2), T(3), T(-2)});       // tied extremes: the first takes the gradient
  rows.push_back({T(0), T(0), T(0)});               // D = 0
  rows.push_back({big, -big, T(1)});                // D = 2·FLT_MAX
  rows.push_back({T(1e-30), T(3e-30), T(-2e-30)});  // tiny D
  // The maximum so negative that exp(-max) overflows T, at lengths with a tail (the tail's
  // padding must be a mask, not 0, in every sum that takes exp).
  const T very_negative = -std::log(big) - T(20);
  for (std::size_t n : {std::size_t(TypeParam::width + 1), std::size_t(2 * TypeParam::width + 3),
                        std::size_t(4099)})
    rows.push_back(random_row<T>(n, 12.0, very_negative, static_cast<unsigned>(n + 7)));
  // Ranges D at and below the smallest normal number, with dy so large that dy/D alone (or
  // p·dy/D and (A - B)/D apart) overflows T while dx does not.
  std::vector<std::pair<std::vector<T>, double>> scaled;  // (x, scale of dy)
  scaled.push_back({std::vector<T>(17, std::numeric_limits<T>::min()), 20.0});
  {
    std::vector<T> x(240, T(0));
    x[15] = -std::numeric_limits<T>::denorm_min();
    const double d = static_cast<double>(std::numeric_limits<T>::denorm_min()) *
                     static_cast<double>(big) * 1e-3;
    scaled.push_back({x, d});
    x[15] = T(0), x[200] = std::numeric_limits<T>::denorm_min() * T(3);
    scaled.push_back({x, d});
    x[17] = -std::numeric_limits<T>::denorm_min();
    scaled.push_back({x, d});
  }
  {
    std::vector<T> x(2321, T(-37));
    x[0] = T(0);
    scaled.push_back({x, 2.0});
  }
  for (auto const& x : rows) scaled.push_back({x, 2.0});
  for (bool normalized : {true, false})
    for (auto const& [x, dy_scale] : scaled) {
      const std::size_t n = x.size();
      auto dy = random_row<T>(n, 2.0, 0.3, static_cast<unsigned>(n + 1));
      if (dy_scale != 2.0)
        for (T& v : dy) v = static_cast<T>(v * (dy_scale / 2.0));
      const auto y = sa_softmax_of<TypeParam>(x, normalized);
      std::vector<T> dx(n), inplace = dy;
      table::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, normalized);
      table::backward(x.data(), n, y.data(), n, inplace.data(), n, inplace.data(), n, 1, n,
                      normalized);
      const auto want = backward_at_given_y(x, y, dy, normalized);
      const auto bound = backward_bound(x, dy, normalized);
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isinf(x[i])) {
          EXPECT_EQ(dx[i], T(0));
          continue;
        }
        // Where the bound reaches past T's largest number, dx may round to ±inf.
        if (!(std::isinf(dx[i]) && reaches_past_range<T>(want[i], bound[i]))) {
          EXPECT_LE(std::fabs(dx[i] - want[i]), bound[i])
              << (normalized ? "normalised" : "plain") << ", n = " << n << ", i = " << i << ": "
              << dx[i] << " vs " << static_cast<double>(want[i]);
        }
        EXPECT_TRUE(same_bits_or_both_nan(dx[i], inplace[i])) << "dy == dx";
      }
    }
  for (bool normalized : {true, false})
    for (auto const& x : std::vector<std::vector<T>>{
             {T(1), quiet_nan<T>}, {T(1), infinity<T>}, {-infinity<T>, -infinity<T>}}) {
      const std::vector<T> y(2, quiet_nan<T>), dy(2, T(1));
      std::vector<T> dx(2);
      table::backward(x.data(), 2, y.data(), 2, dy.data(), 2, dx.data(), 2, 1, 2, normalized);
      EXPECT_TRUE(std::isnan(dx[0]) && std::isnan(dx[1]));
    }
}

// The normalised backward where the bound itself passes T's range (found by sa_softmax_fuzz):
// float [-0 x4, -1.4e-45, -0 x4] has D = 1.4e-45, and at the argmin dx is (p·dy - (A - B))/D, a
// difference of sums of rounded products amplified by 1/D = 7.1e44. With gradients of order 50,
// the exact dx (at the given y) was -2.5e38 and the bound 1.8e41: the kernel's -inf lies within
// it, in the reals, and is what a float can hold there. Every entry is within its bound or, where
// the bound passes T's range, ±inf; never NaN.
TYPED_TEST(sa_softmax_test, backward_where_the_bound_passes_the_range) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::sa_softmax_table<typename TypeParam::arch>;
  std::vector<T> x(9, -T(0));
  x[4] = -std::numeric_limits<T>::denorm_min();
  const std::vector<std::vector<T>> gradients = {
      {T(-52.7822037), T(-81.53228), T(-20.6838551), T(-62.7479591), T(-22.4178486),
       T(-30.8878536), T(33.9492073), T(-20.6465073), T(87.107811)},
      {T(-81.4398346), T(38.4645233), T(3.63050699), T(75.277832), T(73.0040588), T(78.9213333),
       T(65.8293839), T(-82.9911575), T(65.9206772)}};
  for (auto const& dy : gradients) {
    const auto y = sa_softmax_of<TypeParam>(x, true);
    std::vector<T> dx(x.size());
    table::backward(x.data(), x.size(), y.data(), x.size(), dy.data(), x.size(), dx.data(),
                    x.size(), 1, x.size(), true);
    const auto want = backward_at_given_y(x, y, dy, true);
    const auto bound = backward_bound(x, dy, true);
    EXPECT_TRUE(reaches_past_range<T>(want[4], bound[4]));  // the case this test is about
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_FALSE(std::isnan(dx[i])) << "at " << i;
      if (!(std::isinf(dx[i]) && reaches_past_range<T>(want[i], bound[i]))) {
        EXPECT_LE(std::fabs(dx[i] - want[i]), bound[i])
            << "at " << i << ": " << dx[i] << " vs " << static_cast<double>(want[i]);
      }
    }
  }
}

// The reference VJP against central differences of the reference forward (long double), away
// from ties: the formula, including the min and max terms, is the derivative.
TEST(sa_softmax_reference, vjp_matches_finite_differences) {
  for (bool normalized : {true, false})
    for (double offset : {0.0, 2.5, -2.5, 5.0, -5.0}) {  // ±5: no entry of the other sign
      const auto x = random_row<double>(9, 6.0, offset, 17);
      const auto dy = random_row<double>(9, 2.0, 0.0, 18);
      const auto dx =
          smax::reference::sa_softmax_backward(x.data(), dy.data(), x.size(), normalized);
      for (std::size_t k = 0; k < x.size(); ++k) {
        const double h = 1e-6;
        auto xp = x, xm = x;
        xp[k] += h;
        xm[k] -= h;
        const auto yp = smax::reference::sa_softmax(xp.data(), xp.size(), normalized);
        const auto ym = smax::reference::sa_softmax(xm.data(), xm.size(), normalized);
        long double fd = 0;
        for (std::size_t i = 0; i < x.size(); ++i) fd += dy[i] * (yp[i] - ym[i]) / (2 * h);
        EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(dx[k]), 1e-7)
            << (normalized ? "normalised" : "plain") << ", offset " << offset << ", k = " << k;
      }
    }
}

// The public forms: defaults (normalised), the _rows form and in place equal the single row;
// zero_masked_rows gives 0 for an all -inf row and dx = 0 there.
TEST(sa_softmax_api, forms_and_options) {
  const auto x = random_row<float>(300, 20.0, 0.0, 5);
  std::vector<float> a(300), b(x), c(300);
  smax::sa_softmax(x.data(), a.data(), x.size());
  smax::sa_softmax(b.data(), b.data(), b.size());
  EXPECT_EQ(a, b);
  smax::sa_softmax_rows(x.data(), c.data(), 1, x.size(), x.size());
  EXPECT_EQ(a, c);
  smax::sa_softmax(x.data(), c.data(), x.size(), smax::sa_softmax_options{false});
  EXPECT_NE(a, c);
  const auto plain = smax::reference::sa_softmax(x.data(), x.size(), false);
  EXPECT_NEAR(c[7], static_cast<double>(plain[7]), 1e-6 * std::fabs(static_cast<double>(plain[7])));
  const std::vector<float> masked(5, -infinity<float>), dy(5, 1.f);
  std::vector<float> y(5), dx(5);
  smax::sa_softmax(masked.data(), y.data(), 5);
  EXPECT_TRUE(std::isnan(y[0]));
  smax::sa_softmax_options zero;
  zero.zero_masked_rows = true;
  smax::sa_softmax(masked.data(), y.data(), 5, zero);
  EXPECT_EQ(y, std::vector<float>(5, 0.f));
  smax::sa_softmax_backward(masked.data(), y.data(), dy.data(), dx.data(), 5, zero);
  EXPECT_EQ(dx, std::vector<float>(5, 0.f));
}

}  // namespace

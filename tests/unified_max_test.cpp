// Unified-max softmax (smax/unified_max.hpp) on every compiled instruction set, float and double:
// against the long-double reference (softmax's bound, fast path and fallback alike) at every
// length around the vector width and on long rows, with the fallback flag checked against the
// definition; range boundaries, masks, special rows, the valid (a, b) range of the bound block,
// sums that overflow, invalid options; rows against single rows; the backward pass.

#include <cstring>

#include <smax/reference/unified_max.hpp>
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class unified_max_test : public ::testing::Test {};
TYPED_TEST_SUITE(unified_max_test, all_configs, config_names);

struct params {
  double phi, a, b;
};
constexpr params spec_params{6.0, -80.0, 80.0};

template <class C, class T>
std::size_t run(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld, params p) {
  return smax::kernels::unified_max_table<typename C::arch>::forward(x, ld, y, ld, rows, cols,
                                                                     p.phi, p.a, p.b);
}

// One row (copied, with a guard element; in place when asked) against the reference: softmax's
// bound for outputs >= the smallest normal number, exact zeros at masked entries, NaN rows, and
// the flag. expect_flag: check the flag against the reference's (the valid range), or only the
// values.
template <class C, class T>
::testing::AssertionResult matches_unified_reference(std::vector<T> const& x, params p,
                                                     bool in_place = false,
                                                     bool expect_flag = true) {
  const std::size_t n = x.size();
  std::vector<T> y(n + 1, T(-7));
  if (in_place) std::copy(x.begin(), x.end(), y.begin());
  const std::size_t count = run<C>(in_place ? y.data() : x.data(), y.data(), n ? 1 : 0, n, n, p);
  if (y[n] != T(-7)) return ::testing::AssertionFailure() << "wrote past the end";
  const auto r = smax::reference::unified_max_softmax(x.data(), n, p.phi, p.a, p.b);
  if (expect_flag && count != (r.fell_back ? 1u : 0u))
    return ::testing::AssertionFailure()
           << "fallback " << count << ", expected " << r.fell_back << " (n = " << n << ")";
  for (std::size_t i = 0; i < n; ++i) {
    auto ok = matches(y[i], r.y[i], softmax_rtol<T>, std::numeric_limits<T>::min(), i);
    if (!ok)
      return ok << " [n = " << n << (in_place ? ", in place" : "") << ", fell back " << r.fell_back
                << "]";
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(unified_max_test, every_length_in_range) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (bool in_place : {false, true})
    for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
      for (double spread : {2.0, 20.0, 159.0}) {
        // Inside [φ + a, φ + b] = [-74, 86], at the top, the bottom or the middle.
        const double offset =
            spread > 100 ? 6.0 : (n % 3 == 0 ? 85.9 - spread / 2 : -73.9 + spread / 2);
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + 11 * spread));
        EXPECT_TRUE((matches_unified_reference<TypeParam>(x, spec_params, in_place)));
      }
  for (std::size_t n : {std::size_t(1000), std::size_t(4096), std::size_t(65537)})
    for (bool in_place : {false, true})
      EXPECT_TRUE((matches_unified_reference<TypeParam>(random_row<T>(n, 159.9, 6.0, 5),
                                                        spec_params, in_place)));
  EXPECT_TRUE((matches_unified_reference<TypeParam>(
      random_row<T>(long_row(std::size_t(1) << 20), 30.0, 0.0, 6), spec_params)));
}

TYPED_TEST(unified_max_test, fallback_at_every_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T lo = T(-74), hi = T(86);  // φ + a and φ + b of the spec's parameters
  const T inf = infinity<T>;
  const T below = std::nextafter(lo, -inf), above = std::nextafter(hi, inf);
  for (std::size_t n : {std::size_t(1), std::size_t(2), 4 * TypeParam::width - 1,
                        4 * TypeParam::width + 3, std::size_t(300)}) {
    for (std::size_t k : positions(n, TypeParam::width)) {
      for (T v : {below, above, T(-1e30), T(1e4), lo, hi, -inf}) {
        auto x = random_row<T>(n, 20.0, 0.0, static_cast<unsigned>(n + k));
        x[k] = v;
        EXPECT_TRUE((matches_unified_reference<TypeParam>(x, spec_params)))
            << "x[" << k << "] = " << v;
        EXPECT_TRUE((matches_unified_reference<TypeParam>(x, spec_params, true)))
            << "in place, x[" << k << "] = " << v;
      }
      // A mask beside a finite entry below the range: the minimum (-inf) hides it.
      if (n >= 2) {
        auto x = random_row<T>(n, 20.0, 0.0, static_cast<unsigned>(3 * n + k));
        x[k] = -inf;
        x[(k + n / 2 + 1) % n == k ? (k + 1) % n : (k + n / 2 + 1) % n] = below;
        EXPECT_TRUE((matches_unified_reference<TypeParam>(x, spec_params)));
      }
    }
  }
}

// A subnormal entry just outside the range (lo = φ + a = 0) is out of range in every call: long
// calls run under the flush-to-zero guard, where a negation done as 0 - v read the row minimum
// -8.8e-39 as 0 (AVX-512; fuzz finding: no fallback reported).
TYPED_TEST(unified_max_test, subnormal_entry_below_lo) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const params p{20.0, -20.0, 20.0};
  const T tiny = std::numeric_limits<T>::min() / T(4);  // subnormal
  for (std::size_t n : {std::size_t(3), 4 * TypeParam::width + 3, std::size_t(3823)})
    for (std::size_t k : {std::size_t(0), n / 2, n - 1}) {
      auto x = random_row<T>(n, 10.0, 5.0, static_cast<unsigned>(n + k));
      x[k] = -tiny;
      EXPECT_TRUE((matches_unified_reference<TypeParam>(x, p))) << "x[" << k << "] = " << x[k];
      x[k] = tiny;  // in range
      EXPECT_TRUE((matches_unified_reference<TypeParam>(x, p))) << "x[" << k << "] = " << x[k];
    }
}

TYPED_TEST(unified_max_test, special_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  struct row {
    std::vector<T> x;
    bool fell_back;
  };
  const std::vector<row> rows = {
      {{T(1), T(2), T(3)}, false},
      {{T(5)}, false},                          // n = 1: [1]
      {{T(500)}, true},                         // n = 1 out of range: [1] by softmax
      {{-inf, T(2), -inf, T(-3)}, false},       // masked entries: exactly 0, never out of range
      {{-inf, -inf, -inf}, false},              // all masked: NaN
      {{T(1), nan, T(2)}, true},                // NaN row
      {{T(1), inf, T(2)}, true},                // +inf row
      {{-inf, nan}, true},                      // NaN beside a mask
      {{big, -big, T(0)}, true},                // [1, 0, 0]
      {{T(3e38), T(-3e38), T(1e38)}, true},     // E7
      {{T(1000), T(-1000), T(0)}, true},        //
      {{T(4), T(4), T(4), T(4), T(4)}, false},  // ties: uniform
      {{T(1e-30), T(-1e-30), T(0), -T(0), std::numeric_limits<T>::denorm_min()}, false},
  };
  for (auto const& r : rows) {
    std::vector<T> y(r.x.size(), T(-7));
    const std::size_t count =
        run<TypeParam>(r.x.data(), y.data(), 1, r.x.size(), r.x.size(), spec_params);
    EXPECT_EQ(count, r.fell_back ? 1u : 0u) << r.x[0] << " ... (n = " << r.x.size() << ")";
    EXPECT_TRUE((matches_unified_reference<TypeParam>(r.x, spec_params)));
    EXPECT_TRUE((matches_unified_reference<TypeParam>(r.x, spec_params, true)));
  }
  // n = 0 reads and writes nothing, and reports nothing.
  T untouched = T(-7);
  EXPECT_EQ(run<TypeParam>(static_cast<const T*>(nullptr), &untouched, 1, 0, 0, spec_params), 0u);
  EXPECT_EQ(untouched, T(-7));
  // n = 1 is exactly 1; ties exactly equal.
  const T one_x = T(7);
  T one_y = 0;
  run<TypeParam>(&one_x, &one_y, 1, 1, 1, spec_params);
  EXPECT_EQ(one_y, T(1));
}

// Masked entries and all-masked rows are never reported, on every path (fuzz findings): rows of
// a call whose range is beyond the fast path (φ = 1e300: every row goes to softmax) or empty in
// T (φ = 1e20 ± 20 in float), and masks on
// the difference path (φ = 2^66: |x| >= 2^20, where -inf - φ once gave a NaN term).
TYPED_TEST(unified_max_test, masks_never_reported_on_any_path) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T inf = infinity<T>;
  for (std::size_t n : {std::size_t(3), std::size_t(37), std::size_t(300)}) {
    std::vector<T> x(3 * n, T(1));
    for (std::size_t c = 0; c < n; ++c) x[n + c] = -inf;  // row 1: all masked
    x[2 * n + n / 2] = -inf;                              // row 2: one mask
    for (bool in_place : {false, true}) {
      std::vector<T> y = x;
      const T* in = in_place ? y.data() : x.data();
      EXPECT_EQ(run<TypeParam>(in, y.data(), 3, n, n, params{1e300, -1.0, 5.0}), 2u) << n;
      // φ = 1e20, a = -20, b = 20: in float the range rounded inward is empty (lo > hi), every
      // finite row falls back and the masked one is not reported (it was: the row tails were
      // padded with lo, out of that empty range).
      if (sizeof(T) == 4) {
        y = x;
        EXPECT_EQ(run<TypeParam>(in, y.data(), 3, n, n, params{1e20, -20.0, 20.0}), 2u) << n;
      }
    }
    // φ = 2^66 (exact in both types) on rows of φ: the difference path, in range.
    const T phi = T(0x1p66);
    std::vector<T> z(3 * n, phi);
    for (std::size_t c = 0; c < n; ++c) z[n + c] = -inf;
    z[2 * n + n / 2] = -inf;
    z[n / 3] = -inf;
    std::vector<T> y(3 * n, T(-7));
    EXPECT_EQ(run<TypeParam>(z.data(), y.data(), 3, n, n, params{0x1p66, -80.0, 80.0}), 0u) << n;
    for (std::size_t r : {std::size_t(0), std::size_t(2)}) {
      std::vector<T> row(z.begin() + r * n, z.begin() + (r + 1) * n);
      EXPECT_TRUE((matches_unified_reference<TypeParam>(row, params{0x1p66, -80.0, 80.0})));
    }
  }
}

// The bound block's valid range: every in-range row takes the fast path (no fallback) and meets
// softmax's bound for -86 <= a < b <= 84 (float), -707 <= a < b <= 705 - ln n (double), with
// rows touching both ends and rows of only the top or bottom value (the largest and smallest
// sums), at several φ (both exponential forms: |x| beyond 64 and 2^20).
TYPED_TEST(unified_max_test, valid_range) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const bool f32 = sizeof(T) == 4;
  for (std::size_t n : {std::size_t(2), std::size_t(37), std::size_t(4096)}) {
    const double a = f32 ? -86.0 : -707.0;
    const double b = f32 ? 84.0 : 705.0 - std::log(double(n));
    for (double phi : {0.0, 6.0, -40.0, 1e6, 3e6, -5e6}) {
      const params p{phi, a, b};
      auto x = random_row<T>(n, 0.9 * (b - a), phi + (a + b) / 2, static_cast<unsigned>(n));
      // Both ends: the outermost T whose x - φ is within [a, b] exactly (the reference's test).
      const long double lphi = phi;
      T lo = static_cast<T>(phi + a), hi = static_cast<T>(phi + b);
      while (lo - lphi < a) lo = std::nextafter(lo, infinity<T>);
      while (std::nextafter(lo, -infinity<T>) - lphi >= a) lo = std::nextafter(lo, -infinity<T>);
      while (hi - lphi > b) hi = std::nextafter(hi, -infinity<T>);
      while (std::nextafter(hi, infinity<T>) - lphi <= b) hi = std::nextafter(hi, infinity<T>);
      x[0] = lo;
      x[n - 1] = hi;
      EXPECT_TRUE((matches_unified_reference<TypeParam>(x, p))) << "phi " << phi << ", n " << n;
      // Every entry at the top: the largest sum the range allows.
      std::vector<T> top(n, x[n - 1]);
      EXPECT_TRUE((matches_unified_reference<TypeParam>(top, p))) << "top, phi " << phi;
      std::vector<T> bottom(n, x[0]);
      EXPECT_TRUE((matches_unified_reference<TypeParam>(bottom, p))) << "bottom, phi " << phi;
    }
  }
}

// Beyond the valid range the result is still softmax's: a b whose terms would overflow makes the
// call fall back on every row; a sum beyond the fast path's limit (or overflowing) falls back.
TYPED_TEST(unified_max_test, beyond_the_valid_range) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const bool f32 = sizeof(T) == 4;
  const double top = f32 ? 88.5 : 709.5;  // exp(top) overflows T
  const params wide{0.0, -10.0, top};
  for (std::size_t n : {std::size_t(3), std::size_t(100)}) {
    auto x = random_row<T>(n, 10.0, top - 6, static_cast<unsigned>(n));
    x[0] = static_cast<T>(top - 0.01);
    EXPECT_TRUE((matches_unified_reference<TypeParam>(x, wide, false, false)));
    std::vector<T> y(n);
    EXPECT_EQ(run<TypeParam>(x.data(), y.data(), 1, n, n, wide), 1u) << "terms would overflow";
  }
  // b inside the exponent limit, but the sum of the terms overflows: every entry at b.
  const double b = f32 ? 87.4 : 707.9;
  const params p{0.0, -10.0, b};
  const std::vector<T> x(4096, static_cast<T>(b));
  std::vector<T> y(x.size());
  EXPECT_EQ(run<TypeParam>(x.data(), y.data(), 1, x.size(), x.size(), p), 1u);
  EXPECT_TRUE((matches_unified_reference<TypeParam>(x, p, false, false)));
  EXPECT_TRUE((matches_unified_reference<TypeParam>(x, p, true, false)));
  // a below the underflow limit: the call falls back, the result is exact.
  const params deep{0.0, f32 ? -100.0 : -800.0, 10.0};
  const auto z = random_row<T>(50, 10.0, f32 ? -95.0 : -795.0, 9);
  EXPECT_TRUE((matches_unified_reference<TypeParam>(z, deep, false, false)));
}

TYPED_TEST(unified_max_test, invalid_options_give_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double inf = HUGE_VAL, nan = std::nan("");
  const auto x = random_row<T>(40, 4.0, 0.0, 1);
  for (params p : {params{0, 1, 1}, params{0, 2, 1}, params{nan, -1, 1}, params{0, -inf, 1},
                   params{0, -1, inf}, params{inf, -1, 1}, params{0, 0, 0}}) {
    std::vector<T> y(x.size(), T(-7));
    EXPECT_EQ(run<TypeParam>(x.data(), y.data(), 1, x.size(), x.size(), p), 0u);
    for (T v : y) EXPECT_TRUE(std::isnan(v)) << p.phi << " " << p.a << " " << p.b;
  }
}

// Rows of a batch (with NaN, all-masked, out-of-range and in-range rows) equal the rows alone bit
// for bit, in place too; the count is the number of rows that fell back; padding untouched.
TYPED_TEST(unified_max_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 7;
  for (std::size_t cols :
       {std::size_t(1), TypeParam::width + 1, 4 * TypeParam::width + 5, std::size_t(700)}) {
    const std::size_t ld = cols + 3;
    std::vector<T> x(rows * ld, T(-9));
    for (std::size_t r = 0; r < rows; ++r) {
      const auto row = random_row<T>(cols, 30.0, 0.0, static_cast<unsigned>(r + cols));
      std::copy(row.begin(), row.end(), x.begin() + r * ld);
    }
    x[1 * ld] = quiet_nan<T>;
    for (std::size_t c = 0; c < cols; ++c) x[2 * ld + c] = -infinity<T>;
    x[4 * ld + cols - 1] = T(1e6);
    x[5 * ld + cols / 2] = -infinity<T>;
    std::size_t expected = 0;
    std::vector<T> single(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
      expected +=
          run<TypeParam>(x.data() + r * ld, single.data() + r * cols, 1, cols, cols, spec_params);
    for (bool in_place : {false, true}) {
      std::vector<T> y = in_place ? x : std::vector<T>(rows * ld, T(-7));
      const std::size_t count =
          run<TypeParam>(in_place ? y.data() : x.data(), y.data(), rows, cols, ld, spec_params);
      EXPECT_EQ(count, expected);
      for (std::size_t r = 0; r < rows; ++r) {
        EXPECT_EQ(std::memcmp(y.data() + r * ld, single.data() + r * cols, cols * sizeof(T)), 0)
            << "row " << r << ", cols " << cols << (in_place ? ", in place" : "");
        for (std::size_t c = cols; c < ld; ++c)
          EXPECT_EQ(y[r * ld + c], in_place ? T(-9) : T(-7)) << "padding of row " << r;
      }
    }
  }
}

// The public forms: flag and count, zero_masked_rows, and the backward pass (softmax's) against
// the reference VJP with softmax's backward bound and against central differences of the
// reference.
TEST(unified_max_api, forms_flag_and_backward) {
  const float inf = infinity<float>;
  const smax::unified_max_options opts{6.0, -80.0, 80.0};
  std::vector<float> x = {1.0f, 2.0f, -inf, 3.0f}, y(4);
  EXPECT_FALSE(smax::unified_max_softmax(x.data(), y.data(), 4, opts));
  x[1] = 100.0f;
  EXPECT_TRUE(smax::unified_max_softmax(x.data(), y.data(), 4, opts));
  EXPECT_TRUE(smax::runtime::unified_max_softmax(x.data(), y.data(), 4, opts));
  std::vector<float> m = {1, 2, 3, 100, -inf, -inf, -inf, -inf, 5, 6, 7, 8};
  std::vector<float> out(12);
  EXPECT_EQ(smax::unified_max_softmax_rows(m.data(), out.data(), 3, 4, 4, opts), 1u);
  EXPECT_TRUE(std::isnan(out[4]));
  smax::unified_max_options zero = opts;
  zero.zero_masked_rows = true;
  EXPECT_EQ(smax::unified_max_softmax_rows(m.data(), out.data(), 3, 4, 4, zero), 1u);
  EXPECT_EQ(out[4], 0.0f);
  EXPECT_EQ(smax::runtime::unified_max_softmax_rows(m.data(), out.data(), 3, 4, 4, zero), 1u);

  // Backward: dx = y ⊙ (dy - <dy, y>) within 2^-19·y_i·(|dy_i| + Σ|dy_j·y_j|) (float), 2^-48
  // (double) of the VJP at the y passed in, and near the central differences of the reference.
  for (std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(33), std::size_t(1000)}) {
    const auto xd = random_row<double>(n, 20.0, 0.0, static_cast<unsigned>(n));
    auto xs = xd;
    if (n > 3) xs[2] = -HUGE_VAL;
    const auto dy = random_row<double>(n, 2.0, 0.0, static_cast<unsigned>(n + 1));
    std::vector<double> yv(n), dx(n);
    smax::unified_max_softmax(xs.data(), yv.data(), n, opts);
    smax::unified_max_softmax_backward(yv.data(), dy.data(), dx.data(), n);  // options optional
    long double dot = 0, mag = 0;
    for (std::size_t i = 0; i < n; ++i) {
      dot += static_cast<long double>(dy[i]) * yv[i];
      mag += std::fabs(static_cast<long double>(dy[i]) * yv[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const long double want = yv[i] * (dy[i] - dot);
      EXPECT_LE(std::fabs(dx[i] - want), std::ldexp(1.0, -48) * yv[i] * (std::fabs(dy[i]) + mag))
          << "i = " << i << ", n = " << n;
      if (xs[i] == -HUGE_VAL) {
        EXPECT_EQ(dx[i], 0.0);
        continue;
      }
      // Central difference of <dy, y(x)> from the reference, h = 1e-5.
      auto f = [&](double d) {
        auto xp = xs;
        xp[i] += d;
        const auto r = smax::reference::unified_max_softmax(xp.data(), n, 6.0L, -80.0L, 80.0L);
        long double s = 0;
        for (std::size_t j = 0; j < n; ++j) s += dy[j] * r.y[j];
        return s;
      };
      const long double fd = (f(1e-5) - f(-1e-5)) / 2e-5L;
      EXPECT_NEAR(static_cast<double>(dx[i]), static_cast<double>(fd), 1e-8) << "FD, i = " << i;
    }
    std::vector<double> dx_rows(n);
    smax::unified_max_softmax_backward_rows(yv.data(), dy.data(), dx_rows.data(), 1, n, n, opts);
    EXPECT_EQ(std::memcmp(dx.data(), dx_rows.data(), n * sizeof(double)), 0);
  }
}

}  // namespace

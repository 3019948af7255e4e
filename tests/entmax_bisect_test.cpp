// α-entmax by bisection (smax/entmax_bisect.hpp) on every compiled instruction set, float and
// double: against the long-double reference (bisection to long double's precision, and the exact
// sort-based 1.5-entmax) with the bound the header states, for α in {1.01, 1.25, 1.5, 2, 3}, at
// every length around the vector width, on long rows, rows whose entries are all candidates,
// masks at every lane, extreme values and special rows; the invariants of the definition
// (sum 1, shift invariance, sparsity, α = 2 is sparsemax, α -> 1 is softmax); the threshold
// form; the backward pass against the reference VJP, and that against central differences.

#include <cstring>
#include <random>

#include <smax/reference/entmax_bisect.hpp>
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class entmax_bisect_test : public ::testing::Test {};
TYPED_TEST_SUITE(entmax_bisect_test, all_configs, config_names);

template <class C>
using table_of = smax::kernels::entmax_bisect_table<typename C::arch>;

constexpr double alphas[] = {1.25, 1.5, 2.0, 3.0};

template <class C, class T>
std::vector<T> entmax_of(std::vector<T> const& x, double alpha, unsigned n_iter = 0) {
  std::vector<T> y(x.size() + 1, T(-7));  // one guard element past the end
  table_of<C>::forward(x.data(), x.size(), y.data(), x.size(), x.empty() ? 0 : 1, x.size(), alpha,
                       n_iter);
  EXPECT_EQ(y.back(), T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// The header's η and relative term.
template <class T>
double eta_of(double alpha) {
  return std::fmax(1.0, alpha - 1) * (sizeof(T) == 4 ? std::ldexp(1.0, -19) : std::ldexp(1.0, -48));
}
template <class T>
constexpr double relative_of() {
  return sizeof(T) == 4 ? 0x1p-19 : 0x1p-48;
}

// The header's bound for each output, from the reference's u* = z - t*; empty when D >= 1 (no
// bound stated).
template <class T>
std::vector<long double> forward_bound(smax::reference::entmax_bisect_result const& r,
                                       double alpha) {
  const long double p = 1 / (static_cast<long double>(alpha) - 1);
  const long double eta = eta_of<T>(alpha);
  auto pw = [&](long double u) { return u > 0 ? std::pow(u, p) : 0.0L; };
  const std::size_t n = r.y.size();
  std::vector<long double> d(n, 0.0L);
  long double total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double u = r.z[i] - r.tau_shifted;
    if (!(u > -eta)) continue;
    const long double at = pw(u);
    d[i] = std::fmax(std::fabs(pw(u + eta) - at), std::fabs(pw(u - eta) - at));
    total += d[i];
  }
  if (!(total < 1)) return {};
  std::vector<long double> bound(n);
  for (std::size_t i = 0; i < n; ++i)
    bound[i] = (d[i] + r.y[i] * total) / (1 - total) + relative_of<T>() * r.y[i] +
               std::numeric_limits<T>::min();
  return bound;
}

// The threshold's bound (entmax_bisect.hpp): |tau - tau*| <= η + ulp(tau*), ulp in T.
template <class T>
double threshold_bound(double alpha, long double tau) {
  const T t = static_cast<T>(std::fabs(tau));
  return eta_of<T>(alpha) +
         static_cast<double>(std::nextafter(t, std::numeric_limits<T>::infinity()) - t);
}

// One row against a reference result: NaN rows NaN, masked outputs exactly +0, the rest within
// the bound, the sum within 2^-19 (2^-48) of 1, the number of nonzero outputs at most the
// threshold's support size (underflow may zero an output of the support).
template <class C, class T>
::testing::AssertionResult matches(std::vector<T> const& x, double alpha,
                                   smax::reference::entmax_bisect_result const& r,
                                   const char* what = "") {
  const std::size_t n = x.size();
  const auto y = entmax_of<C>(x, alpha);
  auto fail = [&]() {
    return ::testing::AssertionFailure() << "[α = " << alpha << ", n = " << n << what << "] ";
  };
  if (r.special) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(y[i])) return fail() << "expected a NaN row, got " << y[i] << " at " << i;
    return ::testing::AssertionSuccess();
  }
  const auto bound = forward_bound<T>(r, alpha);
  long double sum = 0;
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += y[i];
    nonzero += y[i] > 0;
    if (x[i] == -infinity<T>) {
      if (!(y[i] == T(0) && !std::signbit(y[i])))
        return fail() << "masked entry " << i << " gave " << y[i];
      continue;
    }
    if (!bound.empty() && !(std::fabs(y[i] - r.y[i]) <= bound[i]))
      return fail() << "at " << i << ": got " << y[i] << ", expected "
                    << static_cast<double>(r.y[i]) << ", bound " << static_cast<double>(bound[i]);
  }
  if (!(std::fabs(sum - 1) <= relative_of<T>()))
    return fail() << "sum " << static_cast<double>(sum);
  const auto s = table_of<C>::threshold(x.data(), n, alpha, 0);
  if (nonzero > s.support_size)
    return fail() << nonzero << " nonzero outputs, support size " << s.support_size;
  return ::testing::AssertionSuccess();
}

template <class C, class T>
::testing::AssertionResult matches_reference(std::vector<T> const& x, double alpha,
                                             const char* what = "") {
  return matches<C>(x, alpha, smax::reference::entmax_bisect(x.data(), x.size(), alpha), what);
}

TYPED_TEST(entmax_bisect_test, every_length_and_alpha) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double alpha : alphas)
    for (std::size_t n = 1; n <= 16 * TypeParam::width + 1; ++n)
      for (double spread : {1.0, 4.0, 30.0}) {
        const auto x = random_row<T>(n, spread, -2.0, static_cast<unsigned>(n * 7 + spread));
        EXPECT_TRUE((matches_reference<TypeParam>(x, alpha)));
      }
}

TYPED_TEST(entmax_bisect_test, long_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double alpha : {1.01, 1.25, 1.5, 2.0, 3.0})
    for (std::size_t n : {std::size_t(1000), long_row(alpha < 1.5 ? 16411 : 65537)}) {
      EXPECT_TRUE((matches_reference<TypeParam>(random_row<T>(n, 16.0, 0.0, 3), alpha)));
      EXPECT_TRUE((matches_reference<TypeParam>(random_row<T>(n, 1.0, 5.0, 4), alpha)));
      auto masked = random_row<T>(n, 6.0, 0.0, 5);
      for (std::size_t i = 0; i < n; i += 3) masked[i] = -infinity<T>;
      EXPECT_TRUE((matches_reference<TypeParam>(masked, alpha)));
    }
  for (double alpha : {1.5, 2.0})
    EXPECT_TRUE((matches_reference<TypeParam>(random_row<T>(long_row(1000000), 16.0, 0.0, 6), alpha)));
}

// Every entry a candidate: all equal (the threshold is the bracket's upper end, -n^(1-α)), and
// within a width-1 range of z; a long run of bisection steps over the whole row.
TYPED_TEST(entmax_bisect_test, rows_of_candidates_only) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double alpha : alphas)
    // (The reference takes std::pow for α = 1.25: a shorter long row there.)
    for (std::size_t n : {std::size_t(2), std::size_t(3), std::size_t(TypeParam::width + 1),
                          std::size_t(1000), long_row(alpha == 1.25 ? 20000 : 100000)}) {
      const std::vector<T> equal(n, T(0.75));
      EXPECT_TRUE((matches_reference<TypeParam>(equal, alpha, ", all equal")));
      const auto y = entmax_of<TypeParam>(equal, alpha);
      for (std::size_t i = 1; i < n; ++i) ASSERT_EQ(y[i], y[0]) << "ties share equally";
      EXPECT_NEAR(y[0], 1.0 / static_cast<double>(n), 1e-6 / static_cast<double>(n));
      // z = (α - 1)(x - m) in (-1, 0]: x in (m - 1/(α - 1), m].
      const auto close = random_row<T>(n, 0.999 / (alpha - 1), 3.0, static_cast<unsigned>(n));
      EXPECT_TRUE((matches_reference<TypeParam>(close, alpha, ", width-1 range")));
    }
}

TYPED_TEST(entmax_bisect_test, exact_sort_based_one_point_five) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(5), std::size_t(37),
                        std::size_t(1000), std::size_t(70000)})
    for (double spread : {0.5, 3.0, 40.0}) {
      const auto x = random_row<T>(n, spread, 1.0, static_cast<unsigned>(n + spread));
      const auto exact = smax::reference::entmax15_exact(x.data(), n);
      const auto bisect = smax::reference::entmax_bisect(x.data(), n, 1.5L);
      // The two references agree to long double's rounding.
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_NEAR(static_cast<double>(exact.y[i]), static_cast<double>(bisect.y[i]), 1e-15);
      EXPECT_EQ(exact.support_size, bisect.support_size);
      EXPECT_TRUE((matches<TypeParam>(x, 1.5, exact, ", exact 1.5")));
    }
  // One-hot when the gap to the second entry is at least 2 (z gap 1).
  const auto y = entmax_of<TypeParam>(std::vector<T>{T(1), T(3), T(0.5), T(1)}, 1.5);
  EXPECT_EQ(y, (std::vector<T>{T(0), T(1), T(0), T(0)}));
}

TYPED_TEST(entmax_bisect_test, masks_at_every_lane_extremes_and_special_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, -f, g},                      // [1, 0, 0]: x - m overflows to -inf
      {big, -big, T(0), T(1)},         //
      {big, big},                      // ties at FLT_MAX: [.5, .5]
      {-big, -big, T(-3)},             //
      {big, big * T(0.9999999)},       // near FLT_MAX, close
      {T(1000), T(-1000), T(0)},       //
      {T(1), T(2), T(3)},              //
      {T(2), T(2), T(2), T(2)},        // all ties
      {T(-4), T(-4), T(1), T(1)},      // partial ties
      {T(1), T(1)},                    // [.5, .5]
      {T(5)},                          // n = 1: [1]
      {T(-5)},                         //
      {-inf, T(2), -inf, T(-3)},       // masked entries
      {T(1e-30), T(-1e-30), T(0)},     // values near zero
      {-inf, -inf},                    // all masked: NaN
      {T(1), nan, T(2)},               // NaN: NaN row
      {T(1), inf, T(2)},               // +inf: NaN row
      {-inf, nan},                     // NaN beside masks
      {-inf, inf},                     //
  };
  for (double alpha : alphas)
    for (auto const& x : rows) {
      EXPECT_TRUE((matches_reference<TypeParam>(x, alpha)));
      // The same values at every lane position of longer rows of ordinary entries.
      for (std::size_t len : {2 * TypeParam::width + 3, 5 * TypeParam::width + 3})
        for (std::size_t lane = 0; lane < len; ++lane) {
          auto row = random_row<T>(len, 4.0, 0.0, static_cast<unsigned>(lane + len));
          for (std::size_t k = 0; k < x.size() && lane + k < row.size(); ++k) row[lane + k] = x[k];
          EXPECT_TRUE((matches_reference<TypeParam>(row, alpha))) << "lane " << lane;
        }
    }
  // A mask at every lane of rows around the vector width and of a long row (scratch path).
  for (double alpha : alphas)
    for (std::size_t len : {TypeParam::width + 1, 4 * TypeParam::width + 3, std::size_t(300)})
      for (std::size_t lane : positions(len, TypeParam::width)) {
        auto row = random_row<T>(len, 3.0, 0.0, static_cast<unsigned>(lane));
        row[lane] = -inf;
        EXPECT_TRUE((matches_reference<TypeParam>(row, alpha))) << "mask at " << lane;
      }
  for (double alpha : alphas) {
    EXPECT_EQ(entmax_of<TypeParam>(std::vector<T>{T(-7)}, alpha), std::vector<T>{T(1)});
    EXPECT_EQ(entmax_of<TypeParam>(std::vector<T>{big}, alpha), std::vector<T>{T(1)});
    EXPECT_EQ(entmax_of<TypeParam>(std::vector<T>{T(1), T(1)}, alpha),
              (std::vector<T>{T(0.5), T(0.5)}));
    const auto y = entmax_of<TypeParam>(std::vector<T>{f, -f, g}, alpha);
    EXPECT_EQ(y, (std::vector<T>{T(1), T(0), T(0)}));
  }
}

// Release behaviour outside the domain (the API asserts in debug builds; the kernel is called
// directly here): a NaN row, never a crash or a hang; the threshold NaN, the backward NaN.
TYPED_TEST(entmax_bisect_test, alpha_outside_the_domain) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto x = random_row<T>(300, 4.0, 0.0, 1);
  const std::vector<T> dy(300, T(1));
  for (double alpha : {1.0, 0.5, -2.0, 1.0 + 1e-320, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    for (T v : entmax_of<TypeParam>(x, alpha)) ASSERT_TRUE(std::isnan(v)) << alpha;
    const auto s = table_of<TypeParam>::threshold(x.data(), x.size(), alpha, 0);
    EXPECT_EQ(s.kind, s.nan_row);
    std::vector<T> dx(300);
    const auto y = entmax_of<TypeParam>(x, 1.5);
    table_of<TypeParam>::backward(y.data(), 300, dy.data(), 300, dx.data(), 300, 1, 300, alpha);
    for (T v : dx) ASSERT_TRUE(std::isnan(v)) << alpha;
  }
}

// sum = 1, shift invariance (on a grid where the shift is exact: the same bits), sparsity and
// the support size, α = 2 against smax::sparsemax, α = 1.01 against softmax.
TYPED_TEST(entmax_bisect_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(7), std::size_t(2 * TypeParam::width + 1), std::size_t(777),
                        std::size_t(5000)}) {
    auto x = random_row<T>(n, 12.0, 0.0, static_cast<unsigned>(n));
    for (auto& v : x) v = std::round(v * T(1024)) / T(1024);
    for (double alpha : alphas) {
      const auto y = entmax_of<TypeParam>(x, alpha);
      auto shifted = x;
      for (auto& v : shifted) v += T(37);
      EXPECT_EQ(entmax_of<TypeParam>(shifted, alpha), y) << "shift, α = " << alpha;
      const auto s = table_of<TypeParam>::threshold(x.data(), n, alpha, 0);
      const auto t = smax::entmax_bisect_threshold(x.data(), n, smax::entmax_bisect_options{alpha});
      std::size_t nonzero = 0;
      long double m = -HUGE_VALL;
      for (T v : x) m = v > m ? v : m;
      for (std::size_t i = 0; i < n; ++i) {
        nonzero += y[i] > 0;
        // Sparse: exactly 0 at or below the threshold.
        const T z = static_cast<T>((x[i] - s.max) * s.scale);
        if (z <= s.tau) {
          EXPECT_EQ(y[i], T(0)) << i;
        }
      }
      EXPECT_EQ(nonzero, s.support_size) << "α = " << alpha;  // no underflow on these rows
      EXPECT_EQ(t.support_size, s.support_size);
      if (n >= 777) {
        EXPECT_LT(s.support_size, n);  // spread 12: sparse
      }
      // The unshifted threshold: the header's |tau - tau*| <= η + ulp(tau*).
      const auto r = smax::reference::entmax_bisect(x.data(), n, alpha);
      EXPECT_NEAR(static_cast<double>(t.tau), static_cast<double>(r.tau),
                  threshold_bound<T>(alpha, r.tau));
    }
    // α = 2 is sparsemax: within the two bounds (sparsemax's 2^-22 / 2^-50 absolute).
    const auto y2 = entmax_of<TypeParam>(x, 2.0);
    std::vector<T> sp(n);
    smax::sparsemax(x.data(), sp.data(), n);
    const auto r2 = smax::reference::entmax_bisect(x.data(), n, 2.0L);
    const auto bound = forward_bound<T>(r2, 2.0);
    ASSERT_FALSE(bound.empty());
    const double sparsemax_bound = sizeof(T) == 4 ? 0x1p-22 : 0x1p-50;
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_LE(std::fabs(static_cast<double>(y2[i]) - static_cast<double>(sp[i])),
                static_cast<double>(bound[i]) + sparsemax_bound)
          << i;
  }
  // α = 1.01 is close to softmax: |y - softmax| <= 0.02 on rows spanning at most 4; and the
  // difference is real (α = 1.01 is not softmax): it exceeds 1e-4 somewhere.
  for (std::size_t n : {std::size_t(3), std::size_t(50), std::size_t(3000)}) {
    const auto x = random_row<T>(n, 4.0, 1.0, static_cast<unsigned>(n + 1));
    const auto y = entmax_of<TypeParam>(x, 1.01);
    std::vector<T> p(n);
    smax::softmax(x.data(), p.data(), n);
    double worst = 0;
    // A plain comparison, not std::fmax: GCC 12's AArch64 vectoriser crashes (internal compiler
    // error in vect_transform_reduction) on an fmax reduction of float differences into a double.
    for (std::size_t i = 0; i < n; ++i) {
      const double d = std::fabs(static_cast<double>(y[i]) - static_cast<double>(p[i]));
      if (d > worst) worst = d;
    }
    EXPECT_LE(worst, 0.02) << n;
    if (n == 3) {
      EXPECT_GT(worst, 1e-4);
    }
    EXPECT_TRUE((matches_reference<TypeParam>(x, 1.01)));
  }
}

// n_iter: the default takes about 25 steps (float) for a threshold inside the bracket, fewer for
// α = 2 and 1.5 (closed form); an explicit count caps the steps and still gives sum 1; a huge
// count stops when the bracket cannot be split.
TYPED_TEST(entmax_bisect_test, iteration_counts) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto x = random_row<T>(4096, 16.0, 0.0, 11);
  const unsigned digits = std::numeric_limits<T>::digits;
  for (double alpha : {1.25, 3.0}) {
    const auto s = table_of<TypeParam>::threshold(x.data(), x.size(), alpha, 0);
    EXPECT_GE(s.steps, digits - 2);
    EXPECT_LE(s.steps, digits + 8);
  }
  for (double alpha : {1.5, 2.0}) {
    const auto s = table_of<TypeParam>::threshold(x.data(), x.size(), alpha, 0);
    EXPECT_LT(s.steps, digits);
  }
  for (double alpha : alphas) {
    for (unsigned n_iter : {1u, 5u}) {
      const auto s = table_of<TypeParam>::threshold(x.data(), x.size(), alpha, n_iter);
      EXPECT_LE(s.steps, n_iter);
      const auto y = entmax_of<TypeParam>(x, alpha, n_iter);
      long double sum = 0;
      for (T v : y) sum += v;
      EXPECT_NEAR(static_cast<double>(sum), 1.0, relative_of<T>());
    }
    EXPECT_EQ(entmax_of<TypeParam>(x, alpha, 4000000000u), entmax_of<TypeParam>(x, alpha, 0));
  }
}

// Batches equal single rows bit for bit (special rows inside), padding untouched, in place.
TYPED_TEST(entmax_bisect_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t w = TypeParam::width;
  for (double alpha : {1.5, 1.25})
    for (std::size_t cols : {std::size_t(1), w + 1, 9 * w + 3, std::size_t(300)})
      for (std::size_t rows : {std::size_t(1), std::size_t(9)}) {
        const std::size_t ld = cols + 3;
        auto x = random_row<T>(rows * ld, 6.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
        if (rows > 4) {
          x[5 * ld + cols / 2] = quiet_nan<T>;
          for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;
          x[7 * ld] = -infinity<T>;
        }
        std::vector<T> y(rows * ld, T(-7)), inplace = x;
        table_of<TypeParam>::forward(x.data(), ld, y.data(), ld, rows, cols, alpha, 0);
        table_of<TypeParam>::forward(inplace.data(), ld, inplace.data(), ld, rows, cols, alpha, 0);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
          const auto alone = entmax_of<TypeParam>(row, alpha);
          for (std::size_t i = 0; i < cols; ++i) {
            ASSERT_TRUE(same_bits_or_both_nan(y[r * ld + i], alone[i])) << r << ", " << i;
            ASSERT_TRUE(same_bits_or_both_nan(inplace[r * ld + i], alone[i])) << "in place";
          }
          for (std::size_t i = cols; i < ld && r * ld + i < y.size(); ++i)
            ASSERT_EQ(y[r * ld + i], T(-7)) << "padding written";
        }
      }
}

// The header's backward bound, from the kernel's own y.
template <class T>
std::vector<long double> backward_bound(std::vector<T> const& y, std::vector<T> const& dy,
                                        double alpha) {
  const std::size_t n = y.size();
  long double sum = 0, dot = 0, weighted = 0, log_max = 0;
  std::vector<long double> s(n, 0.0L);
  for (std::size_t i = 0; i < n; ++i) {
    if (!(y[i] > 0)) continue;
    s[i] = std::pow(static_cast<long double>(y[i]), 2 - static_cast<long double>(alpha));
    sum += s[i];
    dot += s[i] * dy[i];
    weighted += s[i] * std::fabs(static_cast<long double>(dy[i]));
    log_max = std::fmax(log_max, std::fabs(std::log(static_cast<long double>(y[i]))));
  }
  const long double c = sum > 0 ? dot / sum : 0;
  const long double rho = (sizeof(T) == 4 ? 0x1p-22L : 0x1p-51L) *
                          (1 + 2 * std::fabs(2 - static_cast<long double>(alpha)) * log_max);
  std::vector<long double> bound(n);
  for (std::size_t i = 0; i < n; ++i)
    bound[i] = 4 * rho * s[i] *
               (std::fabs(static_cast<long double>(dy[i])) + std::fabs(c) +
                (sum > 0 ? weighted / sum : 0));
  return bound;
}

// The threshold bound holds for every α, D < 1 or not, also where (α - 1)·m is large (its
// rounding to T is the ulp term). D >= 1 happens (α - 1 = η/4: D about 4; α = 3 on 2000 equal
// entries: D about 3): there the header states outputs in [0, 1], the sum within 2^-19 (2^-48)
// of 1 and the threshold bound, and no per-entry bound.
TYPED_TEST(entmax_bisect_test, threshold_bound_and_rows_with_d_at_least_one) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double near_one = 1 + (sizeof(T) == 4 ? 0x1p-21 : 0x1p-50);
  std::size_t d_at_least_one = 0;
  for (double alpha : {near_one, 1.01, 1.5, 3.0, 7.51})
    for (std::size_t n : {std::size_t(7), std::size_t(777), std::size_t(2000)})
      for (double offset : {0.0, -1000.0, 1e6}) {
        auto x = random_row<T>(n, 4.0, offset, static_cast<unsigned>(n) + (offset < 0 ? 1u : 0u));
        if (n == 2000) x.assign(n, static_cast<T>(offset));  // every entry in the support
        const auto r = smax::reference::entmax_bisect(x.data(), n, alpha);
        const auto t = smax::entmax_bisect_threshold(x.data(), n, smax::entmax_bisect_options{alpha});
        EXPECT_NEAR(static_cast<double>(t.tau), static_cast<double>(r.tau),
                    threshold_bound<T>(alpha, r.tau))
            << "α = " << alpha << ", n = " << n << ", offset " << offset;
        if (!forward_bound<T>(r, alpha).empty()) continue;
        ++d_at_least_one;
        const auto y = entmax_of<TypeParam>(x, alpha);
        long double sum = 0;
        for (T v : y) {
          EXPECT_TRUE(v >= T(0) && v <= T(1)) << v;
          sum += v;
        }
        EXPECT_LE(std::fabs(static_cast<double>(sum - 1)), relative_of<T>())
            << "α = " << alpha << ", n = " << n;
      }
  // Every α - 1 = η/4 row and the α = 7.51 rows of 2000 equal entries; in float the α = 3 ones
  // too (D ≈ η·k²/2 there: 3.0 in float, 7e-9 in double).
  EXPECT_GE(d_at_least_one, sizeof(T) == 4 ? 15u : 12u);
}

// α well above 2 (p = 1/(α - 1) well below 1): an entry within a rounding of the threshold has a
// large output for a small u, so the write pass must form u from z rounded exactly as the sums
// that fix the threshold used it. A fused multiply-add there (AVX2, AVX-512, NEON) gave float rows
// of 2000 normal entries sums up to 1.061 at α = 7.51, 6.6e-4 off at α = 10 and 3.5e-3 at α = 20.
// Outputs in [0, 1], the sum within 2^-19 (2^-48) of 1, the nonzero outputs at most the support.
TYPED_TEST(entmax_bisect_test, large_alpha_sum_on_normal_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::mt19937 rng(20261204);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (double alpha : {7.51, 10.0, 20.0})
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<T> x(2000);
      for (T& v : x) v = static_cast<T>(normal(rng));
      const auto y = entmax_of<TypeParam>(x, alpha);
      long double sum = 0;
      std::size_t nonzero = 0;
      for (T v : y) {
        ASSERT_TRUE(v >= T(0) && v <= T(1)) << v << " at α = " << alpha << ", trial " << trial;
        sum += v;
        nonzero += v > 0;
      }
      EXPECT_LE(std::fabs(static_cast<double>(sum - 1)), relative_of<T>())
          << "α = " << alpha << ", trial " << trial;
      EXPECT_LE(nonzero, table_of<TypeParam>::threshold(x.data(), x.size(), alpha, 0).support_size)
          << "α = " << alpha << ", trial " << trial;
    }
}

// The backward's stated range: with α = 7.51 and outputs of 1e-6 (float; 1e-50 double) the
// weights s_j = y_j^(2-α) are near 1e33 (1e275): with dy_j such that every product s_j·dy_j and
// their sum stay within T's range, dx is finite and within the bound; with dy_j = 1e6 (1e40)
// the products overflow, outside the range, where the header allows NaN or ±inf.
TYPED_TEST(entmax_bisect_test, backward_range_of_the_products) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double alpha = 7.51;
  const T small = sizeof(T) == 4 ? T(1e-6) : T(1e-50);
  const std::size_t n = 11;  // 10 weights near 1e33: their products with dy = 1e4 sum to 1.2e38
  std::vector<T> y(n, small);
  y[0] = T(1) - static_cast<T>(n - 1) * small;
  for (T scale : {sizeof(T) == 4 ? T(1e4) : T(1e30), sizeof(T) == 4 ? T(1e6) : T(1e40)}) {
    std::vector<T> dy(n);
    for (std::size_t i = 0; i < n; ++i) dy[i] = (i % 2 ? -scale : scale) * T(1 + 0.01 * i);
    long double weighted = 0;
    for (std::size_t i = 0; i < n; ++i)
      weighted += std::pow(static_cast<long double>(y[i]), 2 - alpha) *
                  std::fabs(static_cast<long double>(dy[i]));
    const bool in_range = weighted <= std::numeric_limits<T>::max();
    const bool inside = scale == (sizeof(T) == 4 ? T(1e4) : T(1e30));
    EXPECT_EQ(in_range, inside) << "the rows are meant to sit on either side";
    std::vector<T> dx(n);
    table_of<TypeParam>::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n, alpha);
    if (!in_range) continue;  // NaN or ±inf allowed
    const auto want = smax::reference::entmax_bisect_backward(y.data(), dy.data(), n, alpha);
    const auto bound = backward_bound(y, dy, alpha);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(std::isfinite(dx[i])) << i;
      EXPECT_LE(std::fabs(dx[i] - want[i]), bound[i])
          << i << ": " << dx[i] << " vs " << static_cast<double>(want[i]);
    }
  }
}

// Backward against the reference VJP with the header's bound; zero off the support and at
// masks; sum(dx) = 0 within the summed bound; NaN rows NaN; in place.
TYPED_TEST(entmax_bisect_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<std::vector<T>> rows;
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3),
                        std::size_t(TypeParam::width + 1), std::size_t(100), std::size_t(4099)})
    for (double spread : {1.0, 12.0}) {
      auto x = random_row<T>(n, spread, 0.0, static_cast<unsigned>(n));
      if (n > 2) x[1] = -infinity<T>;
      rows.push_back(x);
    }
  rows.push_back(std::vector<T>(1000, T(2)));  // all equal
  for (double alpha : {1.01, 1.25, 1.5, 2.0, 3.0})
    for (auto const& x : rows) {
      const std::size_t n = x.size();
      const auto dy = random_row<T>(n, 2.0, 0.3, static_cast<unsigned>(n + 1));
      const auto y = entmax_of<TypeParam>(x, alpha);
      std::vector<T> dx(n), inplace = dy;
      table_of<TypeParam>::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n, alpha);
      table_of<TypeParam>::backward(y.data(), n, inplace.data(), n, inplace.data(), n, 1, n,
                                    alpha);
      const auto want = smax::reference::entmax_bisect_backward(y.data(), dy.data(), n, alpha);
      const auto bound = backward_bound(y, dy, alpha);
      long double sum = 0, total_bound = 0;
      for (std::size_t i = 0; i < n; ++i) {
        sum += dx[i];
        total_bound += bound[i];
        if (!(y[i] > 0)) {
          EXPECT_EQ(dx[i], T(0)) << "off the support, " << i;
          continue;
        }
        EXPECT_LE(std::fabs(dx[i] - want[i]), bound[i])
            << "α = " << alpha << ", n = " << n << ", i = " << i << ": " << dx[i] << " vs "
            << static_cast<double>(want[i]);
        EXPECT_TRUE(same_bits_or_both_nan(dx[i], inplace[i])) << "dy == dx";
      }
      EXPECT_LE(std::fabs(sum), total_bound + 1e-30) << "sum(dx), α = " << alpha;
    }
  for (double alpha : alphas) {
    const std::vector<T> y{T(0.5), quiet_nan<T>, T(0.5)}, dy(3, T(1));
    std::vector<T> dx(3);
    table_of<TypeParam>::backward(y.data(), 3, dy.data(), 3, dx.data(), 3, 1, 3, alpha);
    for (T v : dx) EXPECT_TRUE(std::isnan(v));
    const std::vector<T> zeros(5, T(0)), dz(5, T(1));
    std::vector<T> d0(5, T(3));
    table_of<TypeParam>::backward(zeros.data(), 5, dz.data(), 5, d0.data(), 5, 1, 5, alpha);
    EXPECT_EQ(d0, std::vector<T>(5, T(0)));
  }
}

// The reference VJP against central differences of the reference forward (long double), rows
// away from support changes.
TEST(entmax_bisect_reference, vjp_matches_finite_differences) {
  for (double alpha : {1.25, 1.5, 2.0, 3.0})
    for (unsigned seed : {17u, 18u, 19u}) {
      const auto x = random_row<double>(9, 3.0, 0.0, seed);
      const auto dy = random_row<double>(9, 2.0, 0.0, seed + 10);
      const auto r = smax::reference::entmax_bisect(x.data(), x.size(), alpha);
      std::vector<double> y(9);
      for (std::size_t i = 0; i < 9; ++i) y[i] = static_cast<double>(r.y[i]);
      const auto dx = smax::reference::entmax_bisect_backward(y.data(), dy.data(), 9, alpha);
      for (std::size_t k = 0; k < x.size(); ++k) {
        const double h = 1e-7;
        auto xp = x, xm = x;
        xp[k] += h;
        xm[k] -= h;
        const auto yp = smax::reference::entmax_bisect(xp.data(), 9, alpha);
        const auto ym = smax::reference::entmax_bisect(xm.data(), 9, alpha);
        if (yp.support_size != r.support_size || ym.support_size != r.support_size) continue;
        long double fd = 0;
        for (std::size_t i = 0; i < 9; ++i) fd += dy[i] * (yp.y[i] - ym.y[i]) / (2 * h);
        EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(dx[k]), 1e-6)
            << "α = " << alpha << ", seed " << seed << ", k = " << k;
      }
    }
}

// The public forms: defaults (α = 1.5), _rows, in place, runtime::, the threshold form;
// zero_masked_rows gives 0 for an all -inf row and dx = 0 there.
TEST(entmax_bisect_api, forms_and_options) {
  const auto x = random_row<float>(300, 8.0, 0.0, 5);
  std::vector<float> a(300), b(x), c(300), d(300);
  smax::entmax_bisect(x.data(), a.data(), x.size());
  smax::entmax_bisect(b.data(), b.data(), b.size());
  EXPECT_EQ(a, b);
  smax::entmax_bisect_rows(x.data(), c.data(), 1, x.size(), x.size());
  EXPECT_EQ(a, c);
  smax::runtime::entmax_bisect(x.data(), d.data(), x.size());
  const auto r = smax::reference::entmax15_exact(x.data(), x.size());
  for (std::size_t i = 0; i < 300; ++i) {
    EXPECT_NEAR(a[i], static_cast<double>(r.y[i]), 1e-5);
    EXPECT_NEAR(d[i], static_cast<double>(r.y[i]), 1e-5);
  }
  smax::entmax_bisect_options two;
  two.alpha = 2;
  smax::entmax_bisect(x.data(), c.data(), x.size(), two);
  EXPECT_NE(a, c);
  const auto t = smax::entmax_bisect_threshold(x.data(), x.size());
  const auto tr = smax::runtime::entmax_bisect_threshold(x.data(), x.size());
  EXPECT_NEAR(t.tau, static_cast<double>(r.tau), 1e-5);
  EXPECT_NEAR(tr.tau, static_cast<double>(r.tau), 1e-5);
  EXPECT_EQ(t.support_size, r.support_size);
  EXPECT_EQ(tr.support_size, r.support_size);
  const std::vector<float> masked(5, -infinity<float>), dy(5, 1.f);
  std::vector<float> y(5), dx(5);
  smax::entmax_bisect(masked.data(), y.data(), 5);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(smax::entmax_bisect_threshold(masked.data(), 5).tau));
  EXPECT_EQ(smax::entmax_bisect_threshold(masked.data(), 0).support_size, 0u);
  smax::entmax_bisect_options zero;
  zero.zero_masked_rows = true;
  smax::entmax_bisect(masked.data(), y.data(), 5, zero);
  EXPECT_EQ(y, std::vector<float>(5, 0.f));
  smax::entmax_bisect_backward(y.data(), dy.data(), dx.data(), 5, zero);
  EXPECT_EQ(dx, std::vector<float>(5, 0.f));
  std::vector<double> xd(x.begin(), x.end()), yd(300);
  smax::entmax_bisect(xd.data(), yd.data(), 300);
  for (std::size_t i = 0; i < 300; ++i) EXPECT_NEAR(yd[i], static_cast<double>(r.y[i]), 1e-12);
}

// Rows longer than the stack's 256 take the per-thread scratch array; when it cannot be allocated
// (the test seam makes the allocation fail) the row is NaN, as the header says. Shorter rows and
// the next call after the failure are unaffected.
TYPED_TEST(entmax_bisect_test, scratch_failure_gives_nan_row) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  const auto x = random_row<T>(3000, 8.0, 0.0, 21);
  const auto short_row = random_row<T>(200, 8.0, 0.0, 22);
  const auto short_before = entmax_of<TypeParam>(short_row, 1.5);
  smax::primitives::scratch_limit<A> = 0;
  const auto failed = entmax_of<TypeParam>(x, 1.5);
  const auto short_during = entmax_of<TypeParam>(short_row, 1.5);
  smax::primitives::scratch_limit<A> = ~std::size_t(0);
  for (T v : failed) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(short_during, short_before);
  EXPECT_TRUE((matches_reference<TypeParam>(x, 1.5)));
}

}  // namespace

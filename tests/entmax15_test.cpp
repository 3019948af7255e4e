// 1.5-entmax (smax/entmax15.hpp) on every compiled instruction set, float and double, both
// threshold paths (sort: candidates on the stack; filter: lane bound, SIMD compaction) and the
// automatic choice: against the long-double sort-based reference (reference/entmax15.hpp) on
// random and adversarial rows, the invariants and edge cases of docs/entmax15.md, the threshold
// and the loss against the reference, the backward passes against the reference VJP and central
// finite differences, and rows of 10^6 elements, some with every entry a candidate.

#include <smax/reference/entmax15.hpp>
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "test_support.hpp"

namespace {

using namespace smax_test;
using smax::kernels::entmax15_algorithm;

constexpr entmax15_algorithm entmax15_algorithms[] = {
    entmax15_algorithm::sort, entmax15_algorithm::filter, entmax15_algorithm::automatic};

inline const char* name_of(entmax15_algorithm a) {
  switch (a) {
    case entmax15_algorithm::sort:
      return "sort";
    case entmax15_algorithm::filter:
      return "filter";
    default:
      return "automatic";
  }
}

// The bounds entmax15.hpp states. Forward: |y - y*| <= 2^-21 (float) / 2^-49 (double), absolute.
template <class T>
const double entmax15_atol = sizeof(T) == 4 ? std::ldexp(1.0, -21) : std::ldexp(1.0, -49);
// Threshold: |tau - tau*| <= 2^-22 + ulp(tau*) (float) / 2^-50 + ulp(tau*) (double).
template <class T>
double threshold_bound(long double tau) {
  const T t = static_cast<T>(tau);
  const double ulp = static_cast<double>(std::nextafter(std::fabs(t), infinity<T>) - std::fabs(t));
  return (sizeof(T) == 4 ? std::ldexp(1.0, -22) : std::ldexp(1.0, -50)) + ulp;
}
// Loss: |L - L*| <= 2^-21·(1 + |L*|) (float) / 2^-49·(1 + |L*|) (double).
template <class T>
double loss_bound(long double loss) {
  return (sizeof(T) == 4 ? std::ldexp(1.0, -21) : std::ldexp(1.0, -49)) *
         (1 + std::fabs(static_cast<double>(loss)));
}
// Loss gradient: |dx_i - dx*_i| <= (1 + 2^-22)·2^-21·|dloss| + 2^-22·|dx*_i| + FLT_MIN (float) /
// (1 + 2^-51)·2^-49·|dloss| + 2^-51·|dx*_i| + DBL_MIN (double), dx* = dloss·(y* - e_t).
template <class T>
double loss_gradient_bound(double dloss, long double want) {
  const bool f = sizeof(T) == 4;
  return (1 + std::ldexp(1.0, f ? -22 : -51)) * entmax15_atol<T> * std::fabs(dloss) +
         std::ldexp(1.0, f ? -22 : -51) * std::fabs(static_cast<double>(want)) +
         static_cast<double>(std::numeric_limits<T>::min());
}
// Backward: |dx_i - dx*_i| <= 2^-20·s_i·(|dy_i| + sum_S s|dy| / sum_S s) (float) / 2^-49 (double).
template <class T>
const double backward_eps = sizeof(T) == 4 ? std::ldexp(1.0, -20) : std::ldexp(1.0, -49);

template <class C>
using table_of = smax::kernels::entmax15_table<typename C::arch>;

template <class C, class T>
std::vector<T> run(entmax15_algorithm a, std::vector<T> const& x) {
  const std::size_t n = x.size();
  std::vector<T> y(n + 1, T(-7));  // one guard element past the end
  table_of<C>::forward(x.data(), n, y.data(), n, n == 0 ? 0 : 1, n, a);
  EXPECT_EQ(y[n], T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// One row against the reference: masked entries and entries clearly below tau exactly +0, the
// rest within the bound; the threshold kernel's support_size equals the reference's and the
// number of nonzero outputs; its tau within the bound of the reference's.
template <class C, class T>
::testing::AssertionResult matches_reference(entmax15_algorithm a, std::vector<T> const& x,
                                             smax::reference::entmax15_result const& ref) {
  const std::size_t n = x.size();
  const auto y = run<C>(a, x);
  const double atol = entmax15_atol<T>;
  const auto state = table_of<C>::threshold(x.data(), n, a);
  if (ref.special) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(y[i]))
        return ::testing::AssertionFailure() << "expected a NaN row, got " << y[i] << " at " << i;
    if (n > 0 && state.kind == state.ordinary)
      return ::testing::AssertionFailure() << "state not special";
    return ::testing::AssertionSuccess();
  }
  long double m = -HUGE_VALL;
  for (T v : x) m = v > m ? v : m;
  std::size_t nonzero = 0, failures = 0;
  ::testing::AssertionResult first = ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < n; ++i) {
    nonzero += y[i] > T(0);
    const long double z = (static_cast<long double>(x[i]) - m) / 2;
    // Clearly off the support: u = z - tau below -2^-20 (float) / -2^-48 (double).
    const bool must_be_zero = x[i] == -infinity<T> || z < ref.tau_shifted - 2 * atol;
    bool ok = y[i] >= T(0) && std::fabs(static_cast<long double>(y[i]) - ref.y[i]) <= atol;
    if (must_be_zero) ok = y[i] == T(0) && !std::signbit(y[i]);
    if (!ok && failures++ == 0)
      first = ::testing::AssertionFailure()
              << "at " << i << ": got " << y[i] << ", expected " << static_cast<double>(ref.y[i])
              << " (diff " << static_cast<double>(y[i] - ref.y[i]) << ")";
  }
  if (failures)
    return first << " [" << failures << " of " << n << ", " << name_of(a) << ", n = " << n << "]";
  if (state.kind != state.ordinary) return ::testing::AssertionFailure() << "state special";
  if (state.support_size != nonzero || state.support_size != ref.support_size)
    return ::testing::AssertionFailure()
           << "support_size " << state.support_size << ", " << nonzero
           << " nonzero outputs, reference " << ref.support_size << " (" << name_of(a)
           << ", n = " << n << ")";
  if (!(std::fabs(static_cast<long double>(state.tau) - ref.tau_shifted) <= atol))
    return ::testing::AssertionFailure()
           << "tau " << state.tau << ", expected " << static_cast<double>(ref.tau_shifted);
  return ::testing::AssertionSuccess();
}

template <class C, class T>
::testing::AssertionResult matches_reference(entmax15_algorithm a, std::vector<T> const& x) {
  return matches_reference<C>(a, x, smax::reference::entmax15(x.data(), x.size()));
}

template <class C>
class entmax15_test : public ::testing::Test {};
TYPED_TEST_SUITE(entmax15_test, all_configs, config_names);

TYPED_TEST(entmax15_test, every_length_around_the_vector_width) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
    for (double spread : {0.5, 3.0, 16.0, 200.0}) {
      const auto x = random_row<T>(n, spread, 1.0, static_cast<unsigned>(n * 7 + spread));
      const auto ref = smax::reference::entmax15(x.data(), n);
      for (auto a : entmax15_algorithms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, x, ref))) << "spread " << spread;
    }
}

TYPED_TEST(entmax15_test, long_rows_spreads_and_offsets) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(129), std::size_t(1000), std::size_t(4095),
                        std::size_t(4096), std::size_t(4097), std::size_t(65537)})
    for (double spread : {0.01, 0.5, 3.99, 16.0, 1000.0})
      for (double offset : {0.0, -300.0, 12345.0}) {
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + spread));
        const auto ref = smax::reference::entmax15(x.data(), n);
        for (auto a : entmax15_algorithms)
          EXPECT_TRUE((matches_reference<TypeParam>(a, x, ref)))
              << "spread " << spread << ", offset " << offset;
      }
}

// Rows of 10^6: random (few candidates), and rows where every entry is a candidate (all equal;
// every entry within 2 of the maximum; a dense top): the exact finish must stay fast (the test's
// time limit) and exact.
TYPED_TEST(entmax15_test, rows_of_a_million) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = long_row(std::size_t(1) << 20);
  std::vector<std::vector<T>> rows;
  rows.push_back(random_row<T>(n, 16.0, 0.0, 1));
  rows.push_back(random_row<T>(n, 1.999, 5.0, 2));  // every entry a candidate
  rows.push_back(std::vector<T>(n, T(-2.5)));        // all equal: y = 1/n
  auto sorted = random_row<T>(n, 0.25, 0.0, 3);
  std::sort(sorted.begin(), sorted.end());  // ascending, then masked and extreme entries
  for (std::size_t i = 0; i < n; i += 1000) sorted[i] = -infinity<T>;
  sorted[n / 2] = -std::numeric_limits<T>::max();
  rows.push_back(sorted);
  for (auto const& x : rows) {
    const auto ref = smax::reference::entmax15(x.data(), n);
    EXPECT_TRUE((matches_reference<TypeParam>(entmax15_algorithm::automatic, x, ref)));
    EXPECT_TRUE((matches_reference<TypeParam>(entmax15_algorithm::filter, x, ref)));
  }
  const auto y = run<TypeParam>(entmax15_algorithm::automatic, rows[2]);
  for (T v : y) ASSERT_NEAR(v, 1.0 / n, entmax15_atol<T>);
}

TYPED_TEST(entmax15_test, masked_entry_at_every_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {TypeParam::width + 1, 4 * TypeParam::width + 3, std::size_t(200)})
    for (std::size_t lane = 0; lane < n; ++lane) {
      auto x = random_row<T>(n, 1.5, 0.0, static_cast<unsigned>(n + lane));
      x[lane] = -infinity<T>;
      if (lane + 2 < n) x[lane + 2] = -infinity<T>;
      for (auto a : entmax15_algorithms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "lane " << lane;
    }
}

// The spec's inputs and the extremes, alone and at every lane position of longer rows of ordinary
// entries (short and filter paths).
TYPED_TEST(entmax15_test, special_values_at_every_lane) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const T tiny = std::numeric_limits<T>::denorm_min(), small = std::numeric_limits<T>::min();
  const std::vector<std::vector<T>> rows = {
      {f, -f, g},                        // [1, 0, 0]; f - (-f) overflows
      {big, big},                        // ties at FLT_MAX
      {-big, -big, -big},                //
      {big, std::nextafter(big, T(0))},  // one ulp apart at FLT_MAX: a gap of 2^103 or more
      {-big, T(-3), T(-4)},              //
      {T(1000), T(-1000), T(0)},         //
      {T(1), T(2), T(3)},                //
      {T(1), T(1)},                      // [.5, .5]
      {T(2), T(2), T(2), T(2)},          // all ties
      {T(-4), T(-4), T(1), T(1)},        // partial ties
      {T(5)},                            // n = 1
      {T(-5)},                           //
      {T(3), T(1)},                      // gap 2: one-hot
      {T(3), T(1.01)},                   // gap below 2: both in
      {-inf, T(2), -inf, T(1.5)},        // masked entries
      {T(1e-30), T(-1e-30), T(0), -T(0)},
      {small, tiny, -tiny, T(0)},
      {-inf, -inf},      // all masked: NaN
      {T(1), nan, T(2)},  // NaN: NaN row
      {T(1), inf, T(2)},  // +inf: NaN row
      {-inf, nan},        //
      {inf, -inf},        //
  };
  for (auto const& x : rows) {
    for (auto a : entmax15_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x)));
    for (std::size_t len : {2 * TypeParam::width + 3, 5 * TypeParam::width + 3, std::size_t(300)})
      for (std::size_t lane = 0; lane < len; lane += len == 300 ? 7 : 1) {
        auto row = random_row<T>(len, 4.0, 0.0, static_cast<unsigned>(lane + len));
        for (std::size_t k = 0; k < x.size() && lane + k < row.size(); ++k) row[lane + k] = x[k];
        for (auto a : entmax15_algorithms)
          EXPECT_TRUE((matches_reference<TypeParam>(a, row))) << "lane " << lane;
      }
    // Rows long enough to bound tau by their first sixteenth (the fused max and compaction pass):
    // the values inside that part, at its edge and beyond it.
    for (std::size_t len : {std::size_t(5000), long_row(70001)})
      for (std::size_t at : {std::size_t(0), std::size_t(311), len / 16 - 1, len / 16, len / 2,
                             len - x.size()}) {
        auto row = random_row<T>(len, 2.5, 1.0, static_cast<unsigned>(at + len));
        for (std::size_t k = 0; k < x.size(); ++k) row[at + k] = x[k];
        EXPECT_TRUE((matches_reference<TypeParam>(entmax15_algorithm::automatic, row)))
            << "at " << at << " of " << len;
      }
  }
}

TYPED_TEST(entmax15_test, definition_figures) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double atol = entmax15_atol<T>;
  for (auto a : entmax15_algorithms) {
    EXPECT_EQ(run<TypeParam>(a, std::vector<T>{T(-3.25)})[0], T(1));  // n = 1: exactly 1
    const auto half = run<TypeParam>(a, std::vector<T>{T(1), T(1)});
    EXPECT_NEAR(half[0], 0.5, atol);
    EXPECT_NEAR(half[1], 0.5, atol);
    const auto hot = run<TypeParam>(a, std::vector<T>{T(3e38), T(-3e38), T(1e38)});
    EXPECT_EQ(hot[0], T(1));
    EXPECT_EQ(hot[1], T(0));
    EXPECT_EQ(hot[2], T(0));
    EXPECT_TRUE(run<TypeParam>(a, std::vector<T>{}).empty());
    // One-hot exactly when the gap is at least 2 (in x units); below 2 the second entry is in.
    for (T gap : {T(2), T(2.5), T(100)}) {
      const auto y = run<TypeParam>(a, std::vector<T>{T(0.5), T(0.5) - gap, T(-7)});
      EXPECT_EQ(y[0], T(1)) << gap;
      EXPECT_EQ(y[1], T(0)) << gap;
    }
    const auto two = run<TypeParam>(a, std::vector<T>{T(0.5), T(-1.49)});
    EXPECT_GT(two[1], T(0));
  }
  // n = 0 writes nothing.
  T guard = T(-7);
  smax::entmax15(static_cast<const T*>(nullptr), &guard, 0);
  EXPECT_EQ(guard, T(-7));
}

// The exact finish on its own: sets with many extras just below tau (the Newton rounds), and the
// sort guard reached after 0, 1 and 2 rounds; every way must give the reference's support and tau.
TYPED_TEST(entmax15_test, exact_finish_rounds_and_its_sort_guard) {
  using T = typename TypeParam::value_type;
  using A = typename TypeParam::arch;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(20), std::size_t(50), std::size_t(3000), std::size_t(100000)})
    for (double spread : {0.3, 1.99, 8.0}) {
      const auto row = random_row<T>(n, spread, 0.0, static_cast<unsigned>(n + spread));
      const auto r = smax::reference::entmax15(row.data(), n);
      const T m = *std::max_element(row.begin(), row.end());
      for (int rounds : {0, 1, 2, 32}) {
        std::vector<double> c;
        for (T v : row) {
          const T z = (v - m) * T(0.5);
          if (z > T(-1)) c.push_back(static_cast<double>(z));
        }
        std::size_t support = 0;
        const double tau = smax::kernels::entmax15_detail::exact_threshold<A, T>(
            c.data(), c.size(), -1.0, &support, rounds);
        EXPECT_EQ(support, r.support_size) << "rounds " << rounds << ", n " << n;
        EXPECT_NEAR(tau, static_cast<double>(r.tau_shifted), entmax15_atol<T>)
            << "rounds " << rounds << ", n " << n;
      }
    }
}

TYPED_TEST(entmax15_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(5), std::size_t(64), std::size_t(1000), std::size_t(40000)})
    for (double spread : {1.0, 10.0}) {
      // Values on a grid of 2^-6, so that x + 64 is exact: shift invariance holds bit for bit.
      auto x = random_row<T>(n, spread, 0.0, static_cast<unsigned>(n + spread));
      for (auto& v : x) v = std::round(v * T(64)) / T(64);
      auto shifted = x;
      for (auto& v : shifted) v += T(64);
      const auto ref = smax::reference::entmax15(x.data(), n);
      for (auto a : entmax15_algorithms) {
        const auto y = run<TypeParam>(a, x);
        const auto ys = run<TypeParam>(a, shifted);
        EXPECT_EQ(0, std::memcmp(y.data(), ys.data(), n * sizeof(T))) << "shift, n " << n;
        long double sum = 0;
        for (std::size_t i = 0; i < n; ++i) {
          sum += y[i];
          EXPECT_GE(y[i], T(0));
        }
        // Sum of the support's outputs, each within the bound.
        EXPECT_NEAR(static_cast<double>(sum), 1.0, entmax15_atol<T> * ref.support_size);
        // Sparse: every entry at or below the threshold is exactly 0.
        for (std::size_t i = 0; i < n; ++i)
          if (!(ref.y[i] > 0) && (x[i] / 2 - ref.tau) < -2 * entmax15_atol<T>) {
            EXPECT_EQ(y[i], T(0)) << i;
          }
      }
    }
}

// The reference VJP against central differences of the reference forward (long double), then
// the kernel's backward against the reference VJP with the header's bound, from the kernel's own
// y; sum(dx) = 0 and dx = 0 off the support.
TYPED_TEST(entmax15_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  {
    const std::vector<double> x = {0.3, -0.2, 0.9, 0.1, -2.0, 0.85, -0.7};
    const std::vector<long double> dy = {0.5L, -1.0L, 2.0L, 0.25L, 3.0L, -0.75L, 1.5L};
    const auto y = smax::reference::entmax15(x.data(), x.size()).y;
    const auto dx = smax::reference::entmax15_backward(y, dy);
    const double h = 1e-6;
    for (std::size_t j = 0; j < x.size(); ++j) {
      auto xp = x, xm = x;
      xp[j] += h;
      xm[j] -= h;
      const auto yp = smax::reference::entmax15(xp.data(), x.size()).y;
      const auto ym = smax::reference::entmax15(xm.data(), x.size()).y;
      long double fd = 0;
      for (std::size_t i = 0; i < x.size(); ++i) fd += dy[i] * (yp[i] - ym[i]) / (2 * h);
      EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(dx[j]), 1e-7) << j;
    }
  }
  for (std::size_t n : {std::size_t(1), std::size_t(3), TypeParam::width + 1,
                        4 * TypeParam::width + 3, std::size_t(1000), std::size_t(70001)})
    for (double spread : {0.5, 8.0}) {
      auto x = random_row<T>(n, spread, 0.0, static_cast<unsigned>(n));
      if (n > 4) x[3] = -infinity<T>;
      const auto y = run<TypeParam>(entmax15_algorithm::automatic, x);
      auto dy = random_row<T>(n, 4.0, 0.5, static_cast<unsigned>(n + 1));
      if (n > 4) dy[3] = infinity<T>;  // on a masked entry: dx stays 0
      std::vector<T> dx(n + 1, T(-7));
      smax::kernels::entmax15_table<typename TypeParam::arch>::backward(
          y.data(), n, dy.data(), n, dx.data(), n, 1, n);
      EXPECT_EQ(dx[n], T(-7));
      const std::vector<long double> yl(y.begin(), y.end()), dyl(dy.begin(), dy.end());
      const auto ref = smax::reference::entmax15_backward(yl, dyl);
      long double weighted = 0, total = 0, sum = 0, scale = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (y[i] > 0) {
          weighted += std::sqrt(yl[i]) * std::fabs(dyl[i]);
          total += std::sqrt(yl[i]);
        }
      const long double mean_abs = weighted / total;
      for (std::size_t i = 0; i < n; ++i) {
        const long double s = std::sqrt(yl[i]);
        const double bound =
            backward_eps<T> * static_cast<double>(s * (std::fabs(dyl[i]) + mean_abs));
        if (y[i] > 0) {
          EXPECT_NEAR(dx[i], static_cast<double>(ref[i]), bound) << i << ", n " << n;
        } else {
          EXPECT_EQ(dx[i], T(0)) << "off the support at " << i;
        }
        if (y[i] > 0) scale += s * (std::fabs(dyl[i]) + mean_abs);
        sum += dx[i];
      }
      EXPECT_NEAR(static_cast<double>(sum), 0.0, backward_eps<T> * static_cast<double>(scale));
    }
  // A NaN row (the forward of a NaN row) gives a NaN row; y = 0 everywhere (zero_masked_rows)
  // gives 0.
  for (std::size_t n : {std::size_t(3), 5 * TypeParam::width + 1}) {
    std::vector<T> y(n, quiet_nan<T>), dy(n, T(1)), dx(n);
    smax::entmax15_backward(y.data(), dy.data(), dx.data(), n);
    for (T v : dx) EXPECT_TRUE(std::isnan(v));
    std::fill(y.begin(), y.end(), T(0));
    smax::entmax15_backward(y.data(), dy.data(), dx.data(), n);
    for (T v : dx) EXPECT_EQ(v, T(0));
  }
}

// The kernel's backward against central differences of the kernel's forward (double rows: the
// differences need the precision).
TYPED_TEST(entmax15_test, backward_against_finite_differences) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  if (sizeof(T) == 4) GTEST_SKIP() << "finite differences need double rows";
  for (std::size_t n : {std::size_t(6), std::size_t(300)}) {
    const auto x = random_row<T>(n, 1.0, 0.0, static_cast<unsigned>(n + 5));
    const auto dy = random_row<T>(n, 2.0, 0.3, static_cast<unsigned>(n + 6));
    const auto y = run<TypeParam>(entmax15_algorithm::automatic, x);
    std::vector<T> dx(n);
    smax::kernels::entmax15_table<typename TypeParam::arch>::backward(y.data(), n, dy.data(), n,
                                                                      dx.data(), n, 1, n);
    const T h = T(1e-6);
    for (std::size_t j = 0; j < n; j += n > 10 ? 7 : 1) {
      auto xp = x, xm = x;
      xp[j] += h;
      xm[j] -= h;
      const auto yp = run<TypeParam>(entmax15_algorithm::automatic, xp);
      const auto ym = run<TypeParam>(entmax15_algorithm::automatic, xm);
      double fd = 0;
      for (std::size_t i = 0; i < n; ++i) fd += dy[i] * (yp[i] - ym[i]) / (2 * h);
      EXPECT_NEAR(fd, dx[j], 1e-7) << j;
    }
  }
}

// The threshold form against the reference (header-only and runtime), its relation to y, and the
// special rows.
TYPED_TEST(entmax15_test, threshold) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(100), std::size_t(5000)})
    for (double offset : {0.0, -40.0, 3e4}) {
      const auto x = random_row<T>(n, 6.0, offset, static_cast<unsigned>(n + 3));
      const auto ref = smax::reference::entmax15(x.data(), n);
      // Through this instruction set's table, as the public form computes it.
      const auto s = smax::kernels::entmax15_table<A>::threshold(
          x.data(), n, entmax15_algorithm::automatic);
      const T tau = static_cast<T>(0.5 * static_cast<double>(s.max) + s.tau);
      EXPECT_NEAR(tau, static_cast<double>(ref.tau), threshold_bound<T>(ref.tau)) << n;
      EXPECT_EQ(s.support_size, ref.support_size);
      const auto pub = smax::entmax15_threshold(x.data(), n);
      const auto rt = smax::runtime::entmax15_threshold(x.data(), n);
      EXPECT_NEAR(pub.tau, static_cast<double>(ref.tau), threshold_bound<T>(ref.tau));
      EXPECT_NEAR(rt.tau, static_cast<double>(ref.tau), threshold_bound<T>(ref.tau));
      EXPECT_EQ(pub.support_size, ref.support_size);
      EXPECT_EQ(rt.support_size, ref.support_size);
    }
  const T f = static_cast<T>(3e38);
  const std::vector<T> hot = {f, -f, T(1e38)};
  const auto t = smax::entmax15_threshold(hot.data(), 3);
  EXPECT_NEAR(t.tau, static_cast<double>(f) / 2 - 1, threshold_bound<T>(f / 2 - 1.0L));
  EXPECT_EQ(t.support_size, 1u);
  for (auto const& bad : {std::vector<T>{-infinity<T>, -infinity<T>},
                          std::vector<T>{T(1), quiet_nan<T>}, std::vector<T>{infinity<T>, T(0)},
                          std::vector<T>{}}) {
    const auto b = smax::entmax15_threshold(bad.data(), bad.size());
    EXPECT_TRUE(std::isnan(b.tau));
    EXPECT_EQ(b.support_size, 0u);
  }
}

// The loss against the reference, L >= 0, L = 0 iff the target leads by 2, masked target +inf,
// special rows NaN; its gradient against central differences (double) and against
// dloss·(y* - e_t), in place too.
TYPED_TEST(entmax15_test, loss_and_its_gradient) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = table_of<TypeParam>;
  for (std::size_t n : {std::size_t(1), std::size_t(4), std::size_t(100), std::size_t(5000),
                        long_row(300000)})
    for (double spread : {1.0, 12.0}) {
      const auto x = random_row<T>(n, spread, 3.0, static_cast<unsigned>(n * 3 + spread));
      for (std::size_t t : {std::size_t(0), n / 2, n - 1}) {
        const long double want = smax::reference::entmax15_loss(x.data(), n, t);
        const T got = table::loss(x.data(), n, t);
        EXPECT_NEAR(got, static_cast<double>(want), loss_bound<T>(want)) << n << ", t " << t;
        EXPECT_GE(got, T(0));
        EXPECT_NEAR(smax::runtime::entmax15_loss(x.data(), n, t), static_cast<double>(want),
                    loss_bound<T>(want));
        const T dloss = T(1.75);
        std::vector<T> dx(n), in_place = x;
        table::loss_backward(x.data(), n, t, dloss, dx.data());
        table::loss_backward(in_place.data(), n, t, dloss, in_place.data());
        const auto ref = smax::reference::entmax15(x.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
          const long double g = dloss * (ref.y[i] - (i == t ? 1 : 0));
          ASSERT_NEAR(dx[i], static_cast<double>(g), loss_gradient_bound<T>(dloss, g)) << i;
          ASSERT_EQ(dx[i], in_place[i]) << i;
        }
      }
    }
  // The bound scales with |dloss|: large, tiny (products near and below FLT_MIN) and negative.
  for (T dloss : {T(-3e5), T(1e-37), T(-7e30)})
    for (std::size_t n : {std::size_t(4), std::size_t(100)}) {
      const auto x = random_row<T>(n, 1.0, 3.0, static_cast<unsigned>(n + 5));
      const auto ref = smax::reference::entmax15(x.data(), n);
      std::vector<T> dx(n);
      for (std::size_t t : {std::size_t(0), n - 1}) {
        table::loss_backward(x.data(), n, t, dloss, dx.data());
        for (std::size_t i = 0; i < n; ++i) {
          const long double g = dloss * (ref.y[i] - (i == t ? 1 : 0));
          ASSERT_NEAR(dx[i], static_cast<double>(g), loss_gradient_bound<T>(dloss, g))
              << "dloss " << dloss << ", n " << n << ", t " << t << ", " << i;
        }
      }
    }
  if (sizeof(T) == 8) {
    const auto x = random_row<T>(9, 2.0, 0.0, 17);
    std::vector<T> dx(9);
    table::loss_backward(x.data(), 9, 4, T(1), dx.data());
    const T h = T(1e-6);
    for (std::size_t j = 0; j < 9; ++j) {
      auto xp = x, xm = x;
      xp[j] += h;
      xm[j] -= h;
      const double fd = (table::loss(xp.data(), 9, 4) - table::loss(xm.data(), 9, 4)) / (2 * h);
      EXPECT_NEAR(fd, dx[j], 1e-8) << j;
    }
  }
  // L = 0 when the target leads by 2 or more, > 0 below.
  EXPECT_EQ(table::loss(std::vector<T>{T(1), T(3), T(0.5)}.data(), 3, 1), T(0));
  EXPECT_GT(table::loss(std::vector<T>{T(1.1), T(3), T(0.5)}.data(), 3, 1), T(0));
  const T f = static_cast<T>(3e38);
  EXPECT_EQ(table::loss(std::vector<T>{f, -f, T(1e38)}.data(), 3, 0), T(0));
  // Masked target +inf (and a NaN gradient row); special rows NaN.
  const std::vector<T> masked = {T(1), -infinity<T>, T(0)};
  EXPECT_EQ(table::loss(masked.data(), 3, 1), infinity<T>);
  std::vector<T> dx(3);
  table::loss_backward(masked.data(), 3, 1, T(1), dx.data());
  for (T v : dx) EXPECT_TRUE(std::isnan(v));
  for (auto const& bad : {std::vector<T>{-infinity<T>, -infinity<T>},
                          std::vector<T>{T(1), quiet_nan<T>}, std::vector<T>{infinity<T>, T(0)}}) {
    EXPECT_TRUE(std::isnan(table::loss(bad.data(), 2, 0)));
    table::loss_backward(bad.data(), 2, 0, T(1), dx.data());
    EXPECT_TRUE(std::isnan(dx[0]) && std::isnan(dx[1]));
  }
}

TYPED_TEST(entmax15_test, scratch_allocation_failure_gives_nan) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  struct failing_allocation {
    std::size_t& limit = smax::primitives::scratch_limit<typename TypeParam::arch>;
    failing_allocation() { limit = 0; }
    ~failing_allocation() { limit = ~std::size_t(0); }
  };
  for (std::size_t n : {std::size_t(200), std::size_t(70000)}) {
    const auto x = random_row<T>(n, 3.0, 0.0, static_cast<unsigned>(n));
    {
      const failing_allocation fail;
      for (auto a : entmax15_algorithms) {
        const auto y = run<TypeParam>(a, x);
        for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(y[i])) << n << ", " << i;
      }
      EXPECT_TRUE(std::isnan(table_of<TypeParam>::loss(x.data(), n, 0)));
    }
    for (auto a : entmax15_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x)));
  }
}

// Batches (forward and backward): each row as if alone, bit for bit, padding untouched, special
// rows inside a batch, in place.
TYPED_TEST(entmax15_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = table_of<TypeParam>;
  const std::size_t w = TypeParam::width;
  for (std::size_t cols : {std::size_t(1), w + 1, 4 * w + 1, std::size_t(300), std::size_t(5000)})
    for (std::size_t rows : {std::size_t(1), std::size_t(9)}) {
      const std::size_t ld = cols + 3;
      auto x = random_row<T>(rows * ld, 3.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
      if (rows > 4) {
        x[5 * ld + cols / 2] = quiet_nan<T>;
        for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;
        x[7 * ld] = -infinity<T>;
      }
      std::vector<T> y(rows * ld, T(-7)), inplace = x;
      table::forward(x.data(), ld, y.data(), ld, rows, cols, entmax15_algorithm::automatic);
      table::forward(inplace.data(), ld, inplace.data(), ld, rows, cols,
                     entmax15_algorithm::automatic);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
        const auto alone = run<TypeParam>(entmax15_algorithm::automatic, row);
        for (std::size_t i = 0; i < cols; ++i) {
          ASSERT_TRUE(same_bits_or_both_nan(y[r * ld + i], alone[i])) << r << ", " << i;
          ASSERT_TRUE(same_bits_or_both_nan(inplace[r * ld + i], alone[i])) << r << ", " << i;
        }
        for (std::size_t i = cols; i < ld && r * ld + i < y.size(); ++i)
          ASSERT_EQ(y[r * ld + i], T(-7)) << "padding";
      }
      const auto dy = random_row<T>(rows * ld, 2.0, 0.0, 11);
      EXPECT_TRUE((rows_equal_single_rows<T>(
          rows, cols, ld,
          [&](T* dx) {
            table::backward(y.data(), ld, dy.data(), ld, dx, ld, rows, cols);
          },
          [&](std::size_t r, T* dx) {
            table::backward(y.data() + r * ld, cols, dy.data() + r * ld, cols, dx, cols, 1, cols);
          })));
    }
}

// The public forms: zero_masked_rows, the runtime and span-free pointer forms agree with the
// tables, the _rows forms.
TEST(entmax15_forms, public_and_runtime_forms) {
  const std::size_t rows = 3, cols = 257;
  auto x = random_row<float>(rows * cols, 3.0, 0.0, 5);
  for (std::size_t i = 0; i < cols; ++i) x[cols + i] = -infinity<float>;
  std::vector<float> y(rows * cols), yr(rows * cols), yz(rows * cols);
  smax::entmax15_rows(x.data(), y.data(), rows, cols, cols);
  smax::runtime::entmax15_rows(x.data(), yr.data(), rows, cols, cols);
  smax::entmax15_rows(x.data(), yz.data(), rows, cols, cols, smax::entmax15_options{true});
  for (std::size_t i = 0; i < cols; ++i) {
    EXPECT_TRUE(std::isnan(y[cols + i]));
    EXPECT_EQ(yz[cols + i], 0.0f);
    EXPECT_NEAR(y[i], yr[i], std::ldexp(1.0, -21));
    EXPECT_EQ(y[i], yz[i]);
  }
  std::vector<float> dx(cols), dxr(cols);
  smax::entmax15_backward(y.data(), x.data(), dx.data(), cols);
  smax::runtime::entmax15_backward(y.data(), x.data(), dxr.data(), cols);
  for (std::size_t i = 0; i < cols; ++i) EXPECT_NEAR(dx[i], dxr[i], 1e-5);
  smax::entmax15_loss_backward(x.data(), cols, 4, 1.0f, dx.data());
  smax::runtime::entmax15_loss_backward(x.data(), cols, 4, 1.0f, dxr.data());
  for (std::size_t i = 0; i < cols; ++i) EXPECT_NEAR(dx[i], dxr[i], 1e-6);
  EXPECT_NEAR(smax::entmax15_loss(x.data(), cols, 4), smax::runtime::entmax15_loss(x.data(), cols, 4),
              1e-5);
}

}  // namespace

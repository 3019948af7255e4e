// sparsemax (smax/sparsemax.hpp) on every compiled instruction set, float and double, each of the
// three threshold algorithms (sort, pivot, filter) and the automatic choice: against the
// long-double sort-based reference (reference/sparsemax.hpp) on random and adversarial rows, the
// invariants and edge cases of docs/sparsemax.md, the backward pass and the loss against central
// finite differences of the reference.

#include <smax/reference/sparsemax.hpp>
#include <smax/smax.hpp>

#include <algorithm>
#include <numeric>

#include "test_support.hpp"

namespace {

using namespace smax_test;
using smax::kernels::sparsemax_algorithm;

constexpr sparsemax_algorithm sparsemax_algorithms[] = {
    sparsemax_algorithm::sort, sparsemax_algorithm::pivot, sparsemax_algorithm::filter,
    sparsemax_algorithm::stream, sparsemax_algorithm::automatic};

inline const char* name_of(sparsemax_algorithm a) {
  switch (a) {
    case sparsemax_algorithm::sort:
      return "sort";
    case sparsemax_algorithm::pivot:
      return "pivot";
    case sparsemax_algorithm::filter:
      return "filter";
    case sparsemax_algorithm::stream:
      return "stream";
    default:
      return "automatic";
  }
}

// The bound sparsemax.hpp states: |y - y*| <= 2^-22 (float) / 2^-50 (double), absolute.
template <class T>
const double sparsemax_atol = sizeof(T) == 4 ? std::ldexp(1.0, -22) : std::ldexp(1.0, -50);

template <class C>
using table_of = smax::kernels::sparsemax_table<typename C::arch>;

template <class C, class T>
std::vector<T> run(sparsemax_algorithm a, std::vector<T> const& x) {
  const std::size_t n = x.size();
  std::vector<T> y(n + 1, T(-7));  // one guard element past the end
  table_of<C>::forward(x.data(), n, y.data(), n, 1, n, a);
  EXPECT_EQ(y[n], T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// One row against the reference: masked entries and entries clearly below tau exactly 0, the
// rest within the bound; the number of nonzero outputs equals the threshold kernel's
// support_size; the threshold kernel's tau within the bound of the reference's.
template <class C, class T>
::testing::AssertionResult matches_reference(sparsemax_algorithm a, std::vector<T> const& x,
                                             smax::reference::sparsemax_result const& ref) {
  const std::size_t n = x.size();
  const auto y = run<C>(a, x);
  const double atol = sparsemax_atol<T>;
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
    const long double z = static_cast<long double>(x[i]) - m;
    const bool must_be_zero = x[i] == -infinity<T> || z < ref.tau_shifted - atol;
    bool ok = y[i] >= T(0) && std::fabs(static_cast<long double>(y[i]) - ref.y[i]) <= atol;
    if (must_be_zero) ok = y[i] == T(0);
    if (!ok && failures++ == 0)
      first = ::testing::AssertionFailure()
              << "at " << i << ": got " << y[i] << ", expected " << static_cast<double>(ref.y[i])
              << " (diff " << static_cast<double>(y[i] - ref.y[i]) << ")";
  }
  if (failures)
    return first << " [" << failures << " of " << n << ", " << name_of(a) << ", n = " << n << "]";
  if (state.kind != state.ordinary) return ::testing::AssertionFailure() << "state special";
  if (state.support_size != nonzero)
    return ::testing::AssertionFailure() << "support_size " << state.support_size << " but "
                                         << nonzero << " nonzero outputs (" << name_of(a) << ")";
  if (!(std::fabs(static_cast<long double>(state.tau) - ref.tau_shifted) <= atol))
    return ::testing::AssertionFailure()
           << "tau " << state.tau << ", expected " << static_cast<double>(ref.tau_shifted);
  return ::testing::AssertionSuccess();
}

template <class C, class T>
::testing::AssertionResult matches_reference(sparsemax_algorithm a, std::vector<T> const& x) {
  return matches_reference<C>(a, x, smax::reference::sparsemax(x.data(), x.size()));
}

template <class C>
class sparsemax_test : public ::testing::Test {};
TYPED_TEST_SUITE(sparsemax_test, all_configs, config_names);

TYPED_TEST(sparsemax_test, every_length_around_the_vector_width) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
    for (double spread : {0.5, 4.0, 20.0}) {
      const auto x = random_row<T>(n, spread, 0.0, static_cast<unsigned>(n * 3 + spread));
      for (auto a : sparsemax_algorithms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "spread " << spread;
    }
}

TYPED_TEST(sparsemax_test, large_rows_spreads_and_offsets) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {std::size_t(1000), std::size_t(4099), std::size_t(65537), long_row(1000003)})
    for (double spread : {2.0, 20.0, 200.0})
      for (double offset : {0.0, 1000.0, -1000.0}) {
        if (n > 5000 && offset != 0.0) continue;
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + spread));
        const auto ref = smax::reference::sparsemax(x.data(), n);
        for (auto a : sparsemax_algorithms)
          EXPECT_TRUE((matches_reference<TypeParam>(a, x, ref)))
              << "spread " << spread << ", offset " << offset;
      }
  // Monotone rows: ascending, the maximum comes last (every block's bound is weak when it is
  // used); descending, it comes first.
  for (bool ascending : {true, false}) {
    std::vector<T> ramp(100003);
    for (std::size_t i = 0; i < ramp.size(); ++i)
      ramp[i] = T(20.0 * double(ascending ? i : ramp.size() - i) / double(ramp.size()));
    const auto r = smax::reference::sparsemax(ramp.data(), ramp.size());
    for (auto a : sparsemax_algorithms)
      EXPECT_TRUE((matches_reference<TypeParam>(a, ramp, r)))
          << (ascending ? "ascending" : "descending");
  }
  // A row whose support is large: a million values within 1e-3 of each other.
  const auto x = random_row<T>(1000003, 1e-3, 5.0, 9);
  const auto ref = smax::reference::sparsemax(x.data(), x.size());
  for (auto a : sparsemax_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x, ref)));
}

TYPED_TEST(sparsemax_test, masked_entry_at_every_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 4 * TypeParam::width + 3;
  for (std::size_t i = 0; i < n; ++i) {
    auto x = random_row<T>(n, 3.0, 0.0, 7);
    x[i] = -infinity<T>;
    if (i + 1 < n) x[i + 1] = -infinity<T>;
    for (auto a : sparsemax_algorithms)
      EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "masked at " << i;
  }
  // Masked entries act as if absent (deep-spin test_mask).
  const std::vector<T> plain = {T(0.3), T(1.2), T(-0.5), T(1.0)};
  const std::vector<T> masked = {T(0.3), -infinity<T>, T(1.2), T(-0.5), -infinity<T>, T(1.0)};
  for (auto a : sparsemax_algorithms) {
    const auto yp = run<TypeParam>(a, plain), ym = run<TypeParam>(a, masked);
    EXPECT_EQ(ym[0], yp[0]);
    EXPECT_EQ(ym[1], T(0));
    EXPECT_EQ(ym[2], yp[1]);
    EXPECT_EQ(ym[3], yp[2]);
    EXPECT_EQ(ym[4], T(0));
    EXPECT_EQ(ym[5], yp[3]);
  }
}

TYPED_TEST(sparsemax_test, all_masked_inf_and_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {std::size_t(1), std::size_t(3), 4 * TypeParam::width + 5, std::size_t(100)}) {
    const std::vector<T> masked(n, -infinity<T>);
    for (auto a : sparsemax_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, masked)));
    for (T special : {infinity<T>, quiet_nan<T>})
      for (std::size_t i = 0; i < n; ++i)
        for (bool among_masked : {false, true}) {
          auto x = among_masked ? masked : random_row<T>(n, 3.0, 0.0, 3);
          x[i] = special;
          for (auto a : sparsemax_algorithms) {
            const auto y = run<TypeParam>(a, x);
            for (T v : y)
              EXPECT_TRUE(std::isnan(v)) << special << " at " << i << ", " << name_of(a);
            EXPECT_NE(table_of<TypeParam>::threshold(x.data(), n, a).kind,
                      smax::kernels::sparsemax_row_state<T>::ordinary);
          }
        }
  }
  // E1: n = 0 reads and writes nothing.
  for (auto a : sparsemax_algorithms) {
    table_of<TypeParam>::forward(static_cast<const T*>(nullptr), 0, static_cast<T*>(nullptr), 0, 1,
                                 0, a);
    EXPECT_EQ(table_of<TypeParam>::threshold(static_cast<const T*>(nullptr), 0, a).support_size,
              0u);
  }
}

// The fixed adversarial inputs (docs/accuracy.md) and sparsemax's edge rules, with their exact
// outputs where they are known.
TYPED_TEST(sparsemax_test, spec_inputs) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max();
  const T sub = std::numeric_limits<T>::denorm_min();
  const T inf = infinity<T>;
  const std::vector<std::pair<std::vector<T>, std::vector<T>>> exact = {
      {{1, 2, 3}, {0, 0, 1}},
      {{5, 5, 5, 5}, {T(0.25), T(0.25), T(0.25), T(0.25)}},
      {{1, 1, -1}, {T(0.5), T(0.5), 0}},
      {{1, 0}, {1, 0}},  // boundary_tie: x_i = tau exactly is not in the support
      {{1000, -1000, 0}, {1, 0, 0}},
      {{T(3e38), T(-3e38), T(1e38)}, {1, 0, 0}},
      {{big, -big, big, -inf}, {T(0.5), 0, T(0.5), 0}},
      {{-big, -big}, {T(0.5), T(0.5)}},
      {{T(4)}, {1}},
      {{T(-4)}, {1}},
      {{T(-3), T(-2.5), T(-1), T(-7)}, {0, 0, 1, 0}},
      {{T(1), T(0.75), T(0)}, {T(0.625), T(0.375), 0}},
  };
  for (auto const& [x, expected] : exact)
    for (auto a : sparsemax_algorithms) {
      EXPECT_EQ(run<TypeParam>(a, x), expected) << name_of(a);
      EXPECT_TRUE((matches_reference<TypeParam>(a, x)));
    }
  const std::vector<std::vector<T>> rows = {{2, 2, 1, 1, 0},
                                            {sub, -sub, 0, T(1e-30)},
                                            {T(1e-7), T(-1e-7), T(3e-8)},
                                            {T(0.1), T(0.2), T(0.3), T(0.35)}};
  for (auto const& x : rows)
    for (auto a : sparsemax_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x)));
}

// Many ties, and many entries at or next to tau.
TYPED_TEST(sparsemax_test, ties_and_entries_near_tau) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::mt19937 rng(5);
  for (std::size_t n : {std::size_t(7), std::size_t(33), std::size_t(300), std::size_t(5000)}) {
    // Values from a small set of quarters: ties everywhere, tau often hits an entry exactly.
    std::uniform_int_distribution<int> q(-8, 0);
    for (int rep = 0; rep < 5; ++rep) {
      std::vector<T> x(n);
      for (auto& v : x) v = T(q(rng)) / T(4);
      for (auto a : sparsemax_algorithms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "n " << n;
    }
    // All equal: uniform.
    const std::vector<T> equal(n, T(2.5));
    for (auto a : sparsemax_algorithms) {
      const auto y = run<TypeParam>(a, equal);
      for (T v : y) EXPECT_NEAR(v, 1.0 / double(n), sparsemax_atol<T>);
    }
    // A support of 4 entries (0, -0.1, -0.2, -0.3 -> tau = -0.4) and the rest at tau, one ulp
    // above and one ulp below it.
    std::vector<T> x(n);
    const T base = T(10);
    const T tau = base - T(0.4);
    for (std::size_t i = 0; i < n; ++i) {
      const int kind = static_cast<int>(i % 3);
      x[i] = kind == 0   ? tau
             : kind == 1 ? std::nextafter(tau, T(100))
                         : std::nextafter(tau, T(-100));
    }
    for (std::size_t j = 0; j < 4 && j < n; ++j) x[(j * 7919) % n] = base - T(0.1) * T(j);
    for (auto a : sparsemax_algorithms)
      EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "near tau, n " << n;
  }
}

// A row built so that Michelot's method drops one element per round for as long as the
// precision allows (each next element below the threshold of the ones before it by a gap that
// grows by the set size), and the exact finish cut off after 0, 1, 2 rounds (then it sorts).
TYPED_TEST(sparsemax_test, exact_finish_many_rounds_and_its_sort_guard) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<T> x = {T(0), T(0)};
  long double sum = 0, gap = std::numeric_limits<T>::epsilon();
  for (;;) {
    const long double tau = (sum - 1) / static_cast<long double>(x.size());
    const T a = static_cast<T>(tau - gap);
    if (!(a > T(-1))) break;
    x.push_back(a);
    sum += a;
    gap *= static_cast<long double>(x.size() + 3);
  }
  ASSERT_GT(x.size(), 8u);
  const auto ref = smax::reference::sparsemax(x.data(), x.size());
  for (auto a : sparsemax_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x, ref)));
  std::shuffle(x.begin(), x.end(), std::mt19937(3));
  for (auto a : sparsemax_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x)));
  for (std::size_t n : {x.size(), std::size_t(50), std::size_t(3000)}) {
    const auto row = n == x.size() ? x : random_row<T>(n, 1.5, 0.0, static_cast<unsigned>(n));
    const auto r = smax::reference::sparsemax(row.data(), n);
    const T m = *std::max_element(row.begin(), row.end());
    for (int rounds : {0, 1, 2, 48}) {
      std::vector<double> c;
      for (T v : row)
        if (v - m > T(-1)) c.push_back(static_cast<double>(T(v - m)));
      std::size_t support = 0;
      const double tau =
          smax::kernels::sparsemax_detail::exact_threshold<typename TypeParam::arch, T>(
              c.data(), c.size(), -1.0, &support, rounds);
      EXPECT_EQ(support, r.support_size) << "rounds " << rounds << ", n " << n;
      EXPECT_NEAR(tau, static_cast<double>(r.tau_shifted), sparsemax_atol<T>)
          << "rounds " << rounds;
    }
  }
}

// Batches: each row as if alone (bit for bit), the padding between rows untouched, for short rows
// and rows long enough (>= 1 KiB) to prefetch the next one.
TYPED_TEST(sparsemax_test, rows_with_a_leading_dimension) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t cols : {std::size_t(5), std::size_t(100), std::size_t(300), std::size_t(2000)}) {
    const std::size_t rows = 4, ld = cols + 3;
    const auto x = random_row<T>(rows * ld, 6.0, 0.0, static_cast<unsigned>(cols));
    std::vector<T> y(rows * ld, T(-5));
    for (auto a : sparsemax_algorithms) {
      table_of<TypeParam>::forward(x.data(), ld, y.data(), ld, rows, cols, a);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
        const auto alone = run<TypeParam>(a, row);
        for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(y[r * ld + c], alone[c]) << r << ", " << c;
        for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(y[r * ld + c], T(-5));
      }
    }
  }
}

// Invariants (docs/sparsemax.md): sum 1, y >= 0, zeros below tau, shift invariance.
TYPED_TEST(sparsemax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(5), std::size_t(64), std::size_t(1000), std::size_t(70000)})
    for (double spread : {1.0, 10.0}) {
      // On a grid of 2^-16, so that the shift by 8 below is exact.
      auto x = random_row<T>(n, spread, 0.0, static_cast<unsigned>(n + 17));
      for (auto& v : x) v = std::ldexp(std::round(std::ldexp(v, 16)), -16);
      for (auto a : sparsemax_algorithms) {
        const auto y = run<TypeParam>(a, x);
        const auto state = table_of<TypeParam>::threshold(x.data(), n, a);
        long double sum = 0;
        std::size_t nonzero = 0;
        for (T v : y) {
          EXPECT_GE(v, T(0));
          sum += v;
          nonzero += v > 0;
        }
        EXPECT_EQ(nonzero, state.support_size);
        // Each output within the bound: the sum within support_size·bound of 1.
        EXPECT_LE(std::fabs(static_cast<double>(sum) - 1.0), double(nonzero) * sparsemax_atol<T>);
        // Sparse: y_i = 0 where x_i <= tau.
        for (std::size_t i = 0; i < n; ++i)
          if (x[i] - state.max <= state.tau_rounded) {
            EXPECT_EQ(y[i], T(0));
          }
        // Shift invariance: a shift by 8 (exact on this grid) changes nothing beyond the bound.
        std::vector<T> shifted(x);
        for (auto& v : shifted) v += T(8);
        const auto ys = run<TypeParam>(a, shifted);
        for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(ys[i], y[i], 2 * sparsemax_atol<T>);
      }
    }
  // One-hot when x_(1) - x_(2) >= 1.
  for (auto a : sparsemax_algorithms) {
    auto x = random_row<T>(100, 4.0, 0.0, 2);
    const T second = *std::max_element(x.begin(), x.end());
    x[37] = second + T(1);
    if (x[37] - second < T(1)) x[37] = std::nextafter(x[37], infinity<T>);  // gap >= 1 exactly
    const auto y = run<TypeParam>(a, x);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], i == 37 ? T(1) : T(0));
  }
}

// Central finite difference of f at x along e_i, in long double (f from the reference).
template <class F>
long double central_difference(F const& f, std::vector<double> x, std::size_t i, long double h) {
  const double xi = x[i];
  x[i] = xi + static_cast<double>(h);
  const long double up = f(x);
  x[i] = xi - static_cast<double>(h);
  const long double down = f(x);
  return (up - down) / (2 * h);
}

TYPED_TEST(sparsemax_test, backward_against_finite_differences) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(1), std::size_t(6), 2 * TypeParam::width + 3, std::size_t(300),
                        std::size_t(100003)}) {
    // The last row has a support of about 10^5 entries (spread 1e-3): the sum over S matters.
    const auto xt = random_row<T>(n, n > 1000 ? 1e-3 : 2.0, 0.0, static_cast<unsigned>(n));
    auto dyt = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 1));
    std::vector<double> x(xt.begin(), xt.end());
    const std::vector<long double> dy(dyt.begin(), dyt.end());
    // Check the reference VJP against finite differences of <dy, sparsemax(x)>.
    auto objective = [&](std::vector<double> const& v) {
      const auto r = smax::reference::sparsemax(v.data(), v.size());
      long double s = 0;
      for (std::size_t i = 0; i < v.size(); ++i) s += dy[i] * r.y[i];
      return s;
    };
    const auto ref = smax::reference::sparsemax(xt.data(), n);
    const auto dx_ref = smax::reference::sparsemax_backward(ref.y, dy);
    for (std::size_t i = 0; i < n && n <= 300; ++i) {
      // A random row has no entry within 1e-6 of tau (a kink), so the difference is exact up to
      // rounding: |error| <= 1e-9.
      EXPECT_NEAR(static_cast<double>(central_difference(objective, x, i, 1e-6L)),
                  static_cast<double>(dx_ref[i]), 1e-9)
          << i;
    }
    // The kernel on the kernel's own forward output: |dx - dx*| <= 2^-23·(|dy_i| + |mean| +
    // mean_S |dy|) (float), 2^-52·(...) (double), as sparsemax.hpp states.
    const auto y = run<TypeParam>(sparsemax_algorithm::automatic, xt);
    std::vector<T> dx(n + 1, T(-7));
    table_of<TypeParam>::backward(y.data(), n, dyt.data(), n, dx.data(), n, 1, n);
    EXPECT_EQ(dx[n], T(-7));
    long double mean = 0, mean_abs = 0, sum = 0;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (ref.y[i] > 0) mean += dy[i], mean_abs += std::fabs(dy[i]), ++k;
    mean /= k;
    mean_abs /= k;
    const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(static_cast<double>(dx[i]), static_cast<double>(dx_ref[i]),
                  eps * static_cast<double>(std::fabs(dy[i]) + std::fabs(mean) + mean_abs))
          << i;
      if (y[i] == T(0)) {
        EXPECT_EQ(dx[i], T(0));
      }
      sum += dx[i];
    }
    EXPECT_NEAR(static_cast<double>(sum), 0.0, 4 * eps * double(k) * (1 + std::fabs(double(mean))));
  }
  // Masked entries get 0; a NaN row gives a NaN row; in place.
  std::vector<T> y = {T(0.5), 0, T(0.5), 0};
  std::vector<T> dy = {1, 2, 3, 4};
  table_of<TypeParam>::backward(y.data(), 4, dy.data(), 4, dy.data(), 4, 1, 4);
  EXPECT_EQ(dy, (std::vector<T>{-1, 0, 1, 0}));
  std::vector<T> ynan(5, quiet_nan<T>), dy5(5, T(1)), dx(5);
  table_of<TypeParam>::backward(ynan.data(), 5, dy5.data(), 5, dx.data(), 5, 1, 5);
  for (T v : dx) EXPECT_TRUE(std::isnan(v));
}

// The loss on rows with a large support far from 0: one entry at 7.4 and 100 within 1e-3 of
// 7.4 - gap, all in the support, tau ~ -gap (and plain rows in [6.6, 7.4]). The rounding of tau
// once entered multiplied by |S|·|tau|: 9.5 times the bound for double at gap = 0.8.
TYPED_TEST(sparsemax_test, loss_with_a_large_support) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : std::ldexp(1.0, -50);
  for (double gap : {0.1, 0.4, 0.8})
    for (unsigned seed = 0; seed < 40; ++seed) {
      const std::size_t n = 101;
      auto x = random_row<T>(n, 2e-3, 7.4 - gap, seed);
      x[(seed * 7) % n] = T(7.4);
      for (std::size_t t = 0; t < n; t += 5) {
        const T got = table_of<TypeParam>::loss(x.data(), n, t);
        const long double want = smax::reference::sparsemax_loss(x.data(), n, t);
        ASSERT_NEAR(static_cast<double>(got), static_cast<double>(want),
                    eps * (1 + std::fabs(static_cast<double>(want))))
            << "gap " << gap << ", seed " << seed << ", t " << t;
      }
    }
  for (unsigned seed = 0; seed < 40; ++seed)
    for (std::size_t n : {std::size_t(101), std::size_t(1000)}) {
      const auto x = random_row<T>(n, 0.8, 7.0, seed);
      for (std::size_t t = 0; t < n; t += n / 20) {
        const T got = table_of<TypeParam>::loss(x.data(), n, t);
        const long double want = smax::reference::sparsemax_loss(x.data(), n, t);
        ASSERT_NEAR(static_cast<double>(got), static_cast<double>(want),
                    eps * (1 + std::fabs(static_cast<double>(want))))
            << "seed " << seed << ", n " << n << ", t " << t;
      }
    }
}

// The scratch buffer's allocation failing (rows longer than 128; made to fail through the
// test-only limit): every algorithm gives a NaN row, the loss NaN, its gradient a NaN row.
TYPED_TEST(sparsemax_test, scratch_allocation_failure_gives_nan) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  struct failing_allocation {
    std::size_t& limit = smax::primitives::scratch_limit<typename TypeParam::arch>;
    failing_allocation() { limit = 0; }
    ~failing_allocation() { limit = ~std::size_t(0); }
  };
  const sparsemax_algorithm algorithms[] = {
      sparsemax_algorithm::automatic, sparsemax_algorithm::sort, sparsemax_algorithm::pivot,
      sparsemax_algorithm::filter, sparsemax_algorithm::stream};
  for (std::size_t n : {std::size_t(200), std::size_t(5000), std::size_t(70000)}) {
    const auto x = random_row<T>(n, 3.0, 0.0, static_cast<unsigned>(n));
    {
      const failing_allocation fail;
      for (auto a : algorithms) {
        const auto y = run<TypeParam>(a, x);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_TRUE(std::isnan(y[i])) << "n " << n << ", i " << i;
      }
      EXPECT_TRUE(std::isnan(table_of<TypeParam>::loss(x.data(), n, 0)));
      std::vector<T> dx(n);
      table_of<TypeParam>::loss_backward(x.data(), n, 0, T(1), dx.data());
      for (T v : dx) ASSERT_TRUE(std::isnan(v));
    }
    // The same rows once the allocation succeeds again.
    const auto ref = smax::reference::sparsemax(x.data(), n);
    for (auto a : algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x, ref)));
  }
}

// Rows with a leading dimension (ld > cols): the same gradients as row by row.
TYPED_TEST(sparsemax_test, rows_backward_equals_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 5;
  for (std::size_t cols :
       {std::size_t(1), std::size_t(3), 2 * TypeParam::width + 1, std::size_t(300)}) {
    const std::size_t ld = cols + 7;
    const auto x = random_row<T>(rows * ld, 3.0, 0.0, static_cast<unsigned>(cols));
    const auto dy = random_row<T>(rows * ld, 2.0, 0.0, static_cast<unsigned>(cols + 1));
    std::vector<T> y(rows * ld, T(-7)), dx(rows * ld, T(-7));
    table_of<TypeParam>::forward(x.data(), ld, y.data(), ld, rows, cols,
                                 sparsemax_algorithm::automatic);
    table_of<TypeParam>::backward(y.data(), ld, dy.data(), ld, dx.data(), ld, rows, cols);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> one(cols);
      table_of<TypeParam>::backward(y.data() + r * ld, cols, dy.data() + r * ld, cols, one.data(),
                                    cols, 1, cols);
      for (std::size_t i = 0; i < cols; ++i)
        ASSERT_EQ(dx[r * ld + i], one[i]) << "row " << r << ", i " << i;
      for (std::size_t i = cols; i < ld; ++i) ASSERT_EQ(dx[r * ld + i], T(-7)) << "padding written";
    }
  }
}

TYPED_TEST(sparsemax_test, loss) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : std::ldexp(1.0, -50);
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(100), std::size_t(5000)})
    for (double offset : {0.0, 1000.0}) {
      const auto xt = random_row<T>(n, 3.0, offset, static_cast<unsigned>(n + 5));
      for (std::size_t t : {std::size_t(0), n / 2, n - 1}) {
        const T got = table_of<TypeParam>::loss(xt.data(), n, t);
        const long double want = smax::reference::sparsemax_loss(xt.data(), n, t);
        EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want),
                    eps * (1 + std::fabs(static_cast<double>(want))))
            << "n " << n << ", t " << t;
        EXPECT_GE(got, T(0));
        // The Fenchel-Young form <y - e_t, z> + ½(1 - ||y||²) agrees (reference, long double).
        const auto r = smax::reference::sparsemax(xt.data(), n);
        long double m = *std::max_element(xt.begin(), xt.end()), fy = 0.5L;
        for (std::size_t i = 0; i < n; ++i) {
          const long double z = static_cast<long double>(xt[i]) - m;
          fy += (r.y[i] - (i == t)) * z - r.y[i] * r.y[i] / 2;
        }
        EXPECT_NEAR(static_cast<double>(fy), static_cast<double>(want),
                    1e-12 * (1 + std::fabs(double(want))));
        // dx = dloss·(y - e_t), against finite differences of the reference loss.
        std::vector<T> dx(n + 1, T(-7));
        table_of<TypeParam>::loss_backward(xt.data(), n, t, T(2), dx.data());
        EXPECT_EQ(dx[n], T(-7));
        std::vector<double> x(xt.begin(), xt.end());
        auto f = [&](std::vector<double> const& v) {
          return smax::reference::sparsemax_loss(v.data(), v.size(), t);
        };
        long double sum = 0;
        for (std::size_t i = 0; i < n; ++i) {
          sum += dx[i];
          EXPECT_NEAR(static_cast<double>(dx[i]), 2 * static_cast<double>(r.y[i] - (i == t)),
                      2 * sparsemax_atol<T>);
          if (n <= 100 && offset == 0.0) {
            EXPECT_NEAR(static_cast<double>(dx[i]),
                        2 * static_cast<double>(central_difference(f, x, i, 1e-6L)),
                        1e-8 + 4 * sparsemax_atol<T>)
                << i;
          }
        }
        EXPECT_NEAR(static_cast<double>(sum), 0.0, 2 * double(n) * sparsemax_atol<T>);
      }
    }
  // L = 0 iff x_t >= 1 + max_{j != t} x_j (one_hot_exact); masked target +inf; special rows NaN.
  const std::vector<T> one_hot = {T(0.5), T(1.5), T(-2)};
  EXPECT_EQ(table_of<TypeParam>::loss(one_hot.data(), 3, 1), T(0));
  EXPECT_GT(table_of<TypeParam>::loss(one_hot.data(), 3, 0), T(0));
  const std::vector<T> almost = {T(0.5), T(1.25), T(-2)};
  EXPECT_GT(table_of<TypeParam>::loss(almost.data(), 3, 1), T(0));
  const std::vector<T> masked = {T(0.5), -infinity<T>, T(-2)};
  EXPECT_EQ(table_of<TypeParam>::loss(masked.data(), 3, 1), infinity<T>);
  std::vector<T> dx(3);
  table_of<TypeParam>::loss_backward(masked.data(), 3, 1, T(1), dx.data());
  for (T v : dx) EXPECT_TRUE(std::isnan(v));
  table_of<TypeParam>::loss_backward(masked.data(), 3, 0, T(1), dx.data());
  EXPECT_EQ(dx, (std::vector<T>{0, 0, 0}));  // y = e_0, target 0: no gradient; masked entry 0
  const std::vector<T> nan_row = {T(0.5), quiet_nan<T>, T(-2)};
  EXPECT_TRUE(std::isnan(table_of<TypeParam>::loss(nan_row.data(), 3, 0)));
  const std::vector<T> all_masked(4, -infinity<T>);
  EXPECT_TRUE(std::isnan(table_of<TypeParam>::loss(all_masked.data(), 4, 0)));
}

// The public API (default instruction set), float and double.
template <class T>
void public_api() {
  const auto x = random_row<T>(300, 3.0, 1.0, 4);
  const auto ref = smax::reference::sparsemax(x.data(), x.size());
  std::vector<T> y(x.size());
  smax::sparsemax(x.data(), y.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], static_cast<double>(ref.y[i]), sparsemax_atol<T>);
  // In place.
  std::vector<T> inplace(x);
  smax::sparsemax(inplace.data(), inplace.data(), inplace.size());
  EXPECT_EQ(inplace, y);
  // tau, unshifted: y_i = max(x_i - tau, 0) up to the rounding of tau to T.
  const smax::sparsemax_threshold<T> th = smax::sparsemax_tau(x.data(), x.size());
  // Bound: the rounding of m + tau_z to T (ulp/2 of |tau|) plus the bound on tau_z.
  EXPECT_NEAR(th.tau, static_cast<double>(ref.tau),
              std::fabs(static_cast<double>(ref.tau)) * std::numeric_limits<T>::epsilon() +
                  sparsemax_atol<T>);
  EXPECT_EQ(th.support_size, ref.support_size);
  const std::vector<T> nan_row = {1, quiet_nan<T>};
  EXPECT_TRUE(std::isnan(smax::sparsemax_tau(nan_row.data(), 2).tau));
  EXPECT_EQ(smax::sparsemax_tau(nan_row.data(), 2).support_size, 0u);
  // Rows with a leading dimension: the padding is untouched.
  const std::size_t rows = 3, cols = 5, ld = 7;
  std::vector<T> xm(rows * ld, T(99)), ym(rows * ld, T(-5));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) xm[r * ld + c] = T(0.3) * T(c) - T(0.2) * T(r);
  smax::sparsemax_rows(xm.data(), ym.data(), rows, cols, ld);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<T> row(xm.begin() + r * ld, xm.begin() + r * ld + cols), yr(cols);
    smax::sparsemax(row.data(), yr.data(), cols);
    for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(ym[r * ld + c], yr[c]);
    for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(ym[r * ld + c], T(-5));
  }
  std::vector<T> dy(rows * ld, T(1)), dx(rows * ld, T(-5));
  for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = T(i % 4);
  smax::sparsemax_backward_rows(ym.data(), dy.data(), dx.data(), rows, cols, ld);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<T> dxr(cols);
    smax::sparsemax_backward(ym.data() + r * ld, dy.data() + r * ld, dxr.data(), cols);
    for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(dx[r * ld + c], dxr[c]);
    for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(dx[r * ld + c], T(-5));
  }
  // Loss and its gradient.
  const T l = smax::sparsemax_loss(x.data(), x.size(), 3);
  EXPECT_NEAR(l, static_cast<double>(smax::reference::sparsemax_loss(x.data(), x.size(), 3)),
              4 * sparsemax_atol<T> * (1 + std::fabs(double(l))));
  std::vector<T> g(x.size());
  smax::sparsemax_loss_backward(x.data(), x.size(), 3, T(1), g.data());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(g[i], i == 3 ? y[i] - T(1) : y[i]);
}

TEST(sparsemax_api, float_and_double) {
  public_api<float>();
  public_api<double>();
}

}  // namespace

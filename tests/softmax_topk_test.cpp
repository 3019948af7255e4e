// Fused softmax + top-K (smax/softmax_topk.hpp) on every compiled instruction set, float and
// double: indices exactly and values within the header's bound against the long-double reference
// (the full softmax, then a stable sort) at every length around the vector width and unroll, for
// k below, at and above the list/heap switch and beyond n; the maximum and the K-th entry at
// every position; ties; masks, +inf and NaN at every lane; ±FLT_MAX; temperature extremes;
// n = 0, n = 1, k = 0, k > n; the invariants (values non-increasing, indices distinct, Σ ≤ 1);
// _rows equal to single rows, the public and runtime:: forms; the backward against the reference
// VJP with the header's bound, and the reference VJP against central differences. The bad-input
// contract is checked here (the family's forms do not fit tests/contract_test.cpp's shape).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include <smax/reference/softmax_topk.hpp>
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class softmax_topk_test : public ::testing::Test {};
TYPED_TEST_SUITE(softmax_topk_test, all_configs, config_names);

template <class T>
struct topk_output {
  std::vector<T> values;
  std::vector<std::int64_t> indices;
};

// One row through the kernel table of C, with a guard slot past the k outputs.
template <class C, class T>
topk_output<T> topk_of(std::vector<T> const& x, std::size_t k, T temperature = T(1)) {
  topk_output<T> out{std::vector<T>(k + 1, T(-7)), std::vector<std::int64_t>(k + 1, -77)};
  smax::kernels::softmax_topk_table<typename C::arch>::forward(
      x.data(), x.size(), 1, x.size(), k, out.values.data(), out.indices.data(), temperature);
  EXPECT_EQ(out.values.back(), T(-7)) << "wrote past the end";
  EXPECT_EQ(out.indices.back(), -77) << "wrote past the end";
  out.values.pop_back();
  out.indices.pop_back();
  return out;
}

// The header's bound on the values: relative 1e-6 (float) / 1e-14 (double) for values >= the
// smallest normal number, plus |x - m|/T·2^-22 (float) / 1e-14 (double) when T != 1.
template <class T>
double value_rtol(T x, long double m, T temperature) {
  if (temperature == T(1)) return softmax_rtol<T>;
  const double spread = static_cast<double>((m - x) / temperature);
  return softmax_rtol<T> + (sizeof(T) == 4 ? 0x1p-22 : 1e-14) * (std::isfinite(spread) ? spread : 0);
}

template <class C, class T>
::testing::AssertionResult matches_topk(std::vector<T> const& x, std::size_t k,
                                        T temperature = T(1)) {
  const std::size_t n = x.size();
  const auto got = topk_of<C>(x, k, temperature);
  const auto want = smax::reference::softmax_topk(x.data(), n, k, temperature);
  long double m = -HUGE_VALL;
  for (T v : x) m = v > m ? v : m;
  auto fail = [&](std::size_t j) {
    return ::testing::AssertionFailure()
           << "slot " << j << " of k = " << k << ", n = " << n << ", T = " << temperature
           << ": got (" << got.values[j] << ", " << got.indices[j] << "), expected ("
           << static_cast<double>(want.values[j]) << ", " << want.indices[j] << ")";
  };
  std::set<std::int64_t> seen;
  long double total = 0;
  for (std::size_t j = 0; j < k; ++j) {
    if (got.indices[j] != want.indices[j]) return fail(j);
    const auto ok = matches(got.values[j], want.values[j],
                            want.indices[j] >= 0 ? value_rtol(x[want.indices[j]], m, temperature) : 0,
                            std::numeric_limits<T>::min(), j);
    if (!ok) return fail(j) << " " << ok.message();
    if (std::isnan(got.values[j])) continue;
    // Invariants: non-increasing values, distinct indices, Σ ≤ 1.
    if (j > 0 && got.values[j] > got.values[j - 1]) return fail(j) << " (values increase)";
    if (got.indices[j] >= 0 && !seen.insert(got.indices[j]).second)
      return fail(j) << " (index repeated)";
    total += got.values[j];
  }
  if (total > 1 + 4 * k * softmax_rtol<T> + 1e-30)
    return ::testing::AssertionFailure() << "values sum to " << static_cast<double>(total);
  return ::testing::AssertionSuccess();
}

template <class T>
std::vector<std::size_t> ks_for(std::size_t n) {
  std::vector<std::size_t> ks = {0, 1, 2, 5, 8, 9, 33, 64, n / 2, n, n + 3};
  if (n > 0) ks.push_back(n - 1);
  return ks;
}

TYPED_TEST(softmax_topk_test, every_length_and_k) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
    for (double spread : {2.0, 30.0, 150.0})
      for (std::size_t k : ks_for<T>(n)) {
        const auto x = random_row<T>(n, spread, -3.0, static_cast<unsigned>(n * 31 + spread));
        EXPECT_TRUE((matches_topk<TypeParam>(x, k)));
      }
}

// Long rows, beyond the 8 KiB blocks of the online pass, ordered so that every entry is inserted
// (ascending) or none after the first K (descending), masked in part, and with many ties.
TYPED_TEST(softmax_topk_test, long_rows_and_orders) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t million = long_row(1000000);
  for (std::size_t n : {std::size_t(1000), std::size_t(4099), long_row(65537), million})
    for (std::size_t k : {std::size_t(1), std::size_t(5), std::size_t(8), std::size_t(9),
                          std::size_t(64), std::size_t(300)}) {
      // A million entries with K = 5 (the list) and 64 (the heap); the other K on the shorter rows.
      if (n == million && k != 5 && k != 64) continue;
      auto x = random_row<T>(n, 40.0, 5.0, static_cast<unsigned>(n + k));
      EXPECT_TRUE((matches_topk<TypeParam>(x, k)));
      auto ascending = x;
      std::sort(ascending.begin(), ascending.end());
      EXPECT_TRUE((matches_topk<TypeParam>(ascending, k))) << "ascending";
      auto descending = ascending;
      std::reverse(descending.begin(), descending.end());
      EXPECT_TRUE((matches_topk<TypeParam>(descending, k))) << "descending";
      auto masked = x;
      for (std::size_t i = 0; i < n; i += 3) masked[i] = -infinity<T>;
      EXPECT_TRUE((matches_topk<TypeParam>(masked, k))) << "masked";
      auto tied = x;
      for (auto& v : tied) v = std::floor(v / 8);  // about 5 distinct values
      EXPECT_TRUE((matches_topk<TypeParam>(tied, k))) << "tied";
    }
}

// The maximum at every position, and the K-th entry at every position (K = 5 and 40, the list
// and the heap), with the K - 1 larger entries spread over the row.
TYPED_TEST(softmax_topk_test, every_position_of_the_maximum_and_the_kth) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {4 * TypeParam::width + 3, 2 * TypeParam::width, std::size_t(100)}) {
    const auto base = random_row<T>(n, 4.0, 0.0, static_cast<unsigned>(n));
    for (std::size_t p = 0; p < n; ++p) {
      auto x = base;
      x[p] = T(10);
      EXPECT_TRUE((matches_topk<TypeParam>(x, 1))) << "max at " << p;
      EXPECT_TRUE((matches_topk<TypeParam>(x, 3))) << "max at " << p;
      for (std::size_t k : {std::size_t(5), std::size_t(40)}) {
        if (k >= n) continue;
        auto y = base;
        // k - 1 entries above 20 at positions other than p, the k-th (15) at p.
        for (std::size_t j = 0, placed = 0; placed + 1 < k; ++j) {
          const std::size_t at = (p + 1 + j * 7) % n;
          if (at == p || y[at] >= T(20)) continue;
          y[at] = T(20 + placed++);
        }
        y[p] = T(15);
        const auto got = topk_of<TypeParam>(y, k);
        EXPECT_EQ(got.indices[k - 1], static_cast<std::int64_t>(p)) << "k-th at " << p;
        EXPECT_TRUE((matches_topk<TypeParam>(y, k))) << "k-th at " << p;
      }
    }
  }
}

TYPED_TEST(softmax_topk_test, ties_go_to_the_lower_index) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  {
    const std::vector<T> x = {T(2), T(2), T(1), T(2)};
    const auto got = topk_of<TypeParam>(x, 2);
    EXPECT_EQ(got.indices[0], 0);
    EXPECT_EQ(got.indices[1], 1);
    EXPECT_EQ(got.values[0], got.values[1]);
  }
  for (std::size_t n : {std::size_t(1), TypeParam::width + 1, 5 * TypeParam::width + 3,
                        std::size_t(9000)})
    for (std::size_t k : {std::size_t(1), std::size_t(3), std::size_t(8), std::size_t(9),
                          std::size_t(100)}) {
      const std::vector<T> equal(n, T(-1.5));
      EXPECT_TRUE((matches_topk<TypeParam>(equal, k)));  // indices 0, 1, ...
      const auto got = topk_of<TypeParam>(equal, k);
      for (std::size_t j = 0; j < std::min(k, n); ++j)
        EXPECT_EQ(got.indices[j], static_cast<std::int64_t>(j));
      auto few = random_row<T>(n, 6.0, 0.0, static_cast<unsigned>(n + k));
      for (auto& v : few) v = std::round(v);  // about 7 distinct values
      EXPECT_TRUE((matches_topk<TypeParam>(few, k)));
    }
}

TYPED_TEST(softmax_topk_test, masks_infinities_and_nan_at_every_lane) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T inf = infinity<T>, nan = quiet_nan<T>;
  for (std::size_t n : {TypeParam::width, 4 * TypeParam::width + 3, std::size_t(70)}) {
    const auto base = random_row<T>(n, 10.0, 1.0, static_cast<unsigned>(n));
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t k : {std::size_t(1), std::size_t(5), n}) {
        auto masked = base;
        masked[p] = -inf;
        EXPECT_TRUE((matches_topk<TypeParam>(masked, k))) << "mask at " << p;
        auto mostly = std::vector<T>(n, -inf);
        mostly[p] = T(3);  // one finite entry: (1, p), then padding
        const auto one = topk_of<TypeParam>(mostly, k);
        EXPECT_EQ(one.indices[0], static_cast<std::int64_t>(p));
        EXPECT_EQ(one.values[0], T(1));
        for (std::size_t j = 1; j < k; ++j) {
          EXPECT_EQ(one.indices[j], -1);
          EXPECT_EQ(one.values[j], T(0));
        }
        for (T bad : {inf, nan}) {
          auto row = base;
          row[p] = bad;
          const auto got = topk_of<TypeParam>(row, k);
          for (std::size_t j = 0; j < k; ++j) {
            EXPECT_TRUE(std::isnan(got.values[j])) << "bad entry at " << p;
            EXPECT_EQ(got.indices[j], -1) << "bad entry at " << p;
          }
        }
      }
    }
    // All masked: every slot is padding.
    const auto all = topk_of<TypeParam>(std::vector<T>(n, -inf), 4);
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(all.values[j], T(0));
      EXPECT_EQ(all.indices[j], -1);
    }
  }
}

TYPED_TEST(softmax_topk_test, extreme_values_and_small_cases) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), f = T(3e38), g = T(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, -f, g}, {big, -big, T(0), T(1)}, {big, big}, {-big, -big, T(-3)}, {-f, T(-1), T(-1e30)},
      {T(1000), T(-1000), T(0)}, {T(1), T(2), T(3)}, {T(-5)}, {T(7)},
      {std::numeric_limits<T>::denorm_min(), T(0), -std::numeric_limits<T>::denorm_min()}};
  for (auto const& x : rows)
    for (std::size_t k : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(5)})
      EXPECT_TRUE((matches_topk<TypeParam>(x, k)));
  const auto r = topk_of<TypeParam>(std::vector<T>{f, -f, g}, 2);
  EXPECT_EQ(r.values[0], T(1));
  EXPECT_EQ(r.indices[0], 0);
  EXPECT_EQ(r.values[1], T(0));
  EXPECT_EQ(r.indices[1], 2);
  // k = 0 writes nothing; n = 0 pads; n = 1 gives (1, 0).
  std::vector<T> v = {T(-7)};
  std::vector<std::int64_t> i = {-77};
  const std::vector<T> x = {T(1), T(2)};
  smax::kernels::softmax_topk_table<typename TypeParam::arch>::forward(x.data(), 2, 1, 2, 0,
                                                                       v.data(), i.data(), T(1));
  EXPECT_EQ(v[0], T(-7));
  EXPECT_EQ(i[0], -77);
  const auto empty = topk_of<TypeParam>(std::vector<T>{}, 3);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(empty.values[j], T(0));
    EXPECT_EQ(empty.indices[j], -1);
  }
  const auto single = topk_of<TypeParam>(std::vector<T>{T(-4)}, 3);
  EXPECT_EQ(single.values[0], T(1));
  EXPECT_EQ(single.indices[0], 0);
  EXPECT_EQ(single.indices[1], -1);
}

TYPED_TEST(softmax_topk_test, temperatures) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), small = std::numeric_limits<T>::min();
  for (T t : {T(1e-3), T(0.5), T(3), T(1000), big / 10, big / 2000, small * 4, small * 100,
              T(1) / big * T(0.5)}) {
    if (!(t > T(0))) continue;
    for (std::size_t n : {std::size_t(7), 3 * TypeParam::width + 1, std::size_t(3000)}) {
      auto x = random_row<T>(n, 20.0, 0.0, static_cast<unsigned>(n));
      EXPECT_TRUE((matches_topk<TypeParam>(x, 5, t)));
      EXPECT_TRUE((matches_topk<TypeParam>(x, 40, t)));
      x[n / 2] = -infinity<T>;
      EXPECT_TRUE((matches_topk<TypeParam>(x, 5, t)));
    }
    const std::vector<T> extremes = {T(3e38), T(-3e38), T(1e38), T(0)};
    EXPECT_TRUE((matches_topk<TypeParam>(extremes, 3, t)));
  }
  // Not finite and > 0: the NaN result.
  for (T t : {T(0), T(-1), infinity<T>, quiet_nan<T>}) {
    const auto got = topk_of<TypeParam>(random_row<T>(9, 2.0, 0.0, 1), 3, t);
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_TRUE(std::isnan(got.values[j]));
      EXPECT_EQ(got.indices[j], -1);
    }
  }
}

// _rows equals the single rows bit for bit (leading dimension > cols), including a NaN row and an
// all-masked row.
TYPED_TEST(softmax_topk_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::softmax_topk_table<typename TypeParam::arch>;
  const std::size_t rows = 6, cols = 3 * TypeParam::width + 5, ld = cols + 3, k = 4;
  auto x = random_row<T>(rows * ld, 12.0, 0.0, 9);
  x[ld + 2] = quiet_nan<T>;
  for (std::size_t i = 0; i < cols; ++i) x[2 * ld + i] = -infinity<T>;
  for (T t : {T(1), T(0.7)}) {
    std::vector<T> v(rows * k);
    std::vector<std::int64_t> idx(rows * k);
    table::forward(x.data(), ld, rows, cols, k, v.data(), idx.data(), t);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> one(k);
      std::vector<std::int64_t> one_idx(k);
      table::forward(x.data() + r * ld, cols, 1, cols, k, one.data(), one_idx.data(), t);
      for (std::size_t j = 0; j < k; ++j) {
        EXPECT_EQ(idx[r * k + j], one_idx[j]) << r;
        EXPECT_TRUE(v[r * k + j] == one[j] || (std::isnan(v[r * k + j]) && std::isnan(one[j])));
      }
    }
    const auto dv = random_row<T>(rows * k, 2.0, 0.0, 10);
    EXPECT_TRUE((rows_equal_single_rows<T>(
        rows, cols, ld,
        [&](T* dx) {
          table::backward(x.data(), ld, rows, cols, k, idx.data(), dv.data(), dx, ld, t);
        },
        [&](std::size_t r, T* dx) {
          table::backward(x.data() + r * ld, cols, 1, cols, k, idx.data() + r * k,
                          dv.data() + r * k, dx, cols, t);
        })));
  }
}

// The backward against the reference VJP with the header's bound:
// |dx - dx*| <= (e_i + 2E)·y_i·(|g_i| + Σ|g_j·y_j|)/T, e_i = c + |x_i - m|/T·u, E the largest e_j
// of the selected j.
TYPED_TEST(softmax_topk_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::softmax_topk_table<typename TypeParam::arch>;
  const double c = sizeof(T) == 4 ? 0x1p-19 : 0x1p-45;
  const double u = sizeof(T) == 4 ? 0x1p-22 : 1e-14;
  for (std::size_t n : {std::size_t(1), std::size_t(2), TypeParam::width + 1,
                        4 * TypeParam::width + 3, std::size_t(100), std::size_t(4099),
                        long_row(70000)})
    for (std::size_t k : {std::size_t(1), std::size_t(5), std::size_t(40), n + 2})
      for (T t : {T(1), T(0.5), T(3), std::numeric_limits<T>::max() / 10,
                  std::numeric_limits<T>::min() * 100}) {
        auto x = random_row<T>(n, 16.0, 0.5, static_cast<unsigned>(n + k));
        if (n > 3) x[2] = -infinity<T>;
        const auto fwd = topk_of<TypeParam>(x, k, t);
        const auto dv = random_row<T>(k, 2.0, 0.3, static_cast<unsigned>(n + 1));
        std::vector<T> dx(n + 1, T(-7));
        table::backward(x.data(), n, 1, n, k, fwd.indices.data(), dv.data(), dx.data(), n, t);
        EXPECT_EQ(dx[n], T(-7)) << "wrote past the end";
        const auto want = smax::reference::softmax_topk_backward(x.data(), n, k, fwd.indices.data(),
                                                                 dv.data(), t);
        const auto ref = smax::reference::softmax_topk(x.data(), n, n, t);
        std::vector<long double> y(n, 0), g(n, 0);
        for (std::size_t j = 0; j < n; ++j)
          if (ref.indices[j] >= 0) y[ref.indices[j]] = ref.values[j];
        long double m = -HUGE_VALL, sum = 0, spread = 0;
        for (T v : x) m = v > m ? v : m;
        for (std::size_t j = 0; j < k; ++j)
          if (fwd.indices[j] >= 0) {
            g[fwd.indices[j]] = dv[j];
            sum += std::fabs(dv[j] * y[fwd.indices[j]]);
            spread = std::max(spread, (m - x[fwd.indices[j]]) / t);
          }
        const double e_sel = c + (t == T(1) ? 0 : u * static_cast<double>(spread));
        for (std::size_t i = 0; i < n; ++i) {
          if (std::isinf(x[i])) {
            EXPECT_EQ(dx[i], T(0));
            continue;
          }
          const double e_i = c + (t == T(1) ? 0 : u * static_cast<double>((m - x[i]) / t));
          const double scale = static_cast<double>(std::fabs(g[i]) + sum) / t;
          // Gradients below the smallest normal number may be flushed (or rounded as subnormals).
          const double bound = (e_i + 2 * e_sel) * static_cast<double>(y[i]) * scale +
                               std::numeric_limits<T>::min();
          EXPECT_LE(std::fabs(static_cast<long double>(dx[i]) - want[i]), bound)
              << "n = " << n << ", k = " << k << ", T = " << t << ", i = " << i;
        }
      }
  // NaN row -> NaN; all masked -> 0; n = 0 writes nothing.
  const std::vector<std::int64_t> idx = {0, -1};
  const std::vector<T> dv = {T(1), T(1)};
  for (auto const& x : std::vector<std::vector<T>>{{T(1), quiet_nan<T>}, {T(1), infinity<T>}}) {
    std::vector<T> dx(2);
    table::backward(x.data(), 2, 1, 2, 2, idx.data(), dv.data(), dx.data(), 2, T(1));
    EXPECT_TRUE(std::isnan(dx[0]) && std::isnan(dx[1]));
  }
  const std::vector<T> masked = {-infinity<T>, -infinity<T>};
  std::vector<T> dx = {T(-7), T(-7)};
  table::backward(masked.data(), 2, 1, 2, 2, idx.data(), dv.data(), dx.data(), 2, T(1));
  EXPECT_EQ(dx[0], T(0));
  EXPECT_EQ(dx[1], T(0));
  dx = {T(-7), T(-7)};
  table::backward(masked.data(), 2, 1, 0, 2, idx.data(), dv.data(), dx.data(), 2, T(1));
  EXPECT_EQ(dx[0], T(-7));
  // k = 0: dx = 0 on a finite row.
  const std::vector<T> x = {T(1), T(2), T(3)};
  std::vector<T> dz(3, T(-7));
  table::backward(x.data(), 3, 1, 3, 0, idx.data(), dv.data(), dz.data(), 3, T(1));
  for (T v : dz) EXPECT_EQ(v, T(0));
}

// The reference VJP against central differences of the reference forward (selection held fixed:
// the entries are distinct, so a small step does not change it).
TEST(softmax_topk_reference, vjp_matches_finite_differences) {
  for (double t : {1.0, 0.5, 3.0})
    for (std::size_t k : {std::size_t(1), std::size_t(3), std::size_t(9)}) {
      const auto x = random_row<double>(9, 6.0, 0.0, 17);
      const auto dv = random_row<double>(k, 2.0, 0.0, 18);
      const auto fwd = smax::reference::softmax_topk(x.data(), 9, k, t);
      const auto dx =
          smax::reference::softmax_topk_backward(x.data(), 9, k, fwd.indices.data(), dv.data(), t);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double h = 1e-6;
        auto xp = x, xm = x;
        xp[i] += h;
        xm[i] -= h;
        const auto fp = smax::reference::softmax_topk(xp.data(), 9, k, t);
        const auto fm = smax::reference::softmax_topk(xm.data(), 9, k, t);
        long double fd = 0;
        for (std::size_t j = 0; j < k; ++j) {
          ASSERT_EQ(fp.indices[j], fwd.indices[j]);
          fd += dv[j] * (fp.values[j] - fm.values[j]) / (2 * h);
        }
        EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(dx[i]), 1e-7) << "T " << t;
      }
    }
}

// The public forms: header-only and runtime (indices the same, values within twice the bound:
// runtime may run another instruction set), single rows and _rows, default options.
TEST(softmax_topk_api, forms) {
  const std::size_t rows = 3, cols = 1037, ld = 1041, k = 5;
  const auto x = random_row<float>(rows * ld, 6.0, 0.0, 5);
  const smax::softmax_topk_options opts{0.7};
  std::vector<float> a(rows * k), b(rows * k), c(rows * k);
  std::vector<std::int64_t> ia(rows * k), ib(rows * k), ic(rows * k);
  smax::softmax_topk_rows(x.data(), rows, cols, ld, k, a.data(), ia.data(), opts);
  smax::runtime::softmax_topk_rows(x.data(), rows, cols, ld, k, c.data(), ic.data(), opts);
  for (std::size_t r = 0; r < rows; ++r)
    smax::softmax_topk(x.data() + r * ld, cols, k, b.data() + r * k, ib.data() + r * k, opts);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], b[i]);
    EXPECT_EQ(ia[i], ib[i]);
    EXPECT_EQ(ia[i], ic[i]);
    EXPECT_NEAR(a[i], c[i], 4e-6 * a[i]);
  }
  const auto dv = random_row<float>(rows * k, 2.0, 0.0, 6);
  std::vector<float> da(rows * ld, -7.0f), db = da, dc = da;
  smax::softmax_topk_backward_rows(x.data(), rows, cols, ld, k, a.data(), ia.data(), dv.data(),
                                   da.data(), opts);
  smax::runtime::softmax_topk_backward_rows(x.data(), rows, cols, ld, k, a.data(), ia.data(),
                                            dv.data(), dc.data(), opts);
  for (std::size_t r = 0; r < rows; ++r)
    smax::softmax_topk_backward(x.data() + r * ld, cols, k, a.data() + r * k, ia.data() + r * k,
                                dv.data() + r * k, db.data() + r * ld, opts);
  for (std::size_t i = 0; i < da.size(); ++i) {
    EXPECT_EQ(da[i], db[i]) << i;
    EXPECT_NEAR(da[i], dc[i], 1e-5 * std::fabs(da[i]) + 1e-30) << i;
  }
  // Default options (T = 1), double.
  const std::vector<double> xd = {1.0, 3.0, 2.0};
  std::vector<double> v(2);
  std::vector<std::int64_t> iv(2);
  smax::softmax_topk(xd.data(), 3, 2, v.data(), iv.data());
  EXPECT_EQ(iv[0], 1);
  EXPECT_EQ(iv[1], 2);
  EXPECT_NEAR(v[0], std::exp(0.0) / (std::exp(-2.0) + 1 + std::exp(-1.0)), 1e-15);
  smax::runtime::softmax_topk(xd.data(), 3, 2, v.data(), iv.data());
  EXPECT_EQ(iv[0], 1);
}

}  // namespace

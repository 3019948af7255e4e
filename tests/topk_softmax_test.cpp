// Top-k softmax (smax/topk_softmax.hpp) on every compiled instruction set, float and double:
// against the long-double reference at every length around the vector width, for k from 1 to
// past n, on long rows (10^6, k up to n - 1) and on rows built to stress the selection (ties at
// the k-th place at every lane, masks at every lane, values near ±FLT_MAX, rows whose candidate
// buffer fills many times); the invariants of the definition; the backward pass against the exact
// VJP with the header's bound, and the reference VJP against central differences.

#include <algorithm>
#include <cstring>
#include <numeric>

#include <smax/reference/softmax.hpp>
#include <smax/reference/topk_softmax.hpp>
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class topk_softmax_test : public ::testing::Test {};
TYPED_TEST_SUITE(topk_softmax_test, all_configs, config_names);

template <class C, class T>
std::vector<T> topk_of(std::vector<T> const& x, std::size_t k) {
  std::vector<T> y(x.size() + 1, T(-7));  // one guard element past the end
  smax::kernels::topk_softmax_table<typename C::arch>::forward(
      x.data(), x.size(), y.data(), x.size(), x.empty() ? 0 : 1, x.size(), k);
  EXPECT_EQ(y.back(), T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

template <class T>
bool same_bits_or_both_nan(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// The header's bound: softmax's relative 1e-6 / 1e-14 over S for outputs >= the smallest normal
// number (below it they may be flushed); outputs outside S exactly +0; NaN rows NaN. Also the
// nonzero outputs are exactly S's (where S's outputs do not underflow).
template <class C, class T>
::testing::AssertionResult matches_topk_reference(std::vector<T> const& x, std::size_t k) {
  const auto y = topk_of<C>(x, k);
  const auto r = smax::reference::topk_softmax(x.data(), x.size(), k);
  std::size_t failures = 0;
  ::testing::AssertionResult first = ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto ok = matches(y[i], r[i], softmax_rtol<T>, std::numeric_limits<T>::min(), i);
    if (ok && r[i] == 0.0L && std::signbit(y[i])) ok = ::testing::AssertionFailure() << "-0 at " << i;
    if (ok && r[i] >= 1e-30L && !(y[i] > T(0)))
      ok = ::testing::AssertionFailure() << "entry " << i << " of S is not in the output";
    if (!ok && failures++ == 0) first = ok;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return first << " [" << failures << " of " << x.size() << " out of bound; n = " << x.size()
               << ", k = " << k << "]";
}

std::vector<std::size_t> ks_for(std::size_t n, std::size_t width) {
  std::vector<std::size_t> ks;
  for (std::size_t k : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(8), width - 1,
                        width, width + 1, std::size_t(64), n / 2, n - 1, n, n + 5})
    if (k != 0) ks.push_back(k);  // (not erase(remove_if): GCC 12 warns -Warray-bounds on it)
  return ks;
}

TYPED_TEST(topk_softmax_test, every_length_and_k) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
    for (std::size_t k : ks_for(n, TypeParam::width))
      for (double spread : {2.0, 20.0, 150.0}) {
        const auto x = random_row<T>(n, spread, spread == 20.0 ? -5.0 : 7.0,
                                     static_cast<unsigned>(n * 31 + k + static_cast<std::size_t>(7 * spread)));
        EXPECT_TRUE((matches_topk_reference<TypeParam>(x, k)));
      }
  for (std::size_t n : {std::size_t(1000), std::size_t(4099), std::size_t(65537)})
    for (std::size_t k : {std::size_t(1), std::size_t(8), std::size_t(64), std::size_t(129),
                          std::size_t(300), n / 3, n - 1}) {
      EXPECT_TRUE((matches_topk_reference<TypeParam>(random_row<T>(n, 200.0, -50.0, 3), k)));
      EXPECT_TRUE((matches_topk_reference<TypeParam>(random_row<T>(n, 8.0, 1000.0, 4), k)));
      auto masked = random_row<T>(n, 30.0, 0.0, 5);
      for (std::size_t i = 0; i < n; i += 3) masked[i] = -infinity<T>;
      EXPECT_TRUE((matches_topk_reference<TypeParam>(masked, k)));
    }
}

// Rows ordered against the sweep: ascending (every entry raises the threshold: the buffer fills
// and is cut again and again), descending, and of few distinct values (ties everywhere: S is
// decided by index among the entries equal to the k-th value).
TYPED_TEST(topk_softmax_test, adversarial_orders_and_ties) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(300), std::size_t(5000)})
    for (std::size_t k : {std::size_t(1), std::size_t(8), std::size_t(64), std::size_t(200),
                          std::size_t(299)}) {
      std::vector<T> up(n), down(n), few(n), same(n, T(1.5));
      std::mt19937 rng(static_cast<unsigned>(n + k));
      for (std::size_t i = 0; i < n; ++i) {
        up[i] = static_cast<T>(i) * T(0.01);
        down[i] = -up[i];
        few[i] = static_cast<T>(rng() % 3);
      }
      for (auto const* x : {&up, &down, &few, &same})
        EXPECT_TRUE((matches_topk_reference<TypeParam>(*x, k))) << "n = " << n << ", k = " << k;
      // All ties: S is the first k entries, each 1/k.
      const auto y = topk_of<TypeParam>(same, k);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(y[i] > T(0), i < k) << "n = " << n << ", k = " << k << ", i = " << i;
    }
  // The example of the definition.
  const auto y = topk_of<TypeParam>(std::vector<T>{T(2), T(2), T(1), T(2)}, 2);
  EXPECT_EQ(y, (std::vector<T>{T(0.5), T(0.5), T(0), T(0)}));
}

// Ties at the k-th place with the tied entries at every lane and tail position: a row of small
// random values with the value 1 at positions p < q (and later ones); k = 1 picks p, and with
// larger entries before, the tie falls at the k-th place.
TYPED_TEST(topk_softmax_test, ties_at_every_lane_go_to_the_lower_index) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t w = TypeParam::width;
  for (std::size_t n : {w + 3, 4 * w + 1, 9 * w + 5, std::size_t(700)})
    for (std::size_t p = 0; p + 1 < n; ++p) {
      auto x = random_row<T>(n, 1.0, -3.0, static_cast<unsigned>(n + p));
      const std::size_t q = p + 1 + (p * 7) % (n - p - 1);
      x[p] = T(1);
      x[q] = T(1);
      x[n - 1 - p % 2] = T(1);  // a third tie at the tail when not already taken
      auto y = topk_of<TypeParam>(x, 1);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], i == p ? T(1) : T(0)) << p << " " << i;
      EXPECT_TRUE((matches_topk_reference<TypeParam>(x, 2)));
      // Two larger entries before p: the tie is at the third place.
      if (p >= 2) {
        x[0] = T(4);
        x[1] = T(3);
        y = topk_of<TypeParam>(x, 3);
        EXPECT_GT(y[p], T(0));
        for (std::size_t i = p + 1; i < n; ++i) ASSERT_EQ(y[i], T(0)) << p << " " << i;
        EXPECT_TRUE((matches_topk_reference<TypeParam>(x, 3)));
      }
    }
}

// Masked entries at every lane are chosen last and output +0; a row with fewer finite entries
// than k is softmax over the finite ones.
TYPED_TEST(topk_softmax_test, masks_at_every_lane_are_chosen_last) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t w = TypeParam::width;
  // Short rows take the dense path, rows of 300 the sweep (k < 172).
  for (std::size_t n : {w + 1, 4 * w + 3, 9 * w + 5, std::size_t(300)})
    for (std::size_t lane = 0; lane < n; lane += (n > 100 ? 7 : 1)) {
      auto x = random_row<T>(n, 4.0, 0.0, static_cast<unsigned>(lane + n));
      x[lane] = -infinity<T>;
      for (std::size_t k : {std::size_t(1), std::size_t(3), n - 1, n})
        EXPECT_TRUE((matches_topk_reference<TypeParam>(x, k))) << "lane " << lane;
      // Only three finite entries (one at this lane), k = 5: the masks fill S and output 0.
      std::vector<T> few(n, -infinity<T>);
      few[lane] = T(0.5);
      few[(lane + 2) % n] = T(-1);
      few[(lane + 5) % n] = T(2);
      const auto y = topk_of<TypeParam>(few, 5);
      const auto r = smax::reference::softmax(few.data(), n, false);
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_TRUE(matches(y[i], r[i], softmax_rtol<T>, 0.0, i)) << "lane " << lane;
        if (few[i] == -infinity<T>) {
          EXPECT_EQ(y[i], T(0));
          EXPECT_FALSE(std::signbit(y[i]));
        }
      }
    }
}

TYPED_TEST(topk_softmax_test, special_rows_and_extreme_values) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t w = TypeParam::width;
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, -f, g},                            // [1, 0, 0] for k >= 2
      {big, big, -big},                      // ties at FLT_MAX
      {-big, -big, -big},                    // ties at -FLT_MAX
      {-big, big},                           //
      {T(1000), T(-1000), T(0)},             //
      {T(1), T(2), T(3)},                    //
      {T(0), -T(0), T(0), -T(0)},            // ±0 are ties
      {T(1e-30), T(-1e-30), T(0)},           //
      {std::numeric_limits<T>::denorm_min(), T(0), -std::numeric_limits<T>::denorm_min()},
      {-inf, -inf},                          // all masked: NaN
      {T(1), nan, T(2)},                     // NaN: NaN row
      {T(1), inf, T(2)},                     // +inf: NaN row
      {-inf, nan},                           //
      {T(5)},                                // n = 1
      {T(-5)},                               //
  };
  for (auto const& x : rows)
    for (std::size_t k : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(70)}) {
      EXPECT_TRUE((matches_topk_reference<TypeParam>(x, k)));
      // The same values at every lane position of longer rows of ordinary entries.
      for (std::size_t len : {2 * w + 3, 5 * w + 3, std::size_t(300)})
        for (std::size_t lane = 0; lane < len; lane += (len > 100 ? 7 : 1)) {
          auto row = random_row<T>(len, 4.0, 0.0, static_cast<unsigned>(lane + len));
          for (std::size_t j = 0; j < x.size() && lane + j < row.size(); ++j) row[lane + j] = x[j];
          EXPECT_TRUE((matches_topk_reference<TypeParam>(row, k))) << "lane " << lane;
        }
    }
  // The exact figures.
  EXPECT_EQ(topk_of<TypeParam>(std::vector<T>{f, -f, g}, 2), (std::vector<T>{T(1), T(0), T(0)}));
  EXPECT_EQ(topk_of<TypeParam>(std::vector<T>{big, big, -big}, 2),
            (std::vector<T>{T(0.5), T(0.5), T(0)}));
  EXPECT_EQ(topk_of<TypeParam>(std::vector<T>{-big, -big, -big}, 2),
            (std::vector<T>{T(0.5), T(0.5), T(0)}));
  for (T v : {T(5), T(-5), big, -big}) {
    EXPECT_EQ(topk_of<TypeParam>(std::vector<T>{v}, 1)[0], T(1));
    EXPECT_EQ(topk_of<TypeParam>(std::vector<T>{v}, 4)[0], T(1));
  }
  // NaN or +inf at every position of rows of every path: NaN everywhere.
  for (std::size_t len : {3 * w + 2, std::size_t(1000)})
    for (T bad : {nan, inf})
      for (std::size_t lane = 0; lane < len; lane += (len > 100 ? 13 : 1))
        for (std::size_t k : {std::size_t(1), std::size_t(8), std::size_t(200)}) {
          auto row = random_row<T>(len, 4.0, 0.0, static_cast<unsigned>(lane));
          row[lane] = bad;
          for (T v : topk_of<TypeParam>(row, k)) ASSERT_TRUE(std::isnan(v)) << lane << " " << k;
        }
  // An all-masked row of every path: NaN.
  for (std::size_t len : {std::size_t(2), 3 * w + 2, std::size_t(1000)})
    for (std::size_t k : {std::size_t(1), std::size_t(8), std::size_t(200)})
      for (T v : topk_of<TypeParam>(std::vector<T>(len, -inf), k)) ASSERT_TRUE(std::isnan(v));
  // n = 0 writes nothing.
  EXPECT_TRUE(topk_of<TypeParam>(std::vector<T>{}, 3).empty());
}

// k = 0 is a precondition violation: NaN rows (the kernels; the public forms assert in debug).
TYPED_TEST(topk_softmax_test, k_zero_gives_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(300)})
    for (T v : topk_of<TypeParam>(random_row<T>(n, 4.0, 0.0, 1), 0)) EXPECT_TRUE(std::isnan(v));
}

// Long rows: 10^6 entries with k from 1 to n - 1, against the reference.
TYPED_TEST(topk_softmax_test, long_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = long_row(1000000);
  const auto x = random_row<T>(n, 40.0, -3.0, 11);
  for (std::size_t k : {std::size_t(1), std::size_t(8), std::size_t(64), std::size_t(1000), n - 1})
    EXPECT_TRUE((matches_topk_reference<TypeParam>(x, k)));
  // Ascending: the threshold rises all the way.
  std::vector<T> up(n);
  for (std::size_t i = 0; i < n; ++i) up[i] = static_cast<T>(static_cast<double>(i) * 1e-4);
  EXPECT_TRUE((matches_topk_reference<TypeParam>(up, 64)));
}

// Invariants: exactly min(k, finite entries) nonzero outputs, Σy = 1, k = 1 one-hot, shift
// invariance (S and y), and y = softmax(x + mask) with the mask -inf outside S; k >= n gives
// softmax's own bits.
TYPED_TEST(topk_softmax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using softmax_table = smax::kernels::softmax_table<typename TypeParam::arch>;
  const double eps = std::numeric_limits<T>::epsilon();
  for (std::size_t n : {std::size_t(7), 2 * TypeParam::width + 1, std::size_t(777),
                        std::size_t(20000)})
    for (std::size_t k : {std::size_t(1), std::size_t(4), std::size_t(64), std::size_t(500)}) {
      // Integers: shifts by integers are exact.
      std::vector<T> x(n);
      std::mt19937 rng(static_cast<unsigned>(n * 3 + k));
      for (auto& v : x) v = static_cast<T>(static_cast<int>(rng() % 4001) - 2000) * T(0.0078125);
      if (n > 5) x[3] = -infinity<T>;
      const std::size_t finite = n > 5 ? n - 1 : n;
      const auto y = topk_of<TypeParam>(x, k);
      std::size_t nonzero = 0;
      double sum = 0;
      for (T v : y) {
        nonzero += v != T(0);
        sum += v;
      }
      EXPECT_EQ(nonzero, std::min(k, finite)) << "n = " << n << ", k = " << k;
      EXPECT_NEAR(sum, 1.0, 2 * eps * static_cast<double>(std::min(k, finite) + 1));
      if (k == 1) {
        for (T v : y) EXPECT_TRUE(v == T(0) || v == T(1));
      }
      auto shifted = x;
      for (auto& v : shifted) v += T(100);
      const auto ys = topk_of<TypeParam>(shifted, k);
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(ys[i] != T(0), y[i] != T(0)) << i;
        EXPECT_NEAR(ys[i], y[i], 4 * softmax_rtol<T> * y[i]) << i;
      }
      // softmax(x + mask): the kernel's softmax on the row masked outside S.
      auto masked = x;
      for (std::size_t i = 0; i < n; ++i)
        if (y[i] == T(0)) masked[i] = -infinity<T>;
      std::vector<T> p(n);
      softmax_table::forward(masked.data(), n, p.data(), n, 1, n, T(1), 0u,
                             smax::kernels::algorithm_id::automatic);
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], p[i], 4 * softmax_rtol<T> * p[i]) << i;
      if (k >= n) {
        for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(same_bits_or_both_nan(y[i], p[i]));
      }
    }
  // k >= n: softmax's bits, special rows included.
  for (std::size_t n : {std::size_t(1), std::size_t(5), 4 * TypeParam::width + 1, std::size_t(999)})
    for (std::size_t extra : {std::size_t(0), std::size_t(9)}) {
      auto x = random_row<T>(n, 30.0, 0.0, static_cast<unsigned>(n));
      if (n > 2) x[1] = -infinity<T>;
      std::vector<T> p(n);
      softmax_table::forward(x.data(), n, p.data(), n, 1, n, T(1), 0u,
                             smax::kernels::algorithm_id::automatic);
      const auto y = topk_of<TypeParam>(x, n + extra);
      for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(same_bits_or_both_nan(y[i], p[i])) << i;
    }
}

// Batches: every row of a rows × cols call equals the row alone bit for bit (special rows inside
// the batch), padding untouched, and in place.
TYPED_TEST(topk_softmax_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::topk_softmax_table<typename TypeParam::arch>;
  const std::size_t w = TypeParam::width;
  for (std::size_t cols : {std::size_t(1), std::size_t(2), w + 1, 4 * w + 1, std::size_t(300)})
    for (std::size_t rows : {std::size_t(1), std::size_t(4), std::size_t(9)})
      for (std::size_t k : {std::size_t(1), std::size_t(3), std::size_t(200)}) {
        const std::size_t ld = cols + 3;
        auto x = random_row<T>(rows * ld, 6.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
        if (rows > 4) {
          x[5 * ld + cols / 2] = quiet_nan<T>;                                  // row 5: NaN
          for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;  // row 6: masked
          x[7 * ld] = -infinity<T>;                                             // row 7: a mask
        }
        std::vector<T> y(rows * ld, T(-7)), inplace = x;
        table::forward(x.data(), ld, y.data(), ld, rows, cols, k);
        table::forward(inplace.data(), ld, inplace.data(), ld, rows, cols, k);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
          const auto alone = topk_of<TypeParam>(row, k);
          for (std::size_t i = 0; i < cols; ++i) {
            ASSERT_TRUE(same_bits_or_both_nan(y[r * ld + i], alone[i]))
                << "row " << r << ", cols " << cols << ", k " << k << ", at " << i;
            ASSERT_TRUE(same_bits_or_both_nan(inplace[r * ld + i], alone[i])) << "in place";
          }
          for (std::size_t i = cols; i < ld && r * ld + i < y.size(); ++i)
            ASSERT_EQ(y[r * ld + i], T(-7)) << "padding written";
        }
      }
}

// Backward: against the exact VJP at the y passed in, with the header's bound, and against the
// reference VJP from x (the forward's error added); masked entries and entries outside S 0; NaN
// rows NaN.
TYPED_TEST(topk_softmax_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::topk_softmax_table<typename TypeParam::arch>;
  const double c = sizeof(T) == 4 ? std::ldexp(1.0, -19) : std::ldexp(1.0, -48);
  for (std::size_t n : {std::size_t(1), std::size_t(3), TypeParam::width + 1, std::size_t(100),
                        std::size_t(4099), std::size_t(100003)})
    for (std::size_t k : {std::size_t(1), std::size_t(5), std::size_t(64), n}) {
      auto x = random_row<T>(n, 12.0, 0.0, static_cast<unsigned>(n + k));
      if (n > 2) x[1] = -infinity<T>;
      const auto dy = random_row<T>(n, 2.0, 0.3, static_cast<unsigned>(n + 1));
      const auto y = topk_of<TypeParam>(x, k);
      std::vector<T> dx(n), inplace = dy;
      table::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n);
      table::backward(y.data(), n, inplace.data(), n, inplace.data(), n, 1, n);
      long double dot = 0, magnitude = 0;
      for (std::size_t i = 0; i < n; ++i) {
        dot += static_cast<long double>(dy[i]) * y[i];
        magnitude += std::fabs(static_cast<long double>(dy[i]) * y[i]);
      }
      const auto from_x = smax::reference::topk_softmax_backward(x.data(), dy.data(), n, k);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(same_bits_or_both_nan(dx[i], inplace[i])) << "dy == dx";
        if (y[i] == T(0)) {
          ASSERT_EQ(dx[i], T(0)) << i;
          continue;
        }
        const long double exact = y[i] * (static_cast<long double>(dy[i]) - dot);
        const long double scale = y[i] * (std::fabs(static_cast<long double>(dy[i])) + magnitude);
        ASSERT_LE(std::fabs(dx[i] - exact), c * scale)
            << "n = " << n << ", k = " << k << ", i = " << i;
        ASSERT_LE(std::fabs(dx[i] - from_x[i]), (c + 2 * softmax_rtol<T>)*scale)
            << "from x: n = " << n << ", k = " << k << ", i = " << i;
      }
    }
  const std::vector<T> y(3, quiet_nan<T>), dy(3, T(1));
  std::vector<T> dx(3);
  table::backward(y.data(), 3, dy.data(), 3, dx.data(), 3, 1, 3);
  for (T v : dx) EXPECT_TRUE(std::isnan(v));
}

// The reference VJP against central differences of the reference forward (long double), on rows
// without ties, where a small step leaves S as it is: the formula is the derivative.
TEST(topk_softmax_reference, vjp_matches_finite_differences) {
  for (std::size_t k : {std::size_t(1), std::size_t(3), std::size_t(6), std::size_t(9)}) {
    auto x = random_row<double>(9, 6.0, 0.0, static_cast<unsigned>(17 + k));
    x[4] = -HUGE_VAL;
    const auto dy = random_row<double>(9, 2.0, 0.0, 18);
    const auto dx = smax::reference::topk_softmax_backward(x.data(), dy.data(), x.size(), k);
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i] == -HUGE_VAL) {
        EXPECT_EQ(dx[i], 0.0L);
        continue;
      }
      const double h = 1e-6;
      auto xp = x, xm = x;
      xp[i] += h;
      xm[i] -= h;
      const auto yp = smax::reference::topk_softmax(xp.data(), xp.size(), k);
      const auto ym = smax::reference::topk_softmax(xm.data(), xm.size(), k);
      long double fd = 0;
      for (std::size_t j = 0; j < x.size(); ++j) fd += dy[j] * (yp[j] - ym[j]) / (2 * h);
      EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(dx[i]), 1e-8)
          << "k = " << k << ", i = " << i;
    }
  }
}

// A candidate list longer than the stack's whose scratch buffer cannot be allocated: a NaN row,
// as documented (the test seam makes the allocation fail).
TYPED_TEST(topk_softmax_test, scratch_failure_gives_nan_row) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  const auto x = random_row<T>(2000, 4.0, 0.0, 3);
  smax::primitives::scratch_limit<A> = 0;
  const auto failed = topk_of<TypeParam>(x, 300);
  const auto small = topk_of<TypeParam>(x, 100);  // on the stack: unaffected
  smax::primitives::scratch_limit<A> = ~std::size_t(0);
  for (T v : failed) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(small, topk_of<TypeParam>(x, 100));
  EXPECT_TRUE((matches_topk_reference<TypeParam>(x, 100)));
  EXPECT_TRUE((matches_topk_reference<TypeParam>(x, 300)));
}

// The public forms: the pointer, _rows and span forms and in place equal the kernel's row;
// zero_masked_rows gives 0 for an all -inf row and dx = 0 there; k = 0 gives NaN in release
// builds (it asserts in debug builds).
TEST(topk_softmax_api, forms_and_options) {
  const auto x = random_row<float>(300, 20.0, 0.0, 5);
  std::vector<float> a(300), b(x), c(300);
  smax::topk_softmax(x.data(), a.data(), x.size(), smax::topk_softmax_options{8});
  smax::topk_softmax(b.data(), b.data(), b.size(), smax::topk_softmax_options{8});
  EXPECT_EQ(a, b);
  smax::topk_softmax_rows(x.data(), c.data(), 1, x.size(), x.size(), smax::topk_softmax_options{8});
  EXPECT_EQ(a, c);
  smax::runtime::topk_softmax(x.data(), c.data(), x.size(), smax::topk_softmax_options{8});
  const auto r = smax::reference::topk_softmax(x.data(), x.size(), 8);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(matches(a[i], r[i], 1e-6, 1e-38, i));
    EXPECT_TRUE(matches(c[i], r[i], 1e-6, 1e-38, i));
  }
  const std::vector<float> masked(5, -infinity<float>), dy(5, 1.f);
  std::vector<float> y(5), dx(5, 7.f);
  smax::topk_softmax(masked.data(), y.data(), 5, smax::topk_softmax_options{2});
  EXPECT_TRUE(std::isnan(y[0]));
  smax::topk_softmax_options zero{2};
  zero.zero_masked_rows = true;
  smax::topk_softmax(masked.data(), y.data(), 5, zero);
  EXPECT_EQ(y, std::vector<float>(5, 0.f));
  smax::topk_softmax_backward(y.data(), dy.data(), dx.data(), 5, zero);
  EXPECT_EQ(dx, std::vector<float>(5, 0.f));
#if defined(NDEBUG)
  smax::topk_softmax(x.data(), a.data(), x.size(), smax::topk_softmax_options{0});
  for (float v : a) EXPECT_TRUE(std::isnan(v));
  smax::runtime::topk_softmax(x.data(), a.data(), x.size(), smax::topk_softmax_options{});
  for (float v : a) EXPECT_TRUE(std::isnan(v));
#endif
}

}  // namespace

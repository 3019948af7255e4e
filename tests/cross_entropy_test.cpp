// Fused cross-entropy (smax/cross_entropy.hpp) on every compiled instruction set, float and
// double: losses and gradients within the header's bound against the long-double reference at
// every length around the vector width and unroll with the target at the start, the end, the
// maximum and every tail position; label smoothing 0, 0.1 and 1; adversarial rows (±FLT_MAX, one
// huge logit, all equal); ignore_index rows (default and a valid class); in place (dx = x);
// with_grad equal bit for bit to forward + backward; masked, NaN, +inf, invalid-target and
// non-finite-dloss rows isolated to their row; vocabulary rows of 32000 and 128000; _rows equal to
// single rows; the header-only and runtime:: forms; the reference against central differences.
// The bad-input contract is checked here (the family's forms do not fit contract_test.cpp's rows).
//
// Kept small for CI (under qemu-aarch64 long double is software quad): the long-double
// reference work per test is a few rows of 128000 at most, computed once per element type.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <smax/reference/cross_entropy.hpp>
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class cross_entropy_test : public ::testing::Test {};
TYPED_TEST_SUITE(cross_entropy_test, all_configs, config_names);

// The header's bound: loss |L - L*| <= a + b·L*; dx |dx - dx*| <= c·|g|·(p* + q) + |g|·min.
template <class T>
constexpr double loss_a = sizeof(T) == 4 ? 0x1p-21 : 0x1p-50;
template <class T>
constexpr double loss_b = sizeof(T) == 4 ? 0x1p-19 : 0x1p-48;
template <class T>
constexpr double grad_c = sizeof(T) == 4 ? 0x1p-20 : 0x1p-47;

template <class T>
::testing::AssertionResult loss_matches(T got, long double want) {
  const T w = static_cast<T>(want);
  if (std::isnan(w)) {
    if (std::isnan(got)) return ::testing::AssertionSuccess();
  } else if (std::isinf(w)) {
    if (got == w) return ::testing::AssertionSuccess();
  } else if (std::fabs(static_cast<long double>(got) - want) <=
             loss_a<T> + loss_b<T> * std::fabs(want)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "loss " << got << ", expected "
                                       << static_cast<double>(want) << " (error "
                                       << static_cast<double>(got - want) << ")";
}

// dx of one row against the reference row r (computed with dloss g).
template <class T>
::testing::AssertionResult grad_matches(const T* dx, smax::reference::cross_entropy_result const& r,
                                        std::size_t n, std::int64_t t, long double g, double eps) {
  for (std::size_t i = 0; i < n; ++i) {
    const long double want = r.dx[i];
    if (std::isnan(want)) {
      if (std::isnan(dx[i])) continue;
      return ::testing::AssertionFailure() << "at " << i << ": " << dx[i] << ", expected NaN";
    }
    if (want == 0.0L && r.p.empty()) {  // an ignored row: exact zeros
      if (dx[i] == T(0)) continue;
      return ::testing::AssertionFailure() << "at " << i << ": " << dx[i] << ", expected 0";
    }
    const long double q =
        (static_cast<std::int64_t>(i) == t ? 1 - eps : 0) + static_cast<long double>(eps) / n;
    const long double bound = grad_c<T> * std::fabs(g) * (r.p[i] + q) +
                              std::fabs(g) * std::numeric_limits<T>::min();
    if (!(std::fabs(static_cast<long double>(dx[i]) - want) <= bound))
      return ::testing::AssertionFailure()
             << "at " << i << " (target " << t << "): " << dx[i] << ", expected "
             << static_cast<double>(want) << " (error " << static_cast<double>(dx[i] - want)
             << ", bound " << static_cast<double>(bound) << ")";
  }
  return ::testing::AssertionSuccess();
}

// One row through the kernel table of C: its loss from the forward, and from the backward (dloss g)
// dx with a guard past the end; checked against the reference.
template <class C, class T>
::testing::AssertionResult check_row(std::vector<T> const& x, std::int64_t t, double eps,
                                     T g = T(1), std::int64_t ignore = -100) {
  using table = smax::kernels::cross_entropy_table<typename C::arch>;
  const std::size_t n = x.size();
  const auto want = smax::reference::cross_entropy(x.data(), n, t, static_cast<long double>(g),
                                                   ignore, static_cast<long double>(eps));
  T loss = T(-7);
  table::forward(x.data(), n, 1, n, &t, &loss, ignore, eps);
  auto where = [&] {
    return " (n = " + std::to_string(n) + ", t = " + std::to_string(t) +
           ", eps = " + std::to_string(eps) + ")";
  };
  auto ok = loss_matches(loss, want.loss);
  if (!ok) return ok << where();
  std::vector<T> dx(n + 1, T(-7));
  table::backward(x.data(), n, 1, n, &t, &g, static_cast<T*>(nullptr), dx.data(), ignore, eps);
  if (dx[n] != T(-7)) return ::testing::AssertionFailure() << "wrote past the end" << where();
  ok = grad_matches(dx.data(), want, n, t, g, eps);
  if (!ok) return ok << where();
  return ::testing::AssertionSuccess();
}

constexpr double smoothings[] = {0.0, 0.1, 1.0};

template <class T>
std::int64_t argmax(std::vector<T> const& x) {
  return static_cast<std::int64_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

TYPED_TEST(cross_entropy_test, every_length_and_target) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 1; n <= 16 * TypeParam::width + 1; ++n)
    for (double spread : {2.0, 30.0}) {
      const auto x = random_row<T>(n, spread, -3.0, static_cast<unsigned>(n * 31 + spread));
      for (std::int64_t t : {std::int64_t(0), static_cast<std::int64_t>(n - 1), argmax(x)})
        for (double eps : smoothings) EXPECT_TRUE((check_row<TypeParam>(x, t, eps, T(0.75))));
    }
}

// The target at every position of rows around the register and unroll widths (the tail of the
// vector pass), and the row's only large logit at every position.
TYPED_TEST(cross_entropy_test, every_tail_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {TypeParam::width + 1, 4 * TypeParam::width + 3, std::size_t(70)}) {
    const auto base = random_row<T>(n, 8.0, 1.0, static_cast<unsigned>(n));
    for (std::size_t p = 0; p < n; ++p) {
      EXPECT_TRUE((check_row<TypeParam>(base, static_cast<std::int64_t>(p), 0.0)));
      EXPECT_TRUE((check_row<TypeParam>(base, static_cast<std::int64_t>(p), 0.1, T(-2))));
      auto huge = base;
      huge[p] = T(60);  // dominates: p_p near 1, the others near e^-60
      EXPECT_TRUE((check_row<TypeParam>(huge, static_cast<std::int64_t>(p), 0.0)));
      EXPECT_TRUE((check_row<TypeParam>(huge, static_cast<std::int64_t>((p + 1) % n), 0.1)));
    }
  }
}

TYPED_TEST(cross_entropy_test, adversarial_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), f = T(3e38), h = T(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, -f, h},
      {big, -big, T(0), T(1)},
      {big, big},
      {-big, -big, T(-3)},
      {-f, T(-1), T(-1e30)},
      {T(1000), T(-1000), T(0)},
      {T(88), T(-88), T(0), T(89), T(-104)},
      std::vector<T>(37, T(5)),
      std::vector<T>(37, T(-1e30)),
      std::vector<T>(3 * TypeParam::width + 1, big),
      {std::numeric_limits<T>::denorm_min(), T(0), -std::numeric_limits<T>::denorm_min()},
      {T(7)}};
  for (auto const& x : rows)
    for (std::size_t t = 0; t < x.size(); t += (x.size() > 8 ? 5 : 1))
      for (double eps : smoothings)
        for (T g : {T(1), T(-3.5), T(1e-3)})
          EXPECT_TRUE((check_row<TypeParam>(x, static_cast<std::int64_t>(t), eps, g)));
  // All equal: loss = log C exactly as the reference, dx = (1/C - q)·g.
  std::vector<T> equal(1000, T(-2.5));
  EXPECT_TRUE((check_row<TypeParam>(equal, 999, 0.0)));
  EXPECT_TRUE((check_row<TypeParam>(equal, 0, 0.1)));
  // One entry: loss 0 (any ε), dx 0.
  for (double eps : smoothings) {
    const std::vector<T> one = {T(-4)};
    T loss = T(-7), dx = T(-7);
    const std::int64_t t = 0;
    smax::kernels::cross_entropy_table<typename TypeParam::arch>::backward(
        one.data(), 1, 1, 1, &t, nullptr, &loss, &dx, -100, eps);
    EXPECT_EQ(loss, T(0));
    EXPECT_EQ(dx, T(0));
  }
  // A loss beyond the largest T rounds to +inf: max - x_t = 2·max.
  const std::vector<T> wide = {big, -big};
  T loss = T(0);
  const std::int64_t t = 1;
  smax::kernels::cross_entropy_table<typename TypeParam::arch>::forward(wide.data(), 2, 1, 2, &t,
                                                                        &loss, -100, 0.0);
  EXPECT_EQ(loss, infinity<T>);
}

// Long rows, beyond the 8 KiB blocks, with the maximum in a late block (the gap sum moves to a
// new maximum), masked entries and random targets.
TYPED_TEST(cross_entropy_test, long_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(2049), std::size_t(5000)}) {
    auto x = random_row<T>(n, 40.0, 5.0, static_cast<unsigned>(n));
    for (double eps : smoothings) EXPECT_TRUE((check_row<TypeParam>(x, 17, eps, T(0.5))));
    auto ascending = x;
    std::sort(ascending.begin(), ascending.end());
    for (double eps : smoothings)
      EXPECT_TRUE((check_row<TypeParam>(ascending, static_cast<std::int64_t>(n / 3), eps)));
    auto masked = x;
    for (std::size_t i = 0; i < n; i += 7) masked[i] = -infinity<T>;
    for (double eps : smoothings) EXPECT_TRUE((check_row<TypeParam>(masked, 1, eps)));
    EXPECT_TRUE((check_row<TypeParam>(masked, 0, 0.0)));  // x_t = -inf: loss +inf
  }
}

// ignore_index: loss 0 and dx 0 whatever the row holds (NaN) and whatever the dloss (NaN); a
// custom ignore_index that is a valid class; a default -100 target that is then invalid.
TYPED_TEST(cross_entropy_test, ignored_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  const std::size_t rows = 5, cols = 2 * TypeParam::width + 3;
  auto x = random_row<T>(rows * cols, 6.0, 0.0, 3);
  x[2 * cols + 1] = quiet_nan<T>;
  for (std::int64_t ignore : {std::int64_t(-100), std::int64_t(3), std::int64_t(-1)}) {
    const std::vector<std::int64_t> targets = {ignore, 2, ignore, 0, ignore};
    std::vector<T> losses(rows, T(-7)), fused(rows, T(-7)), dx(rows * cols, T(-7));
    std::vector<T> dlosses(rows, T(1.5));
    dlosses[4] = quiet_nan<T>;
    table::forward(x.data(), cols, rows, cols, targets.data(), losses.data(), ignore, 0.1);
    table::backward(x.data(), cols, rows, cols, targets.data(), dlosses.data(), fused.data(),
                    dx.data(), ignore, 0.1);
    for (std::size_t r : {std::size_t(0), std::size_t(2), std::size_t(4)}) {
      EXPECT_EQ(losses[r], T(0)) << r;
      EXPECT_EQ(fused[r], T(0)) << r;
      for (std::size_t i = 0; i < cols; ++i) EXPECT_EQ(dx[r * cols + i], T(0)) << r;
    }
    for (std::size_t r : {std::size_t(1), std::size_t(3)}) {
      std::vector<T> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      EXPECT_TRUE((check_row<TypeParam>(row, targets[r], 0.1, T(1.5), ignore)));
      const auto want = smax::reference::cross_entropy(row.data(), cols, targets[r], 1.5L,
                                                       ignore, 0.1L);
      EXPECT_TRUE(loss_matches(losses[r], want.loss));
      EXPECT_TRUE(grad_matches(dx.data() + r * cols, want, cols, targets[r], 1.5L, 0.1));
    }
  }
  // With ignore_index 3, a target of -100 is invalid: NaN loss and dx.
  const std::int64_t t = -100;
  T loss = T(0);
  std::vector<T> dx(cols, T(0));
  table::backward(x.data(), cols, 1, cols, &t, nullptr, &loss, dx.data(), 3, 0.0);
  EXPECT_TRUE(std::isnan(loss));
  for (T v : dx) EXPECT_TRUE(std::isnan(v));
}

// In place (dx = x) gives the out-of-place result bit for bit; with_grad equals forward +
// backward (every dloss 1) bit for bit, special rows included.
TYPED_TEST(cross_entropy_test, in_place_and_fused_equal_forward_plus_backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  for (std::size_t cols : {std::size_t(1), TypeParam::width + 1, std::size_t(1000),
                           std::size_t(5000)}) {
    const std::size_t rows = 6, ld = cols + 2;
    auto x = random_row<T>(rows * ld, 20.0, 0.0, static_cast<unsigned>(cols));
    std::vector<std::int64_t> targets(rows);
    for (std::size_t r = 0; r < rows; ++r) targets[r] = static_cast<std::int64_t>((r * 7) % cols);
    if (cols > 1) {
      x[ld + targets[1]] = -infinity<T>;  // loss +inf
      for (std::size_t i = 0; i < cols; ++i) x[3 * ld + i] = -infinity<T>;  // NaN row
      x[4 * ld + cols - 1] = quiet_nan<T>;                                   // NaN row
      targets[5] = -100;                                                     // ignored
    }
    for (double eps : smoothings) {
      std::vector<T> loss_f(rows), loss_w(rows), loss_i(rows), ones(rows, T(1));
      std::vector<T> dx_b(rows * ld, T(-7)), dx_w(rows * ld, T(-7));
      table::forward(x.data(), ld, rows, cols, targets.data(), loss_f.data(), -100, eps);
      table::backward(x.data(), ld, rows, cols, targets.data(), ones.data(),
                      static_cast<T*>(nullptr), dx_b.data(), -100, eps);
      table::backward(x.data(), ld, rows, cols, targets.data(), nullptr, loss_w.data(),
                      dx_w.data(), -100, eps);
      auto in_place = x;
      table::backward(in_place.data(), ld, rows, cols, targets.data(), nullptr, loss_i.data(),
                      in_place.data(), -100, eps);
      for (std::size_t r = 0; r < rows; ++r) {
        EXPECT_TRUE(same_bits_or_both_nan(loss_f[r], loss_w[r])) << r << " eps " << eps;
        EXPECT_TRUE(same_bits_or_both_nan(loss_f[r], loss_i[r])) << r;
        for (std::size_t i = 0; i < cols; ++i) {
          EXPECT_TRUE(same_bits_or_both_nan(dx_b[r * ld + i], dx_w[r * ld + i])) << r << ", " << i;
          EXPECT_TRUE(same_bits_or_both_nan(dx_w[r * ld + i], in_place[r * ld + i])) << r;
        }
        for (std::size_t i = cols; i < ld; ++i) {
          EXPECT_EQ(dx_w[r * ld + i], T(-7)) << "padding written";
          EXPECT_EQ(in_place[r * ld + i], x[r * ld + i]) << "padding written";
        }
      }
    }
  }
}

// Bad rows (masked, NaN and +inf at every lane, invalid targets, non-finite dloss) give NaN in
// their own row only; x_t = -inf gives +inf with a finite gradient.
TYPED_TEST(cross_entropy_test, bad_rows_are_isolated) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  const T inf = infinity<T>, nan = quiet_nan<T>;
  for (std::size_t cols : {TypeParam::width, 4 * TypeParam::width + 3}) {
    const auto base = random_row<T>(cols, 10.0, 1.0, static_cast<unsigned>(cols));
    for (std::size_t p = 0; p < cols; ++p) {
      // Rows: 0 ordinary, 1 NaN at p, 2 +inf at p, 3 all masked, 4 an invalid target (cols or
      // -5), 5 a NaN dloss, 6 a -inf dloss, 7 x_t = -inf at p.
      const std::size_t rows = 8;
      std::vector<T> x;
      for (std::size_t r = 0; r < rows; ++r) x.insert(x.end(), base.begin(), base.end());
      x[1 * cols + p] = nan;
      x[2 * cols + p] = inf;
      for (std::size_t i = 0; i < cols; ++i) x[3 * cols + i] = -inf;
      x[7 * cols + p] = -inf;
      const std::int64_t tp = static_cast<std::int64_t>(p);
      std::vector<std::int64_t> targets = {tp, 0, 0, tp, static_cast<std::int64_t>(cols), tp, tp,
                                           tp};
      if (p % 2) targets[4] = -5;
      std::vector<T> dlosses(rows, T(0.5));
      dlosses[5] = nan;
      dlosses[6] = -inf;
      for (double eps : {0.0, 0.1}) {
        std::vector<T> losses(rows), fused(rows), dx(rows * cols, T(-7));
        table::forward(x.data(), cols, rows, cols, targets.data(), losses.data(), -100, eps);
        table::backward(x.data(), cols, rows, cols, targets.data(), dlosses.data(), fused.data(),
                        dx.data(), -100, eps);
        for (std::size_t r = 0; r < rows; ++r) {
          const T* row = x.data() + r * cols;
          const auto want = smax::reference::cross_entropy(
              row, cols, targets[r], static_cast<long double>(dlosses[r]), -100, eps);
          EXPECT_TRUE(loss_matches(losses[r], want.loss)) << "row " << r << ", p " << p;
          EXPECT_TRUE(same_bits_or_both_nan(losses[r], fused[r])) << "row " << r;
          EXPECT_TRUE(grad_matches(dx.data() + r * cols, want, cols, targets[r],
                                   static_cast<long double>(dlosses[r]), eps))
              << "row " << r << ", p " << p << ", eps " << eps;
        }
        for (std::size_t r : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(4)})
          EXPECT_TRUE(std::isnan(losses[r])) << r;
        for (std::size_t r : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(4),
                              std::size_t(5), std::size_t(6)})
          for (std::size_t i = 0; i < cols; ++i) EXPECT_TRUE(std::isnan(dx[r * cols + i])) << r;
        EXPECT_EQ(losses[7], inf);
        for (std::size_t i = 0; i < cols; ++i) EXPECT_TRUE(std::isfinite(dx[7 * cols + i]));
        EXPECT_TRUE(std::isfinite(losses[0]) && std::isfinite(losses[5]));
      }
    }
  }
}

// label_smoothing outside [0, 1] or NaN (a precondition; release builds): NaN everywhere, ignored
// rows included.
TYPED_TEST(cross_entropy_test, invalid_smoothing_gives_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  const auto x = random_row<T>(2 * 9, 4.0, 0.0, 5);
  const std::vector<std::int64_t> targets = {3, -100};
  for (double eps : {-0.1, 1.5, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
    std::vector<T> losses(2), dx(2 * 9);
    table::forward(x.data(), 9, 2, 9, targets.data(), losses.data(), -100, eps);
    EXPECT_TRUE(std::isnan(losses[0]) && std::isnan(losses[1]));
    table::backward(x.data(), 9, 2, 9, targets.data(), nullptr, losses.data(), dx.data(), -100,
                    eps);
    EXPECT_TRUE(std::isnan(losses[0]) && std::isnan(losses[1]));
    for (T v : dx) EXPECT_TRUE(std::isnan(v));
  }
}

// rows = 0 touches nothing; cols = 0: an invalid target (NaN loss) unless ignored.
TYPED_TEST(cross_entropy_test, empty_shapes) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  const std::vector<std::int64_t> targets = {0, -100};
  std::vector<T> losses(2, T(-7));
  table::forward(static_cast<const T*>(nullptr), 0, 0, 5, targets.data(), losses.data(), -100, 0);
  EXPECT_EQ(losses[0], T(-7));
  T guard = T(-7);
  table::backward(&guard, 0, 2, 0, targets.data(), nullptr, losses.data(), &guard, -100, 0.0);
  EXPECT_TRUE(std::isnan(losses[0]));
  EXPECT_EQ(losses[1], T(0));
  EXPECT_EQ(guard, T(-7));
}

// _rows equal single rows bit for bit (leading dimension > cols).
TYPED_TEST(cross_entropy_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  const std::size_t rows = 6, cols = 3 * TypeParam::width + 5, ld = cols + 3;
  auto x = random_row<T>(rows * ld, 12.0, 0.0, 9);
  x[ld + 2] = quiet_nan<T>;
  const std::vector<std::int64_t> targets = {0, 1, 2, 3, -100, static_cast<std::int64_t>(cols - 1)};
  const auto dl = random_row<T>(rows, 2.0, 0.0, 10);
  for (double eps : {0.0, 0.1}) {
    std::vector<T> losses(rows);
    table::forward(x.data(), ld, rows, cols, targets.data(), losses.data(), -100, eps);
    for (std::size_t r = 0; r < rows; ++r) {
      T one;
      table::forward(x.data() + r * ld, cols, 1, cols, targets.data() + r, &one, -100, eps);
      EXPECT_TRUE(same_bits_or_both_nan(losses[r], one)) << r;
    }
    EXPECT_TRUE((rows_equal_single_rows<T>(
        rows, cols, ld,
        [&](T* dx) {
          table::backward(x.data(), ld, rows, cols, targets.data(), dl.data(),
                          static_cast<T*>(nullptr), dx, -100, eps);
        },
        [&](std::size_t r, T* dx) {
          table::backward(x.data() + r * ld, cols, 1, cols, targets.data() + r, dl.data() + r,
                          static_cast<T*>(nullptr), dx, -100, eps);
        })));
  }
}

// Vocabulary rows: a batch of 2 rows of 32000 and 2 of 128000 (the reference computed once per
// element type and shared by the instruction sets).
template <class T>
struct vocabulary_case {
  std::size_t cols;
  std::vector<T> x;  // 2 rows
  std::vector<std::int64_t> targets;
  std::vector<smax::reference::cross_entropy_result> want;  // per row, ε = 0.1, g = 1
};

template <class T>
std::vector<vocabulary_case<T>> const& vocabulary_cases() {
  static const std::vector<vocabulary_case<T>> cases = [] {
    std::vector<vocabulary_case<T>> v;
    for (std::size_t cols : {std::size_t(32000), std::size_t(128000)}) {
      vocabulary_case<T> c{cols, random_row<T>(2 * cols, 24.0, -2.0, static_cast<unsigned>(cols)),
                           {static_cast<std::int64_t>(cols / 3), static_cast<std::int64_t>(cols - 2)},
                           {}};
      c.x[cols + cols / 2] = T(40);  // the second row's maximum in a late block
      for (std::size_t r = 0; r < 2; ++r)
        c.want.push_back(smax::reference::cross_entropy(c.x.data() + r * cols, cols, c.targets[r],
                                                        1.0L, -100, 0.1L));
      v.push_back(std::move(c));
    }
    return v;
  }();
  return cases;
}

TYPED_TEST(cross_entropy_test, vocabulary_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::cross_entropy_table<typename TypeParam::arch>;
  for (auto const& c : vocabulary_cases<T>()) {
    std::vector<T> losses(2), dx(c.x.size());
    table::backward(c.x.data(), c.cols, 2, c.cols, c.targets.data(), nullptr, losses.data(),
                    dx.data(), -100, 0.1);
    for (std::size_t r = 0; r < 2; ++r) {
      EXPECT_TRUE(loss_matches(losses[r], c.want[r].loss)) << c.cols << ", row " << r;
      EXPECT_TRUE(grad_matches(dx.data() + r * c.cols, c.want[r], c.cols, c.targets[r], 1.0L, 0.1))
          << c.cols << ", row " << r;
    }
  }
}

// The reference's dx against central differences of its loss (ε = 0.1), in double.
TEST(cross_entropy_reference, gradient_matches_finite_differences) {
  const auto x = random_row<double>(9, 6.0, 0.0, 17);
  for (double eps : {0.0, 0.1, 1.0})
    for (std::int64_t t : {std::int64_t(0), std::int64_t(4)}) {
      const auto r = smax::reference::cross_entropy(x.data(), 9, t, 1.0L, -100, eps);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double h = 1e-6;
        auto xp = x, xm = x;
        xp[i] += h;
        xm[i] -= h;
        const long double fd = (smax::reference::cross_entropy(xp.data(), 9, t, 1.0L, -100, eps).loss -
                                smax::reference::cross_entropy(xm.data(), 9, t, 1.0L, -100, eps).loss) /
                               (2 * h);
        EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(r.dx[i]), 1e-7) << i;
      }
    }
}

// The public forms: header-only and runtime (runtime may run another instruction set: within
// twice the bound), default options, with_grad = forward + backward bit for bit, in place.
TEST(cross_entropy_api, forms) {
  const std::size_t rows = 4, cols = 1037, ld = 1041;
  const auto x = random_row<float>(rows * ld, 6.0, 0.0, 5);
  const std::vector<std::int64_t> targets = {5, -1, 1036, 0};
  const smax::cross_entropy_options opts{-1, 0.1};
  std::vector<float> la(rows), lb(rows), lc(rows), dl(rows, 1.0f);
  std::vector<float> da(rows * ld, -7.0f), db = da, dc = da;
  smax::cross_entropy(x.data(), targets.data(), rows, cols, ld, la.data(), opts);
  smax::runtime::cross_entropy(x.data(), targets.data(), rows, cols, ld, lc.data(), opts);
  smax::cross_entropy_backward(x.data(), targets.data(), dl.data(), da.data(), rows, cols, ld,
                               opts);
  smax::cross_entropy_with_grad(x.data(), targets.data(), rows, cols, ld, lb.data(), db.data(),
                                opts);
  smax::runtime::cross_entropy_with_grad(x.data(), targets.data(), rows, cols, ld, lc.data(),
                                         dc.data(), opts);
  for (std::size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(la[r], lb[r]);
    EXPECT_NEAR(la[r], lc[r], 2 * (0x1p-21 + 0x1p-19 * la[r]));
    EXPECT_EQ(la[1], 0.0f);
    for (std::size_t i = 0; i < ld; ++i) {
      EXPECT_EQ(da[r * ld + i], db[r * ld + i]) << r << ", " << i;
      EXPECT_NEAR(da[r * ld + i], dc[r * ld + i], 1e-5 * std::fabs(da[r * ld + i]) + 1e-12);
    }
  }
  auto in_place = x;
  smax::runtime::cross_entropy_with_grad(in_place.data(), targets.data(), rows, cols, ld,
                                         lc.data(), in_place.data(), opts);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < cols; ++i) EXPECT_EQ(in_place[r * ld + i], dc[r * ld + i]);
  smax::runtime::cross_entropy_backward(x.data(), targets.data(), dl.data(), dc.data(), rows, cols,
                                        ld, opts);
  // Default options (ignore_index -100, no smoothing), double, one row.
  const std::vector<double> xd = {1.0, 3.0, 2.0};
  const std::int64_t t = 1;
  double loss = 0;
  std::vector<double> dx(3);
  smax::cross_entropy(xd.data(), &t, 1, 3, 3, &loss);
  const double lse = 3 + std::log(std::exp(-2.0) + 1 + std::exp(-1.0));
  EXPECT_NEAR(loss, lse - 3, 1e-15);
  smax::runtime::cross_entropy_with_grad(xd.data(), &t, 1, 3, 3, &loss, dx.data());
  EXPECT_NEAR(loss, lse - 3, 1e-15);
  EXPECT_NEAR(dx[1], std::exp(3 - lse) - 1, 1e-15);
  EXPECT_NEAR(dx[0], std::exp(1 - lse), 1e-15);
}

}  // namespace

// Every family of the list in <smax/families.hpp> has every form: forward, _rows, backward,
// backward _rows, each header-only, in smax::runtime and over Eigen objects, the std::span forms
// under C++20, for float and double. The test is stamped from the same list, so a new family is
// enumerated here without an edit. Each form must give the bits of the generic entry it adapts
// (api::forward / api::backward) on the same dispatcher; the Eigen forms the header-only bits;
// and the runtime forms the header-only results within rounding (they may run another
// instruction set).

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <smax/eigen.hpp>
#include <smax/runtime.hpp>

#include "test_support.hpp"

namespace {

constexpr std::size_t rows = 3, cols = 37, ld = 41;

template <class T>
std::vector<T> random_matrix(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  std::vector<T> m(rows * ld);
  for (auto& v : m) v = static_cast<T>(u(rng));
  return m;
}

template <class T>
bool same_bits(std::vector<T> const& a, std::vector<T> const& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

template <class T>
void expect_close(std::vector<T> const& a, std::vector<T> const& b, const char* what) {
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-12;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = a[r * ld + c], y = b[r * ld + c];
      EXPECT_NEAR(x, y, tol * (1 + std::fabs(y))) << what << " at " << r << ", " << c;
    }
}

using row_matrix_f = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using row_matrix_d = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using row_matrix = std::conditional_t<sizeof(T) == 4, row_matrix_f, row_matrix_d>;
template <class T>
using strided = Eigen::Map<row_matrix<T>, 0, Eigen::OuterStride<>>;

using smax_test::sample_options;

// The forms of one family as generic lambdas (Forms holds them), checked on element type T.
template <class Family, class T, class Forms>
void check_family(Forms const& f) {
  using header = smax::api::header_only;
  using chosen = smax::runtime::dispatch::chosen;
  using shape = smax::api::backward_shape;
  constexpr bool reads_x = Family::backward_form != shape::from_output;
  const typename Family::options opts = sample_options<Family>::get();
  const auto x = random_matrix<T>(1), dy = random_matrix<T>(2);
  const std::vector<T> fill(rows * ld, T(-7));

  // Forward: the generic entry on each dispatcher, then every form against it.
  auto want = fill, want_runtime = fill;
  smax::api::forward<Family, header>(x.data(), ld, want.data(), ld, rows, cols, opts);
  smax::api::forward<Family, chosen>(x.data(), ld, want_runtime.data(), ld, rows, cols, opts);
  expect_close(want_runtime, want, "runtime against header-only");

  auto y = fill;
  f.rows(x.data(), y.data(), rows, cols, ld, opts);
  EXPECT_TRUE(same_bits(y, want)) << "_rows";
  y = fill;
  for (std::size_t r = 0; r < rows; ++r)
    f.forward(x.data() + r * ld, y.data() + r * ld, cols, opts);
  EXPECT_TRUE(same_bits(y, want)) << "single row";
  y = fill;
  f.runtime_rows(x.data(), y.data(), rows, cols, ld, opts);
  EXPECT_TRUE(same_bits(y, want_runtime)) << "runtime _rows";
  y = fill;
  for (std::size_t r = 0; r < rows; ++r)
    f.runtime_forward(x.data() + r * ld, y.data() + r * ld, cols, opts);
  EXPECT_TRUE(same_bits(y, want_runtime)) << "runtime single row";
  y = fill;
  {
    strided<T> xe(const_cast<T*>(x.data()), rows, cols, Eigen::OuterStride<>(ld));
    strided<T> ye(y.data(), rows, cols, Eigen::OuterStride<>(ld));
    f.eigen_forward(xe, ye, opts);
  }
  EXPECT_TRUE(same_bits(y, want)) << "Eigen";
#if defined(SMAX_HAS_SPAN)
  y = fill;
  for (std::size_t r = 0; r < rows; ++r)
    f.span_forward(std::span<const T>(x.data() + r * ld, cols),
                   std::span<T>(y.data() + r * ld, cols), opts);
  EXPECT_TRUE(same_bits(y, want)) << "span";
#endif

  // Backward from that output.
  auto dwant = fill, dwant_runtime = fill, dx = fill;
  typename Family::grads g_want{}, g{};
  typename Family::grads* gp = nullptr;
  typename Family::grads* gwp = nullptr;
  if constexpr (Family::backward_form == shape::from_input_with_grads) gp = &g, gwp = &g_want;
  smax::api::backward<Family, header>(x.data(), ld, want.data(), ld, dy.data(), ld, dwant.data(),
                                      ld, rows, cols, opts, gwp);
  smax::api::backward<Family, chosen>(x.data(), ld, want_runtime.data(), ld, dy.data(), ld,
                                      dwant_runtime.data(), ld, rows, cols, opts, nullptr);
  expect_close(dwant_runtime, dwant, "runtime backward against header-only");
  auto run_backward = [&](auto const& single, auto const& batched, auto const& out,
                          std::vector<T> const& yv) {
    dx = fill;
    if constexpr (reads_x) {
      if constexpr (Family::backward_form == shape::from_input_with_grads)
        batched(x.data(), yv.data(), dy.data(), dx.data(), rows, cols, ld, opts, gp);
      else
        batched(x.data(), yv.data(), dy.data(), dx.data(), rows, cols, ld, opts);
    } else {
      batched(yv.data(), dy.data(), dx.data(), rows, cols, ld, opts);
    }
    EXPECT_TRUE(same_bits(dx, out)) << "backward _rows";
    dx = fill;
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t o = r * ld;
      if constexpr (reads_x)
        single(x.data() + o, yv.data() + o, dy.data() + o, dx.data() + o, cols, opts);
      else
        single(yv.data() + o, dy.data() + o, dx.data() + o, cols, opts);
    }
    EXPECT_TRUE(same_bits(dx, out)) << "backward single row";
  };
  run_backward(f.backward, f.backward_rows, dwant, want);
  if constexpr (Family::backward_form == shape::from_input_with_grads)
    EXPECT_EQ(std::memcmp(&g, &g_want, sizeof g), 0) << "parameter gradients of _rows";
  run_backward(f.runtime_backward, f.runtime_backward_rows, dwant_runtime, want_runtime);
  dx = fill;
  {
    strided<T> xe(const_cast<T*>(x.data()), rows, cols, Eigen::OuterStride<>(ld));
    strided<T> ye(const_cast<T*>(want.data()), rows, cols, Eigen::OuterStride<>(ld));
    strided<T> dye(const_cast<T*>(dy.data()), rows, cols, Eigen::OuterStride<>(ld));
    strided<T> dxe(dx.data(), rows, cols, Eigen::OuterStride<>(ld));
    if constexpr (Family::backward_form == shape::from_input_with_grads) {
      g = {};
      f.eigen_backward(xe, ye, dye, dxe, opts, &g);
      EXPECT_EQ(std::memcmp(&g, &g_want, sizeof g), 0) << "Eigen parameter gradients";
    } else if constexpr (reads_x) {
      f.eigen_backward(xe, ye, dye, dxe, opts);
    } else {
      f.eigen_backward(ye, dye, dxe, opts);
    }
  }
  EXPECT_TRUE(same_bits(dx, dwant)) << "Eigen backward";
}

// The forms of one family, by name.
template <class F, class R, class B, class BR, class RF, class RR, class RB, class RBR, class EF,
          class EB, class SF>
struct forms {
  F forward;
  R rows;
  B backward;
  BR backward_rows;
  RF runtime_forward;
  RR runtime_rows;
  RB runtime_backward;
  RBR runtime_backward_rows;
  EF eigen_forward;
  EB eigen_backward;
  SF span_forward;
};
template <class... L>
forms<L...> make_forms(L... l) {
  return {l...};
}

#define SMAX_MATRIX_LAMBDA(call) [](auto&&... a) { call(a...); }
#define SMAX_MATRIX_TEST(name, extra)                                                              \
  TEST(family_matrix, name) {                                                                      \
    const auto f = make_forms(                                                                     \
        SMAX_MATRIX_LAMBDA(smax::name), SMAX_MATRIX_LAMBDA(smax::name##_rows),                     \
        SMAX_MATRIX_LAMBDA(smax::name##_backward), SMAX_MATRIX_LAMBDA(smax::name##_backward_rows), \
        SMAX_MATRIX_LAMBDA(smax::runtime::name), SMAX_MATRIX_LAMBDA(smax::runtime::name##_rows),   \
        SMAX_MATRIX_LAMBDA(smax::runtime::name##_backward),                                        \
        SMAX_MATRIX_LAMBDA(smax::runtime::name##_backward_rows), SMAX_MATRIX_LAMBDA(smax::name),   \
        SMAX_MATRIX_LAMBDA(smax::name##_backward), SMAX_MATRIX_LAMBDA(smax::name));                \
    check_family<smax::api::name##_family, float>(f);                                              \
    check_family<smax::api::name##_family, double>(f);                                             \
  }
SMAX_FAMILIES(SMAX_MATRIX_TEST)

// zero_masked_rows means the same in every normalising family: a row of only -inf gives 0 (-inf
// for log-softmax) instead of NaN, the other rows are as without the option, and the backward
// pass of such a row gives 0 (log-softmax: dy/T, its true derivative). Header-only and runtime.
using smax_test::has_zero_masked_rows;

// The value a family writes to an all-masked row with zero_masked_rows: 0 unless it says otherwise
// (log-domain families whose masking this layer does).
template <class Family>
constexpr double masked_row_of() {
  if constexpr (Family::masks_rows)
    return Family::masked_row;
  else
    return 0.0;
}

template <class Family, class Dispatch, class T>
void check_zero_masked_rows(const char* name) {
  using shape = smax::api::backward_shape;
  if constexpr (has_zero_masked_rows<typename Family::options>::value) {
    const T inf = std::numeric_limits<T>::infinity();
    const bool log = std::is_same<Family, smax::api::log_softmax_family>::value;
    const T masked_fill = log ? -inf : static_cast<T>(masked_row_of<Family>());
    auto x = random_matrix<T>(4);
    for (std::size_t c = 0; c < ld; ++c) x[1 * ld + c] = -inf;  // row 1: all masked
    x[2 * ld + 3] = -inf;                                       // row 2: one masked entry
    typename Family::options plain = sample_options<Family>::get(), zeroed = plain;
    zeroed.zero_masked_rows = true;
    std::vector<T> y(rows * ld, T(-7)), want(rows * ld, T(-7));
    smax::api::forward<Family, Dispatch>(x.data(), ld, y.data(), ld, rows, cols, zeroed);
    smax::api::forward<Family, Dispatch>(x.data(), ld, want.data(), ld, rows, cols, plain);
    for (std::size_t c = 0; c < cols; ++c) {
      EXPECT_TRUE(std::isnan(want[ld + c])) << name << ": an all -inf row is NaN by default";
      EXPECT_EQ(y[ld + c], masked_fill) << name;
      EXPECT_EQ(y[c], want[c]) << name;
      EXPECT_EQ(y[2 * ld + c], want[2 * ld + c]) << name;
    }
    for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(y[ld + c], T(-7)) << name << ": past cols";
    const auto dy = random_matrix<T>(5);
    std::vector<T> dx(rows * ld, T(-7));
    typename Family::grads grads{};
    smax::api::backward<Family, Dispatch>(
        x.data(), ld, y.data(), ld, dy.data(), ld, dx.data(), ld, rows, cols, zeroed,
        Family::backward_form == shape::from_input_with_grads ? &grads : nullptr);
    for (std::size_t c = 0; c < cols; ++c)
      EXPECT_EQ(dx[ld + c], log ? dy[ld + c] : T(0)) << name << ": backward of an all-masked row";
    for (std::size_t c = 0; c < cols; ++c) {
      EXPECT_TRUE(std::isfinite(dx[c]) && std::isfinite(dx[2 * ld + c])) << name;
    }
  }
}

#define SMAX_MATRIX_ZERO_ROWS(name, extra)                                                 \
  check_zero_masked_rows<smax::api::name##_family, smax::api::header_only, float>(#name);  \
  check_zero_masked_rows<smax::api::name##_family, smax::api::header_only, double>(#name); \
  check_zero_masked_rows<smax::api::name##_family, smax::runtime::dispatch::chosen, float>(#name);
TEST(family_matrix, zero_masked_rows){SMAX_FAMILIES(SMAX_MATRIX_ZERO_ROWS)}

// The extra forms: the online state (softmax) and sparsemax's threshold and loss, header-only
// and runtime.
TEST(family_matrix, extra_forms) {
  const auto x = random_matrix<float>(3);
  float y[cols], z[cols];
  const auto s = smax::online_reduce(x.data(), cols),
             sr = smax::runtime::online_reduce(x.data(), cols);
  EXPECT_NEAR(s.sum, sr.sum, 1e-5 * s.sum);
  smax::online_normalize(s, x.data(), y, cols);
  smax::runtime::online_log_normalize(sr, x.data(), z, cols);
  for (std::size_t i = 0; i < cols; ++i) EXPECT_NEAR(std::log(y[i]), z[i], 1e-5);
  const auto t = smax::sparsemax_tau(x.data(), cols),
             tr = smax::runtime::sparsemax_tau(x.data(), cols);
  EXPECT_EQ(t.support_size, tr.support_size);
  EXPECT_NEAR(t.tau, tr.tau, 1e-5);
  EXPECT_NEAR(smax::sparsemax_loss(x.data(), cols, 5),
              smax::runtime::sparsemax_loss(x.data(), cols, 5), 1e-5);
  smax::sparsemax_loss_backward(x.data(), cols, 5, 1.0f, y);
  smax::runtime::sparsemax_loss_backward(x.data(), cols, 5, 1.0f, z);
  for (std::size_t i = 0; i < cols; ++i) EXPECT_NEAR(y[i], z[i], 1e-5);
}

}  // namespace

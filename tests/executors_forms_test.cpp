// Executors through the stamped forms (docs/threads.md): for every family of <smax/families.hpp>,
// header-only and smax::runtime, the rows forms, the single-row forms and the backward rows forms
// with an executor as their last argument give the bits of the same forms without one; the
// algorithm-tag forms take an executor too. (Split from executors_test.cpp: the header-only forms
// compile every family's kernels into this file, which the two cores now build beside the other.)

#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "executors_support.hpp"
#include "test_support.hpp"

namespace {

// The stamped forms (header-only and smax::runtime), for every family: the rows forms and the
// single-row forms with an executor give the bits of the same forms without one.
template <class Family, class T, class Forms>
void check_stamped_forms(const char* name, Forms const& f) {
  using grads_t = typename Family::grads;
  constexpr auto shape = Family::backward_form;
  constexpr std::size_t rows = batch_rows_of<T>(), cols = batch_cols, ld = batch_ld;
  const auto opts = options_for<Family>();
  const auto x = random_matrix<T>(rows * ld, 3), dy = random_matrix<T>(rows * ld, 4);
  const odd_executor ex;
  for (int runtime = 0; runtime < 2; ++runtime) {
    const std::string what = std::string(name) + (runtime ? " (runtime)" : " (header-only)");
    std::vector<T> want(rows * ld, T(-7)), y(rows * ld, T(-7));
    f.rows(runtime, x.data(), want.data(), rows, cols, ld, opts);
    f.rows(runtime, x.data(), y.data(), rows, cols, ld, opts, ex);
    EXPECT_TRUE(same_bits(y, want)) << what << " _rows";
    std::vector<T> single(cols), single_ex(cols);
    f.forward(runtime, x.data(), single.data(), cols, opts);
    f.forward(runtime, x.data(), single_ex.data(), cols, opts, ex);
    EXPECT_TRUE(same_bits(single_ex, single)) << what << " single row";

    std::vector<T> dwant(rows * ld, T(-7)), dx(rows * ld, T(-7));
    grads_t gwant{}, g{};
    if constexpr (shape == backward_shape::from_output) {
      f.backward_rows(runtime, want.data(), dy.data(), dwant.data(), rows, cols, ld, opts);
      f.backward_rows(runtime, want.data(), dy.data(), dx.data(), rows, cols, ld, opts, ex);
    } else if constexpr (shape == backward_shape::from_input) {
      f.backward_rows(runtime, x.data(), want.data(), dy.data(), dwant.data(), rows, cols, ld,
                      opts);
      f.backward_rows(runtime, x.data(), want.data(), dy.data(), dx.data(), rows, cols, ld, opts,
                      ex);
    } else {
      f.backward_rows(runtime, x.data(), want.data(), dy.data(), dwant.data(), rows, cols, ld, opts,
                      &gwant);
      f.backward_rows(runtime, x.data(), want.data(), dy.data(), dx.data(), rows, cols, ld, opts,
                      &g, ex);
      EXPECT_EQ(std::memcmp(&g, &gwant, sizeof g), 0) << what << " parameter gradients";
    }
    EXPECT_TRUE(same_bits(dx, dwant)) << what << " backward _rows";
  }
}

template <class F, class R, class BR>
struct forms {
  F forward;
  R rows;
  BR backward_rows;
};
template <class... L>
forms<L...> make_forms(L... l) {
  return {l...};
}

// Each form as a generic lambda taking `runtime` first.
#define SMAX_EXECUTORS_FORM(name)                     \
  [](bool runtime, auto&&... a) {                    \
    if (runtime)                                      \
      smax::runtime::name(a...);                      \
    else                                              \
      smax::name(a...);                               \
  }
#define SMAX_EXECUTORS_STAMPED(name, extra)                                                      \
  TEST(executors_forms, name) {                                                                  \
    const auto f = make_forms(SMAX_EXECUTORS_FORM(name), SMAX_EXECUTORS_FORM(name##_rows),       \
                              SMAX_EXECUTORS_FORM(name##_backward_rows));                        \
    check_stamped_forms<smax::api::name##_family, float>(#name, f);                              \
    check_stamped_forms<smax::api::name##_family, double>(#name, f);                             \
  }
SMAX_FAMILIES(SMAX_EXECUTORS_STAMPED)
#undef SMAX_EXECUTORS_STAMPED

// The algorithm-tag forms take an executor too (a batch splits by rows; the tag is kept).
TEST(executors_forms, algorithm_tags) {
  const auto x = random_matrix<float>(batch_rows * batch_ld, 5);
  std::vector<float> want(x.size(), -7.f), y(x.size(), -7.f);
  smax::softmax_rows(smax::online, x.data(), want.data(), batch_rows, batch_cols, batch_ld);
  smax::softmax_rows(smax::online, x.data(), y.data(), batch_rows, batch_cols, batch_ld, {},
                     thread_executor{3});
  EXPECT_TRUE(same_bits(y, want));
  smax::runtime::log_softmax_rows(smax::two_pass, x.data(), want.data(), batch_rows, batch_cols,
                                  batch_ld);
  smax::runtime::log_softmax_rows(smax::two_pass, x.data(), y.data(), batch_rows, batch_cols,
                                  batch_ld, {}, odd_executor{});
  EXPECT_TRUE(same_bits(y, want));
}

}  // namespace

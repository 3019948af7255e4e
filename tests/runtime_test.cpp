// Runtime dispatch (smax/runtime.hpp): picks the best compiled instruction set the CPU runs,
// gives the same results as that instruction set's kernels, and reports its name.

#include <cstring>

#include <smax/runtime.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

TEST(runtime, picks_an_available_instruction_set) {
  const std::string name = smax::runtime::arch_name();
  std::printf("runtime dispatch -> %s\n", name.c_str());
  // The first entry of the list that this CPU runs, and whether SMAX_FORCE_ARCH names one that
  // is compiled in and available (then it runs; otherwise the best one does, with a message).
  const char* forced = std::getenv("SMAX_FORCE_ARCH");
  const char* best = "header-only";
  bool forced_valid = false;
#define SMAX_TEST_BEST(data, arch, type)                            \
  if (smax::detail::arch_available<type>()) {                       \
    if (!std::strcmp(best, "header-only")) best = #arch;            \
    if (forced && !std::strcmp(forced, #arch)) forced_valid = true; \
  }
  SMAX_COMPILED_ARCHS(SMAX_TEST_BEST, ~)
#undef SMAX_TEST_BEST
  EXPECT_EQ(name, forced_valid ? std::string(forced) : std::string(best));
}

TEST(runtime, same_results_as_the_header_only_api) {
  const auto x = random_row<float>(1234, 20.0, 0.0, 1);
  std::vector<float> a(x.size()), b(x.size());
  smax::runtime::softmax(x.data(), a.data(), x.size());
  smax::softmax(x.data(), b.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-6f * b[i]);
  smax::runtime::log_softmax(smax::two_pass, x.data(), a.data(), x.size());
  smax::log_softmax(x.data(), b.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f);
  std::vector<double> xd(x.begin(), x.end()), yd(x.size());
  smax::runtime::softmax_rows(xd.data(), yd.data(), 2, 617, 617);
  double s = 0;
  for (std::size_t i = 0; i < 617; ++i) s += yd[i];
  EXPECT_NEAR(s, 1.0, 1e-13);
}

// The other families run the chosen instruction set's tables: the same bits as calling them.
TEST(runtime, other_families_use_the_chosen_tables) {
  const auto x = random_row<float>(999, 20.0, 0.0, 4);
  std::vector<float> a(x.size()), b(x.size());
  smax::runtime::dispatch::visit([&](auto arch) {
    using A = decltype(arch);
    smax::runtime::sigmoid(x.data(), a.data(), x.size());
    smax::kernels::sigmoid_table<A>::forward(x.data(), x.size(), b.data(), x.size(), 1, x.size(),
                                             0.0f);
    EXPECT_EQ(a, b) << "sigmoid";
    smax::runtime::ssmax(x.data(), a.data(), x.size());
    smax::kernels::ssmax_table<A>::forward(
        x.data(), x.size(), b.data(), x.size(), 1, x.size(),
        smax::kernels::ssmax_table<A>::lambda(0.43, 0.0, 999.0, static_cast<float*>(nullptr)), 0u);
    EXPECT_EQ(a, b) << "ssmax";
    smax::runtime::sparsemax(x.data(), a.data(), x.size());
    smax::kernels::sparsemax_table<A>::forward(x.data(), x.size(), b.data(), x.size(), 1, x.size(),
                                               smax::kernels::sparsemax_algorithm::automatic);
    EXPECT_EQ(a, b) << "sparsemax";
    smax::runtime::softpick(x.data(), a.data(), x.size());
    smax::kernels::softpick_table<A>::forward(x.data(), x.size(), b.data(), x.size(), 1, x.size(),
                                              1e-8, smax::kernels::softpick_algorithm::automatic);
    EXPECT_EQ(a, b) << "softpick";
    const smax::multimax_options o{{0.1, 0.1, -0.01, 0.01}, {-1, 1, -2, 2}};
    smax::runtime::multimax(x.data(), a.data(), x.size(), o);
    smax::kernels::multimax_table<A>::forward(x.data(), x.size(), b.data(), x.size(), 1, x.size(),
                                              smax::api::multimax_parameters_of<float>(o));
    EXPECT_EQ(a, b) << "multimax";
  });
}

// The backward passes too (dy a second random row, y the forward result).
TEST(runtime, backward_passes_use_the_chosen_tables) {
  const auto x = random_row<float>(777, 20.0, 0.0, 5);
  const auto dy = random_row<float>(777, 2.0, 0.0, 6);
  const std::size_t n = x.size();
  std::vector<float> y(n), a(n), b(n);
  smax::runtime::dispatch::visit([&](auto arch) {
    using A = decltype(arch);
    smax::runtime::sparsemax(x.data(), y.data(), n);
    smax::runtime::sparsemax_backward(y.data(), dy.data(), a.data(), n);
    smax::kernels::sparsemax_table<A>::backward(y.data(), n, dy.data(), n, b.data(), n, 1, n);
    EXPECT_EQ(a, b) << "sparsemax";
    smax::runtime::softpick(x.data(), y.data(), n);
    smax::runtime::softpick_backward(x.data(), y.data(), dy.data(), a.data(), n);
    smax::kernels::softpick_table<A>::backward(x.data(), n, y.data(), n, dy.data(), n, b.data(), n,
                                               1, n, 1e-8);
    EXPECT_EQ(a, b) << "softpick";
    const smax::multimax_options o{{0.1, 0.1, -0.01, 0.01}, {-1, 1, -2, 2}};
    smax::runtime::multimax(x.data(), y.data(), n, o);
    smax::multimax_param_grads g{};
    smax::runtime::multimax_backward(x.data(), y.data(), dy.data(), a.data(), n, o, &g);
    double sums[8] = {};
    smax::kernels::multimax_table<A>::backward(x.data(), n, y.data(), n, dy.data(), n, b.data(), n,
                                               1, n, smax::api::multimax_parameters_of<float>(o),
                                               sums);
    EXPECT_EQ(a, b) << "multimax";
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(g.dt[k], sums[k]) << "dt" << k;
      EXPECT_EQ(g.dr[k], sums[4 + k]) << "dr" << k;
    }
  });
}

}  // namespace

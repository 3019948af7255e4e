// Concurrency: every family called from several threads at once, through smax::runtime:: (whose
// instruction set is chosen on first use: the threads make that first call together) and the
// header-only forms, with mixed sizes (sparsemax rows over 128 use the per-thread scratch buffer,
// calls of 1024 elements or more take the flush-to-zero guard, which writes MXCSR); each result
// must equal the single-threaded one bit for bit. Built and run under ThreadSanitizer in CI.
//
// And the floating-point control state: MXCSR's control bits (rounding, FTZ, DAZ, exception
// masks) are the same after every public call as before, on every path: n = 0, NaN rows, fully
// masked rows, short rows and long rows, with FTZ off and with FTZ already on.

#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace {

// One public call: y = f(x) over a row of n elements (backward passes take x as their gradient).
template <class T>
struct call {
  std::string name;
  std::function<void(const T*, T*, std::size_t)> run;
};

template <class T>
std::vector<call<T>> every_public_call() {
  std::vector<call<T>> c;
  const smax::softmax_options t2{2.0};
  const smax::multimax_options mm{{0.1, 0.1, -0.01, 0.01}, {-1, 1, -2, 2}};
  auto add = [&](std::string name, std::function<void(const T*, T*, std::size_t)> f) {
    c.push_back({std::move(name), std::move(f)});
  };
  // Header-only forms.
  add("softmax", [](const T* x, T* y, std::size_t n) { smax::softmax(x, y, n); });
  add("softmax T=2", [=](const T* x, T* y, std::size_t n) { smax::softmax(x, y, n, t2); });
  add("softmax online",
      [](const T* x, T* y, std::size_t n) { smax::softmax(smax::online, x, y, n); });
  add("softmax two_pass",
      [](const T* x, T* y, std::size_t n) { smax::softmax(smax::two_pass, x, y, n); });
  add("softmax three_pass",
      [](const T* x, T* y, std::size_t n) { smax::softmax(smax::three_pass, x, y, n); });
  add("log_softmax", [](const T* x, T* y, std::size_t n) { smax::log_softmax(x, y, n); });
  add("log_softmax online",
      [](const T* x, T* y, std::size_t n) { smax::log_softmax(smax::online, x, y, n); });
  add("softmax_rows", [](const T* x, T* y, std::size_t n) {
    if (n) smax::softmax_rows(x, y, 2, n / 2, n / 2);
  });
  add("softmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::softmax_backward(x, x, y, n); });
  add("log_softmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::log_softmax_backward(x, x, y, n); });
  add("online state", [](const T* x, T* y, std::size_t n) {
    const auto s =
        smax::merge(smax::online_reduce(x, n / 2), smax::online_reduce(x + n / 2, n - n / 2));
    smax::online_normalize(s, x, y, n);
  });
  add("sparsemax", [](const T* x, T* y, std::size_t n) { smax::sparsemax(x, y, n); });
  add("sparsemax_backward",
      [](const T* x, T* y, std::size_t n) { smax::sparsemax_backward(x, x, y, n); });
  add("sparsemax_loss", [](const T* x, T* y, std::size_t n) {
    if (n) y[0] = smax::sparsemax_loss(x, n, 0);
  });
  add("softpick", [](const T* x, T* y, std::size_t n) { smax::softpick(x, y, n); });
  add("softpick_backward",
      [](const T* x, T* y, std::size_t n) { smax::softpick_backward(x, x, x, y, n); });
  add("multimax", [=](const T* x, T* y, std::size_t n) { smax::multimax(x, y, n, mm); });
  add("multimax_backward",
      [=](const T* x, T* y, std::size_t n) { smax::multimax_backward(x, x, x, y, n, mm); });
  add("ssmax", [](const T* x, T* y, std::size_t n) { smax::ssmax(x, y, n); });
  add("ssmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::ssmax_backward(x, x, x, y, n); });
  add("sigmoid", [](const T* x, T* y, std::size_t n) { smax::sigmoid(x, y, n); });
  add("sigmoid_attention",
      [](const T* x, T* y, std::size_t n) { smax::sigmoid_attention(x, y, n); });
  add("sigmoid_backward",
      [](const T* x, T* y, std::size_t n) { smax::sigmoid_backward(x, x, y, n); });
  add("stablemax", [](const T* x, T* y, std::size_t n) { smax::stablemax(x, y, n); });
  add("stablemax_backward",
      [](const T* x, T* y, std::size_t n) { smax::stablemax_backward(x, x, x, y, n); });
  add("sa_softmax", [](const T* x, T* y, std::size_t n) { smax::sa_softmax(x, y, n); });
  add("sa_softmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::sa_softmax_backward(x, x, x, y, n); });
  add("softplus_l1",
      [](const T* x, T* y, std::size_t n) { smax::softplus_l1(x, y, n, {64.0}); });
  add("softplus_l1_backward", [](const T* x, T* y, std::size_t n) {
    smax::softplus_l1_backward(x, x, x, y, n, {64.0});
  });
  add("unified_max_softmax", [](const T* x, T* y, std::size_t n) {
    smax::unified_max_softmax(x, y, n, smax::unified_max_options{6.0, -80.0, 80.0});
  });
  // entmax15, entmax_bisect and topk_softmax keep per-thread scratch buffers; adaptive_softmax
  // sets the flush-to-zero guard.
  add("entmax15", [](const T* x, T* y, std::size_t n) { smax::entmax15(x, y, n); });
  add("entmax15_backward",
      [](const T* x, T* y, std::size_t n) { smax::entmax15_backward(x, x, y, n); });
  add("entmax15_loss", [](const T* x, T* y, std::size_t n) {
    if (n) y[0] = smax::entmax15_loss(x, n, 0);
  });
  add("entmax_bisect", [](const T* x, T* y, std::size_t n) { smax::entmax_bisect(x, y, n); });
  add("entmax_bisect alpha=1.3", [](const T* x, T* y, std::size_t n) {
    smax::entmax_bisect(x, y, n, smax::entmax_bisect_options{1.3});
  });
  add("entmax_bisect_backward",
      [](const T* x, T* y, std::size_t n) { smax::entmax_bisect_backward(x, x, y, n); });
  add("topk_softmax", [](const T* x, T* y, std::size_t n) { smax::topk_softmax(x, y, n, {8}); });
  add("topk_softmax k=200",
      [](const T* x, T* y, std::size_t n) { smax::topk_softmax(x, y, n, {200}); });
  add("topk_softmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::topk_softmax_backward(x, x, y, n, {8}); });
  add("adaptive_softmax",
      [](const T* x, T* y, std::size_t n) { smax::adaptive_softmax(x, y, n); });
  add("adaptive_softmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::adaptive_softmax_backward(x, x, x, y, n); });
  // Fused softmax + top-K (its own online pass with a per-block hook): the K = 5 values into y.
  add("softmax_topk", [](const T* x, T* y, std::size_t n) {
    std::int64_t indices[5];
    if (n >= 5) smax::softmax_topk(x, n, 5, y, indices);
  });
  add("gumbel_softmax seeded", [](const T* x, T* y, std::size_t n) {
    smax::gumbel_softmax(x, y, n, smax::gumbel_softmax_options{0.5}, 11, 0);
  });
  // Fused cross-entropy (its own online pass, with the smoothing hook): dx into y, or the loss
  // into y[0].
  add("cross_entropy_with_grad", [](const T* x, T* y, std::size_t n) {
    const std::int64_t t = 0;
    T loss;
    if (n) smax::cross_entropy_with_grad(x, &t, 1, n, n, &loss, y);
  });
  add("cross_entropy smoothing=0.1", [](const T* x, T* y, std::size_t n) {
    const std::int64_t t = static_cast<std::int64_t>(n) - 1;
    if (n) smax::cross_entropy(x, &t, 1, n, n, y, smax::cross_entropy_options{-100, 0.1});
  });
  // Runtime-dispatched forms.
  add("runtime::softmax", [](const T* x, T* y, std::size_t n) { smax::runtime::softmax(x, y, n); });
  add("runtime::softmax online T=2",
      [=](const T* x, T* y, std::size_t n) { smax::runtime::softmax(smax::online, x, y, n, t2); });
  add("runtime::log_softmax",
      [](const T* x, T* y, std::size_t n) { smax::runtime::log_softmax(x, y, n); });
  add("runtime::softmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::runtime::softmax_backward(x, x, y, n); });
  add("runtime::sparsemax",
      [](const T* x, T* y, std::size_t n) { smax::runtime::sparsemax(x, y, n); });
  add("runtime::sparsemax_backward",
      [](const T* x, T* y, std::size_t n) { smax::runtime::sparsemax_backward(x, x, y, n); });
  add("runtime::softpick",
      [](const T* x, T* y, std::size_t n) { smax::runtime::softpick(x, y, n); });
  add("runtime::softpick_backward",
      [](const T* x, T* y, std::size_t n) { smax::runtime::softpick_backward(x, x, x, y, n); });
  add("runtime::multimax",
      [=](const T* x, T* y, std::size_t n) { smax::runtime::multimax(x, y, n, mm); });
  add("runtime::multimax_backward", [=](const T* x, T* y, std::size_t n) {
    smax::runtime::multimax_backward(x, x, x, y, n, mm);
  });
  add("runtime::ssmax", [](const T* x, T* y, std::size_t n) { smax::runtime::ssmax(x, y, n); });
  add("runtime::ssmax_backward",
      [](const T* x, T* y, std::size_t n) { smax::runtime::ssmax_backward(x, x, x, y, n); });
  add("runtime::sigmoid", [](const T* x, T* y, std::size_t n) { smax::runtime::sigmoid(x, y, n); });
  add("runtime::sigmoid_attention",
      [](const T* x, T* y, std::size_t n) { smax::runtime::sigmoid_attention(x, y, n); });
  add("runtime::sigmoid_backward",
      [](const T* x, T* y, std::size_t n) { smax::runtime::sigmoid_backward(x, x, y, n); });
  add("runtime::entmax15", [](const T* x, T* y, std::size_t n) { smax::runtime::entmax15(x, y, n); });
  add("runtime::entmax_bisect",
      [](const T* x, T* y, std::size_t n) { smax::runtime::entmax_bisect(x, y, n); });
  add("runtime::topk_softmax",
      [](const T* x, T* y, std::size_t n) { smax::runtime::topk_softmax(x, y, n, {8}); });
  add("runtime::adaptive_softmax",
      [](const T* x, T* y, std::size_t n) { smax::runtime::adaptive_softmax(x, y, n); });
  add("runtime::sa_softmax",
      [](const T* x, T* y, std::size_t n) { smax::runtime::sa_softmax(x, y, n); });
  add("runtime::gumbel_softmax seeded", [](const T* x, T* y, std::size_t n) {
    smax::runtime::gumbel_softmax(x, y, n, smax::gumbel_softmax_options{0.5}, 11, 0);
  });
  add("runtime::cross_entropy_with_grad smoothing=0.1", [](const T* x, T* y, std::size_t n) {
    const std::int64_t t = 0;
    T loss;
    if (n)
      smax::runtime::cross_entropy_with_grad(x, &t, 1, n, n, &loss, y,
                                             smax::cross_entropy_options{-100, 0.1});
  });
  add("runtime::cross_entropy_backward", [](const T* x, T* y, std::size_t n) {
    const std::int64_t t = static_cast<std::int64_t>(n / 2);
    const T dloss = T(0.5);
    if (n) smax::runtime::cross_entropy_backward(x, &t, &dloss, y, 1, n, n);
  });
  return c;
}

// Mixed sizes: short rows, one past sparsemax's sort limit (128), around the flush guard's 1024,
// and a row long enough for the blocked passes.
constexpr std::size_t sizes[] = {1, 7, 16, 100, 129, 300, 1023, 1024, 3000, 20000};

template <class T>
std::vector<T> row(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-8, 8);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(u(rng));
  if (n > 3) x[n / 3] = -std::numeric_limits<T>::infinity();  // a mask
  return x;
}

bool same_bits(std::vector<float> const& a, std::vector<float> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(threads, every_family_concurrently_equals_single_threaded) {
  const auto calls = every_public_call<float>();
  std::vector<std::vector<float>> inputs;
  for (std::size_t n : sizes) inputs.push_back(row<float>(n, static_cast<unsigned>(n)));
  const std::size_t jobs = calls.size() * inputs.size();
  constexpr unsigned thread_count = 4, rounds = 3;

  // The threads run first, so that the runtime's first-use choice of instruction set happens
  // among them; the single-threaded results are computed after they finish.
  std::vector<std::vector<std::vector<float>>> got(thread_count,
                                                   std::vector<std::vector<float>>(jobs));
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < thread_count; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < thread_count) std::this_thread::yield();
      for (unsigned r = 0; r < rounds; ++r)
        for (std::size_t k = 0; k < jobs; ++k) {
          // A different order per thread: shifted, and reversed for odd threads (a permutation of the jobs).
          const std::size_t shifted = (k + t * 7 + r) % jobs;
          const std::size_t j = t % 2 ? jobs - 1 - shifted : shifted;
          auto const& x = inputs[j % inputs.size()];
          std::vector<float> y(x.size(), -1.f);
          calls[j / inputs.size()].run(x.data(), y.data(), x.size());
          if (r == rounds - 1 || got[t][j].empty()) got[t][j] = std::move(y);
        }
    });
  for (auto& th : threads) th.join();

  for (std::size_t j = 0; j < jobs; ++j) {
    auto const& x = inputs[j % inputs.size()];
    std::vector<float> want(x.size(), -1.f);
    calls[j / inputs.size()].run(x.data(), want.data(), x.size());
    for (unsigned t = 0; t < thread_count; ++t)
      EXPECT_TRUE(same_bits(got[t][j], want))
          << calls[j / inputs.size()].name << ", n = " << x.size() << ", thread " << t;
  }
}

// A new thread per call: the sparsemax scratch buffer is created and released with each thread.
TEST(threads, short_lived_threads_with_sparsemax_scratch) {
  const auto x = row<float>(5000, 3);
  std::vector<float> want(x.size());
  smax::runtime::sparsemax(x.data(), want.data(), x.size());
  for (int round = 0; round < 8; ++round) {
    std::vector<std::vector<float>> y(4, std::vector<float>(x.size()));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        if (t % 2)
          smax::runtime::sparsemax(x.data(), y[t].data(), x.size());
        else
          smax::sparsemax(x.data(), y[t].data(), x.size());
      });
    for (auto& th : threads) th.join();
    std::vector<float> header_only(x.size());
    smax::sparsemax(x.data(), header_only.data(), x.size());
    for (int t = 0; t < 4; ++t)
      EXPECT_TRUE(same_bits(y[t], t % 2 ? want : header_only)) << "thread " << t;
  }
}

#if defined(__x86_64__) || defined(__i386__)
// MXCSR's control bits (everything but the six sticky exception flags, which arithmetic sets).
unsigned control_bits() {
  return _mm_getcsr() & ~0x3Fu;
}

template <class T>
void check_mxcsr_after_every_call() {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  struct input {
    const char* what;
    std::vector<T> x;
  };
  std::vector<input> inputs = {{"n = 0", {}}, {"n = 1", {T(2)}}};
  for (std::size_t n : {std::size_t(17), std::size_t(1024), std::size_t(5000)}) {
    inputs.push_back({"ordinary", row<T>(n, 5)});
    auto x = row<T>(n, 6);
    x[n / 2] = nan;
    inputs.push_back({"NaN", x});
    x = row<T>(n, 7);
    x[n - 1] = inf;
    inputs.push_back({"+inf", x});
    inputs.push_back({"all masked", std::vector<T>(n, -inf)});
  }
  const unsigned saved = _mm_getcsr();
  for (unsigned start :
       {saved & ~0x8040u, saved | 0x8000u, saved | 0x8040u}) {  // FTZ/DAZ off, FTZ on, both on
    for (auto const& c : every_public_call<T>())
      for (auto const& in : inputs) {
        std::vector<T> y(in.x.size() + 1);
        _mm_setcsr(start);
        c.run(in.x.data(), y.data(), in.x.size());
        const unsigned after = control_bits();
        _mm_setcsr(saved);
        EXPECT_EQ(after, start & ~0x3Fu) << c.name << ", " << in.what << ", n = " << in.x.size()
                                         << ", MXCSR before " << std::hex << start;
      }
  }
}

TEST(mxcsr, unchanged_after_every_public_call_float) {
  check_mxcsr_after_every_call<float>();
}
TEST(mxcsr, unchanged_after_every_public_call_double) {
  check_mxcsr_after_every_call<double>();
}
#endif

}  // namespace

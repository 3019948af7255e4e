#pragma once
// What the executor tests share (executors_test.cpp, executors_forms_test.cpp): executors that run
// tasks on threads (a pool, an odd uneven one, a counting one), the kernels of one instruction
// set as a dispatcher, options with terms in every gradient, random matrices, a bit comparison
// and a batch shape of 9 tasks. Each includer gets its own copy (an unnamed namespace).

#include <smax/smax.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

namespace {
using smax::api::backward_shape;

// A pool of threads - 1 workers kept for the whole run (new threads for every call would cost
// more than the calls); the caller works too. Each call hands the task function to every worker
// and waits until all of them have left it, so a late worker never runs a stale one.
class thread_pool {
 public:
  explicit thread_pool(unsigned threads) {
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { serve(); });
  }
  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }
  void run(std::size_t tasks, std::function<void(std::size_t)> const& f) {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &f;
    tasks_ = tasks;
    next_ = 0;
    busy_ = workers_.size();
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    work();
    lock.lock();
    done_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
  }

 private:
  void work() {
    for (std::size_t t; (t = next_.fetch_add(1)) < tasks_;) (*job_)(t);
  }
  void serve() {
    unsigned seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      lock.unlock();
      work();
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void(std::size_t)> const* job_ = nullptr;
  std::size_t tasks_ = 0, busy_ = 0;
  std::atomic<std::size_t> next_{0};
  unsigned generation_ = 0;
  bool stop_ = false;
};

// Runs the tasks on `threads` threads (the caller and threads - 1 pool workers), each taking the
// next task from a shared counter.
struct thread_executor {
  unsigned threads;
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    static std::mutex pools_mutex;
    static std::unique_ptr<thread_pool> pools[9];
    thread_pool* pool;
    {
      std::lock_guard<std::mutex> lock(pools_mutex);
      if (!pools[threads]) pools[threads] = std::make_unique<thread_pool>(threads);
      pool = pools[threads].get();
    }
    pool->run(tasks, std::function<void(std::size_t)>(std::ref(f)));
  }
};

// Tasks in reverse order, split unevenly: a second thread runs the last two thirds from the end
// backwards while the caller runs the first third, also backwards.
struct odd_executor {
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    const std::size_t split = tasks / 3;
    std::thread other([&] {
      for (std::size_t t = tasks; t-- > split;) f(t);
    });
    for (std::size_t t = split; t-- > 0;) f(t);
    other.join();
  }
};

// Counts its calls and runs the tasks in order.
struct counting_executor {
  std::size_t* calls;
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    ++*calls;
    for (std::size_t t = 0; t < tasks; ++t) f(t);
  }
};

// The kernels of one instruction set A, as a dispatcher for api::forward / api::backward.
template <class A>
struct on_arch {
  template <class F>
  static decltype(auto) visit(F&& f) noexcept {
    return f(A{});
  }
};

using smax_test::sample_options;
using smax_test::has_zero_masked_rows;

// MultiMax's options are all 0 by default (softmax): give its parameter gradients terms to sum.
template <class Family>
typename Family::options options_for() {
  auto o = sample_options<Family>::get();
  if constexpr (std::is_same<Family, smax::api::multimax_family>::value)
    o = smax::multimax_options{{0.1, 0.1, -0.01, 0.01}, {-1, 1, -2, 2}};
  return o;
}

template <class T>
std::vector<T> random_matrix(std::size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<T> m(size);
  for (auto& v : m) v = static_cast<T>(u(rng));
  return m;
}

template <class T>
bool same_bits(std::vector<T> const& a, std::vector<T> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// A batch of 9 tasks (plan_rows), the last one half full, with padding between rows (ld > cols)
// that no call may write.
constexpr std::size_t batch_cols = 200, batch_ld = 203;
template <class T>
constexpr std::size_t batch_rows_of() {
  constexpr std::size_t per_task = smax::api::task_grain_bytes / (batch_cols * sizeof(T));
  return 8 * per_task + per_task / 2;
}
constexpr std::size_t batch_rows = batch_rows_of<float>();

}  // namespace

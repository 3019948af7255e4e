// Softmax over the middle axis of a row-major outer × n × inner tensor (docs/axis.md) beside the
// same number of elements normalised along the last axis, and beside what a user does without
// the axis form: transpose to outer × inner × n, softmax_rows, transpose back (plain loops, the
// copy an Eigen user's .transpose() makes). Names:
//   softmax_axis/smax/<outer>x<n>x<inner>        smax::softmax_axis
//   softmax_axis/last_axis/<outer>x<n>x<inner>   smax::softmax_rows on outer·inner rows of n
//   softmax_axis/transpose/<outer>x<n>x<inner>   transpose, softmax_rows, transpose back
// Shapes from the issue: 64 × 1000 × 64 and 1 × 4096 × 256 (16 MiB and 4 MiB of floats, inputs
// uniform on [-8, 8]). The axis and transposed results are checked against each other before
// timing: within 2e-6 relative, both being within softmax's 1e-6 of the exact value (the axis
// form's native kernel sums in another order than the rows form). Bytes: x read and y written
// once.

#include <cmath>
#include <string>
#include <vector>

#include <smax/softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

struct axis_shape {
  std::size_t outer, n, inner;
};
const axis_shape axis_shapes[] = {{64, 1000, 64}, {1, 4096, 256}};

std::string name_of(axis_shape s) {
  return std::to_string(s.outer) + "x" + std::to_string(s.n) + "x" + std::to_string(s.inner);
}

// outer × a × b to outer × b × a.
void transpose(const float* from, float* to, std::size_t outer, std::size_t a, std::size_t b) {
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < a; ++i)
      for (std::size_t j = 0; j < b; ++j) to[(o * b + j) * a + i] = from[(o * a + i) * b + j];
}

enum class axis_impl { smax, last_axis, transpose };

void axis_call(axis_impl impl, axis_shape s, const float* x, float* y, std::vector<float>& tmp) {
  switch (impl) {
    case axis_impl::smax:
      smax::softmax_axis(x, y, s.outer, s.n, s.inner);
      return;
    case axis_impl::last_axis:
      smax::softmax_rows(x, y, s.outer * s.inner, s.n, s.n);
      return;
    case axis_impl::transpose:
      transpose(x, tmp.data(), s.outer, s.n, s.inner);
      smax::softmax_rows(tmp.data(), tmp.data(), s.outer * s.inner, s.n, s.n);
      transpose(tmp.data(), y, s.outer, s.inner, s.n);
      return;
  }
}

void run_axis(benchmark::State& state, axis_impl impl, axis_shape s) {
  const std::size_t elements = s.outer * s.n * s.inner;
  buffers b(elements, from_memory(elements));
  std::vector<float> tmp(elements);
  if (impl != axis_impl::last_axis) {
    std::vector<float> want(elements);
    axis_call(axis_impl::transpose, s, b.in(), want.data(), tmp);
    axis_call(impl, s, b.in(), b.out(), tmp);
    for (std::size_t k = 0; k < elements; ++k)
      if (!(std::fabs(b.out()[k] - want[k]) <= 2e-6f * want[k])) {
        state.SkipWithError("softmax_axis differs from the transposed rows form");
        return;
      }
  }
  for (auto _ : state) {
    axis_call(impl, s, b.in(), b.out(), tmp);
    benchmark::DoNotOptimize(b.out());
    b.advance();
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(elements));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(elements) * 8);
}

const bool registered = [] {
  for (axis_shape s : axis_shapes) {
    const std::string n = name_of(s);
    register_benchmark("softmax_axis/smax/" + n,
                       [s](benchmark::State& st) { run_axis(st, axis_impl::smax, s); });
    register_benchmark("softmax_axis/last_axis/" + n,
                       [s](benchmark::State& st) { run_axis(st, axis_impl::last_axis, s); });
    register_benchmark("softmax_axis/transpose/" + n,
                       [s](benchmark::State& st) { run_axis(st, axis_impl::transpose, s); });
  }
  return true;
}();

}  // namespace

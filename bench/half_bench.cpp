// Softmax on 16-bit tensors (smax::bf16, smax::fp16; docs/half.md) beside smax's float softmax on
// the same number of elements and beside a copy of the 16-bit data (memcpy: the memory roof of
// a pass that reads x once and writes y once). Names:
//   softmax_bf16/smax/<shape>     smax::softmax_rows on bf16 x and y
//   softmax_fp16/smax/<shape>     the same on fp16
//   softmax_bf16/float/<shape>    smax::softmax_rows on float x and y (the same values)
//   softmax_bf16/copy/<shape>     memcpy of the bf16 x to y
//   softmax_bf16/onednn/<shape>   oneDNN's softmax on bf16 x and y (where this build has oneDNN
//                                 and oneDNN has a bf16 softmax for the machine)
//   convert/<narrow|widen>_<bf16|fp16>/32768
//                                 the conversions alone (smax::kernels::convert_table of the
//                                 build's instruction set), on a row that stays in L2
// Shapes: one row of 1000, 32768 and 16M elements, and 4096x1024; inputs uniform on [-8, 8],
// rotated through buffers larger than the last-level cache when the data is (bench_support.hpp).
// The 16-bit results are checked before timing: each equals the float result rounded (rows up to
// the float tile) or is within one ulp of it (the chunked long row). Bytes: x read and y written
// once, at the element size of the row timed.

#include <cstdint>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include <smax/softmax.hpp>

#include "anchors/anchors.hpp"
#include "bench_support.hpp"

namespace {

using namespace smax_bench;

struct half_shape {
  std::size_t rows, cols;
};
const half_shape half_shapes[] = {{1, 1000}, {1, 32768}, {1, 16777216}, {4096, 1024}};

std::string name_of(half_shape s) {
  return s.rows == 1 ? std::to_string(s.cols) : std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

enum class half_impl { smax, as_float, copy, onednn };

// Copies of the input and output, enough of them to leave the last-level cache between calls
// when one copy does not fit in a quarter of it.
template <class E>
struct rotating {
  std::vector<bench_vector<E>> x, y;
  std::size_t next = 0;
  explicit rotating(std::size_t elements) {
    const std::size_t bytes = 2 * elements * sizeof(E);
    const std::size_t copies =
        bytes > last_level_cache_bytes() / 4 ? 2 * last_level_cache_bytes() / bytes + 1 : 1;
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);
    x.resize(copies);
    y.assign(copies, bench_vector<E>(elements));
    for (auto& v : x) {
      v.resize(elements);
      for (auto& e : v) e = E(u(rng));
    }
  }
  void advance() { next = next + 1 == x.size() ? 0 : next + 1; }
};

template <class H>
void run_half(benchmark::State& state, half_impl impl, half_shape s) {
  const std::size_t elements = s.rows * s.cols;
  if (impl == half_impl::as_float) {
    rotating<float> b(elements);
    for (auto _ : state) {
      smax::softmax_rows(b.x[b.next].data(), b.y[b.next].data(), s.rows, s.cols, s.cols);
      benchmark::DoNotOptimize(b.y[b.next].data());
      b.advance();
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(elements) * 8);
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(elements));
    return;
  }
  rotating<H> b(elements);
#if defined(SMAX_BENCH_HAVE_ONEDNN)
  if (impl == half_impl::onednn) {
    try {
      smax_bench::anchors::onednn_softmax onednn(s.rows, s.cols, false, true);
      state.SetLabel(onednn.implementation());
      for (auto _ : state) {
        onednn.run(b.x[b.next].data(), b.y[b.next].data());
        benchmark::DoNotOptimize(b.y[b.next].data());
        b.advance();
      }
      state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(elements) * 4);
      state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(elements));
    } catch (std::exception const& e) {
      state.SkipWithError((std::string("oneDNN has no bf16 softmax here: ") + e.what()).c_str());
    }
    return;
  }
#endif
  if (impl == half_impl::smax) {
    std::vector<float> xf(elements), yf(elements);
    for (std::size_t i = 0; i < elements; ++i) xf[i] = float(b.x[0][i]);
    smax::softmax_rows(xf.data(), yf.data(), s.rows, s.cols, s.cols);
    smax::softmax_rows(b.x[0].data(), b.y[0].data(), s.rows, s.cols, s.cols);
    for (std::size_t i = 0; i < elements; ++i) {
      const int d = int(b.y[0][i].to_bits()) - int(H(yf[i]).to_bits());
      if (d < -1 || d > 1) {
        state.SkipWithError("the 16-bit softmax differs from the rounded float softmax");
        return;
      }
    }
  }
  for (auto _ : state) {
    if (impl == half_impl::smax)
      smax::softmax_rows(b.x[b.next].data(), b.y[b.next].data(), s.rows, s.cols, s.cols);
    else
      std::memcpy(b.y[b.next].data(), b.x[b.next].data(), elements * sizeof(H));
    benchmark::DoNotOptimize(b.y[b.next].data());
    b.advance();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(elements) * 4);
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(elements));
}

template <class H>
void run_convert(benchmark::State& state, bool narrow) {
  constexpr std::size_t n = 32768;
  std::vector<float> f(n);
  std::vector<H> h(n);
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(-8.0f, 8.0f);
  for (std::size_t i = 0; i < n; ++i) {
    f[i] = u(rng);
    h[i] = H(f[i]);
  }
  using table = smax::kernels::convert_table<xsimd::default_arch>;
  for (auto _ : state) {
    if (narrow)
      table::narrow(f.data(), h.data(), n);
    else
      table::widen(h.data(), f.data(), n);
    benchmark::DoNotOptimize(f.data());
    benchmark::DoNotOptimize(h.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(n) * 6);
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(n));
}

const bool registered = [] {
  register_benchmark("convert/narrow_bf16/32768",
                     [](benchmark::State& st) { run_convert<smax::bf16>(st, true); });
  register_benchmark("convert/widen_bf16/32768",
                     [](benchmark::State& st) { run_convert<smax::bf16>(st, false); });
  register_benchmark("convert/narrow_fp16/32768",
                     [](benchmark::State& st) { run_convert<smax::fp16>(st, true); });
  register_benchmark("convert/widen_fp16/32768",
                     [](benchmark::State& st) { run_convert<smax::fp16>(st, false); });
  for (half_shape s : half_shapes) {
    const std::string n = name_of(s);
    register_benchmark("softmax_bf16/smax/" + n, [s](benchmark::State& st) {
      run_half<smax::bf16>(st, half_impl::smax, s);
    });
    register_benchmark("softmax_fp16/smax/" + n, [s](benchmark::State& st) {
      run_half<smax::fp16>(st, half_impl::smax, s);
    });
    register_benchmark("softmax_bf16/float/" + n, [s](benchmark::State& st) {
      run_half<smax::bf16>(st, half_impl::as_float, s);
    });
    register_benchmark("softmax_bf16/copy/" + n, [s](benchmark::State& st) {
      run_half<smax::bf16>(st, half_impl::copy, s);
    });
#if defined(SMAX_BENCH_HAVE_ONEDNN)
    register_benchmark("softmax_bf16/onednn/" + n, [s](benchmark::State& st) {
      run_half<smax::bf16>(st, half_impl::onednn, s);
    });
#endif
  }
  return true;
}();

}  // namespace

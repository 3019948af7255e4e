// softmax: smax's algorithms beside the anchors, one thread each, same inputs (U[-8, 8]).
// Names: softmax/<implementation>/<n> and softmax/<implementation>/4096x1024.

#include <smax/runtime.hpp>
#include <smax/softmax.hpp>

#include "anchors/anchors.hpp"
#include "bench_support.hpp"

namespace {

using namespace smax_bench;
namespace anchors = smax_bench::anchors;

// smax through the header-only API (this binary is built for the machine, -march=native).
template <class Algorithm>
kernel smax_kernel(std::size_t rows, std::size_t cols, Algorithm algorithm, bool log) {
  return [=](const float* x, float* y) {
    if (log)
      smax::log_softmax_rows(algorithm, x, y, rows, cols, cols);
    else
      smax::softmax_rows(algorithm, x, y, rows, cols, cols);
  };
}

// smax's kernels for one instruction set (from the dispatch translation units).
template <class Arch>
kernel smax_arch_kernel(std::size_t rows, std::size_t cols, bool log) {
  return [=](const float* x, float* y) {
    smax::kernels::softmax_table<Arch>::forward(x, cols, y, cols, rows, cols, 1.0f,
                                                log ? smax::kernels::flag_log : 0u,
                                                smax::kernels::algorithm_id::automatic);
  };
}

}  // namespace

// Registers one family (softmax or log_softmax), and its latency benchmarks
// (<family>_latency/...); called for both from this file and log_softmax_bench.cpp.
void register_softmax_family(const std::string& family, bool log) {
  const auto smax_header_only = [=](std::size_t r, std::size_t c) -> kernel {
    return [=](const float* x, float* y) {
      if (log)
        smax::log_softmax_rows(x, y, r, c, c);
      else
        smax::softmax_rows(x, y, r, c, c);
    };
  };
  register_family(family, "smax", log, smax_header_only);
  register_latency(family, "smax", log, smax_header_only);
  register_family(
      family, "smax_three_pass", log,
      [=](std::size_t r, std::size_t c) { return smax_kernel(r, c, smax::three_pass, log); },
      false);
  register_family(
      family, "smax_online", log,
      [=](std::size_t r, std::size_t c) { return smax_kernel(r, c, smax::online, log); }, false);
  register_family(
      family, "smax_two_pass", log,
      [=](std::size_t r, std::size_t c) { return smax_kernel(r, c, smax::two_pass, log); }, false);
#if defined(SMAX_DISPATCH_AVX2)
  if (smax::detail::arch_available<xsimd::fma3<xsimd::avx2>>()) {
    const auto smax_avx2 = [=](std::size_t r, std::size_t c) {
      return smax_arch_kernel<xsimd::fma3<xsimd::avx2>>(r, c, log);
    };
    register_family(family, "smax_avx2", log, smax_avx2);
    register_latency(family, "smax_avx2", log, smax_avx2);
  }
#endif
#if defined(SMAX_DISPATCH_AVX512BW)
  // The AVX-512 table without the header-only API around it: beside smax_avx2, the cost of the
  // instruction set alone at each row length (rows of at most 16 floats run 256-bit kernels
  // inside it too).
  if (smax::detail::arch_available<xsimd::avx512bw>()) {
    const auto smax_avx512 = [=](std::size_t r, std::size_t c) {
      return smax_arch_kernel<xsimd::avx512bw>(r, c, log);
    };
    register_family(family, "smax_avx512", log, smax_avx512);
    register_latency(family, "smax_avx512", log, smax_avx512);
  }
#endif
#if defined(SMAX_BENCH_HAVE_ONEDNN)
  const auto onednn = [=](std::size_t r, std::size_t c) -> kernel {
    auto primitive = std::make_shared<anchors::onednn_softmax>(r, c, log);
    return [primitive](const float* x, float* y) { primitive->run(x, y); };
  };
  register_family(family, "onednn", log, onednn);
  register_latency(family, "onednn", log, onednn);
#endif
#if defined(SMAX_BENCH_HAVE_XNNPACK)
  if (!log)
    register_family(family, "xnnpack", log, [=](std::size_t r, std::size_t c) -> kernel {
      auto op = std::make_shared<anchors::xnnpack_softmax>(r, c, false);
      return [op](const float* x, float* y) { op->run(x, y); };
    });
#endif
#if defined(SMAX_BENCH_HAVE_EIGEN)
  register_family(family, "eigen", log, [=](std::size_t r, std::size_t c) -> kernel {
    return [=](const float* x, float* y) { anchors::eigen_softmax(x, y, r, c, log); };
  });
#endif
  const auto fast_math = [=](std::size_t r, std::size_t c) -> kernel {
    return [=](const float* x, float* y) { anchors::fast_math_softmax(x, y, r, c, log); };
  };
  register_family(family, "fast_math", log, fast_math);
  register_latency(family, "fast_math", log, fast_math);
  register_family(family, "scalar_reference", log, [=](std::size_t r, std::size_t c) -> kernel {
    return [=](const float* x, float* y) { anchors::scalar_reference_softmax(x, y, r, c, log); };
  });
}

namespace {
const bool registered = [] {
  register_softmax_family("softmax", false);
  return true;
}();
}  // namespace

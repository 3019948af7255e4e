// Benchmark anchors: the competitor softmax implementations smax is measured against.
//
// Every anchor is float32 over row-major, contiguous rows (leading dimension == cols) and lives
// in its own translation unit, so the flags one of them needs (-ffast-math, a library's headers)
// never reach smax's code or another anchor. This header is plain C++17 and includes no
// third-party header.
//
// Availability. The oneDNN, XNNPACK, Eigen and PyTorch anchors are compiled only when CMake finds
// their package, and then CMake defines SMAX_BENCH_HAVE_ONEDNN / SMAX_BENCH_HAVE_XNNPACK /
// SMAX_BENCH_HAVE_EIGEN / SMAX_BENCH_HAVE_TORCH. When a macro is absent, that anchor's class or
// function is NOT declared, so a driver guards its use with `#if defined(SMAX_BENCH_HAVE_...)`;
// the softmax `anchor` records below exist in every build and say what was compiled in.
//
// Threads. Every anchor runs on the calling thread only. oneDNN (OpenMP runtime in Debian) is
// limited to one OpenMP thread for the thread that constructs an `onednn_softmax`; see there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace smax_bench::anchors {

/// What one softmax anchor is, for listing and naming benchmarks uniformly.
struct anchor {
  const char* name;    ///< implementation part of a benchmark name (`softmax/<name>/<n>`)
  bool available;      ///< compiled into this build (its dependency was found)
  bool log_supported;  ///< offers log-softmax as well as softmax
};

#if defined(SMAX_BENCH_HAVE_ONEDNN)
inline constexpr bool have_onednn = true;
#else
inline constexpr bool have_onednn = false;
#endif
#if defined(SMAX_BENCH_HAVE_XNNPACK)
inline constexpr bool have_xnnpack = true;
#else
inline constexpr bool have_xnnpack = false;
#endif
#if defined(SMAX_BENCH_HAVE_EIGEN)
inline constexpr bool have_eigen = true;
#else
inline constexpr bool have_eigen = false;
#endif

inline constexpr anchor onednn_anchor{"onednn", have_onednn, true};
// XNNPACK (2022) has no log-softmax operator.
inline constexpr anchor xnnpack_anchor{"xnnpack", have_xnnpack, false};
inline constexpr anchor eigen_anchor{"eigen", have_eigen, true};
inline constexpr anchor fast_math_anchor{"fast_math", true, true};
inline constexpr anchor scalar_reference_anchor{"scalar_reference", true, true};

/// Every softmax anchor, compiled in or not, in the order benchmarks list them.
inline constexpr anchor all_anchors[] = {onednn_anchor, xnnpack_anchor, eigen_anchor,
                                         fast_math_anchor, scalar_reference_anchor};

#if defined(SMAX_BENCH_HAVE_ONEDNN)
/// oneDNN `softmax_v2_forward` (algorithm softmax_accurate, or softmax_log when `log`),
/// forward_inference, axis 1 of a rows x cols `ab` tensor, CPU engine.
///
/// The constructor pays the whole setup (engine, stream, primitive descriptor, JIT code);
/// `run` only rebinds the two data handles and executes, then waits on the stream.
///
/// One thread: oneDNN's OpenMP runtime reads OMP_NUM_THREADS when it is loaded, long before
/// main, so setting the variable from the program is too late. The constructor instead calls
/// the very `omp_set_num_threads(1)` oneDNN uses (looked up at run time, see onednn.cpp). It is
/// an OpenMP per-thread setting: call `run` on the thread that constructed the object.
///
/// Instruction set: oneDNN picks its ISA at run time. Unless DNNL_MAX_CPU_ISA or
/// ONEDNN_MAX_CPU_ISA is set in the environment, the first construction caps it at the widest
/// ISA this library is compiled for (AVX-512 -> avx512_core, AVX2 -> avx2, else sse41), so the
/// anchor and smax use the same vector width. `implementation()` tells what was chosen.
class onednn_softmax {
 public:
  /// bf16: x and y hold bfloat16 (oneDNN's bf16 softmax; it throws where oneDNN has none).
  onednn_softmax(std::size_t rows, std::size_t cols, bool log, bool bf16 = false);
  ~onednn_softmax();
  onednn_softmax(onednn_softmax&&) noexcept;
  onednn_softmax& operator=(onednn_softmax&&) noexcept;
  onednn_softmax(const onednn_softmax&) = delete;
  onednn_softmax& operator=(const onednn_softmax&) = delete;

  /// y = softmax (or log-softmax) of each row of x; x and y hold rows * cols floats (or
  /// bfloat16 values).
  void run(const void* x, void* y);
  /// oneDNN's implementation name, e.g. "jit:avx2".
  const char* implementation() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};
#endif

#if defined(SMAX_BENCH_HAVE_XNNPACK)
/// XNNPACK `softmax_nc_f32` operator (Debian's 2022 snapshot), no thread pool.
///
/// The constructor initialises XNNPACK once per process and creates the operator; `run` calls
/// `xnn_setup_softmax_nc_f32` only when the pointers differ from the previous call (setup binds
/// pointers, as an inference graph does once) and then `xnn_run_operator`.
/// XNNPACK has no log-softmax: `log == true` throws std::invalid_argument.
/// Like oneDNN it picks its ISA at run time (through cpuinfo); it cannot be capped.
class xnnpack_softmax {
 public:
  xnnpack_softmax(std::size_t rows, std::size_t cols, bool log);
  ~xnnpack_softmax();
  xnnpack_softmax(xnnpack_softmax&&) noexcept;
  xnnpack_softmax& operator=(xnnpack_softmax&&) noexcept;
  xnnpack_softmax(const xnnpack_softmax&) = delete;
  xnnpack_softmax& operator=(const xnnpack_softmax&) = delete;

  /// y = softmax of each row of x; x and y hold rows * cols floats.
  void run(const float* x, float* y);

 private:
  struct state;
  std::unique_ptr<state> state_;
};
#endif

#if defined(SMAX_BENCH_HAVE_EIGEN)
/// The idiomatic Eigen 3.4 expression over a row-major `Map`, untuned, row by row:
/// softmax `y = (x - x.maxCoeff()).exp(); y /= y.sum();`
/// log     `y = x - x.maxCoeff(); y -= std::log(y.exp().sum());`
/// (The whole-matrix `.colwise()` broadcast form cannot vectorise Eigen's exp; see eigen.cpp.)
void eigen_softmax(const float* x, float* y, std::size_t rows, std::size_t cols, bool log);
#endif

#if defined(SMAX_BENCH_HAVE_TORCH)
/// PyTorch's cross-entropy (libtorch, Debian's 1.13) on a rows x cols batch of logits with one
/// int64 target per row, no weights, ignore_index -100, reduction none, forward and backward,
/// on one thread (at::set_num_threads(1) in the constructor):
/// - form::autograd: `F.cross_entropy(x, t, reduction=none).backward(ones)` through autograd, as a
///   training step runs it; the gradient is autograd's own tensor (`gradient()`), allocated by
///   each call, and `dx` is not written.
/// - form::aten_out: the ATen operators that F.cross_entropy composes (_log_softmax, nll_loss
///   forward and backward, _log_softmax_backward_data) into preallocated outputs, `dx` included:
///   PyTorch's best case from C++.
class torch_cross_entropy {
 public:
  enum class form { autograd, aten_out };
  torch_cross_entropy(std::size_t rows, std::size_t cols, form how);
  ~torch_cross_entropy();
  torch_cross_entropy(torch_cross_entropy&&) noexcept;
  torch_cross_entropy& operator=(torch_cross_entropy&&) noexcept;
  torch_cross_entropy(const torch_cross_entropy&) = delete;
  torch_cross_entropy& operator=(const torch_cross_entropy&) = delete;

  /// losses[r] = logsumexp(x_r) - x_r[t_r]; dx = d(sum of losses)/dx (aten_out only).
  void run(const float* x, const std::int64_t* targets, float* losses, float* dx);
  /// The last autograd call's gradient (rows x cols), or nullptr for aten_out.
  const float* gradient() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};
#endif

/// The plain three-pass loop, per row: max; y = expf(x - max) while summing; y *= 1 / sum
/// (log: max; sum of expf(x - max); y = x - max - logf(sum)). Built in its own translation unit
/// with -O3 -ffast-math (and -march=native when supported), so the compiler vectorises expf
/// through glibc's libmvec and reassociates the sums.
void fast_math_softmax(const float* x, float* y, std::size_t rows, std::size_t cols, bool log);

/// The scalar reference: three plain passes, exp and sums in double, no fast-math; per row
/// y = exp(x - max) / sum (log: y = (x - max) - log(sum)), each rounded once to float.
/// It is the accuracy ground truth; its time is a floor, not a competitor.
void scalar_reference_softmax(const float* x, float* y, std::size_t rows, std::size_t cols,
                              bool log);

/// Copy roof: y = x over n floats with non-temporal stores (_mm256_stream_ps when __AVX__,
/// else _mm_stream_ps), then _mm_sfence. Moves the bytes a two-pass softmax must move at least
/// (read n, write n) and sets the out-of-cache time floor.
void copy_roof(const float* x, float* y, std::size_t n);

/// Sum roof: the sum of n floats with several independent vector accumulators; the time floor
/// of one read-only pass (a max or sum pass).
float sum_roof(const float* x, std::size_t n);

}  // namespace smax_bench::anchors

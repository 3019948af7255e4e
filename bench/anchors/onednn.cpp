// oneDNN anchor: softmax_v2_forward, one thread, ISA matched to this build's compile flags.
//
// softmax_v2 covers softmax and log-softmax with one descriptor (algorithm softmax_accurate or
// softmax_log); in oneDNN 2.6 the older softmax_forward and logsoftmax_forward descriptors are
// converted to it and land on the same jit_uni_softmax kernels, and 3.x keeps only this form.
#include "anchors.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP && DNNL_CPU_RUNTIME != DNNL_RUNTIME_SEQ
#error "the oneDNN anchor forces one thread only for the OpenMP and sequential runtimes"
#endif

namespace smax_bench::anchors {
namespace {

// The widest ISA this translation unit is compiled for: oneDNN dispatches at run time and would
// otherwise use AVX-512 on a machine that has it even when smax is built for AVX2.
constexpr dnnl_cpu_isa_t compiled_isa() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
  return dnnl_cpu_isa_avx512_core;
#elif defined(__AVX2__) && defined(__FMA__)
  return dnnl_cpu_isa_avx2;
#else
  return dnnl_cpu_isa_sse41;
#endif
}

// Runs once, before the first primitive exists (oneDNN accepts an ISA cap only before its
// first ISA query).
void cap_isa_once() {
  static const bool done = [] {
    if (std::getenv("DNNL_MAX_CPU_ISA") == nullptr &&
        std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) {
      // A failure means oneDNN was already used elsewhere in the process; the
      // implementation name reported by `implementation()` still tells what runs.
      static_cast<void>(dnnl_set_max_cpu_isa(compiled_isa()));
    }
    return true;
  }();
  static_cast<void>(done);
}

// Limits oneDNN to one OpenMP thread for the calling thread.
//
// OMP_NUM_THREADS is read when the OpenMP runtime is loaded, before main, so the program cannot
// set it for itself. Linking OpenMP ourselves is no better: clang would bring LLVM's libomp while
// Debian's oneDNN is built against GCC's libgomp, and omp_set_num_threads on one runtime does not
// reach the other. Looking the symbol up in the global scope finds the runtime oneDNN's own calls
// bind to, whichever it is.
void use_one_openmp_thread() {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  using set_num_threads_fn = void (*)(int);
  using get_max_threads_fn = int (*)();
  static const auto set_num_threads =
      reinterpret_cast<set_num_threads_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static const auto get_max_threads =
      reinterpret_cast<get_max_threads_fn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (set_num_threads == nullptr || get_max_threads == nullptr) {
    throw std::runtime_error("oneDNN anchor: OpenMP runtime not found in the process");
  }
  set_num_threads(1);
  if (get_max_threads() != 1) {
    throw std::runtime_error("oneDNN anchor: could not limit OpenMP to one thread");
  }
#endif
}

}  // namespace

struct onednn_softmax::state {
  dnnl::engine engine;
  dnnl::stream stream;
  dnnl::softmax_v2_forward primitive;
  dnnl::memory src;
  dnnl::memory dst;
  // Built once: execute() takes the map by reference and the memory objects are handles, so
  // rebinding their data pointers needs no new map per call.
  std::unordered_map<int, dnnl::memory> args;
  std::string implementation;
};

onednn_softmax::onednn_softmax(std::size_t rows, std::size_t cols, bool log, bool bf16) {
  cap_isa_once();
  use_one_openmp_thread();

  auto s = std::make_unique<state>();
  s->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
  s->stream = dnnl::stream(s->engine);

  const dnnl::memory::desc md(
      {static_cast<dnnl::memory::dim>(rows), static_cast<dnnl::memory::dim>(cols)},
      bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32,
      dnnl::memory::format_tag::ab);
  const auto algorithm = log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  const dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, md, md,
                                            /*softmax_axis=*/1);
  const dnnl::softmax_v2_forward::primitive_desc pd(desc, s->engine);
  s->primitive = dnnl::softmax_v2_forward(pd);
  s->implementation = pd.impl_info_str();

  // DNNL_MEMORY_NONE: the user's buffers are bound per run, oneDNN allocates nothing.
  s->src = dnnl::memory(md, s->engine, DNNL_MEMORY_NONE);
  s->dst = dnnl::memory(md, s->engine, DNNL_MEMORY_NONE);
  s->args = {{DNNL_ARG_SRC, s->src}, {DNNL_ARG_DST, s->dst}};
  state_ = std::move(s);
}

onednn_softmax::~onednn_softmax() = default;
onednn_softmax::onednn_softmax(onednn_softmax&&) noexcept = default;
onednn_softmax& onednn_softmax::operator=(onednn_softmax&&) noexcept = default;

void onednn_softmax::run(const void* x, void* y) {
  // oneDNN never writes a source; its handle type is simply not const.
  state_->src.set_data_handle(const_cast<void*>(x));
  state_->dst.set_data_handle(y);
  state_->primitive.execute(state_->stream, state_->args);
  state_->stream.wait();
}

const char* onednn_softmax::implementation() const {
  return state_->implementation.c_str();
}

}  // namespace smax_bench::anchors

// Fused cross-entropy forward + backward beside what a user of smax writes without it: smax's own
// log_softmax_rows into a rows × cols buffer z, the gather loss_r = -z[r, t_r], then
// log_softmax_backward_rows(z, dy, dx) with dy = -onehot(t) (a zero buffer whose target entries
// are set before and cleared after the call: the baseline is not charged for filling dy).
// One thread, 64 rows, uniform logits on [-8, 8] (bench_support.hpp), targets spread over the
// row, no smoothing. Names: cross_entropy/smax/<cols> (cross_entropy_with_grad),
// cross_entropy/log_softmax_gather/<cols>, and where libtorch is installed PyTorch's
// F.cross_entropy forward + backward through autograd (cross_entropy/pytorch/<cols>) and its ATen
// operators into preallocated outputs (cross_entropy/pytorch_aten_out/<cols>; anchors.hpp);
// cols = 32000, 128000, 256000 (the batch is 8 to 64 MiB: read from memory). Each is checked
// against smax's (losses within 1e-5 relative, dx within 1e-6 absolute; smax's against the
// log-softmax baseline) before it is timed. Bytes processed: x read and dx written once per
// element.

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <smax/cross_entropy.hpp>
#include <smax/log_softmax.hpp>

#include "anchors/anchors.hpp"
#include "bench_support.hpp"

namespace {

using namespace smax_bench;

constexpr std::size_t batch_rows = 64;

struct cross_entropy_buffers {
  std::vector<std::int64_t> targets;
  std::vector<float> losses;
  std::vector<float> dx;
  std::vector<float> z;   // the baseline's log-softmax
  std::vector<float> dy;  // the baseline's upstream gradient of z (zero but at the targets)
};

// Each implementation returns where its dx is (b.dx, or a tensor of PyTorch's).
const float* smax_fused(const float* x, std::size_t cols, cross_entropy_buffers& b) {
  smax::cross_entropy_with_grad(x, b.targets.data(), batch_rows, cols, cols, b.losses.data(),
                                b.dx.data());
  return b.dx.data();
}

const float* log_softmax_gather(const float* x, std::size_t cols, cross_entropy_buffers& b) {
  smax::log_softmax_rows(x, b.z.data(), batch_rows, cols, cols);
  for (std::size_t r = 0; r < batch_rows; ++r) {
    const std::size_t at = r * cols + static_cast<std::size_t>(b.targets[r]);
    b.losses[r] = -b.z[at];
    b.dy[at] = -1.0f;
  }
  smax::log_softmax_backward_rows(b.z.data(), b.dy.data(), b.dx.data(), batch_rows, cols, cols);
  for (std::size_t r = 0; r < batch_rows; ++r)
    b.dy[r * cols + static_cast<std::size_t>(b.targets[r])] = 0.0f;
  return b.dx.data();
}

using cross_entropy_kernel =
    std::function<const float*(const float*, std::size_t, cross_entropy_buffers&)>;

cross_entropy_buffers make_buffers(std::size_t cols, bool baseline) {
  cross_entropy_buffers b;
  for (std::size_t r = 0; r < batch_rows; ++r)
    b.targets.push_back(static_cast<std::int64_t>((r * 7919) % cols));
  b.losses.assign(batch_rows, 0.0f);
  b.dx.assign(batch_rows * cols, 0.0f);
  if (baseline) {
    b.z.assign(batch_rows * cols, 0.0f);
    b.dy.assign(batch_rows * cols, 0.0f);
  }
  return b;
}

// kernel: the implementation timed; baseline: it needs the log-softmax buffers (z, dy).
void run_cross_entropy(benchmark::State& state, std::size_t cols, cross_entropy_kernel const& run,
                       bool is_smax, bool baseline = false) {
  const std::size_t elements = batch_rows * cols;
  buffers in(elements, from_memory(elements));
  in.y.clear();  // dx lives in cross_entropy_buffers
  cross_entropy_buffers b = make_buffers(cols, baseline);
  cross_entropy_buffers check = make_buffers(cols, is_smax);
  const float* dx = run(in.in(), cols, b);
  const float* want = (is_smax ? log_softmax_gather : smax_fused)(in.in(), cols, check);
  double worst_loss = 0, worst_dx = 0;
  for (std::size_t r = 0; r < batch_rows; ++r)
    worst_loss = std::fmax(worst_loss, std::fabs(b.losses[r] - check.losses[r]) / check.losses[r]);
  for (std::size_t i = 0; i < elements; ++i)
    worst_dx = std::fmax(worst_dx, std::fabs(dx[i] - want[i]));
  if (!(worst_loss <= 1e-5 && worst_dx <= 1e-6)) {
    state.SkipWithError(("the two implementations differ: loss " + std::to_string(worst_loss) +
                         ", dx " + std::to_string(worst_dx))
                            .c_str());
    return;
  }
  for (auto _ : state) {
    run(in.in(), cols, b);
    benchmark::DoNotOptimize(b.dx.data());
    benchmark::ClobberMemory();
    in.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elements));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * elements * 2 * sizeof(float)));
  state.counters["from_memory"] = from_memory(elements) ? 1 : 0;
}

const bool registered = [] {
  for (std::size_t cols : {std::size_t(32000), std::size_t(128000), std::size_t(256000)}) {
    const std::string label = std::to_string(cols);
    register_benchmark("cross_entropy/smax/" + label,
                       [=](benchmark::State& s) { run_cross_entropy(s, cols, smax_fused, true); })
        ->Unit(benchmark::kMicrosecond);
    register_benchmark("cross_entropy/log_softmax_gather/" + label,
                       [=](benchmark::State& s) {
                         run_cross_entropy(s, cols, log_softmax_gather, false, true);
                       })
        ->Unit(benchmark::kMicrosecond);
#if defined(SMAX_BENCH_HAVE_TORCH)
    using torch_form = anchors::torch_cross_entropy::form;
    for (torch_form how : {torch_form::autograd, torch_form::aten_out}) {
      const std::string name = how == torch_form::autograd ? "pytorch" : "pytorch_aten_out";
      register_benchmark("cross_entropy/" + name + "/" + label, [=](benchmark::State& s) {
        auto torch = std::make_shared<anchors::torch_cross_entropy>(batch_rows, cols, how);
        run_cross_entropy(
            s, cols,
            [torch](const float* x, std::size_t, cross_entropy_buffers& b) -> const float* {
              torch->run(x, b.targets.data(), b.losses.data(), b.dx.data());
              const float* g = torch->gradient();
              return g != nullptr ? g : b.dx.data();
            },
            false);
      })->Unit(benchmark::kMicrosecond);
    }
#endif
  }
  return true;
}();

}  // namespace

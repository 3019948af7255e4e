// PyTorch (libtorch) cross-entropy forward + backward on one thread; see anchors.hpp.
#include "anchors.hpp"

#include <cstring>

#include <torch/torch.h>

namespace smax_bench::anchors {

struct torch_cross_entropy::state {
  std::int64_t rows, cols;
  form how;
  at::Tensor targets, z, losses, total_weight, ones, gz, grad;  // preallocated (aten_out)
};

torch_cross_entropy::torch_cross_entropy(std::size_t rows, std::size_t cols, form how)
    : state_(std::make_unique<state>()) {
  at::set_num_threads(1);
  state& s = *state_;
  s.rows = static_cast<std::int64_t>(rows);
  s.cols = static_cast<std::int64_t>(cols);
  s.how = how;
  s.z = at::empty({s.rows, s.cols}, at::kFloat);
  s.gz = at::empty({s.rows, s.cols}, at::kFloat);
  s.losses = at::empty({s.rows}, at::kFloat);
  s.total_weight = at::empty({}, at::kFloat);
  s.ones = at::ones({s.rows}, at::kFloat);
}
torch_cross_entropy::~torch_cross_entropy() = default;
torch_cross_entropy::torch_cross_entropy(torch_cross_entropy&&) noexcept = default;
torch_cross_entropy& torch_cross_entropy::operator=(torch_cross_entropy&&) noexcept = default;

void torch_cross_entropy::run(const float* x, const std::int64_t* targets, float* losses,
                              float* dx) {
  state& s = *state_;
  const at::Tensor X = torch::from_blob(const_cast<float*>(x), {s.rows, s.cols}, at::kFloat);
  const at::Tensor T =
      torch::from_blob(const_cast<std::int64_t*>(targets), {s.rows}, at::kLong);
  if (s.how == form::autograd) {
    // What a training step runs: F.cross_entropy(x, t, reduction='none').backward(ones); the
    // gradient is a tensor autograd allocates (kept until the next call, so that the copy below
    // is the caller's choice, not part of this time).
    const at::Tensor leaf = X.detach().requires_grad_(true);
    const at::Tensor loss = torch::nn::functional::cross_entropy(
        leaf, T, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    loss.backward(s.ones);
    s.grad = leaf.grad();
    std::memcpy(losses, loss.data_ptr<float>(), sizeof(float) * static_cast<std::size_t>(s.rows));
    (void)dx;
    return;
  }
  // The same ATen operators into preallocated outputs (no allocation in the loop): PyTorch's best
  // case, as a C++ caller of ATen could write it.
  at::Tensor L = torch::from_blob(losses, {s.rows}, at::kFloat);
  at::Tensor DX = torch::from_blob(dx, {s.rows, s.cols}, at::kFloat);
  at::_log_softmax_out(s.z, X, 1, false);
  at::nll_loss_forward_out(L, s.total_weight, s.z, T, {}, at::Reduction::None, -100);
  at::nll_loss_backward_out(s.gz, s.ones, s.z, T, {}, at::Reduction::None, -100, s.total_weight);
  at::_log_softmax_backward_data_out(DX, s.gz, s.z, 1, at::kFloat);
}

const float* torch_cross_entropy::gradient() const {
  return state_->how == form::autograd ? state_->grad.data_ptr<float>() : nullptr;
}

}  // namespace smax_bench::anchors

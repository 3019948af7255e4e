// XNNPACK anchor: the softmax_nc_f32 operator, no thread pool (single thread).
#include "anchors.hpp"

#include <stdexcept>
#include <string>

#include <xnnpack.h>

namespace smax_bench::anchors {
namespace {

void check(xnn_status status, const char* what) {
  if (status != xnn_status_success) {
    throw std::runtime_error(std::string("XNNPACK anchor: ") + what + " failed with status " +
                             std::to_string(static_cast<int>(status)));
  }
}

// xnn_initialize detects the CPU and selects micro-kernels once per process; it is never undone
// because operators may outlive any one anchor object.
void initialize_once() {
  static const xnn_status status = xnn_initialize(/*allocator=*/nullptr);
  check(status, "xnn_initialize");
}

}  // namespace

struct xnnpack_softmax::state {
  xnn_operator_t op = nullptr;
  std::size_t rows = 0;
  const float* bound_x = nullptr;
  float* bound_y = nullptr;

  ~state() {
    if (op != nullptr) {
      xnn_delete_operator(op);
    }
  }
};

xnnpack_softmax::xnnpack_softmax(std::size_t rows, std::size_t cols, bool log) {
  if (log) {
    throw std::invalid_argument("XNNPACK anchor: XNNPACK has no log-softmax operator");
  }
  initialize_once();
  auto s = std::make_unique<state>();
  s->rows = rows;
  check(xnn_create_softmax_nc_f32(/*channels=*/cols, /*input_stride=*/cols,
                                  /*output_stride=*/cols, /*flags=*/0, &s->op),
        "xnn_create_softmax_nc_f32");
  state_ = std::move(s);
}

xnnpack_softmax::~xnnpack_softmax() = default;
xnnpack_softmax::xnnpack_softmax(xnnpack_softmax&&) noexcept = default;
xnnpack_softmax& xnnpack_softmax::operator=(xnnpack_softmax&&) noexcept = default;

void xnnpack_softmax::run(const float* x, float* y) {
  state& s = *state_;
  if (x != s.bound_x || y != s.bound_y) {
    check(xnn_setup_softmax_nc_f32(s.op, s.rows, x, y, /*threadpool=*/nullptr),
          "xnn_setup_softmax_nc_f32");
    s.bound_x = x;
    s.bound_y = y;
  }
  check(xnn_run_operator(s.op, /*threadpool=*/nullptr), "xnn_run_operator");
}

}  // namespace smax_bench::anchors

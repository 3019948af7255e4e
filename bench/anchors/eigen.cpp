// Eigen anchor: the softmax a user writes with Eigen 3.4 array expressions, untuned.
//
// One expression per row, with the row's max and sum as scalars. The whole-matrix form
// `(in.colwise() - in.rowwise().maxCoeff()).exp()` reads just as naturally but runs Eigen's exp
// one scalar at a time (a per-row value replicated along the contiguous direction has no packet
// access), at a quarter of this speed; that would make a straw man, not an anchor.
#include "anchors.hpp"

#include <cmath>

#include <Eigen/Core>

namespace smax_bench::anchors {

void eigen_softmax(const float* x, float* y, std::size_t rows, std::size_t cols, bool log) {
  if (cols == 0) {
    return;  // maxCoeff() of an empty row asserts
  }
  using row_major = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const row_major> in(x, static_cast<Eigen::Index>(rows),
                                       static_cast<Eigen::Index>(cols));
  Eigen::Map<row_major> out(y, in.rows(), in.cols());
  for (Eigen::Index r = 0; r < in.rows(); ++r) {
    const auto x_row = in.row(r);
    auto y_row = out.row(r);
    if (log) {
      y_row = x_row - x_row.maxCoeff();
      y_row -= std::log(y_row.exp().sum());
    } else {
      y_row = (x_row - x_row.maxCoeff()).exp();
      y_row /= y_row.sum();
    }
  }
}

}  // namespace smax_bench::anchors

// smax with Eigen (<smax/eigen.hpp>): softmax of each row of row-major matrices, Maps and blocks,
// without copies; softmax over the columns of a column-major matrix through .transpose(); the
// backward pass. Link smax::smax and Eigen3::Eigen.

#include <smax/eigen.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int main() {
  // Attention scores: softmax over each row.
  RowMatrixXf scores = RowMatrixXf::Random(4, 6) * 5.0f, probs(4, 6);
  smax::softmax(scores, probs);
  // Tags pick the algorithm; blocks and middleRows are views, written where they are.
  smax::log_softmax(smax::online, scores.middleRows(1, 2), probs.middleRows(1, 2));
  smax::softmax(scores, scores);  // in place

  // A column-major matrix (Eigen's default) does not compile here: Eigen would copy it. Its
  // .transpose() is a row-major view of the same memory, so this is the softmax of each COLUMN.
  Eigen::MatrixXf logits = Eigen::MatrixXf::Random(5, 3), column_probs(5, 3);
  smax::softmax(logits.transpose(), column_probs.transpose());
  std::printf("column sums: %g %g %g\n", column_probs.col(0).sum(), column_probs.col(1).sum(),
              column_probs.col(2).sum());

  // A Map over your own buffer, rows 8 floats apart, written in place; a block of a bigger matrix.
  std::vector<float> buffer(3 * 8, 0.0f);
  Eigen::Map<RowMatrixXf, Eigen::Unaligned, Eigen::OuterStride<>> view(buffer.data(), 3, 6,
                                                                       Eigen::OuterStride<>(8));
  smax::softmax(scores.topRows(3), view);
  RowMatrixXf big = RowMatrixXf::Zero(10, 10);
  smax::softmax(scores.block(0, 0, 2, 4), big.block(3, 3, 2, 4));

  // Backward: dx = y ⊙ (dy - <dy, y>) row by row, for y = softmax(x).
  RowMatrixXf dy = RowMatrixXf::Ones(4, 6), dx(4, 6);
  smax::softmax_backward(scores, dy, dx);  // scores now holds softmax values

  const bool ok = (column_probs.colwise().sum().array() - 1.0f).abs().maxCoeff() < 1e-5f &&
                  (view.rowwise().sum().array() - 1.0f).abs().maxCoeff() < 1e-5f &&
                  std::abs(big.sum() - 2.0f) < 1e-5f && dx.cwiseAbs().maxCoeff() < 1e-6f;
  std::printf("rows of the Map sum to 1: %s; gradient of a constant dy is 0: %s\n",
              ok ? "yes" : "no", dx.cwiseAbs().maxCoeff() < 1e-6f ? "yes" : "no");
  return ok ? 0 : 1;
}

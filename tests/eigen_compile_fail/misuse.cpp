// Compile-fail test for smax/eigen.hpp: arguments it cannot take without a copy or that it must
// not write fail to compile with a static_assert that says why. Compiled once per SMAX_CASE by
// ctest (tests/CMakeLists.txt); case 0 is the control and must compile.

#include <smax/eigen.hpp>

#ifndef SMAX_CASE
#define SMAX_CASE 0
#endif

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using row_matrix_d = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int main() {
  row_matrix x(4, 8), y(4, 8);
  const row_matrix cy(4, 8);
  Eigen::MatrixXf c(4, 8);
  float buf[64] = {};
  (void)x, (void)y, (void)cy, (void)c, (void)buf;
#if SMAX_CASE == 0  // control: a const input, a writable Map output, arrays
  using strided = Eigen::Map<row_matrix, 0, Eigen::OuterStride<>>;
  smax::softmax(cy, strided(buf, 4, 8, Eigen::OuterStride<>(16)));
  smax::log_softmax(x.array(), y.array());
  smax::log_softmax_backward(x, cy, y.middleRows(0, 4));
  Eigen::Matrix<Eigen::bfloat16, 4, 8, Eigen::RowMajor> h, g;
  h.setZero();
  smax::softmax(h, g);  // the 16-bit forward form
#elif SMAX_CASE == 1  // const output
  smax::softmax(x, cy);
#elif SMAX_CASE == 2  // read-only Map output
  smax::softmax(x, Eigen::Map<const row_matrix>(buf, 4, 8));
#elif SMAX_CASE == 3  // rows not contiguous: a Map with an inner stride
  smax::softmax(Eigen::Map<Eigen::RowVectorXf, 0, Eigen::InnerStride<2>>(buf, 8), y.row(0));
#elif SMAX_CASE == 4  // rows not contiguous: a row of a column-major matrix
  smax::softmax(c.row(1), y.row(0));
#elif SMAX_CASE == 5  // an expression without storage
  smax::softmax(x + x, y);
#elif SMAX_CASE == 6  // integer scalars
  Eigen::Matrix<int, 2, 3, Eigen::RowMajor> i, j;
  smax::softmax(i, j);
#elif SMAX_CASE == 7  // mixed scalar types
  row_matrix_d d(4, 8);
  smax::softmax(x, d);
#elif SMAX_CASE == 8  // different compile-time shapes
  Eigen::Matrix<float, 2, 4, Eigen::RowMajor> a;
  Eigen::Matrix<float, 3, 4, Eigen::RowMajor> b;
  smax::softmax(a, b);
#elif SMAX_CASE == 9  // a backward pass on 16-bit matrices
  Eigen::Matrix<Eigen::half, 4, 8, Eigen::RowMajor> h, dh, dx;
  smax::softmax_backward(h, dh, dx);
#elif SMAX_CASE == 10  // an algorithm tag on 16-bit matrices
  Eigen::Matrix<Eigen::bfloat16, 4, 8, Eigen::RowMajor> h, g;
  smax::softmax(smax::online, h, g);
#endif
  return 0;
}

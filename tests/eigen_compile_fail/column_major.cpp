// Compile-fail test for smax/eigen.hpp: a column-major argument (matrix, column vector, block of
// either, input or output) must be a compile error whose static_assert tells the user to pass
// .transpose(), never a silent copy. Compiled once per SMAX_CASE by ctest (tests/CMakeLists.txt);
// case 0 is the control and must compile, every other case must fail with that message.

#include <smax/eigen.hpp>

#ifndef SMAX_CASE
#define SMAX_CASE 0
#endif

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int main() {
  Eigen::MatrixXf c(4, 3), out(4, 3);
  row_matrix r(4, 3), q(4, 3);
  Eigen::VectorXf v(5), w(5);
  (void)c, (void)out, (void)r, (void)q, (void)v, (void)w;
#if SMAX_CASE == 0  // control: the spellings the error message recommends
  smax::softmax(c.transpose(), out.transpose());
  smax::softmax(smax::online, c.transpose(), out.transpose());
  smax::log_softmax(r.middleRows(1, 3), q.topRows(3));
  smax::softmax(v.transpose(), w.transpose());
  smax::softmax_backward(c.transpose(), c.transpose(), out.transpose());
#elif SMAX_CASE == 1  // column-major input
  smax::softmax(c, r);
#elif SMAX_CASE == 2  // column-major output
  smax::log_softmax(r, out);
#elif SMAX_CASE == 3  // column vector
  smax::softmax(v, w);
#elif SMAX_CASE == 4  // tag form
  smax::softmax(smax::two_pass, c.block(0, 0, 2, 2), r.block(0, 0, 2, 2));
#elif SMAX_CASE == 5  // backward
  smax::softmax_backward(c, c, out);
#endif
  return 0;
}

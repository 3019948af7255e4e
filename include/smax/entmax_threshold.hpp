#pragma once
// The threshold of an entmax row, shared by 1.5-entmax (entmax15.hpp) and α-entmax by bisection
// (entmax_bisect.hpp): the row's output is y_i = [(α - 1)·x_i - tau]_+^(1/(α - 1)) on the
// unshifted input x (for α = 1.5: y_i = [x_i/2 - tau]_+^2), and support_size counts the entries
// with y_i > 0 in exact arithmetic.

#include <cstddef>

namespace smax {

template <class T>
struct entmax_threshold {
  T tau;
  std::size_t support_size;
};

}  // namespace smax

// Softmax of a row that never exists in one piece: chunks arrive one at a time (from disk, from
// a network, from another kernel) or are reduced on different threads. online_state holds the
// running (max, sum); states merge in any order; a second pass normalises each chunk.

#include <smax/smax.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  // A row of 10000 logits in 4 chunks of different lengths.
  const std::size_t n = 10000, bounds[] = {0, 1000, 3333, 7000, n};
  std::vector<float> row(n);
  for (std::size_t i = 0; i < n; ++i) row[i] = 30.0f * std::sin(0.01f * static_cast<float>(i));

  // Pass 1: reduce each chunk to a state and merge. Any grouping or order gives the same state
  // up to rounding, so chunks may be reduced in parallel and merged afterwards.
  smax::online_state<float> state;  // the identity: (-inf, 0)
  for (std::size_t k = 0; k < 4; ++k) {
    const float* chunk = row.data() + bounds[k];
    const std::size_t len = bounds[k + 1] - bounds[k];
    state = smax::merge(state, smax::online_reduce(chunk, len));
  }
  std::printf("row max %g, sum of exp(x - max) %g\n", state.max, state.sum);

  // Pass 2: normalise each chunk with the merged state: y = exp(x - max) / sum.
  std::vector<float> y(n);
  for (std::size_t k = 0; k < 4; ++k)
    smax::online_normalize(state, row.data() + bounds[k], y.data() + bounds[k],
                           bounds[k + 1] - bounds[k]);
  // online_log_normalize gives the log-softmax the same way. A temperature goes in the options
  // of every call (reduce, merge, normalize) alike.

  // The same as the softmax of the whole row.
  std::vector<float> whole(n);
  smax::softmax(row.data(), whole.data(), n);
  double max_relative_error = 0, sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += y[i];
    if (whole[i] > 0)
      max_relative_error = std::fmax(max_relative_error, std::fabs(y[i] - whole[i]) / whole[i]);
  }
  std::printf("sum %.7f, max relative difference to smax::softmax %.2g\n", sum, max_relative_error);
  return std::fabs(sum - 1.0) < 1e-5 && max_relative_error < 1e-5 ? 0 : 1;
}

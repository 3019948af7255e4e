// The pointer API: softmax of one row, of a batch of rows, with options, and log-softmax.
// Header-only: link smax::smax. The instruction set is the best your compiler flags enable
// (build with -march=native, or -mavx2 -mfma, for the fast path).

#include <smax/smax.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

int main() {
  // One row: probs[i] = exp(logits[i]) / sum_j exp(logits[j]). Huge logits are fine (no overflow).
  const float logits[5] = {1.0f, 2.0f, 3.0f, 4.0f, 1e30f};
  float probs[5];
  smax::softmax(logits, probs, 5);
  std::printf("softmax: %g %g %g %g %g\n", probs[0], probs[1], probs[2], probs[3], probs[4]);

  // A batch: 3 rows of 4 values, row-major, rows ld = 6 floats apart (padding is never touched).
  // -inf masks an entry (probability 0); row 1 is fully masked, as padded attention rows are.
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t rows = 3, cols = 4, ld = 6;
  std::vector<float> x = {0.5f, 1.5f, -inf, 2.0f, 0, 0,
                          -inf, -inf, -inf, -inf, 0, 0,
                          3.0f, 3.0f, 3.0f, 3.0f, 0, 0};
  std::vector<float> y(x.size(), 0.0f);
  smax::softmax_options opts;
  opts.temperature = 0.5;         // y = softmax(x / 0.5): sharper
  opts.zero_masked_rows = true;   // a fully masked row gives 0s instead of NaNs
  smax::softmax_rows(x.data(), y.data(), rows, cols, ld, opts);  // y in place of x also works

  bool ok = true;
  for (std::size_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (std::size_t c = 0; c < cols; ++c) sum += y[r * ld + c];
    std::printf("row %zu sums to %g\n", r, sum);
    ok = ok && std::fabs(sum - (r == 1 ? 0.0f : 1.0f)) < 1e-6f;
  }

  // log-softmax: z = x - log(sum exp x), accurate where log(softmax(x)) would give -inf; what a
  // cross-entropy loss needs. The *_rows form and the options work as above.
  float z[5];
  smax::log_softmax(logits, z, 5);
  std::printf("log_softmax: %g %g %g %g %g\n", z[0], z[1], z[2], z[3], z[4]);
  ok = ok && std::isfinite(z[0]) && z[0] < -1e29f && z[4] == 0.0f;

  // Algorithms are tags; the untagged call picks by row length. Same results within 1e-6.
  smax::softmax(smax::online, logits, probs, 5);
  ok = ok && probs[4] == 1.0f;
  return ok ? 0 : 1;
}

#pragma once
// Known defects the fuzzers step around: each entry is a defect the fuzzers found, reported to
// the lead, with a regression test in tests/fuzz_findings_test.cpp (disabled until its fix lands).
// Each predicate says exactly which inputs the defect covers, and the fuzzers skip (or, where
// stated, bound differently) only those. When a fix is merged, delete its entry and every use of
// it, and enable its test: the fuzzers then hold the code to the documented bound there too.
//
// Nothing else may be added here: a finding that is not one of these items is a new bug.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace smax_fuzz {
namespace known_defects {

// softmax_topk backward, every instruction set, float and double: when <g, y>/T lies beyond T's
// range (g the dvalues scattered to the indices, y = softmax(x/T)), the pass that writes
// -(<g, y>/T)·y folds the factor into softmax's normaliser in T, where it overflows: every entry
// outside the selection becomes NaN, those with y = 0 (dx* = 0 exactly) too, where
// softmax_backward gives 0 and ±inf (found by softmax_topk_fuzz: float x = [0, 1, 0, 1, ...] of
// 2221, k = 1, T = 1e-20, dvalues ~ 1e30: dx[0] NaN, want 0). Regression test
// fuzz_findings.DISABLED_softmax_topk_backward_factor_beyond_range. The fuzzer skips the backward
// check of rows with |<g, y*>|/T above T's largest finite value.
template <class T>
bool softmax_topk_backward_factor_overflows(long double dot_over_t) {
  return std::fabs(dot_over_t) > static_cast<long double>(std::numeric_limits<T>::max());
}

// softmax_topk backward, every instruction set, float and double: an entry whose probability
// y*_i = softmax(x/T)_i is below T's smallest normal number gets dx = 0 (its probability is
// flushed before the product), though dx*_i = y*_i·(g_i - <g, y*>)/T can be a normal number when
// |<g, y*>|/T is large; the header allows only values and gradients below FLT_MIN (DBL_MIN) to be
// flushed (found by softmax_topk_fuzz: double, T = 0.7, x_i - m = -532.4, y*_i = 4.9e-331,
// <g, y*> = -1.2e30: dx_i = 0, dx*_i = 8.5e-301; float x = [0, -100, ...], k = 1, dvalue 1e30:
// dx_1 = 0, dx*_1 = -3.7e-14). Regression test
// fuzz_findings.DISABLED_softmax_topk_backward_tiny_probability. The fuzzer skips the backward
// check of such entries.
template <class T>
bool softmax_topk_backward_probability_flushed(long double y) {
  return y > 0 && y < static_cast<long double>(std::numeric_limits<T>::min());
}

// entmax15, float and double, every instruction set: entries of z = (x - m)/2 at or within one
// ulp of the exact threshold t* are counted in support_size by the exact finish while the write
// pass gives them 0. docs/entmax15.md says an entry exactly at the threshold gives 0 and is not in
// the support, and that support_size counts exactly the entries with a positive difference
// (found by entmax15_fuzz: float [0, 1, 0, 1, 0, 1, 0, 1, 0, -0 x15]: t* = -0.5 exactly, the 20
// entries at z = -0.5 give 0, support_size 24 where 4 outputs are nonzero; double, a row of 135
// holding 4 x3, 3 x4 and 4 - 2^-51: t* = -0.5 - 2^-54 rounds to -0.5, support_size 7, nonzero
// outputs 4, entries above t* 8; every output is within the forward bound). Regression test
// fuzz_findings.DISABLED_entmax15_support_size_at_the_threshold. The fuzzer accepts a
// support_size that differs from the nonzero outputs by at most the number of entries whose z
// (as the kernel rounds it) lies within one ulp of t*.
template <class T>
bool entmax15_support_near_threshold(std::size_t support_size, std::size_t nonzero,
                                     std::size_t near_threshold) {
  const std::size_t difference =
      support_size > nonzero ? support_size - nonzero : nonzero - support_size;
  return difference <= near_threshold;
}

}  // namespace known_defects
}  // namespace smax_fuzz

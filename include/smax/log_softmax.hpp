#pragma once
// log_softmax: z_i = x_i/T - log sum_j exp(x_j/T), with a temperature T > 0 (default 1).
// See docs/softmax.md and docs/edge_cases.md.
//
// Evaluated as (x_i - m)/T - log s with s = sum exp((x_j - m)/T) in [1, n], never as log(y_i)
// (which underflows below -103) and never as x_i - (m + log s) (off by 0.69 for rows holding
// FLT_MAX). Rows longer than four registers sum exp(x - m) without carrying the rounding of
// x - m (it moves log s by at most 2^-24·log n).
//
// Bound block
//   Types:         float, double.
//   Maximum error: float, T = 1: |error| <= 2^-22·(|z_i| + 1 + log n), every algorithm and
//                  instruction set (tests/softmax_test.cpp, against a long-double reference).
//                  double: |error| <= 1e-14·(|z_i| + 1 + log n). With two_pass an output that
//                  should be exactly 0 (n = 1, one dominant entry) comes out near 1e-8, inside
//                  the bound.
//   Valid range:   any finite input up to ±FLT_MAX; results below -FLT_MAX are -inf.
//   Bad input:     as softmax (softmax.hpp), except that masked entries give -inf, and a fully
//                  masked row gives NaN (or -inf everywhere with zero_masked_rows).

#include <cstddef>

#include "softmax.hpp"

SMAX_BEGIN_NAMESPACE
namespace api {
using log_softmax_family = softmax_like_family<true>;
}  // namespace api

// log_softmax([algorithm,] x, y, n [, opts]), log_softmax_rows([algorithm,] x, y, rows, cols, ld
// [, opts]): z = x/T - log sum exp(x/T), the same forms as softmax (the untagged call goes online
// from 64 KiB rows, 16384 floats: its second pass takes no exp).
// log_softmax_backward(z, dy, dx, n [, opts]), log_softmax_backward_rows(...): dx = (1/T)·(dy -
// exp(z)·sum(dy)) for z = log_softmax(x); at a masked entry (z = -inf) dx = dy/T, as PyTorch.
SMAX_FAMILY(log_softmax, api::log_softmax_family, api::header_only)

SMAX_END_NAMESPACE

#pragma once
// Two translation units built with different instruction-set flags (avx2_side.cpp with AVX2 +
// FMA, main.cpp with SSE2 only) pass every option, gradient and result type of every family to
// each other. Those types must be the same type in both, so they live in plain `smax`, outside
// the per-instruction-set inline namespace: were one of them inside it, its name would mangle
// differently on each side and this program would not link.

#include <smax/families.hpp>

namespace cross_isa {

// One function per family, stamped from the list: it takes the family's options and gradient
// types and returns a value that depends on them (defined in avx2_side.cpp).
#define CROSS_ISA_DECLARE(name, extra)                                \
  double name(typename smax::api::name##_family::options const& opts, \
              typename smax::api::name##_family::grads* grads);
SMAX_FAMILIES(CROSS_ISA_DECLARE)
#undef CROSS_ISA_DECLARE

// The types outside the list of families.
double online(smax::online_state<float> const& s, smax::three_pass_t, smax::online_t,
              smax::two_pass_t);
double threshold(smax::sparsemax_threshold<double> const& t);
double cross_entropy(smax::cross_entropy_options const& opts);

}  // namespace cross_isa

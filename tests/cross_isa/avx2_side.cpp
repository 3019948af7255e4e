// Built with -mavx2 -mfma (see cross_isa.hpp).
#include "cross_isa.hpp"

#if !defined(__AVX2__)
#error "this side of the cross-ISA test must be built with AVX2 flags"
#endif

namespace cross_isa {

// Reads a member of each options type that has one, so that the call cannot be folded away.
template <class Options>
double weight(Options const& opts) {
  return static_cast<double>(sizeof opts) +
         (sizeof(Options) > 1 ? 1.0 : 0.0) * reinterpret_cast<const unsigned char*>(&opts)[0];
}

#define CROSS_ISA_DEFINE(name, extra)                                 \
  double name(typename smax::api::name##_family::options const& opts, \
              typename smax::api::name##_family::grads* grads) {      \
    return weight(opts) + (grads ? 1.0 : 0.0);                        \
  }
SMAX_FAMILIES(CROSS_ISA_DEFINE)
#undef CROSS_ISA_DEFINE

double online(smax::online_state<float> const& s, smax::three_pass_t, smax::online_t,
              smax::two_pass_t) {
  return s.sum + s.max;
}
double threshold(smax::sparsemax_threshold<double> const& t) {
  return t.tau + static_cast<double>(t.support_size);
}
double cross_entropy(smax::cross_entropy_options const& opts) {
  return static_cast<double>(opts.ignore_index) + opts.label_smoothing;
}

}  // namespace cross_isa

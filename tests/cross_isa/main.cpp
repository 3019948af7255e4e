// Built for SSE2 only (see cross_isa.hpp): calls avx2_side.cpp's functions with every type.
#include <cstdio>

#include "cross_isa.hpp"

#if defined(__AVX__)
#error "this side of the cross-ISA test must be built without AVX"
#endif

int main() {
  double total = 0;
#define CROSS_ISA_CALL(name, extra)                    \
  {                                                    \
    typename smax::api::name##_family::options opts{}; \
    typename smax::api::name##_family::grads grads{};  \
    total += cross_isa::name(opts, &grads);            \
  }
  SMAX_FAMILIES(CROSS_ISA_CALL)
#undef CROSS_ISA_CALL
  smax::online_state<float> s;
  s.max = 1;
  s.sum = 2;
  total += cross_isa::online(s, smax::three_pass, smax::online, smax::two_pass);
  total += cross_isa::threshold({0.5, 3});
  total += cross_isa::cross_entropy({-100, 0.1}) + 200;  // -99.9 + 200 > 0
  std::printf("cross-ISA calls with every smax type: %g\n", total);
  return total > 0 ? 0 : 1;
}

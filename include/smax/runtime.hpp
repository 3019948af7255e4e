#pragma once
// Runtime-dispatched entry points: smax::runtime::softmax(...) and every other form of every
// family (the same calls, options, results and contract as the header-only API) run the kernels
// of the best instruction set the CPU supports among those compiled in by
// smax_enable_dispatch(<target>) (avx512bw, avx2 (with FMA), sse2; neon64 on AArch64). The choice
// is made once, on first use, and is safe from any number of threads. The environment variable
// SMAX_FORCE_ARCH (avx512bw, avx2, sse2, neon64: the names smax_enable_dispatch takes) forces one;
// a value that is unknown, not compiled in or not supported by this CPU is reported once on
// stderr and the best one runs instead. arch_name() says which one runs. Without
// smax_enable_dispatch these run the header-only kernels (xsimd::default_arch) and arch_name()
// says "header-only".

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "detail/archs.hpp"
#include "families.hpp"

SMAX_BEGIN_NAMESPACE
namespace runtime {
namespace dispatch {

// The instruction sets compiled in (SMAX_COMPILED_ARCHS), and the one chosen.
enum class arch_id : unsigned {
#define SMAX_DETAIL_ARCH_ENUM(data, name, type) name,
  SMAX_COMPILED_ARCHS(SMAX_DETAIL_ARCH_ENUM, ~) header_only
#undef SMAX_DETAIL_ARCH_ENUM
};

struct selection {
  arch_id id;
  const char* name;
};

inline selection select() noexcept {
  selection candidates[8];
  std::size_t count = 0;
#define SMAX_DETAIL_ARCH_CANDIDATE(data, name, type) \
  if (::smax::detail::arch_available<type>()) candidates[count++] = {arch_id::name, #name};
  SMAX_COMPILED_ARCHS(SMAX_DETAIL_ARCH_CANDIDATE, ~)
#undef SMAX_DETAIL_ARCH_CANDIDATE
  if (count == 0) return {arch_id::header_only, "header-only"};
  const char* forced = std::getenv("SMAX_FORCE_ARCH");
  if (forced && *forced) {
    for (std::size_t i = 0; i < count; ++i)
      if (std::strcmp(forced, candidates[i].name) == 0) return candidates[i];
    std::fprintf(stderr,
                 "smax: SMAX_FORCE_ARCH=%s is unknown, not compiled in or not supported by this "
                 "CPU (available:",
                 forced);
    for (std::size_t i = 0; i < count; ++i) std::fprintf(stderr, " %s", candidates[i].name);
    std::fprintf(stderr, "); running %s\n", candidates[0].name);
  }
  return candidates[0];
}

// Chosen once (a function-local static: thread-safe initialisation).
inline selection const& active() noexcept {
  static const selection s = select();
  return s;
}

// f(A{}) for the chosen instruction set A: every family's kernel table<A> is reached this way
// (the tables of the compiled instruction sets are instantiated in their own translation units).
template <class F>
inline decltype(auto) visit(F&& f) noexcept {
  switch (active().id) {
#define SMAX_DETAIL_ARCH_CASE(data, name, type) \
  case arch_id::name:                           \
    return f(type{});
    SMAX_COMPILED_ARCHS(SMAX_DETAIL_ARCH_CASE, ~)
#undef SMAX_DETAIL_ARCH_CASE
    default:
      return f(xsimd::default_arch{});
  }
}

// The dispatcher the family forms take (api::header_only's counterpart).
struct chosen {
  template <class F>
  static decltype(auto) visit(F&& f) noexcept {
    return dispatch::visit(static_cast<F&&>(f));
  }
};

}  // namespace dispatch

// The name of the instruction set the runtime entry points run ("avx512bw", "avx2", "sse2",
// "neon64", or "header-only").
inline const char* arch_name() noexcept {
  return dispatch::active().name;
}

// Every family's forms, stamped from the one list.
#define SMAX_DETAIL_RUNTIME_FORMS(name, extra_forms)              \
  SMAX_FAMILY(name, ::smax::api::name##_family, dispatch::chosen) \
  extra_forms(dispatch::chosen)
SMAX_FAMILIES(SMAX_DETAIL_RUNTIME_FORMS)
#undef SMAX_DETAIL_RUNTIME_FORMS
#define SMAX_DETAIL_RUNTIME_OTHER_FORMS(name, forms, eigen_forms) forms(dispatch::chosen)
SMAX_OTHER_SHAPE_FAMILIES(SMAX_DETAIL_RUNTIME_OTHER_FORMS)
#undef SMAX_DETAIL_RUNTIME_OTHER_FORMS

}  // namespace runtime
SMAX_END_NAMESPACE

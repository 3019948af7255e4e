#pragma once
// The primitives (include/smax/primitives/) as plain functions on raw pointers for one instruction
// set A, so that the tests can check their accuracy on every instruction set compiled in. Test
// only: production never calls them, so they are not members of the kernel tables.
//
// Built as the kernel tables are (docs/dispatch.md): primitive_probe<A> is explicitly
// instantiated once per instruction set of smax_tests, in a translation unit generated from
// tests/primitive_probe_arch.cpp.in and compiled with that instruction set's flags
// (smax_add_primitive_probe in tests/CMakeLists.txt); the extern template declarations at the end
// stop every other translation unit from instantiating it with its own flags. Members are
// therefore defined out of class and not inline.

#include <cstddef>

#include <smax/detail/archs.hpp>
#include <smax/primitives/exp.hpp>
#include <smax/primitives/exp_minus_max.hpp>
#include <smax/primitives/expm1.hpp>
#include <smax/primitives/log.hpp>
#include <smax/primitives/map_reduce.hpp>

namespace smax_test {

template <class A>
struct primitive_probe {
  // y = exp(x) elementwise for x <= 0 (the softmax-domain exp, primitives/exp.hpp).
  static void exp_nonpositive(const float* x, float* y, std::size_t n) noexcept;
  static void exp_nonpositive(const double* x, double* y, std::size_t n) noexcept;
  // y = exp(x - max) with the rounding error of x - max recovered in the given form
  // (primitives::difference_error), so that each form can be checked against TwoSum.
  static void exp_minus_max(const float* x, float* y, std::size_t n, float max,
                            smax::primitives::difference_error form) noexcept;
  static void exp_minus_max(const double* x, double* y, std::size_t n, double max,
                            smax::primitives::difference_error form) noexcept;
  // y = exp(x/T - j·ln2), j = floor(max/T·log2e) (primitives::exp_minus_shift; the scaled form
  // for T != 1, which needs an FMA: without one T is taken as 1).
  static void exp_minus_shift(const float* x, float* y, std::size_t n, float max,
                              float temperature) noexcept;
  static void exp_minus_shift(const double* x, double* y, std::size_t n, double max,
                              double temperature) noexcept;
  // y[i] = log s[i] by primitives::log_of_sum (float log-softmax's log of the sum; the compiler
  // may contract its products, hence a check per instruction set).
  static void log_of_sum(const double* s, double* y, std::size_t n) noexcept;
  // y = expm1(x) elementwise (primitives/expm1.hpp, softpick's term).
  static void expm1(const float* x, float* y, std::size_t n) noexcept;
  static void expm1(const double* x, double* y, std::size_t n) noexcept;
  // y = log x for positive normal x, y = log1p(x) for x >= 0 (primitives/log.hpp, log-StableMax).
  static void log_normal(const float* x, float* y, std::size_t n) noexcept;
  static void log_normal(const double* x, double* y, std::size_t n) noexcept;
  static void log1p_nonnegative(const float* x, float* y, std::size_t n) noexcept;
  static void log1p_nonnegative(const double* x, double* y, std::size_t n) noexcept;
  // y = log1p(x) for x in [0, 1] (softplus + l1's polynomial log1p).
  static void log1p_unit(const float* x, float* y, std::size_t n) noexcept;
  static void log1p_unit(const double* x, double* y, std::size_t n) noexcept;
};

namespace probe_detail {

template <class A, class T>
inline void exp_nonpositive(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  smax::primitives::map<A>(x, y, n,
                           [](batch const& v) { return smax::primitives::exp_nonpositive(v); });
}

template <class A, class T>
inline void exp_minus_max(const T* x, T* y, std::size_t n, T max,
                          smax::primitives::difference_error form) noexcept {
  namespace primitives = smax::primitives;
  using primitives::difference_error;
  auto run = [&](auto const& e) { primitives::map<A>(x, y, n, e); };
  switch (form) {
    case difference_error::max_larger:
      return run(primitives::exp_minus_max<A, T, false, difference_error::max_larger>(max, T(1)));
    case difference_error::x_larger:
      return run(primitives::exp_minus_max<A, T, false, difference_error::x_larger>(max, T(1)));
    case difference_error::dropped:
      return run(primitives::exp_minus_max<A, T, false, difference_error::dropped>(max, T(1)));
    default:
      return run(primitives::exp_minus_max<A, T, false, difference_error::two_sum>(max, T(1)));
  }
}

template <class A, class T>
inline void exp_minus_shift(const T* x, T* y, std::size_t n, T max, T temperature) noexcept {
  namespace primitives = smax::primitives;
  const T inv_t = T(1) / temperature;
  if constexpr (primitives::has_power_of_two_shift<A, true>) {
    if (inv_t != T(1))
      return primitives::map<A>(x, y, n, primitives::exp_minus_shift<A, T, true>(max, inv_t));
  }
  primitives::map<A>(x, y, n, primitives::exp_minus_shift<A, T, false>(max, inv_t));
}

template <class A, class T>
inline void expm1(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  smax::primitives::map<A>(x, y, n, [](batch const& v) { return smax::primitives::expm1(v); });
}

// (primitives::map's padding lanes give unspecified values there, never stored.)
template <class A, class T>
inline void log_normal(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  smax::primitives::map<A>(x, y, n,
                           [](batch const& v) { return smax::primitives::log_normal<A>(v); });
}
template <class A, class T>
inline void log1p_nonnegative(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  smax::primitives::map<A>(
      x, y, n, [](batch const& v) { return smax::primitives::log1p_nonnegative<A>(v); });
}

template <class A, class T>
inline void log1p_unit(const T* x, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  smax::primitives::map<A>(x, y, n,
                           [](batch const& v) { return smax::primitives::log1p_unit<A>(v); });
}

}  // namespace probe_detail

template <class A>
void primitive_probe<A>::exp_nonpositive(const float* x, float* y, std::size_t n) noexcept {
  probe_detail::exp_nonpositive<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::exp_nonpositive(const double* x, double* y, std::size_t n) noexcept {
  probe_detail::exp_nonpositive<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::exp_minus_max(const float* x, float* y, std::size_t n, float max,
                                       smax::primitives::difference_error form) noexcept {
  probe_detail::exp_minus_max<A>(x, y, n, max, form);
}
template <class A>
void primitive_probe<A>::exp_minus_max(const double* x, double* y, std::size_t n, double max,
                                       smax::primitives::difference_error form) noexcept {
  probe_detail::exp_minus_max<A>(x, y, n, max, form);
}
template <class A>
void primitive_probe<A>::exp_minus_shift(const float* x, float* y, std::size_t n, float max,
                                         float temperature) noexcept {
  probe_detail::exp_minus_shift<A>(x, y, n, max, temperature);
}
template <class A>
void primitive_probe<A>::exp_minus_shift(const double* x, double* y, std::size_t n, double max,
                                         double temperature) noexcept {
  probe_detail::exp_minus_shift<A>(x, y, n, max, temperature);
}
template <class A>
void primitive_probe<A>::log_of_sum(const double* s, double* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = smax::primitives::log_of_sum<A>(s[i]);
}
template <class A>
void primitive_probe<A>::expm1(const float* x, float* y, std::size_t n) noexcept {
  probe_detail::expm1<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::expm1(const double* x, double* y, std::size_t n) noexcept {
  probe_detail::expm1<A>(x, y, n);
}

template <class A>
void primitive_probe<A>::log_normal(const float* x, float* y, std::size_t n) noexcept {
  probe_detail::log_normal<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::log_normal(const double* x, double* y, std::size_t n) noexcept {
  probe_detail::log_normal<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::log1p_nonnegative(const float* x, float* y, std::size_t n) noexcept {
  probe_detail::log1p_nonnegative<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::log1p_nonnegative(const double* x, double* y, std::size_t n) noexcept {
  probe_detail::log1p_nonnegative<A>(x, y, n);
}

template <class A>
void primitive_probe<A>::log1p_unit(const float* x, float* y, std::size_t n) noexcept {
  probe_detail::log1p_unit<A>(x, y, n);
}
template <class A>
void primitive_probe<A>::log1p_unit(const double* x, double* y, std::size_t n) noexcept {
  probe_detail::log1p_unit<A>(x, y, n);
}

// The probe of a test configuration C (test_support.hpp's config<A, T>).
template <class C>
using probe_of = primitive_probe<typename C::arch>;

}  // namespace smax_test

// One explicit instantiation per instruction set, in its own translation unit: declared extern
// here for every other one.
#define SMAX_TEST_DECLARE_PROBE(data, name, type) \
  extern template struct smax_test::primitive_probe<type>;
SMAX_COMPILED_ARCHS(SMAX_TEST_DECLARE_PROBE, ~)
#undef SMAX_TEST_DECLARE_PROBE

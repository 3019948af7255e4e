#pragma once
// The families bench/compare/ times, and the two revisions' entry points.
#include <cstddef>

namespace compare_revisions {

enum class family {
  softmax,
  log_softmax,
  ssmax,
  multimax,
  softpick,
  stablemax,
  log_stablemax,
  sparsemax,
  sigmoid
};
inline const char* const family_names[] = {"softmax",       "log_softmax", "ssmax",
                                           "multimax",      "softpick",    "stablemax",
                                           "log_stablemax", "sparsemax",   "sigmoid"};

// Whether a revision has the family (StableMax came in 0.2): main registers only those both have.
bool has_family_before(family f);
bool has_family_after(family f);
template <class T>
void run_family_before(family f, const T* x, T* y, std::size_t rows, std::size_t cols);
template <class T>
void run_family_after(family f, const T* x, T* y, std::size_t rows, std::size_t cols);

}  // namespace compare_revisions

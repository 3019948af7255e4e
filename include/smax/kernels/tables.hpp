#pragma once
// The one list of kernel tables, one per family: what a runtime-dispatch translation unit
// (cmake/smax_dispatch_arch.cpp.in) compiles for its instruction set. A new family adds its
// header here and its table to SMAX_KERNEL_TABLES.

#include "multimax.hpp"
#include "sigmoid.hpp"
#include "softpick.hpp"
#include "sparsemax.hpp"
#include "ssmax.hpp"
#include "table.hpp"

#define SMAX_KERNEL_TABLES(X) \
  X(table)                    \
  X(multimax_table)           \
  X(sigmoid_table)            \
  X(softpick_table)           \
  X(sparsemax_table)          \
  X(ssmax_table)

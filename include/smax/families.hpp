#pragma once
// The one list of families. SMAX_FAMILIES drives the runtime-dispatched entry points
// (runtime.hpp), the Eigen overloads (eigen.hpp) and the test that enumerates every form;
// SMAX_KERNEL_TABLES is what the runtime-dispatch translation units compile for their instruction
// set (cmake/smax_dispatch_arch.cpp.in, one per part). A new family adds its header here, one
// X(...) line to SMAX_FAMILIES and, if it brings a kernel table of its own, one to a part of
// SMAX_KERNEL_TABLES (the one it shares kernels with, else the lightest).
//
// A family whose forms are not (x, y, n [, opts]) goes into SMAX_OTHER_SHAPE_FAMILIES below.
//
// X(name, extra forms): api::name##_family describes the family (api/entry.hpp); the extra forms
// are a macro of the family header that stamps its functions beyond the common set for a
// dispatcher (SMAX_NO_EXTRA_FORMS for none).

#include "adaptive_softmax.hpp"
#include "kernels/convert.hpp"
#include "cross_entropy.hpp"
#include "entmax15.hpp"
#include "entmax_bisect.hpp"
#include "gumbel_softmax.hpp"
#include "log_softmax.hpp"
#include "multimax.hpp"
#include "online.hpp"
#include "sa_softmax.hpp"
#include "sigmoid.hpp"
#include "softmax.hpp"
#include "softmax_topk.hpp"
#include "softpick.hpp"
#include "softplus_l1.hpp"
#include "sparsemax.hpp"
#include "ssmax.hpp"
#include "stablemax.hpp"
#include "topk_softmax.hpp"
#include "unified_max.hpp"

#define SMAX_NO_EXTRA_FORMS(Dispatch)

#define SMAX_FAMILIES(X)                           \
  X(softmax, SMAX_ONLINE_FORMS)                    \
  X(log_softmax, SMAX_NO_EXTRA_FORMS)              \
  X(ssmax, SMAX_NO_EXTRA_FORMS)                    \
  X(multimax, SMAX_NO_EXTRA_FORMS)                 \
  X(softpick, SMAX_NO_EXTRA_FORMS)                 \
  X(sparsemax, SMAX_SPARSEMAX_EXTRA_FORMS)         \
  X(sigmoid, SMAX_NO_EXTRA_FORMS)                  \
  X(sigmoid_attention, SMAX_NO_EXTRA_FORMS)        \
  X(stablemax, SMAX_NO_EXTRA_FORMS)                \
  X(log_stablemax, SMAX_NO_EXTRA_FORMS)            \
  X(sa_softmax, SMAX_NO_EXTRA_FORMS)               \
  X(softplus_l1, SMAX_NO_EXTRA_FORMS)              \
  X(unified_max_softmax, SMAX_NO_EXTRA_FORMS)      \
  X(entmax15, SMAX_ENTMAX15_EXTRA_FORMS)           \
  X(entmax_bisect, SMAX_ENTMAX_BISECT_EXTRA_FORMS) \
  X(topk_softmax, SMAX_NO_EXTRA_FORMS)             \
  X(adaptive_softmax, SMAX_NO_EXTRA_FORMS)

// Families whose forms do not fit SMAX_FAMILY's (x, y, n [, opts]) shape:
// X(name, forms, eigen_forms), with forms(Dispatch) a macro of the family header that stamps its
// pointer forms for a dispatcher, and eigen_forms one that eigen.hpp stamps. They are not in the
// family-matrix test (their own tests check every form).
#define SMAX_OTHER_SHAPE_FAMILIES(X)                                             \
  X(gumbel_softmax, SMAX_GUMBEL_SOFTMAX_FORMS, SMAX_GUMBEL_SOFTMAX_EIGEN_FORMS) \
  X(softmax_topk, SMAX_SOFTMAX_TOPK_FORMS, SMAX_SOFTMAX_TOPK_EIGEN_FORMS)    \
  X(cross_entropy, SMAX_CROSS_ENTROPY_FORMS, SMAX_CROSS_ENTROPY_EIGEN_FORMS)

// The kernel tables, in three parts that a runtime-dispatch build compiles as three translation
// units per instruction set (each part of about the same compile time with GCC -O3), so that
// the parts of one instruction set compile in parallel. Tables that share kernels sit in one part
// (SSMax and unified-max run softmax's row kernels; Gumbel, top-k and adaptive softmax its
// row passes; MultiMax and softpick drive rows as softmax does): each part instantiates what it shares once. cmake/SmaxDispatch.cmake counts the
// parts from the SMAX_KERNEL_TABLES_<k> macros below.
#define SMAX_KERNEL_TABLES_0(X) \
  X(softmax_table)              \
  X(ssmax_table)                \
  X(unified_max_table)
#define SMAX_KERNEL_TABLES_1(X) \
  X(gumbel_softmax_table)       \
  X(topk_softmax_table)         \
  X(adaptive_softmax_table)     \
  X(multimax_table)             \
  X(softpick_table)
#define SMAX_KERNEL_TABLES_2(X) \
  X(sparsemax_table)            \
  X(sigmoid_table)              \
  X(stablemax_table)            \
  X(sa_softmax_table)           \
  X(softplus_l1_table)          \
  X(entmax15_table)             \
  X(entmax_bisect_table)        \
  X(softmax_topk_table)         \
  X(cross_entropy_table)        \
  X(convert_table)
#define SMAX_KERNEL_TABLES(X) SMAX_KERNEL_TABLES_0(X) SMAX_KERNEL_TABLES_1(X) SMAX_KERNEL_TABLES_2(X)

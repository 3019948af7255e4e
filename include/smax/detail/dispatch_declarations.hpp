#pragma once
// With runtime dispatch (smax_enable_dispatch), each instruction set's kernels are compiled in
// their own translation unit with that instruction set's flags. Every family's kernel table
// ends its header with SMAX_DECLARE_DISPATCHED_TABLE(<table>): the extern template declarations
// that stop every other translation unit from instantiating it with its own flags.

#include "../config.hpp"
#include "archs.hpp"

#define SMAX_DETAIL_DECLARE_TABLE(table, name, type) \
  extern template struct smax::kernels::table<type>;
#define SMAX_DECLARE_DISPATCHED_TABLE(table) SMAX_COMPILED_ARCHS(SMAX_DETAIL_DECLARE_TABLE, table)

// The fuzzers' kernel library: smax_enable_dispatch adds one translation unit per instruction set
// to it; this file only gives the static library a source of its own.
#include <smax/families.hpp>

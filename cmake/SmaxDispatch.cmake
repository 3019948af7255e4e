# smax_enable_dispatch(<target> [ARCHS arch...])
#
# Opt-in runtime dispatch: compiles smax's kernels once per instruction set, each in its own
# generated translation unit built with that instruction set's flags, adds them to <target> and
# defines SMAX_DISPATCH_<ARCH> on it (PUBLIC) so <smax/runtime.hpp> picks the best one the CPU
# runs, once, on first use. The library itself ships no object code.
#
# ARCHS: sse2 avx2 avx512bw on x86-64 (default: all three), neon64 on AArch64 (default).
# avx2 means AVX2 + FMA (xsimd::fma3<xsimd::avx2>); avx512bw needs F, CD, DQ, BW and VL.
#
# Without CMake: compile cmake/smax_dispatch_arch.cpp.in for each architecture with
# SMAX_DISPATCH_ARCH_TYPE set to the xsimd type and that architecture's flags, and define
# SMAX_DISPATCH_<ARCH>=1 for every translation unit that includes smax.
include_guard(GLOBAL)

set_property(GLOBAL PROPERTY SMAX_DISPATCH_TEMPLATE "${CMAKE_CURRENT_LIST_DIR}/smax_dispatch_arch.cpp.in")

function(smax_enable_dispatch target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "ARCHS")
  if(NOT arg_ARCHS)
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
      set(arg_ARCHS neon64)
    else()
      set(arg_ARCHS sse2 avx2 avx512bw)
    endif()
  endif()
  get_property(template GLOBAL PROPERTY SMAX_DISPATCH_TEMPLATE)
  set(is_msvc "$<CXX_COMPILER_ID:MSVC>")
  foreach(arch IN LISTS arg_ARCHS)
    if(arch STREQUAL "sse2")
      set(SMAX_DISPATCH_ARCH_TYPE "xsimd::sse2")
      # -mno-avx wins over a target-wide -march: the baseline must not contain VEX code.
      set(flags "$<IF:${is_msvc},,-mno-avx>")
    elseif(arch STREQUAL "avx2")
      set(SMAX_DISPATCH_ARCH_TYPE "xsimd::fma3<xsimd::avx2>")
      set(flags "$<IF:${is_msvc},/arch:AVX2,-mavx2;-mfma>")
    elseif(arch STREQUAL "avx512bw")
      set(SMAX_DISPATCH_ARCH_TYPE "xsimd::avx512bw")
      # xsimd's avx512f kernels use DQ intrinsics (docs/dispatch.md): enable the Skylake-X set.
      set(flags "$<IF:${is_msvc},/arch:AVX512,-mavx512f;-mavx512cd;-mavx512dq;-mavx512bw;-mavx512vl;-mfma>")
      # GCC before 12.3 warns about its own AVX-512 headers (GCC PR 105593).
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 12.3)
        string(APPEND flags "$<$<NOT:${is_msvc}>:;-Wno-uninitialized;-Wno-maybe-uninitialized>")
      endif()
    elseif(arch STREQUAL "neon64")
      set(SMAX_DISPATCH_ARCH_TYPE "xsimd::neon64")
      set(flags "")
    else()
      message(FATAL_ERROR "smax_enable_dispatch: unknown architecture '${arch}' (sse2, avx2, avx512bw, neon64)")
    endif()
    string(TOUPPER "${arch}" ARCH)
    set(source "${CMAKE_CURRENT_BINARY_DIR}/smax_dispatch/${target}/smax_dispatch_${arch}.cpp")
    configure_file("${template}" "${source}" @ONLY)
    target_sources(${target} PRIVATE "${source}")
    set_source_files_properties("${source}" TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS "${flags}")
    target_compile_definitions(${target} PUBLIC SMAX_DISPATCH=1 SMAX_DISPATCH_${ARCH}=1)
  endforeach()
endfunction()

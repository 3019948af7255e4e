# smax_enable_dispatch(<target> [ARCHS arch...])
#
# Opt-in runtime dispatch: links <target> to a static library that holds smax's kernels compiled
# once per instruction set, each in its own generated translation unit built with that
# instruction set's flags, and defines SMAX_DISPATCH_<ARCH> on <target> (PUBLIC), so that
# <smax/runtime.hpp> picks the best one the CPU runs, once, on first use. The library is built
# once per project and set of ARCHS, however many targets use it. smax itself ships no object
# code.
#
# DEFINITIONS: compile definitions for the kernels and <target> (the tests' seams); each set of
# them is a library of its own.
#
# ARCHS: names from include/smax/detail/archs.hpp, the one list of instruction sets (the same
# names SMAX_FORCE_ARCH and smax::runtime::arch_name() use): sse2 avx2 avx512bw on x86-64 (the
# default: all three), neon64 on AArch64 (the default there). avx2 means AVX2 + FMA + F16C; avx512bw
# needs F, CD, DQ, BW and VL. GCC and Clang only.
#
# Each instruction set's kernels are several translation units, one per part of the kernel list
# (SMAX_KERNEL_TABLES_<k> in <smax/families.hpp>), which compile in parallel.
#
# Without CMake: compile cmake/smax_dispatch_arch.cpp.in once per instruction set and part, with
# SMAX_DISPATCH_ARCH_TYPE set to the xsimd type, SMAX_DISPATCH_PART to 0, 1, ... (one per
# SMAX_KERNEL_TABLES_<k> macro of families.hpp) and that instruction set's flags (type and flags
# in archs.hpp), and define SMAX_DISPATCH_<ARCH>=1 for every translation unit that includes smax.
include_guard(GLOBAL)

set_property(GLOBAL PROPERTY SMAX_DISPATCH_TEMPLATE "${CMAKE_CURRENT_LIST_DIR}/smax_dispatch_arch.cpp.in")

# smax's headers: in the source tree include/ is beside cmake/; installed, they are found
# through the include directories of the imported target smax::smax.
set_property(GLOBAL PROPERTY SMAX_HEADERS_DIR "${CMAKE_CURRENT_LIST_DIR}/../include")

# _smax_read_header(<path under include/> <content-var>): the text of one of smax's headers.
function(_smax_read_header relative content_var)
  get_property(dir GLOBAL PROPERTY SMAX_HEADERS_DIR)
  set(header "${dir}/${relative}")
  if(NOT EXISTS "${header}" AND TARGET smax::smax)
    get_target_property(includes smax::smax INTERFACE_INCLUDE_DIRECTORIES)
    foreach(include_dir IN LISTS includes)
      if(EXISTS "${include_dir}/${relative}")
        set(header "${include_dir}/${relative}")
      endif()
    endforeach()
  endif()
  file(READ "${header}" content)
  set(${content_var} "${content}" PARENT_SCOPE)
endfunction()

# _smax_kernel_parts(<var>): the part numbers of the kernel list, 0 1 ... (the
# SMAX_KERNEL_TABLES_<k> macros of families.hpp).
function(_smax_kernel_parts parts_var)
  _smax_read_header(smax/families.hpp content)
  string(REGEX MATCHALL "#define SMAX_KERNEL_TABLES_[0-9]+\\(X\\)" macros "${content}")
  set(parts "")
  foreach(macro IN LISTS macros)
    string(REGEX REPLACE ".*_([0-9]+)\\(X\\)" "\\1" part "${macro}")
    list(APPEND parts ${part})
  endforeach()
  if(NOT parts)
    message(FATAL_ERROR "smax_enable_dispatch: no SMAX_KERNEL_TABLES_<k> in smax/families.hpp")
  endif()
  set(${parts_var} "${parts}" PARENT_SCOPE)
endfunction()

# _smax_arch_entry(<arch> <type-var> <flags-var>): the xsimd type and compiler flags of <arch>
# as archs.hpp lists them; FATAL_ERROR for a name it does not list.
function(_smax_arch_entry arch type_var flags_var)
  _smax_read_header(smax/detail/archs.hpp content)
  string(REGEX MATCHALL "X\\(data, [a-z0-9_]+, [^)]+\\)\\) /\\* flags:[^*]*\\*/" entries "${content}")
  set(names "")
  foreach(entry IN LISTS entries)
    if(entry MATCHES "X\\(data, ([a-z0-9_]+), ([^)]+)\\)\\) /\\* flags:([^*]*)\\*/")
      list(APPEND names "${CMAKE_MATCH_1}")
      if(CMAKE_MATCH_1 STREQUAL arch)
        set(${type_var} "${CMAKE_MATCH_2}" PARENT_SCOPE)
        string(STRIP "${CMAKE_MATCH_3}" flags)
        separate_arguments(flags UNIX_COMMAND "${flags}")
        set(${flags_var} "${flags}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  list(JOIN names ", " names)
  message(FATAL_ERROR "smax_enable_dispatch: unknown architecture '${arch}' (${names})")
endfunction()

# _smax_configure_arch_sources(<template> <prefix> <sources-var> ARCHS <arch>... [PARTS <k>...]):
# configures <template> into <prefix><arch>.cpp for each <arch> (<prefix><arch>_<k>.cpp for each
# part <k>, with @SMAX_DISPATCH_PART@ set to <k>), with @SMAX_DISPATCH_ARCH_TYPE@ set to its xsimd
# type, and gives each file that instruction set's flags (in the calling directory). Also used by
# smax's tests for their primitive probe (tests/CMakeLists.txt).
function(_smax_configure_arch_sources template prefix sources_var)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "ARCHS;PARTS")
  set(sources "")
  foreach(arch IN LISTS arg_ARCHS)
    _smax_arch_entry(${arch} SMAX_DISPATCH_ARCH_TYPE flags)
    if(arch STREQUAL "avx512bw" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
       AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 12.3)
      list(APPEND flags -Wno-uninitialized -Wno-maybe-uninitialized)  # GCC PR 105593
    endif()
    set(names "${arch}")
    if(arg_PARTS)
      list(TRANSFORM arg_PARTS PREPEND "${arch}_" OUTPUT_VARIABLE names)
    endif()
    foreach(name IN LISTS names)
      string(REGEX REPLACE "^${arch}_?" "" SMAX_DISPATCH_PART "${name}")
      set(source "${prefix}${name}.cpp")
      configure_file("${template}" "${source}" @ONLY)
      set_source_files_properties("${source}" DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
                                  PROPERTIES COMPILE_OPTIONS "${flags}")
      list(APPEND sources "${source}")
    endforeach()
  endforeach()
  set(${sources_var} "${sources}" PARENT_SCOPE)
endfunction()

function(smax_enable_dispatch target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "ARCHS;DEFINITIONS")
  if(NOT arg_ARCHS)
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
      set(arg_ARCHS neon64)
    else()
      set(arg_ARCHS sse2 avx2 avx512bw)
    endif()
  endif()
  list(REMOVE_DUPLICATES arg_ARCHS)
  list(SORT arg_ARCHS)
  list(JOIN arg_ARCHS "_" suffix)
  if(arg_DEFINITIONS)
    # Kernels compiled with other definitions are another library (they may differ in code).
    string(MD5 definitions_hash "${arg_DEFINITIONS}")
    string(SUBSTRING "${definitions_hash}" 0 8 definitions_hash)
    string(APPEND suffix "_${definitions_hash}")
  endif()
  set(library smax_dispatch_${suffix})
  if(NOT TARGET ${library})
    get_property(template GLOBAL PROPERTY SMAX_DISPATCH_TEMPLATE)
    _smax_kernel_parts(parts)
    _smax_configure_arch_sources("${template}" "${CMAKE_BINARY_DIR}/smax_dispatch/${suffix}/smax_dispatch_"
                                 sources ARCHS ${arg_ARCHS} PARTS ${parts})
    set(definitions SMAX_DISPATCH=1)
    foreach(arch IN LISTS arg_ARCHS)
      string(TOUPPER "${arch}" ARCH)
      list(APPEND definitions SMAX_DISPATCH_${ARCH}=1)
    endforeach()
    # Global scope, so that every directory of the project shares the one library.
    add_library(${library} STATIC ${sources})
    set_target_properties(${library} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    if(TARGET smax::smax)
      target_link_libraries(${library} PUBLIC smax::smax)
    else()
      target_link_libraries(${library} PUBLIC smax)
    endif()
    target_compile_definitions(${library} PUBLIC ${definitions})
    if(arg_DEFINITIONS)
      target_compile_definitions(${library} PUBLIC ${arg_DEFINITIONS})
    endif()
  endif()
  target_link_libraries(${target} PRIVATE ${library})
  # The instruction sets <target> dispatches to, for whatever else is built per set for it (the
  # tests' primitive probe).
  set_property(TARGET ${target} PROPERTY SMAX_DISPATCH_ARCHS "${arg_ARCHS}")
  # The kernel library itself, for what must compile the kernels with options of its own (the
  # fuzzers' instrumentation).
  set_property(TARGET ${target} PROPERTY SMAX_DISPATCH_LIBRARY "${library}")
  get_target_property(definitions ${library} INTERFACE_COMPILE_DEFINITIONS)
  target_compile_definitions(${target} PUBLIC ${definitions})
endfunction()

# smax_discover_tests(<target> [TIMEOUT <seconds>])
#
# One ctest test per GoogleTest test of <target>, named as GoogleTest names it
# ("softmax_test/avx512bw_f32.masked_entry"), listed when ctest runs (like gtest_discover_tests'
# PRE_TEST mode). gtest_discover_tests (CMake 3.25) cannot name typed tests whose suites have a
# name generator: it appends the whole "# TypeParam = smax_test::config<xsimd::fma3<...>, float>"
# line to every name, which made ctest's lines up to 475 characters long. A test GoogleTest
# skips (GTEST_SKIP, an instruction set this CPU lacks) is reported as skipped, not passed.
include_guard(GLOBAL)

function(smax_discover_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT" "")
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi_config)  # one executable per configuration: leave it to CMake's module
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT ${arg_TIMEOUT})
    return()
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 1500)  # ctest's default
  endif()
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_discovered_tests.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(SMAX_TEST_EXECUTABLE [==[$<TARGET_FILE:${target}>]==])
set(SMAX_TEST_EMULATOR [==[${CMAKE_CROSSCOMPILING_EMULATOR}]==])
set(SMAX_TEST_TIMEOUT ${arg_TIMEOUT})
include([==[${CMAKE_CURRENT_FUNCTION_LIST_DIR}/add_discovered_tests.cmake]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()

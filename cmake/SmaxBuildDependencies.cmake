# What smax's own tests, benchmarks and examples need, and the library does not: GoogleTest,
# Google Benchmark, Eigen. Never installed with smax (an installed smax must not define these
# helpers: examples/CMakeLists.txt tells an in-tree build from an installed one by them).
#
# Each is found as an installed package first (FetchContent's FIND_PACKAGE_ARGS), and downloaded
# at a pinned release only when no package is found; a download never installs anything
# (INSTALL_GTEST, BENCHMARK_ENABLE_INSTALL off). FETCHCONTENT_SOURCE_DIR_<NAME> points a
# download at a local copy instead (CI passes Debian's /usr/src/googletest for its cross build).
include_guard(GLOBAL)
include(FetchContent)

# The subprojects' option() calls honour the variables set below (policy CMP0077).
set(CMAKE_POLICY_DEFAULT_CMP0077 NEW)

# smax_require_gtest(): GTest::gtest_main. A cross build does not use an installed GoogleTest,
# which is built for the host.
macro(smax_require_gtest)
  if(NOT TARGET GTest::gtest_main)
    set(_smax_gtest_find FIND_PACKAGE_ARGS NAMES GTest CONFIG)
    if(CMAKE_CROSSCOMPILING)
      set(_smax_gtest_find "")
    endif()
    FetchContent_Declare(googletest
      GIT_REPOSITORY https://github.com/google/googletest.git
      GIT_TAG v1.14.0
      GIT_SHALLOW TRUE
      SYSTEM
      ${_smax_gtest_find})
    set(INSTALL_GTEST OFF)
    set(BUILD_GMOCK OFF)
    FetchContent_MakeAvailable(googletest)
    if(NOT TARGET GTest::gtest_main)  # GoogleTest before 1.11 defines no namespaced alias
      add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
    unset(_smax_gtest_find)
  endif()
endmacro()

# smax_require_benchmark(): benchmark::benchmark.
macro(smax_require_benchmark)
  if(NOT TARGET benchmark::benchmark)
    FetchContent_Declare(benchmark
      GIT_REPOSITORY https://github.com/google/benchmark.git
      GIT_TAG v1.8.3
      GIT_SHALLOW TRUE
      SYSTEM
      FIND_PACKAGE_ARGS CONFIG)
    set(BENCHMARK_ENABLE_TESTING OFF)
    set(BENCHMARK_ENABLE_GTEST_TESTS OFF)
    set(BENCHMARK_ENABLE_INSTALL OFF)
    set(BENCHMARK_INSTALL_DOCS OFF)
    FetchContent_MakeAvailable(benchmark)
  endif()
endmacro()

# smax_find_eigen([DOWNLOAD]): Eigen3::Eigen from an existing target or an installed Eigen 3.4;
# with DOWNLOAD, else the 3.4.0 release fetched as headers only (SOURCE_SUBDIR names a directory
# without a CMakeLists.txt, so Eigen's own build is not configured). Without DOWNLOAD a missing
# Eigen leaves Eigen3::Eigen undefined: the caller goes without it.
function(smax_find_eigen)
  cmake_parse_arguments(PARSE_ARGV 0 arg "DOWNLOAD" "" "")
  if(TARGET Eigen3::Eigen)
    return()
  endif()
  find_package(Eigen3 3.4 CONFIG QUIET)
  if(TARGET Eigen3::Eigen OR NOT arg_DOWNLOAD)
    return()
  endif()
  message(STATUS "smax: Eigen 3.4 not installed, fetching Eigen 3.4.0 (headers only)")
  FetchContent_Declare(smax_eigen
    GIT_REPOSITORY https://gitlab.com/libeigen/eigen.git
    GIT_TAG 3.4.0
    GIT_SHALLOW TRUE
    SOURCE_SUBDIR smax-headers-only)
  FetchContent_MakeAvailable(smax_eigen)
  add_library(smax_eigen_headers INTERFACE)
  target_include_directories(smax_eigen_headers SYSTEM INTERFACE ${smax_eigen_SOURCE_DIR})
  add_library(Eigen3::Eigen ALIAS smax_eigen_headers)
endfunction()

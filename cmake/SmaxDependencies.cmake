# Finds xsimd: an existing target (add_subdirectory/FetchContent by the parent), then an installed
# package (no version: xsimd's version file is SameMajorVersion, and 8.1, 13 and 14 all work),
# then FetchContent of a released tag. Sets SMAX_XSIMD_TARGET.
include_guard(GLOBAL)
include(GNUInstallDirs)

if(NOT TARGET xsimd)
  find_package(xsimd CONFIG QUIET)
endif()
if(NOT TARGET xsimd)
  include(FetchContent)
  message(STATUS "smax: xsimd not found, fetching xsimd 13.2.0")
  FetchContent_Declare(xsimd
    GIT_REPOSITORY https://github.com/xtensor-stack/xsimd.git
    GIT_TAG 13.2.0
    GIT_SHALLOW TRUE
    SYSTEM)
  FetchContent_MakeAvailable(xsimd)
endif()

# Debian's xsimd 8.1 export links a library "xtl" that it neither finds nor ships.
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_smax_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
  if(_smax_xsimd_links AND "xtl" IN_LIST _smax_xsimd_links)
    find_package(xtl CONFIG QUIET)
    if(NOT TARGET xtl)
      add_library(xtl INTERFACE IMPORTED GLOBAL)
    endif()
  endif()
endif()
set(SMAX_XSIMD_TARGET xsimd)

# Eigen 3.4 for smax's own tests, examples and benchmarks (the library needs it only in
# <smax/eigen.hpp>, which users include with their own Eigen): an existing Eigen3::Eigen target,
# then the installed package, then the 3.4.0 release fetched as headers only (SOURCE_SUBDIR
# names a directory without a CMakeLists.txt, so Eigen's own build is not configured).
function(smax_find_eigen)
  if(TARGET Eigen3::Eigen)
    return()
  endif()
  find_package(Eigen3 3.4 CONFIG QUIET)
  if(TARGET Eigen3::Eigen)
    return()
  endif()
  include(FetchContent)
  message(STATUS "smax: Eigen 3.4 not found, fetching Eigen 3.4.0 (headers only)")
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

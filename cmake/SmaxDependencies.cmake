# Finds xsimd: an existing target (add_subdirectory/FetchContent by the parent), then an installed
# package (no version: xsimd's version file is SameMajorVersion, and 8.1, 13 and 14 all work),
# then FetchContent of a released tag. Sets SMAX_XSIMD_TARGET. Installed with smax: its package
# config includes this file for the xtl workaround below, and only once a target xsimd exists, so
# finding an installed smax never downloads anything.
include_guard(GLOBAL)
include(GNUInstallDirs)

if(NOT TARGET xsimd)
  include(FetchContent)
  # find_package(xsimd CONFIG) first; the download runs only when no package is found.
  FetchContent_Declare(xsimd
    GIT_REPOSITORY https://github.com/xtensor-stack/xsimd.git
    GIT_TAG 13.2.0
    GIT_SHALLOW TRUE
    SYSTEM
    FIND_PACKAGE_ARGS CONFIG)
  FetchContent_MakeAvailable(xsimd)
  if(NOT xsimd_FOUND)
    message(STATUS "smax: xsimd not installed, using xsimd 13.2.0 from ${xsimd_SOURCE_DIR}")
  endif()
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

# Install rules for smax: the headers, the exported target smax::smax, smaxConfig.cmake with its
# version file, and the helper modules that make smax_enable_dispatch work after
# find_package(smax). Also writes the same package config into the build tree, so find_package(smax)
# can use a build directory (smax_DIR=<build>) without an install.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# DATADIR rather than LIBDIR: a header-only package is the same for every architecture, and a
# multiarch LIBDIR (lib/x86_64-linux-gnu) would hide it from a cross build for another one.
set(SMAX_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/smax" CACHE STRING
  "Directory for smaxConfig.cmake and the smax CMake helpers, relative to CMAKE_INSTALL_PREFIX")
mark_as_advanced(SMAX_INSTALL_CMAKEDIR)

# Installed next to smaxConfig.cmake: the xtl workaround that config reuses, and
# smax_enable_dispatch with the translation-unit template it configures per architecture.
set(_smax_cmake_helpers
  "${CMAKE_CURRENT_LIST_DIR}/SmaxDependencies.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/SmaxDispatch.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/smax_dispatch_arch.cpp.in")

install(DIRECTORY "${smax_SOURCE_DIR}/include/smax" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS smax EXPORT smaxTargets)
install(EXPORT smaxTargets NAMESPACE smax:: DESTINATION "${SMAX_INSTALL_CMAKEDIR}")

# SameMinorVersion because smax is 0.x: a minor release may change the API, so
# find_package(smax 0.2) must accept 0.2.x but reject 0.1 and 0.3. ARCH_INDEPENDENT because nothing in the
# package depends on the pointer size of the project that finds it.
write_basic_package_version_file("${smax_BINARY_DIR}/smaxConfigVersion.cmake"
  VERSION "${smax_VERSION}"
  COMPATIBILITY SameMinorVersion
  ARCH_INDEPENDENT)

# The installed config finds the helpers next to itself; PATH_VARS keeps the prefix relocatable.
set(SMAX_CONFIG_HELPER_DIR "${SMAX_INSTALL_CMAKEDIR}")
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/smaxConfig.cmake.in"
  "${smax_BINARY_DIR}/cmake/install/smaxConfig.cmake"
  INSTALL_DESTINATION "${SMAX_INSTALL_CMAKEDIR}"
  PATH_VARS SMAX_CONFIG_HELPER_DIR)
install(FILES
  "${smax_BINARY_DIR}/cmake/install/smaxConfig.cmake"
  "${smax_BINARY_DIR}/smaxConfigVersion.cmake"
  ${_smax_cmake_helpers}
  DESTINATION "${SMAX_INSTALL_CMAKEDIR}")

# The build-tree config uses the helpers straight from the source tree, so an edit to them needs no
# re-export; its targets file points at the source include directory (BUILD_INTERFACE).
set(SMAX_CONFIG_HELPER_DIR "${CMAKE_CURRENT_LIST_DIR}")
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/smaxConfig.cmake.in"
  "${smax_BINARY_DIR}/smaxConfig.cmake"
  INSTALL_DESTINATION "${smax_BINARY_DIR}"
  INSTALL_PREFIX "${smax_BINARY_DIR}"
  PATH_VARS SMAX_CONFIG_HELPER_DIR)
export(EXPORT smaxTargets NAMESPACE smax:: FILE "${smax_BINARY_DIR}/smaxTargets.cmake")

unset(SMAX_CONFIG_HELPER_DIR)
unset(_smax_cmake_helpers)

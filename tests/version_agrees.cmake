# Test version_agrees: include/smax/version.hpp says the version project(smax VERSION ...) says
# (a release bumps both; its tag v<version> is made on that commit).
cmake_minimum_required(VERSION 3.24)
file(READ "${HEADER}" header)
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "#define SMAX_VERSION_${part} ([0-9]+)" _ "${header}")
  list(APPEND header_version "${CMAKE_MATCH_1}")
endforeach()
list(JOIN header_version "." header_version)
if(NOT header_version STREQUAL VERSION)
  message(FATAL_ERROR "${HEADER} says ${header_version}, CMakeLists.txt says ${VERSION}")
endif()
message(STATUS "smax ${VERSION} in CMakeLists.txt and version.hpp")

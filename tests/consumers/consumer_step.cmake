# One step of a consumer test, run by ctest as `cmake -DSTEP_FILE=<file> -P consumer_step.cmake`:
# configure a fresh build of a project, build it, and install it if STEP_INSTALL_PREFIX is set.
# The step file, written when the outer build is configured, holds the arguments, so that paths
# never pass through ctest's command-line quoting.
#
# STEP_SOURCE_DIR, STEP_BINARY_DIR   the project and where to build it (wiped first)
# STEP_CONFIGURE_ARGS                generator, compiler and -D arguments for the configure
# STEP_CONFIG                        the configuration to build and install
# STEP_INSTALL_PREFIX                optional: install there (wiped first)
# STEP_GIT_EXECUTABLE, STEP_GIT_REPOSITORY
#                                    optional: pass -DSMAX_GIT_REPOSITORY and -DSMAX_GIT_TAG=<HEAD>
cmake_minimum_required(VERSION 3.24)

if(NOT STEP_FILE)
  message(FATAL_ERROR "Run as: cmake -DSTEP_FILE=<step file> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
include("${STEP_FILE}")

if(STEP_GIT_REPOSITORY)
  # HEAD is read now rather than when the outer build was configured, so a commit made since then
  # is the one tested.
  execute_process(
    COMMAND "${STEP_GIT_EXECUTABLE}" rev-parse --verify HEAD
    WORKING_DIRECTORY "${STEP_GIT_REPOSITORY}"
    OUTPUT_VARIABLE _head
    OUTPUT_STRIP_TRAILING_WHITESPACE
    COMMAND_ERROR_IS_FATAL ANY)
  execute_process(
    COMMAND "${STEP_GIT_EXECUTABLE}" status --porcelain
    WORKING_DIRECTORY "${STEP_GIT_REPOSITORY}"
    OUTPUT_VARIABLE _changes)
  message(STATUS "Testing commit ${_head} of ${STEP_GIT_REPOSITORY}")
  if(_changes)
    message(STATUS "Its uncommitted and untracked changes are not part of this test:\n${_changes}")
  endif()
  list(APPEND STEP_CONFIGURE_ARGS
    "-DSMAX_GIT_REPOSITORY=${STEP_GIT_REPOSITORY}"
    "-DSMAX_GIT_TAG=${_head}")
endif()

# A fresh build directory: a cache left by an earlier run with another compiler or smax version
# would otherwise decide the result.
file(REMOVE_RECURSE "${STEP_BINARY_DIR}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${STEP_SOURCE_DIR}" -B "${STEP_BINARY_DIR}" ${STEP_CONFIGURE_ARGS}
  COMMAND_ECHO STDOUT
  COMMAND_ERROR_IS_FATAL ANY)
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${STEP_BINARY_DIR}" --config "${STEP_CONFIG}"
  COMMAND_ECHO STDOUT
  COMMAND_ERROR_IS_FATAL ANY)

if(STEP_INSTALL_PREFIX)
  file(REMOVE_RECURSE "${STEP_INSTALL_PREFIX}")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" --install "${STEP_BINARY_DIR}" --config "${STEP_CONFIG}"
            --prefix "${STEP_INSTALL_PREFIX}"
    COMMAND_ECHO STDOUT
    COMMAND_ERROR_IS_FATAL ANY)
endif()

# Included by ctest (smax_discover_tests.cmake): lists the tests of SMAX_TEST_EXECUTABLE and adds
# one ctest test for each, named suite.test as GoogleTest names it.
if(NOT EXISTS "${SMAX_TEST_EXECUTABLE}")
  get_filename_component(_smax_name "${SMAX_TEST_EXECUTABLE}" NAME)
  add_test("${_smax_name}_NOT_BUILT" "${SMAX_TEST_EXECUTABLE}")  # fails, and says so
  return()
endif()
execute_process(
  COMMAND ${SMAX_TEST_EMULATOR} "${SMAX_TEST_EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE _smax_output
  ERROR_VARIABLE _smax_output
  RESULT_VARIABLE _smax_result
  TIMEOUT 120)
if(_smax_result)
  message(WARNING "${SMAX_TEST_EXECUTABLE} --gtest_list_tests failed (${_smax_result}):\n${_smax_output}")
  add_test("${SMAX_TEST_EXECUTABLE}_list_tests" ${SMAX_TEST_EMULATOR} "${SMAX_TEST_EXECUTABLE}" --gtest_list_tests)
  return()
endif()
string(REPLACE ";" "" _smax_output "${_smax_output}")
string(REPLACE "\n" ";" _smax_lines "${_smax_output}")
set(_smax_suite "")
foreach(_smax_line IN LISTS _smax_lines)
  if(_smax_line MATCHES "^([^ #][^ ]*)\\.( +#.*)?$")  # "suite." or "suite/name.  # TypeParam = ..."
    set(_smax_suite "${CMAKE_MATCH_1}")
  elseif(_smax_suite AND _smax_line MATCHES "^  ([^ ]+)( +#.*)?$")  # "  test" or "  test/0  # GetParam() = ..."
    set(_smax_test "${_smax_suite}.${CMAKE_MATCH_1}")
    add_test("${_smax_test}" ${SMAX_TEST_EMULATOR} "${SMAX_TEST_EXECUTABLE}"
             "--gtest_filter=${_smax_test}" --gtest_also_run_disabled_tests)
    set_tests_properties("${_smax_test}" PROPERTIES
      SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
      TIMEOUT ${SMAX_TEST_TIMEOUT})
    if(_smax_test MATCHES "(^|[./])DISABLED_")
      set_tests_properties("${_smax_test}" PROPERTIES DISABLED TRUE)
    endif()
  endif()
endforeach()

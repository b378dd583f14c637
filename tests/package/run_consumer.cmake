# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# cmake -P script: builds and runs tests/package/consumer against the library,
# either installed (MODE=find_package) or as a subdirectory.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()

# BUILD_TYPE: the consumer's CMAKE_BUILD_TYPE, Release unless given (the
# consumers that only check how the package is found and linked pass an
# empty one: no optimization, a third of their compile time).
if(NOT DEFINED BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()
set(consumer_args -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    -DFLASHOPTIM_TESTS_DIR=${SOURCE_DIR}/tests)
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} ${consumer_args} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DFLASHOPTIM_CONSUME=find_package)
else()
  run(${CMAKE_COMMAND} ${consumer_args} -DFLASHOPTIM_CONSUME=add_subdirectory -DFLASHOPTIM_SOURCE_DIR=${SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
# Exit 77: the consumer needs hardware this machine lacks (a GPU); the test
# reports it as skipped (SKIP_REGULAR_EXPRESSION) after a successful build.
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 77)
  message(STATUS "consumer built through ${MODE}; run skipped (exit 77): ${out}")
  return()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "consumer built and ran through ${MODE}: ${out}")

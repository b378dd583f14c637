# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# The ctest `demo` (examples/train/CMakeLists.txt): runs PROGRAM --out OUT,
# the README's first command's training run, and on success writes
# OUT.passed, a key of what the run depended on: the program's SHA-256 and
# the corpus it trains on (examples/train/corpus.cpp's list: include/ and
# docs/ files ending .hpp .cuh .inl .h .md, README.md, BENCHMARKS.md, each
# path with its SHA-256).
#
# With FLASHOPTIM_DEMO_ONCE set in the environment (the release test preset
# sets it) and OUT.passed holding the same key, the run is not repeated: the
# test prints that this binary already passed on this corpus in this build
# directory and ctest reports it skipped (SKIP_REGULAR_EXPRESSION). So the
# README's second command after its first (CI: .ci/run) does not train the
# same binary on the same bytes a second time (about 50 s of both cores);
# alone, after a rebuild, or after the corpus changed, it runs the demo.
# The demo preset never sets the variable: the first command always runs it.
#
#   cmake -DPROGRAM=<flashoptim_train> -DOUT=<dir> -DSOURCE_DIR=<source tree> -P demo_test.cmake
cmake_minimum_required(VERSION 3.25)

file(SHA256 "${PROGRAM}" _key_text)
file(GLOB_RECURSE _files LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/include/*" "${SOURCE_DIR}/docs/*")
list(FILTER _files INCLUDE REGEX "\\.(hpp|cuh|inl|h|md)$")
foreach(_top README.md BENCHMARKS.md)
  if(EXISTS "${SOURCE_DIR}/${_top}")
    list(APPEND _files "${_top}")
  endif()
endforeach()
list(SORT _files)
foreach(_file IN LISTS _files)
  file(SHA256 "${SOURCE_DIR}/${_file}" _hash)
  string(APPEND _key_text "\n${_file} ${_hash}")
endforeach()
string(SHA256 _key "${_key_text}")

set(_stamp "${OUT}.passed")
if(DEFINED ENV{FLASHOPTIM_DEMO_ONCE} AND EXISTS "${_stamp}")
  file(READ "${_stamp}" _previous)
  if(_previous STREQUAL _key)
    file(TIMESTAMP "${_stamp}" _when "%Y-%m-%d %H:%M:%S UTC" UTC)
    message("demo: already passed at ${_when} in this build directory with this binary on this corpus "
            "(key ${_key}, ${_stamp}); not run again")
    return()
  endif()
endif()

file(REMOVE "${_stamp}")
execute_process(COMMAND "${PROGRAM}" --out "${OUT}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "demo: ${PROGRAM} --out ${OUT} exited with ${_rc}")
endif()
file(WRITE "${_stamp}" "${_key}")

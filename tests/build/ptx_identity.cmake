# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# cmake -P script: compiles SOURCE to PTX twice, with nvcc's defaults and
# with --fmad=false, in parallel, and fails unless the two are identical.
file(MAKE_DIRECTORY ${WORK_DIR})
set(_inc)
foreach(_d ${INCLUDES})
  list(APPEND _inc -I${_d})
endforeach()
set(_common -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr ${_inc} --ptx)
execute_process(
  COMMAND ${NVCC} ${_common} -o ${WORK_DIR}/default.ptx ${SOURCE}
  COMMAND ${NVCC} ${_common} --fmad=false -o ${WORK_DIR}/nofmad.ptx ${SOURCE}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
foreach(_r ${rc})
  if(NOT _r EQUAL 0)
    message(FATAL_ERROR "nvcc failed (${rc}):\n${err}")
  endif()
endforeach()
file(SHA256 ${WORK_DIR}/default.ptx a)
file(SHA256 ${WORK_DIR}/nofmad.ptx b)
if(NOT a STREQUAL b)
  execute_process(COMMAND diff ${WORK_DIR}/nofmad.ptx ${WORK_DIR}/default.ptx OUTPUT_VARIABLE d)
  string(SUBSTRING "${d}" 0 4000 d)
  message(FATAL_ERROR "PTX differs with and without --fmad=false: some device arithmetic can be contracted "
                      "(use format::mul_rn/add_rn/sub_rn):\n${d}")
endif()
message(STATUS "PTX identical with and without --fmad=false")

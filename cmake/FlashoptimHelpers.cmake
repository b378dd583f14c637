# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# Helpers for the project's own targets (not installed).

# The optimization of the project's C++ targets in a Debug build (below).
# CI's sanitizer build sets -O1: it runs no exhaustive test, and with ASan +
# UBSan its checkpoint test files compile in half the time of -O2 (152 s ->
# 76 s of CPU for io/reject_test.cpp).
set(FLASHOPTIM_DEBUG_OPTIMIZATION "-O2" CACHE STRING
    "Optimization flag of the tests, benchmarks and examples in a Debug build (the exhaustive tests need -O2)")

# Warnings and optimization for the project's tests, benchmarks and examples.
function(flashoptim_target_defaults target)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra;--expt-relaxed-constexpr>")
  if(NOT CMAKE_BUILD_TYPE OR CMAKE_BUILD_TYPE STREQUAL "Debug")
    # exhaustive tests walk 2^32 inputs: they need optimized code even in Debug
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${FLASHOPTIM_DEBUG_OPTIMIZATION}>")
  endif()
endfunction()

# The optimization of the test programs that run for seconds and compile for
# minutes (checkpoints, the owning optimizers, the lr check, the CPU step
# tests' drivers, ...; the lists are the flashoptim_light_optimization()
# calls at the end of tests/CMakeLists.txt, in examples/CMakeLists.txt and
# bench/core/CMakeLists.txt): their C++ files are compiled with this flag
# after the build type's, so -O1 instead of Release's -O3. GCC spends almost
# all of such a file's time optimizing (tests/optim/lr_check_sweep_split.cpp:
# 72 s of CPU at -O2, 32 s at -O1); their runs take seconds either way. The
# CPU step they link (flashoptim_test_instances), the exhaustive tests, the
# golden bytes, the timed examples and the benchmarks keep the build type's
# optimization. Empty: the build's own flags for every target (the consumer
# presets, whose point is -O3 -march on the tests they build).
set(FLASHOPTIM_LIGHT_TEST_OPTIMIZATION "-O1" CACHE STRING
    "Optimization flag of the quick-running, slow-compiling tests (empty: the build's flags)")
function(flashoptim_light_optimization)
  if(NOT FLASHOPTIM_LIGHT_TEST_OPTIMIZATION)
    return()
  endif()
  foreach(_target IN LISTS ARGN)
    if(TARGET ${_target})
      target_compile_options(${_target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${FLASHOPTIM_LIGHT_TEST_OPTIMIZATION}>")
    endif()
  endforeach()
endfunction()

# Linking CUDA programs so they run on machines with another C++ runtime.
function(flashoptim_cuda_link_defaults target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()

# flashoptim_find_nccl(): sets FLASHOPTIM_NCCL_FOUND (and the cached
# FLASHOPTIM_NCCL_INCLUDE_DIR / FLASHOPTIM_NCCL_LIBRARY); flashoptim_link_nccl(<target>)
# adds them to a target. NCCL is linked dynamically (libnccl.so.2); where it
# comes from a Python wheel (nvidia-nccl-cu13, what PyTorch ships), point
# FLASHOPTIM_NCCL_ROOT (or the environment's NCCL_ROOT / NCCL_HOME) at the
# wheel's nvidia/nccl folder, which holds include/nccl.h and lib/libnccl.so.2.
set(FLASHOPTIM_NCCL_ROOT "" CACHE PATH "NCCL install or wheel folder (include/nccl.h, lib/libnccl.so.2)")
function(flashoptim_find_nccl)
  find_path(FLASHOPTIM_NCCL_INCLUDE_DIR nccl.h
    HINTS ${FLASHOPTIM_NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES include)
  find_library(FLASHOPTIM_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${FLASHOPTIM_NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES lib lib64)
  if(FLASHOPTIM_NCCL_INCLUDE_DIR AND FLASHOPTIM_NCCL_LIBRARY)
    set(FLASHOPTIM_NCCL_FOUND TRUE PARENT_SCOPE)
  else()
    set(FLASHOPTIM_NCCL_FOUND FALSE PARENT_SCOPE)
  endif()
endfunction()
function(flashoptim_link_nccl target)
  target_include_directories(${target} SYSTEM PRIVATE ${FLASHOPTIM_NCCL_INCLUDE_DIR})
  target_link_libraries(${target} PRIVATE ${FLASHOPTIM_NCCL_LIBRARY})
endfunction()

# SPDX-FileCopyrightText: 2026 flashoptim authors
# SPDX-License-Identifier: Apache-2.0
#
# Helpers for the project's own targets (not installed).

# Warnings and optimization for the project's tests, benchmarks and examples.
function(flashoptim_target_defaults target)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra;--expt-relaxed-constexpr>")
  if(NOT CMAKE_BUILD_TYPE OR CMAKE_BUILD_TYPE STREQUAL "Debug")
    # exhaustive tests walk 2^32 inputs: they need optimized code even in Debug
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-O2>")
  endif()
endfunction()

# Linking CUDA programs so they run on machines with another C++ runtime.
function(flashoptim_cuda_link_defaults target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()

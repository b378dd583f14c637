// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The one place the version lives; CMake parses it from here.
#pragma once

#define FLASHOPTIM_VERSION_MAJOR 0
#define FLASHOPTIM_VERSION_MINOR 2
#define FLASHOPTIM_VERSION_PATCH 0
#define FLASHOPTIM_VERSION \
  (FLASHOPTIM_VERSION_MAJOR * 10000 + FLASHOPTIM_VERSION_MINOR * 100 + FLASHOPTIM_VERSION_PATCH)

#define FLASHOPTIM_STRINGIFY_(x) #x
#define FLASHOPTIM_STRINGIFY(x) FLASHOPTIM_STRINGIFY_(x)

namespace flashoptim {
inline constexpr int version_major = FLASHOPTIM_VERSION_MAJOR;
inline constexpr int version_minor = FLASHOPTIM_VERSION_MINOR;
inline constexpr int version_patch = FLASHOPTIM_VERSION_PATCH;
inline constexpr const char* version_string = FLASHOPTIM_STRINGIFY(FLASHOPTIM_VERSION_MAJOR) "." FLASHOPTIM_STRINGIFY(
    FLASHOPTIM_VERSION_MINOR) "." FLASHOPTIM_STRINGIFY(FLASHOPTIM_VERSION_PATCH);
}  // namespace flashoptim

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <flashoptim/flashoptim.hpp>
TEST_CASE("version") { CHECK(flashoptim::version_major == FLASHOPTIM_VERSION_MAJOR); }

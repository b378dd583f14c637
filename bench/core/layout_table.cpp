// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Prints README.md's memory table (tools/update_readme_tables.sh pastes it).
#include <cstdio>

#include "common/layout_table.hpp"

int main() {
  std::fputs(layout_table::markdown().c_str(), stdout);
  return 0;
}

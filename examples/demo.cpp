// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
// Placeholder until the demo is written.
#include <flashoptim/flashoptim.hpp>
int main() { return 0; }

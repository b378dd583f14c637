// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
#pragma once

/// The demo's GPU part: steps on the GPU and compares with the CPU bit for
/// bit; prints why it was skipped otherwise. Returns false on a mismatch.
bool demo_gpu();

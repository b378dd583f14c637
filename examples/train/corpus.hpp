// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The training corpus: the repository's own headers and documentation, read
// relative to the source directory, in a fixed (byte-wise sorted) order, so
// every machine and every working directory trains on the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace train {

struct corpus {
  std::vector<std::string> files;  ///< paths relative to the source directory, sorted
  std::vector<std::int64_t> file_bytes;
  std::vector<unsigned char> bytes;  ///< the files back to back
  std::int64_t train_end = 0;        ///< [0, train_end) trains, [train_end, size) validates (the last 5%)
  std::uint64_t hash = 0;            ///< FNV-1a 64 over (path, NUL, length, contents) of every file, in order
};

/// 64-bit FNV-1a, continued from `h` (start from fnv1a_seed).
constexpr std::uint64_t fnv1a_seed = 0xcbf29ce484222325ull;
std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = fnv1a_seed);

/// Reads include/ (recursively), docs/, README.md and BENCHMARKS.md under
/// `root`. Returns false and sets `error` when nothing usable is found.
bool load_corpus(const std::string& root, corpus& out, std::string& error);

}  // namespace train

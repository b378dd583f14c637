// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
#include "corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace train {

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {
bool wanted(const std::filesystem::path& p) {
  static const char* const exts[] = {".hpp", ".cuh", ".inl", ".h", ".md"};
  const std::string e = p.extension().string();
  return std::any_of(std::begin(exts), std::end(exts), [&](const char* x) { return e == x; });
}
}  // namespace

bool load_corpus(const std::string& root, corpus& out, std::string& error) {
  namespace fs = std::filesystem;
  const fs::path base(root);
  std::vector<std::string> files;
  std::error_code ec;
  for (const char* dir : {"include", "docs"}) {
    if (!fs::is_directory(base / dir, ec)) continue;
    for (fs::recursive_directory_iterator it(base / dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && wanted(it->path()))
        files.push_back(fs::relative(it->path(), base, ec).generic_string());
  }
  for (const char* f : {"README.md", "BENCHMARKS.md"})
    if (fs::is_regular_file(base / f, ec)) files.push_back(f);
  std::sort(files.begin(), files.end());  // byte-wise: the same order everywhere
  corpus c;
  c.hash = fnv1a_seed;
  for (const std::string& f : files) {
    std::ifstream in(base / f, std::ios::binary);
    if (!in) {
      error = "cannot read " + (base / f).string();
      return false;
    }
    const std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::uint64_t len = data.size();
    c.hash = fnv1a(f.data(), f.size() + 1, c.hash);  // the path and its NUL
    c.hash = fnv1a(&len, sizeof len, c.hash);        // little-endian on every supported host
    c.hash = fnv1a(data.data(), data.size(), c.hash);
    c.files.push_back(f);
    c.file_bytes.push_back(static_cast<std::int64_t>(data.size()));
    c.bytes.insert(c.bytes.end(), data.begin(), data.end());
  }
  if (c.bytes.size() < 4096) {
    error = "corpus under " + root + " has " + std::to_string(c.bytes.size()) +
            " bytes (expected include/, docs/, README.md of the flashoptim source tree)";
    return false;
  }
  c.train_end = static_cast<std::int64_t>(c.bytes.size()) * 95 / 100;
  out = std::move(c);
  return true;
}

}  // namespace train

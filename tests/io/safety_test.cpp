// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Safe to write: a failing or killed save never leaves a broken file under
// the final name. Safe to read: the safetensors parser's own checks (64-bit
// arithmetic, tiling, nesting, duplicates), independent of configurations.
#include <csignal>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "resume_check.hpp"

using namespace io_test;

namespace {

using cfg = adamw_config<ulp_bf16_i8>;

std::size_t temp_leftovers(const std::string& path) {
  const std::string dir = io::detail::parent_directory(path);
  const std::string prefix = path.substr(path.find_last_of('/') + 1) + ".tmp.";
  std::size_t count = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) count += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(d);
  }
  return count;
}

status parse(const std::string& json, std::uint64_t data_bytes = 0) {
  std::vector<unsigned char> image(8 + json.size() + data_bytes, 0);
  io::detail::store_le64(json.size(), image.data());
  std::memcpy(image.data() + 8, json.data(), json.size());
  io::safetensors_header h;
  return io::parse_safetensors(image.data(), image.size(), h);
}

}  // namespace

TEST_CASE("a save that fails mid-write keeps the old file and leaves no temporary") {
  model<cfg> old_state({1000}), new_state({100000});
  new_state.run(adamw_hyper(), 1, 1);
  const std::string path = temp_path("efbig.safetensors");
  REQUIRE(io::save_checkpoint<cfg>(path, adamw_hyper(), 0, old_state.refs.data(), old_state.names.data(), 1).ok());
  const auto before = read_all(path);

  // The kernel refuses writes past RLIMIT_FSIZE (EFBIG): a real failure of
  // write(2) in the middle of the data section.
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  rlimit small = old_limit;
  small.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const status s =
      io::save_checkpoint<cfg>(path, adamw_hyper(), 1, new_state.refs.data(), new_state.names.data(), 1);
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  std::signal(SIGXFSZ, previous);

  CHECK(s.code() == status_code::io_error);
  MESSAGE(std::string(s.what()));
  CHECK(read_all(path) == before);
  CHECK(temp_leftovers(path) == 0);
  std::remove(path.c_str());
}

TEST_CASE("a save killed at any moment leaves the old or the new file, complete") {
  // Two states to alternate between; whatever survives must load and be one of them.
  model<cfg> a({300000}), b({300000});
  b.run(adamw_hyper(), 1, 1);
  const std::string path = temp_path("killed.safetensors");
  REQUIRE(io::save_checkpoint<cfg>(path, adamw_hyper(), 0, a.refs.data(), a.names.data(), 1).ok());
  int survived_a = 0, survived_b = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      for (int k = 0;; ++k) {
        const auto& m = k % 2 ? a : b;
        (void)io::save_checkpoint<cfg>(path, adamw_hyper(), k % 2 ? 0 : 1, m.refs.data(), m.names.data(), 1);
      }
    }
    ::usleep(static_cast<useconds_t>(20000 + 13000 * trial));
    ::kill(child, SIGKILL);
    int wstatus = 0;
    ::waitpid(child, &wstatus, 0);
    model<cfg> r({300000}, 3);
    cfg::hyper h;
    std::int64_t step = -1;
    const status s = io::load_checkpoint<cfg>(path, h, step, r.refs.data(), r.names.data(), 1);
    REQUIRE_MESSAGE(s.ok(), s.what());
    if (r.snapshot() == a.snapshot() && step == 0) ++survived_a;
    if (r.snapshot() == b.snapshot() && step == 1) ++survived_b;
  }
  CHECK(survived_a + survived_b == 6);
  MESSAGE("after kills: old file " << survived_a << " times, new file " << survived_b << " times");
  // A killed writer may leave its temporary behind (documented); remove them.
  const std::string dir = io::detail::parent_directory(path);
  const std::string prefix = path.substr(path.find_last_of('/') + 1) + ".tmp.";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) std::remove((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  std::remove(path.c_str());
}

TEST_CASE("safetensors parser: 64-bit sizes and offsets are range-checked") {
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8).ok());
  CHECK(parse(R"({})").ok());
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})").ok());
  // Shapes whose product overflows 64 bits, or exceeds 2^56 elements.
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})").code() ==
        status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]}})").code() ==
        status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[72057594037927937],"data_offsets":[0,0]}})").code() ==
        status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})").code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1).code() == status_code::corrupt_file);
  // Offsets past the data section, reversed, or disagreeing with the shape.
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 3).code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551615]}})", 4).code() ==
        status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4).code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4).code() == status_code::size_mismatch);
  // Tensors must tile the data: gap, overlap, trailing bytes.
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})",
              5)
            .code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
              3)
            .code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 3).code() == status_code::corrupt_file);
}

TEST_CASE("safetensors parser: structure") {
  CHECK(parse(R"([])").code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":1})").code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8).code() == status_code::dtype_mismatch);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":0}})", 1).code() ==
        status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[1]}})", 1).code() == status_code::corrupt_file);
  CHECK(parse(R"({"__metadata__":{"k":1}})").code() == status_code::corrupt_file);
  CHECK(parse(R"({"__metadata__":{"k":"v","k":"w"}})").code() == status_code::corrupt_file);
  CHECK(parse(R"({"a":{"dtype":"U8","shape":[[[[[1]]]]],"data_offsets":[0,1]}})", 1).code() ==
        status_code::corrupt_file);
  CHECK(parse(std::string(200000, '[')).code() == status_code::corrupt_file);
  CHECK(parse(std::string("{}\0  ", 5)).code() == status_code::corrupt_file);
  CHECK(parse(R"({} x)").code() == status_code::corrupt_file);
  CHECK(parse("{\"\xff\":0}").code() == status_code::corrupt_file);
  // Header lengths that do not fit the file.
  std::vector<unsigned char> image(16, ' ');
  io::detail::store_le64(100, image.data());
  io::safetensors_header h;
  CHECK(io::parse_safetensors(image.data(), image.size(), h).code() == status_code::corrupt_file);
  io::detail::store_le64(~std::uint64_t{0}, image.data());
  CHECK(io::parse_safetensors(image.data(), image.size(), h).code() == status_code::corrupt_file);
  CHECK(io::parse_safetensors(image.data(), 7, h).code() == status_code::corrupt_file);
}

TEST_CASE("safetensors writer: wide elements first, aligned, offsets tile the data") {
  std::vector<io::tensor_spec> specs = {
      {"b", dtype::i8, {3}}, {"a", dtype::f32, {2}}, {"c", dtype::bf16, {5}}, {"d", dtype::u8, {0}}};
  const auto entries = io::plan_safetensors(specs);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].name == "a");
  CHECK(entries[1].name == "c");
  CHECK(entries[2].name == "b");
  CHECK(entries[3].name == "d");
  CHECK(entries[1].begin == 8);
  CHECK(entries[3].end == 21);
  std::string header;
  REQUIRE(io::serialize_safetensors_header({{"k", "v"}}, entries, header).ok());
  CHECK(header.size() % 8 == 0);
  std::vector<unsigned char> image(header.begin(), header.end());
  image.resize(image.size() + 21);
  io::safetensors_header h;
  REQUIRE(io::parse_safetensors(image.data(), image.size(), h).ok());
  CHECK(h.metadata.at("k") == "v");
  CHECK(h.find("c")->shape == std::vector<std::int64_t>{5});
}

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A state codec of your own, end to end: a compander written outside the
// library (its four functions and a name), used for AdamW's momentum,
// stepped by cpu::optimizer on the CPU's AVX2/AVX-512 path, saved in a
// checkpoint under its own name and resumed. docs/extending.md has the rules.
//
// The compander here is softsign, y = 2n / (1 + |n|), written out by hand. It
// declares `kind = softsign`: a promise that its functions give the library
// softsign's bits for every input, which lets the vector kernels (and the
// GPU's specialized encoders) run their own softsign arithmetic for it.
// FLASHOPTIM_REQUIRE_FAST_PATH turns that promise into a build-time check
// that the configuration takes the fast paths. (A compander without `kind`
// runs its own functions, on the scalar CPU step: same bytes, slower.)
//
// What is checked (exit status 1 if not): 60 steps, a save, a load into a
// fresh optimizer and 60 more steps give exactly the bytes of 120 steps of
// the library's own default configuration, the checkpoint names the user's
// compander, and a checkpoint of the library's codec is refused.
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/optim/cpu_optimizer.hpp>
#include <flashoptim/optim/cpu_optimizer_io.hpp>  // cpu::save, cpu::load (link flashoptim::io)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;
namespace fmt = fo::format;

// The user's compander: pre/post map a value to and from the code's [-1, 1];
// every operation is a *_rn function, so no compiler can contract it and
// the CPU and GPU agree bit for bit (docs/contract.md).
struct my_softsign {
  static constexpr const char* name = "my_softsign";  // recorded in checkpoints: keep it unique
  static constexpr fo::codec::compander_kind kind = fo::codec::compander_kind::softsign;
  FLASHOPTIM_HOST_DEVICE static float pre(float x) { return x; }
  FLASHOPTIM_HOST_DEVICE static float post(float n) {
    return fmt::div_rn(fmt::add_rn(n, n), fmt::add_rn(1.0f, fmt::abs_bits(n)));
  }
  FLASHOPTIM_HOST_DEVICE static float post_inverse(float y) {
    return fmt::div_rn(y, fmt::sub_rn(2.0f, fmt::abs_bits(y)));
  }
  FLASHOPTIM_HOST_DEVICE static float pre_inverse(float t) { return t; }
};
// int8 codes, one fp32 scale per group of 32, ties rounded away from zero.
using my_momentum = fo::codec::grouped<fo::codec::int8_code<true>, my_softsign, fo::codec::scale_fp32,
                                       fo::codec::code_rounding::half_up>;

using master = fo::codec::ulp_correction<bf16, std::int8_t>;
using user_cfg = fo::step_config<fo::rule::adamw, master, bf16, my_momentum, fo::codec::defaults::second_moment>;
using library_cfg = fo::step_config<fo::rule::adamw, master, bf16, fo::codec::defaults::momentum,
                                    fo::codec::defaults::second_moment>;
FLASHOPTIM_REQUIRE_FAST_PATH(user_cfg);  // a build error if the vector CPU path or the GPU's fast encoders are lost

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}

constexpr std::int64_t n = 4096;

// One tensor, trained on gradients that depend on the weights and the step.
template <class Cfg>
static void train(fo::cpu::optimizer<Cfg>& opt, std::vector<bf16>& p, std::vector<bf16>& g, int steps) {
  for (int k = 0; k < steps; ++k) {
    const double t = double(opt.step_count() + 1);
    for (std::int64_t i = 0; i < n; ++i)
      g[i] = fmt::from_float<bf16>(fmt::to_float(p[i]) - float(std::sin(0.01 * i + 0.2 * t)));
    check(opt.step());
  }
}
template <class Cfg>
static void build(fo::cpu::optimizer<Cfg>& opt, std::vector<bf16>& p, std::vector<bf16>& g) {
  typename Cfg::hyper h;
  h.lr = 1e-2;
  check(opt.init({{h, {{p.data(), g.data(), n, "w"}}}}));
}
// The tensor's parameter, correction and state bytes.
template <class Cfg>
static std::string bytes_of(const fo::cpu::optimizer<Cfg>& opt) {
  const auto& t = opt.tensors()[0];
  const auto l = fo::state_layout<Cfg>::for_size(n);
  std::string out;
  auto add = [&](const void* p, std::int64_t bytes) { out.append(static_cast<const char*>(p), std::size_t(bytes)); };
  add(t.param, n * 2);
  add(t.aux, l.aux_bytes);
  add(t.template state<0>().codes, l.slots[0].code_bytes);
  add(t.template state<0>().scales, l.slots[0].scale_bytes);
  add(t.template state<1>().codes, l.slots[1].code_bytes);
  add(t.template state<1>().scales, l.slots[1].scale_bytes);
  return out;
}

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/user_codec.safetensors";
  const bool vector = fo::cpu::path_of<user_cfg>() == fo::cpu::path::vector;
  std::printf("user config: CPU %s path (%s)\n", vector ? "vector" : "scalar",
              fo::cpu::to_string(fo::cpu::selected_isa<user_cfg>()));

  // The library's default momentum codec, 120 steps in one go.
  std::vector<bf16> p_lib(n, fmt::from_float<bf16>(0.0f)), g_lib(n);
  fo::cpu::optimizer<library_cfg> lib;
  build(lib, p_lib, g_lib);
  train(lib, p_lib, g_lib, 120);

  // The user's codec: 60 steps, save, a fresh optimizer loads them, 60 more.
  std::vector<bf16> p(n, fmt::from_float<bf16>(0.0f)), g(n);
  {
    fo::cpu::optimizer<user_cfg> opt;
    build(opt, p, g);
    train(opt, p, g, 60);
    check(fo::cpu::save(opt, path));
  }
  std::ifstream file(path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const bool named = image.find("my_softsign") != std::string::npos;
  std::printf("checkpoint %s: %zu bytes, %s the compander's name\n", path.c_str(), image.size(),
              named ? "records" : "DOES NOT RECORD");

  std::fill(p.begin(), p.end(), fmt::from_float<bf16>(0.0f));  // a new process starts from nothing
  fo::cpu::optimizer<user_cfg> resumed;
  build(resumed, p, g);
  // The library's run has the same bytes layout but another compander name:
  // its file is refused (and nothing is written), the user's is loaded.
  check(fo::cpu::save(lib, path + ".library"));
  const fo::status refused = fo::cpu::load(resumed, path + ".library");
  std::printf("loading the library codec's checkpoint: %s\n", refused.ok() ? "ACCEPTED" : refused.what());
  std::remove((path + ".library").c_str());
  check(fo::cpu::load(resumed, path));
  train(resumed, p, g, 60);

  const std::string a = bytes_of(lib), b = bytes_of(resumed);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) differ += a[i] != b[i];
  const bool same = a.size() == b.size() && differ == 0;
  std::printf("user codec, saved and resumed, vs the library's codec: %zu of %zu bytes differ (%s)\n", differ,
              a.size(), same ? "bit-identical" : "MISMATCH");
  std::remove(path.c_str());
  return same && named && !refused.ok() ? 0 : 1;
}

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// A rule and companders defined outside include/ (user_types.hpp) reach the
// fast CPU path through the traits they declare, give cpu::step_serial's
// bytes on every instruction set, and resume bit-identically from a
// checkpoint under the names they declare. The GPU half is
// extension_gpu_test.cu.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "common/typed_tensor.hpp"
#include "extension/user_types.hpp"
#include "flashoptim/kernel/proven_math.hpp"

namespace fo = flashoptim;

// The paths, at compile time: what a user checks with the opt-in assertion.
FLASHOPTIM_REQUIRE_FAST_PATH(user::signum_config);
FLASHOPTIM_REQUIRE_FAST_PATH(user::adamw_user_softsign);
static_assert(fo::cpu::path_of<user::signum_quadratic>() == fo::cpu::path::scalar,
              "a compander without a kind takes the scalar CPU step");
static_assert(fo::kernel::path_of<user::signum_quadratic>() == fo::kernel::path::generic,
              "a compander without a kind takes the GPU's generic encoder");
static_assert(fo::codec::compander_kind_of<user::quadratic_compander> == fo::codec::compander_kind::generic);
static_assert(fo::codec::compander_kind_of<user::my_softsign> == fo::codec::compander_kind::softsign);

// The GPU's proven element rules follow the declared kind: the library's
// default codecs keep theirs, the user's softsign gets softsign's, a
// compander of no kind the general one.
namespace proven = fo::kernel::proven;
static_assert(proven::element_rule_of<fo::codec::defaults::momentum>::value == proven::element_rule::softsign_int8);
static_assert(proven::element_rule_of<fo::codec::defaults::second_moment>::value == proven::element_rule::sqrt_uint8);
static_assert(proven::element_rule_of<user::momentum_codec>::value == proven::element_rule::softsign_int8);
static_assert(proven::element_rule_of<user::quadratic_codec>::value == proven::element_rule::general);

namespace {

/// Exact random values +-m * 2^e, e in [lo, hi].
struct bits {
  std::uint64_t z;
  std::uint64_t next() {
    std::uint64_t r = (z += 0x9e3779b97f4a7c15ull);
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    return r ^ (r >> 31);
  }
  float value(int lo, int hi) {
    const std::uint64_t r = next();
    if (r % 61 == 0) return 0.0f;
    const int e = lo + static_cast<int>((r >> 8) % static_cast<std::uint64_t>(hi - lo + 1));
    const std::uint32_t b = (static_cast<std::uint32_t>(r >> 63) << 31) | (static_cast<std::uint32_t>(e + 127) << 23) |
                            static_cast<std::uint32_t>((r >> 20) & 0x7fffffu);
    return fo::format::float_from_bits(b);
  }
};

template <class V>
void append(std::vector<std::uint8_t>& out, const V& v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
}
/// The bytes a configuration stores (not the unused vectors of absent
/// buffers, whose empty elements have no defined bytes).
template <class Config>
void append_stored(std::vector<std::uint8_t>& out, const testutil::typed_tensor<Config>& t) {
  append(out, t.param);
  if constexpr (Config::has_aux) append(out, t.aux);
  using S0 = typename Config::template state<0>;
  using S1 = typename Config::template state<1>;
  if constexpr (S0::stores_state) append(out, t.code0);
  if constexpr (fo::codec::is_grouped<S0>::value) append(out, t.scale0);
  if constexpr (Config::num_slots > 1 && S1::stores_state) append(out, t.code1);
  if constexpr (Config::num_slots > 1 && fo::codec::is_grouped<S1>::value) append(out, t.scale1);
  static_assert(Config::num_slots <= 2, "the configurations here have at most two slots");
}

/// `steps` steps of Config on tensors of several sizes, serially or through
/// cpu::step on `path`; returns every stored byte after each step.
template <class Config>
std::vector<std::uint8_t> run(const typename Config::hyper& h, bool serial, fo::cpu::isa path, int steps = 12) {
  std::vector<testutil::typed_tensor<Config>> ts;
  bits gen{0x5eedull};
  for (std::int64_t n : {std::int64_t{1000}, std::int64_t{4096 + 37}, std::int64_t{31}}) {
    ts.emplace_back(n);
    for (std::int64_t i = 0; i < n; ++i) ts.back().set_master(i, gen.value(-8, 1));
  }
  std::vector<std::uint8_t> out;
  for (int s = 1; s <= steps; ++s) {
    std::vector<fo::tensor_ref<Config>> views;
    for (std::size_t k = 0; k < ts.size(); ++k) {
      for (std::int64_t i = 0; i < ts[k].n; ++i) ts[k].set_grad(i, gen.value(-12, 0));
      views.push_back(ts[k].view(0x1234u + k));
    }
    fo::step_args a;
    a.step = s;
    fo::cpu::step_options o;
    o.instruction_set = path;
    o.threads = 2;
    o.min_groups_per_thread = 1;
    const fo::status st = serial ? fo::cpu::step_serial<Config>(h, a, views.data(), views.size())
                                 : fo::cpu::step<Config>(h, a, views.data(), views.size(), o);
    REQUIRE_MESSAGE(st.ok(), st.what());
    for (const auto& t : ts) append_stored(out, t);
  }
  return out;
}

template <class Config>
void check_every_isa(const typename Config::hyper& h, fo::cpu::path expected) {
  CHECK(fo::cpu::path_of<Config>() == expected);
  const auto serial = run<Config>(h, true, fo::cpu::isa::automatic);
  for (fo::cpu::isa i : {fo::cpu::isa::avx512, fo::cpu::isa::avx2, fo::cpu::isa::portable, fo::cpu::isa::automatic}) {
    if (i != fo::cpu::isa::automatic && !fo::cpu::isa_available(i)) continue;
    INFO("isa ", static_cast<int>(i));
    fo::cpu::step_options o;
    o.instruction_set = i;
    if (i == fo::cpu::isa::avx512 || i == fo::cpu::isa::avx2)
      CHECK(fo::cpu::selected_isa<Config>(o) == (expected == fo::cpu::path::vector ? i : fo::cpu::isa::portable));
    CHECK(run<Config>(h, false, i) == serial);
  }
}

}  // namespace

TEST_CASE("extension: a user rule (signum) and a user softsign on the vector path, every ISA == step_serial") {
  check_every_isa<user::signum_config>(user::signum_hyper(), fo::cpu::path::vector);
  auto h = user::signum_hyper();
  h.maximize = true;
  check_every_isa<user::signum_config>(h, fo::cpu::path::vector);
}

TEST_CASE("extension: the library's AdamW with a user softsign for m on the vector path") {
  fo::rule::adamw::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  check_every_isa<user::adamw_user_softsign>(h, fo::cpu::path::vector);
}

TEST_CASE("extension: a user softsign gives the library softsign's bytes") {
  // the promise its kind makes, and what lets it share the fast paths
  using lib = fo::step_config<fo::rule::adamw, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16,
                              fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;
  fo::rule::adamw::hyper h;
  h.lr = 1e-2;
  CHECK(run<user::adamw_user_softsign>(h, true, fo::cpu::isa::automatic) == run<lib>(h, true, fo::cpu::isa::automatic));
}

TEST_CASE("extension: a compander without a kind takes the scalar path, same bytes") {
  check_every_isa<user::signum_quadratic>(user::signum_hyper(), fo::cpu::path::scalar);
}

TEST_CASE("extension: signum is lion with beta1 = beta2, bit for bit") {
  // why its vector form may be lion's: the library's lion on the same bytes
  using lion_config = fo::step_config<fo::rule::lion, fo::codec::ulp_correction<fo::bf16, std::int8_t>, fo::bf16,
                                      user::momentum_codec>;
  fo::rule::lion::hyper lh;
  lh.lr = 1e-2;
  lh.beta1 = lh.beta2 = 0.9;
  lh.weight_decay = 0.1;
  CHECK(run<user::signum_config>(user::signum_hyper(), true, fo::cpu::isa::automatic) ==
        run<lion_config>(lh, true, fo::cpu::isa::automatic));
}

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// cpu::optimizer (optim/cpu_optimizer.hpp): two groups through the owning
// optimizer are byte for byte the same tensors stepped by hand with
// cpu::step_serial; its initialization is codec::split's (or leaves a 16-bit
// param as it is); the gradient pass and gradient release give the bytes of
// their hand-run equivalents; every refused call leaves everything as it
// was; the memory report's figures.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "flashoptim/optim/cpu_optimizer.hpp"

using namespace testconfigs;
namespace optim = flashoptim::optim;
using flashoptim::status_code;

namespace {

/// Sizes of the two groups' tensors: partial groups of 32, an empty tensor,
/// one past a 32768-element gradient segment.
const std::vector<std::int64_t> sizes0 = {37, 0, 1000, 33000};
const std::vector<std::int64_t> sizes1 = {64, 5};

template <class Config>
typename Config::hyper make_hyper(double wd) {
  typename Config::hyper h{};
  h.lr = 1e-2;
  h.weight_decay = wd;
  using R = typename Config::rule;
  if constexpr (std::is_same<R, rule::sgd>::value || std::is_same<R, rule::sgdw>::value)
    h.momentum = Config::template state<0>::stores_state ? 0.9 : 0.0;
  return h;
}

/// The trainer's side: params, grads and the fp32 weights they start from.
template <class Config>
struct trainer {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;
  std::vector<std::int64_t> sizes;
  std::vector<std::vector<P>> params;
  std::vector<std::vector<G>> grads;
  std::vector<std::vector<float>> fp32;
  testdata::generator gen;

  explicit trainer(std::uint64_t seed = 7) : gen(seed) {
    for (auto n : sizes0) sizes.push_back(n);
    for (auto n : sizes1) sizes.push_back(n);
    for (auto n : sizes) {
      params.emplace_back(static_cast<std::size_t>(n));
      grads.emplace_back(static_cast<std::size_t>(n));
      fp32.push_back(gen.values(static_cast<std::size_t>(n), 0.5f, 0.02));
    }
  }
  void fill_grads(float sigma = 1.0f, double special = 0.02) {
    for (auto& g : grads)
      for (auto& x : g) x = flashoptim::format::from_float<G>(gen.value(sigma, special));
  }
  /// Groups: 0 = decay (sizes0), 1 = no decay (sizes1); from fp32 or not.
  std::vector<optim::param_group<Config>> groups(bool from_fp32, bool named = true) {
    std::vector<optim::param_group<Config>> gs(2);
    gs[0].hyper = make_hyper<Config>(0.1);
    gs[1].hyper = make_hyper<Config>(0.0);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      optim::param_spec s;
      s.param = params[i].data();
      s.grad = grads[i].data();
      s.size = sizes[i];
      if (named) s.name = "w" + std::to_string(i);
      s.init_fp32 = from_fp32 ? fp32[i].data() : nullptr;
      gs[i < sizes0.size() ? 0 : 1].params.push_back(s);
    }
    return gs;
  }
};

/// Copies the gradients' values (the buffers stay where they are).
template <class Config>
void copy_grads(const trainer<Config>& from, trainer<Config>& to) {
  for (std::size_t i = 0; i < from.grads.size(); ++i)
    std::copy(from.grads[i].begin(), from.grads[i].end(), to.grads[i].begin());
}

struct alignas(256) block256 {
  unsigned char b[256];
};

template <class Config>
struct hand_model {
  std::vector<std::vector<typename Config::param_type>> params;
  std::vector<std::vector<block256>> state;
  std::vector<flashoptim::tensor_ref<Config>> views;

  /// The same tensors as `t`, split from the same fp32 weights, seeds as
  /// the optimizer gives them, grads the trainer's.
  hand_model(trainer<Config>& t, std::uint64_t seed) {
    const std::size_t k = t.sizes.size();
    params.resize(k);
    state.resize(k);
    views.resize(k);
    for (std::size_t i = 0; i < k; ++i) {
      const std::int64_t n = t.sizes[i];
      const auto l = flashoptim::state_layout<Config>::for_size(n);
      params[i].resize(static_cast<std::size_t>(n));
      state[i].assign(static_cast<std::size_t>(l.bytes / 256) + 1, block256{});
      auto& v = views[i];
      l.carve(state[i].data(), v);
      v.param = params[i].data();
      v.grad = t.grads[i].data();
      v.seed = optim::tensor_seed(seed, i);
      REQUIRE(flashoptim::codec::split<typename Config::master>(t.fp32[i].data(), n, v.param, v.aux).ok());
    }
  }
  /// cpu::step_serial per group (tensors of sizes0, then sizes1).
  void step(const typename Config::hyper& h0, const typename Config::hyper& h1, const flashoptim::step_args& a) {
    REQUIRE(flashoptim::cpu::step_serial<Config>(h0, a, views.data(), sizes0.size()).ok());
    REQUIRE(flashoptim::cpu::step_serial<Config>(h1, a, views.data() + sizes0.size(), sizes1.size()).ok());
  }
};

/// Every byte a step writes (param, correction, states) of a list of views.
template <class Config>
std::vector<std::uint8_t> written_bytes(const std::vector<flashoptim::tensor_ref<Config>>& views) {
  std::vector<std::uint8_t> out;
  for (const auto& v : views)
    flashoptim::for_each_buffer(v, [&](const char*, const void* p, std::size_t bytes, bool written) {
      if (!written || p == nullptr) return;
      const auto* b = static_cast<const std::uint8_t*>(p);
      out.insert(out.end(), b, b + bytes);
    });
  return out;
}

template <class T>
std::vector<std::uint8_t> raw(const T& x) {
  std::vector<std::uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &x, sizeof(T));
  return b;
}

}  // namespace

TEST_CASE_TEMPLATE("two groups through cpu::optimizer == cpu::step_serial per group by hand, bitwise", Config,
                   adamw_default, adam_default, sgd_momentum, sgd_plain, lion_default, adamw_amsgrad_default,
                   adamw_bf16_master, adamw_exact, adamw_fp32_native, adamw_fp16_ulp16, adamw_sr_codes,
                   adamw_fp8_states, sgd_fp16_master) {
  trainer<Config> tr;
  const std::uint64_t seed = 99;
  hand_model<Config> hand(tr, seed);
  flashoptim::cpu::optimizer<Config> opt;
  optim::optimizer_options oo;
  oo.seed = seed;
  oo.lr_check = optim::lr_check_mode::off;
  REQUIRE(opt.init(tr.groups(true), oo).ok());
  CHECK(opt.group_count() == 2);
  CHECK(opt.tensor_count() == tr.sizes.size());
  CHECK(opt.step_count() == 0);
  // init from fp32 == codec::split; states zero, as by hand
  for (std::size_t i = 0; i < tr.sizes.size(); ++i) {
    CHECK(opt.tensors()[i].seed == optim::tensor_seed(seed, i));
    CHECK(opt.tensors()[i].index_base == 0);
    CHECK(opt.names()[i] == "w" + std::to_string(i));
    CHECK(opt.tensor_group()[i] == (i < sizes0.size() ? 0 : 1));
  }
  CHECK(written_bytes(opt.tensors()) == written_bytes(hand.views));
  const auto h0 = make_hyper<Config>(0.1), h1 = make_hyper<Config>(0.0);
  for (int s = 1; s <= 4; ++s) {
    tr.fill_grads();
    REQUIRE(opt.step().ok());
    flashoptim::step_args a;
    a.step = s;
    hand.step(h0, h1, a);
    CHECK(opt.step_count() == s);
    CHECK(written_bytes(opt.tensors()) == written_bytes(hand.views));
  }
  // a learning-rate change on one group reaches that group only
  REQUIRE(opt.set_lr(1, 3e-3).ok());
  CHECK(opt.hyper(1).lr == 3e-3);
  CHECK(opt.hyper(0).lr == h0.lr);
  auto h1b = h1;
  h1b.lr = 3e-3;
  tr.fill_grads();
  REQUIRE(opt.step().ok());
  flashoptim::step_args a;
  a.step = 5;
  hand.step(h0, h1b, a);
  CHECK(written_bytes(opt.tensors()) == written_bytes(hand.views));
}

namespace {
/// Every 16-bit pattern as a parameter, initialized without fp32 weights:
/// the param stays as it was and (param, correction) decodes to its value.
template <class Config>
void check_init_from_param() {
  using P = typename Config::param_type;
  using M = typename Config::master;
  std::vector<P> param(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) param[b].bits = static_cast<std::uint16_t>(b);
  const std::vector<P> before = param;
  std::vector<optim::param_group<Config>> gs(1);
  optim::param_spec s;
  s.param = param.data();
  s.size = 65536;
  gs[0].params.push_back(s);
  flashoptim::cpu::optimizer<Config> opt;
  REQUIRE(opt.init(gs, {0, optim::lr_check_mode::off}).ok());
  CHECK(std::memcmp(param.data(), before.data(), param.size() * sizeof(P)) == 0);
  const auto& t = opt.tensors()[0];
  int bad = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    typename M::aux_type aux{};
    if constexpr (Config::has_aux) aux = t.aux[b];
    // the pair holds the param's value (ULP corrections decode -0 as +0)
    const float want = flashoptim::format::to_float(param[b]);
    const float got = M::decode(param[b], aux);
    const bool same = want == got || (std::isnan(want) && std::isnan(got));
    bad += same ? 0 : 1;
  }
  CHECK(bad == 0);
  // the states are zero
  flashoptim::for_each_slot<Config::num_slots>([&](auto sl) {
    constexpr int I = decltype(sl)::value;
    using S = typename Config::template state<I>;
    const auto& r = flashoptim::state_of<I>(t);
    const auto* c = reinterpret_cast<const unsigned char*>(r.codes);
    if (c != nullptr)
      CHECK(std::all_of(c, c + 65536 * flashoptim::storage_bytes<typename S::code_type>,
                        [](unsigned char x) { return x == 0; }));
  });
}
}  // namespace

TEST_CASE("init from the 16-bit param leaves it unchanged under every master mode") {
  check_init_from_param<adamw_default>();                                                     // ulp int8, bf16
  check_init_from_param<adamw_ulp16>();                                                       // ulp int16, bf16
  check_init_from_param<adamw_fp16_ulp8>();                                                   // ulp int8, fp16
  check_init_from_param<adamw_fp16_ulp16>();                                                  // ulp int16, fp16
  check_init_from_param<adamw_bf16_master>();                                                 // fp32 master
  check_init_from_param<adamw_fp16_master>();
  check_init_from_param<adamw_exact>();                                                       // exact split
  check_init_from_param<adamw_bf16_native>();                                                 // no correction
  check_init_from_param<adamw_fp16_native>();
}

TEST_CASE("init from the param: an fp32 master holds the param's value, ULP and exact corrections are zero") {
  trainer<adamw_bf16_master> tr;
  for (std::size_t i = 0; i < tr.sizes.size(); ++i)
    for (std::size_t k = 0; k < tr.params[i].size(); ++k)
      tr.params[i][k] = flashoptim::format::from_float<bf16>(tr.fp32[i][k]);
  flashoptim::cpu::optimizer<adamw_bf16_master> opt;
  REQUIRE(opt.init(tr.groups(false)).ok());
  for (std::size_t i = 0; i < tr.sizes.size(); ++i)
    for (std::size_t k = 0; k < tr.params[i].size(); ++k)
      REQUIRE(flashoptim::format::bits_of(opt.tensors()[i].aux[k]) ==
              flashoptim::format::bits_of(flashoptim::format::to_float(tr.params[i][k])));
}

TEST_CASE_TEMPLATE("step(grad_pass_config, grad_control) == cpu::grad_pass + cpu::step_serial by hand, bitwise", Config,
                   adamw_default, sgd_momentum, lion_default, adamw_fp32_grad) {
  trainer<Config> tr;
  hand_model<Config> hand(tr, 0);
  flashoptim::cpu::optimizer<Config> opt;
  REQUIRE(opt.init(tr.groups(true), {0, optim::lr_check_mode::off}).ok());
  flashoptim::grad_pass_config cfg;
  cfg.max_norm = 0.25;  // well below the gradients' norm: every step clips
  cfg.scaler.init_scale = 1024.0;
  cfg.scaler.growth_interval = 2;
  flashoptim::grad_control ctl = flashoptim::rule::initial_control(cfg);
  flashoptim::grad_control hand_ctl = ctl;
  for (int s = 1; s <= 4; ++s) {
    tr.fill_grads(static_cast<float>(ctl.loss_scale) * 0.01f, 0.0);
    REQUIRE(opt.step(cfg, ctl).ok());
    std::vector<flashoptim::grad_tensor> gl;
    for (std::size_t i = 0; i < tr.sizes.size(); ++i)
      gl.push_back({tr.grads[i].data(), flashoptim::dtype_v<typename Config::grad_type>, tr.sizes[i]});
    REQUIRE(flashoptim::cpu::grad_pass({gl.data(), static_cast<std::int64_t>(gl.size())}, cfg, &hand_ctl).ok());
    CHECK(raw(ctl) == raw(hand_ctl));
    CHECK(ctl.skip == 0);
    CHECK(ctl.clip_coef < 1.0);
    flashoptim::step_args a;
    a.step = s;
    a.inv_grad_scale = hand_ctl.multiplier;
    hand.step(make_hyper<Config>(0.1), make_hyper<Config>(0.0), a);
    CHECK(opt.step_count() == s);
    CHECK(written_bytes(opt.tensors()) == written_bytes(hand.views));
  }
  CHECK(ctl.loss_scale == 4096.0);  // grown twice (growth_interval 2, four clean steps)
}

TEST_CASE("step(grad_pass_config, grad_control) on an overflow writes no byte and does not advance the count") {
  using Config = adamw_default;
  trainer<Config> tr;
  flashoptim::cpu::optimizer<Config> opt;
  REQUIRE(opt.init(tr.groups(true)).ok());
  flashoptim::grad_pass_config cfg;
  flashoptim::grad_control ctl = flashoptim::rule::initial_control(cfg);
  tr.fill_grads();
  REQUIRE(opt.step(cfg, ctl).ok());
  REQUIRE(opt.step_count() == 1);
  tr.fill_grads();
  tr.grads[3][12345] = flashoptim::format::from_float<bf16>(std::numeric_limits<float>::infinity());
  const auto before = written_bytes(opt.tensors());
  const double scale = ctl.loss_scale;
  REQUIRE(opt.step(cfg, ctl).ok());
  CHECK(ctl.skip == 1);
  CHECK(ctl.loss_scale == scale * 0.5);  // GradScaler backs off
  CHECK(opt.step_count() == 1);
  CHECK(written_bytes(opt.tensors()) == before);
  // the next clean step is step 2
  tr.fill_grads();
  REQUIRE(opt.step(cfg, ctl).ok());
  CHECK(ctl.skip == 0);
  CHECK(opt.step_count() == 2);
}

TEST_CASE_TEMPLATE("gradient release in random order == the whole step, bitwise", Config, adamw_default, lion_default,
                   adamw_sr_codes, sgd_momentum) {
  // one trainer per optimizer (each updates its own params), the same gradients
  trainer<Config> tr, tr_released, tr_scaled;
  flashoptim::cpu::optimizer<Config> whole, released, scaled;
  const optim::optimizer_options oo{5, optim::lr_check_mode::off};
  REQUIRE(whole.init(tr.groups(true), oo).ok());
  REQUIRE(released.init(tr_released.groups(true), oo).ok());
  REQUIRE(scaled.init(tr_scaled.groups(true), oo).ok());
  std::mt19937 rng(3);
  std::vector<std::size_t> order(tr.sizes.size());
  for (int s = 1; s <= 4; ++s) {
    tr.fill_grads();
    copy_grads(tr, tr_released);
    REQUIRE(whole.step().ok());
    REQUIRE(released.begin_step().ok());
    CHECK(released.in_release_step());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (auto i : order) REQUIRE(released.step_tensor(i).ok());
    CHECK(released.step_count() == s - 1);  // advances at end_step
    REQUIRE(released.end_step().ok());
    CHECK(!released.in_release_step());
    CHECK(released.step_count() == s);
    CHECK(written_bytes(released.tensors()) == written_bytes(whole.tensors()));
  }
  // a fixed loss scale through begin_step == step_serial with that multiplier
  tr_scaled.fill_grads(64.0f);
  REQUIRE(scaled.begin_step(1.0 / 64.0).ok());
  for (std::size_t i = tr.sizes.size(); i-- > 0;) REQUIRE(scaled.step_tensor(i).ok());
  REQUIRE(scaled.end_step().ok());
  hand_model<Config> hand(tr_scaled, 5);
  flashoptim::step_args a;
  a.step = 1;
  a.inv_grad_scale = 1.0 / 64.0;
  hand.step(make_hyper<Config>(0.1), make_hyper<Config>(0.0), a);
  CHECK(written_bytes(scaled.tensors()) == written_bytes(hand.views));
}

namespace {
/// Everything observable of an optimizer, for "nothing changed" checks.
template <class Config>
struct snapshot {
  std::vector<std::uint8_t> bytes;
  std::vector<std::string> names;
  std::int64_t count;
  std::size_t groups;
  std::vector<std::uint8_t> hypers;
  std::vector<const void*> pointers;
  bool releasing;
  explicit snapshot(const flashoptim::cpu::optimizer<Config>& o)
      : bytes(written_bytes(o.tensors())), names(o.names()), count(o.step_count()), groups(o.group_count()),
        releasing(o.in_release_step()) {
    for (std::size_t g = 0; g < o.group_count(); ++g) {
      const auto r = raw(o.hyper(g));
      hypers.insert(hypers.end(), r.begin(), r.end());
    }
    for (const auto& t : o.tensors()) {
      pointers.push_back(t.param);
      pointers.push_back(t.aux);
      pointers.push_back(t.grad);
    }
  }
  bool operator==(const snapshot& o) const {
    return bytes == o.bytes && names == o.names && count == o.count && groups == o.groups && hypers == o.hypers &&
           pointers == o.pointers && releasing == o.releasing;
  }
};
}  // namespace

TEST_CASE("refused calls leave the optimizer, the trainer's buffers and the control block unchanged") {
  using Config = adamw_default;
  trainer<Config> tr;
  flashoptim::cpu::optimizer<Config> opt;
  REQUIRE(opt.init(tr.groups(true)).ok());
  tr.fill_grads();
  REQUIRE(opt.step().ok());
  auto params_of = [&] {
    std::vector<std::vector<bf16>> p = tr.params;
    return p;
  };
  const snapshot<Config> s0(opt);
  const auto p0 = params_of();
  auto unchanged = [&] {
    CHECK(snapshot<Config>(opt) == s0);
    CHECK(std::equal(tr.params.begin(), tr.params.end(), p0.begin(), [](const auto& a, const auto& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(bf16)) == 0;
    }));
  };

  SUBCASE("init: bad hyper") {
    auto gs = tr.groups(true);
    gs[1].hyper.lr = -1.0;
    const auto s = opt.init(gs);
    CHECK(s.code() == status_code::hyperparameter_out_of_range);
    CHECK(std::string(s.message()).find("group 1") != std::string::npos);
    unchanged();
  }
  SUBCASE("init: duplicate names") {
    auto gs = tr.groups(true);
    gs[1].params[1].name = "w0";
    const auto s = opt.init(gs);
    CHECK(s.code() == status_code::invalid_argument);
    CHECK(std::string(s.message()).find("'w0'") != std::string::npos);
    unchanged();
  }
  SUBCASE("init: a given name equal to a default one") {
    auto gs = tr.groups(true, false);
    gs[0].params[0].name = "param.3";
    CHECK(opt.init(gs).code() == status_code::invalid_argument);
    unchanged();
  }
  SUBCASE("init: rows * cols != size") {
    auto gs = tr.groups(true);
    gs[0].params[2].rows = 10;
    gs[0].params[2].cols = 99;  // 990 != 1000
    CHECK(opt.init(gs).code() == status_code::size_mismatch);
    gs[0].params[2].cols = std::numeric_limits<std::int64_t>::max();  // rows * cols overflows
    CHECK(opt.init(gs).code() == status_code::size_mismatch);
    unchanged();
  }
  SUBCASE("init: null param") {
    auto gs = tr.groups(true);
    gs[1].params[0].param = nullptr;
    CHECK(opt.init(gs).code() == status_code::null_pointer);
    unchanged();
  }
  SUBCASE("init: negative size, misaligned param, bad step options, bad lr_check mode") {
    auto gs = tr.groups(true);
    gs[0].params[0].size = -1;
    CHECK(opt.init(gs).code() == status_code::invalid_argument);
    gs = tr.groups(true);
    gs[0].params[0].param = reinterpret_cast<char*>(tr.params[0].data()) + 1;
    CHECK(opt.init(gs).code() == status_code::misaligned);
    flashoptim::cpu::step_options so;
    so.threads = -1;
    CHECK(opt.init(tr.groups(true), {}, so).code() == status_code::invalid_argument);
    optim::optimizer_options oo;
    oo.lr_check = static_cast<optim::lr_check_mode>(7);
    CHECK(opt.init(tr.groups(true), oo).code() == status_code::invalid_argument);
    unchanged();
  }
  SUBCASE("init: two params overlap; an fp32 source overlaps another tensor's param") {
    auto gs = tr.groups(true);
    gs[0].params[3].param = tr.params[2].data() + 10;  // 33000 elements over tensor 2's 1000
    gs[0].params[3].size = 500;
    CHECK(opt.init(gs).code() == status_code::aliasing);
    // tensor 0's weights come from tensor 2's param, which init would write
    gs = tr.groups(true);
    gs[0].params[0].init_fp32 = reinterpret_cast<const float*>(tr.params[2].data());
    gs[0].params[0].size = 37;
    CHECK(opt.init(gs).code() == status_code::aliasing);
    unchanged();
  }
  SUBCASE("init: offload_fraction is the device optimizer's option") {
    flashoptim::optim::optimizer_options o;
    o.offload_fraction = 0.5;
    CHECK(opt.init(tr.groups(true), o).code() == status_code::invalid_argument);
    unchanged();
  }
  SUBCASE("set_hyper / set_lr out of range or invalid") {
    auto h = opt.hyper(0);
    h.beta1 = 1.5;
    CHECK(opt.set_hyper(0, h).code() == status_code::hyperparameter_out_of_range);
    CHECK(opt.set_lr(1, std::nan("")).code() == status_code::non_finite_hyperparameter);
    CHECK(opt.set_lr(2, 1e-3).code() == status_code::invalid_argument);
    CHECK_THROWS_AS(opt.hyper(2), std::out_of_range);
    unchanged();
  }
  SUBCASE("step with a null or overlapping gradient") {
    CHECK(opt.set_grad(3, nullptr).ok());
    CHECK(opt.step().code() == status_code::null_pointer);
    flashoptim::grad_pass_config cfg;
    flashoptim::grad_control ctl = flashoptim::rule::initial_control(cfg);
    const auto c0 = raw(ctl);
    CHECK(opt.step(cfg, ctl).code() == status_code::null_pointer);
    CHECK(raw(ctl) == c0);
    CHECK(opt.set_grad(3, tr.params[2].data()).code() == status_code::aliasing);  // over tensor 2's param
    CHECK(opt.set_grad(3, reinterpret_cast<const char*>(tr.grads[3].data()) + 1).code() == status_code::misaligned);
    CHECK(opt.set_grad(9, tr.grads[3].data()).code() == status_code::invalid_argument);
    REQUIRE(opt.set_grad(3, tr.grads[3].data()).ok());
    unchanged();
  }
  SUBCASE("step(cfg, ctl) with a bad configuration writes no control byte") {
    flashoptim::grad_pass_config cfg;
    flashoptim::grad_control ctl = flashoptim::rule::initial_control(cfg);
    cfg.max_norm = 0.0;
    const auto c0 = raw(ctl);
    CHECK(opt.step(cfg, ctl).code() == status_code::invalid_argument);
    CHECK(raw(ctl) == c0);
    unchanged();
  }
  SUBCASE("release: step_tensor twice, end_step missing one, step and step(cfg, ctl) inside") {
    CHECK(opt.step_tensor(0).code() == status_code::invalid_argument);  // no begin_step
    CHECK(opt.end_step().code() == status_code::invalid_argument);
    CHECK(!opt.begin_step(0.0).ok());  // a zero multiplier
    unchanged();
    REQUIRE(opt.begin_step().ok());
    for (std::size_t i = 0; i + 1 < tr.sizes.size(); ++i) REQUIRE(opt.step_tensor(i).ok());
    const snapshot<Config> mid(opt);
    const auto twice = opt.step_tensor(2);
    CHECK(twice.code() == status_code::invalid_argument);
    CHECK(std::string(twice.message()).find("already stepped") != std::string::npos);
    const std::size_t last = tr.sizes.size() - 1;
    const auto missing = opt.end_step();
    CHECK(missing.code() == status_code::invalid_argument);
    CHECK(std::string(missing.message()).find("tensor " + std::to_string(last) + " ('w5')") != std::string::npos);
    CHECK(opt.step().code() == status_code::invalid_argument);
    flashoptim::grad_pass_config cfg;
    flashoptim::grad_control ctl = flashoptim::rule::initial_control(cfg);
    const auto c0 = raw(ctl);
    const auto pass = opt.step(cfg, ctl);
    CHECK(pass.code() == status_code::invalid_argument);
    CHECK(std::string(pass.message()).find("release") != std::string::npos);
    CHECK(raw(ctl) == c0);
    CHECK(opt.set_lr(0, 1e-4).code() == status_code::invalid_argument);
    CHECK(opt.begin_step().code() == status_code::invalid_argument);
    CHECK(opt.step_tensor(99).code() == status_code::invalid_argument);
    CHECK(snapshot<Config>(opt) == mid);
    CHECK(opt.step_count() == 1);
    // the step stays open: the missing tensor completes it
    REQUIRE(opt.step_tensor(last).ok());
    REQUIRE(opt.end_step().ok());
    CHECK(opt.step_count() == 2);
  }
  SUBCASE("an optimizer without init refuses to step") {
    flashoptim::cpu::optimizer<Config> empty;
    CHECK(!empty.initialized());
    CHECK(empty.step().code() == status_code::invalid_argument);
    CHECK(empty.begin_step().code() == status_code::invalid_argument);
    CHECK(empty.step_count() == 0);
    unchanged();
  }
}

TEST_CASE("memory report: AdamW default is 5.25 B/param under gradient release, 7.25 with gradients") {
  using Config = adamw_default;
  std::vector<bf16> p0(4096), p1(1024 * 3);
  std::vector<optim::param_group<Config>> gs(2);
  optim::param_spec s;
  s.param = p0.data();
  s.size = 4096;
  s.rows = 64;
  s.cols = 64;
  gs[0].params.push_back(s);
  s = {};
  s.param = p1.data();
  s.size = 3072;
  gs[1].params.push_back(s);
  flashoptim::cpu::optimizer<Config> opt;
  REQUIRE(opt.init(gs).ok());
  const optim::memory_report r = opt.memory();
  const std::int64_t n = 4096 + 3072;
  CHECK(r.elements == n);
  CHECK(r.param_bytes == 2 * n);
  CHECK(r.grad_bytes == 2 * n);
  CHECK(r.correction_bytes == n);
  CHECK(r.state_code_bytes == 2 * n);
  CHECK(r.state_scale_bytes == 2 * 4 * (n / 32));
  CHECK(r.table_bytes == 0);
  CHECK(r.bytes_per_param(false) == 5.25);
  CHECK(r.bytes_per_param(true) == 7.25);
  CHECK(r.bytes_per_param(false) == flashoptim::layout::bytes<Config>::resident_per_param(false));
  CHECK(r.arena_bytes == r.correction_bytes + r.state_code_bytes + r.state_scale_bytes + r.padding_bytes);
  CHECK(r.arena_bytes == flashoptim::state_layout<Config>::for_size(4096).bytes +
                             flashoptim::state_layout<Config>::for_size(3072).bytes);
  CHECK(r.padding_bytes > 0);  // 64 and 48 bytes of scales each fill a 256-byte piece
  CHECK(r.to_string().find("5.2500 B under gradient release") != std::string::npos);
  CHECK(opt.names()[0] == "param.0");
  CHECK(opt.names()[1] == "param.1");
  // every piece 256-byte aligned
  for (const auto& t : opt.tensors()) {
    CHECK(reinterpret_cast<std::uintptr_t>(t.aux) % 256 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(flashoptim::state_of<0>(t).codes) % 256 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(flashoptim::state_of<1>(t).scales) % 256 == 0);
  }
}

TEST_CASE("memory report of other layouts and of odd sizes follows layout::bytes") {
  trainer<adamw_fp32_native> tr;
  flashoptim::cpu::optimizer<adamw_fp32_native> opt;
  REQUIRE(opt.init(tr.groups(true)).ok());
  const auto r = opt.memory();
  std::int64_t n = 0, state = 0, arena = 0;
  for (auto k : tr.sizes) {
    n += k;
    state += flashoptim::layout::bytes<adamw_fp32_native>::state_for_size(k);
    arena += flashoptim::state_layout<adamw_fp32_native>::for_size(k).bytes;
  }
  CHECK(r.elements == n);
  CHECK(r.correction_bytes == 0);
  CHECK(r.correction_bytes + r.state_code_bytes + r.state_scale_bytes == state);
  CHECK(r.arena_bytes == arena);
  CHECK(r.bytes_per_param(true) == doctest::Approx((8.0 * n + state) / n));
  CHECK(optim::memory_report{}.bytes_per_param(true) == 0.0);
}

namespace {
/// Counts what goes through it (the arena is its only allocation).
template <class T>
struct counting_allocator {
  using value_type = T;
  long* live;
  explicit counting_allocator(long* l) : live(l) {}
  template <class U>
  counting_allocator(const counting_allocator<U>& o) : live(o.live) {}
  T* allocate(std::size_t n) {
    ++*live;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) {
    --*live;
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const counting_allocator<U>& o) const { return live == o.live; }
  template <class U>
  bool operator!=(const counting_allocator<U>& o) const { return live != o.live; }
};
}  // namespace

TEST_CASE("the arena comes from the allocator; move-only ownership frees it once") {
  using Config = adamw_default;
  trainer<Config> tr;
  long live = 0;
  {
    flashoptim::cpu::optimizer<Config, counting_allocator<unsigned char>> a{counting_allocator<unsigned char>(&live)};
    REQUIRE(a.init(tr.groups(true)).ok());
    CHECK(live == 1);
    REQUIRE(a.init(tr.groups(false)).ok());  // the old arena freed
    CHECK(live == 1);
    auto b = std::move(a);
    CHECK(live == 1);
    CHECK(b.initialized());
    CHECK(b.tensor_count() == tr.sizes.size());
    tr.fill_grads();
    CHECK(b.step().ok());
    static_assert(!std::is_copy_constructible<decltype(b)>::value, "move-only");
  }
  CHECK(live == 0);
}

TEST_CASE("tensor seeds: a fixed mix of the optimizer seed and the index") {
  CHECK(optim::tensor_seed(0, 0) != optim::tensor_seed(0, 1));
  CHECK(optim::tensor_seed(1, 0) != optim::tensor_seed(0, 0));
  CHECK(optim::tensor_seed(42, 7) == optim::tensor_seed(42, 7));
  // pinned: checkpoints and the device optimizer depend on the function
  CHECK(optim::tensor_seed(0, 0) == 0xe220a8397b1dcdafull);
}

TEST_CASE("optim::flatten and optim::arena_layout: order, names, offsets, refusals that leave the output alone") {
  using Config = adamw_default;
  std::vector<bf16> a(40), b(70), c(3);
  std::vector<optim::param_group<Config>> gs(3);
  optim::param_spec s;
  s.param = a.data(), s.size = 40, s.name = "a";
  gs[0].params.push_back(s);
  s = {};
  s.param = b.data(), s.size = 70, s.rows = 7, s.cols = 10;
  gs[2].params.push_back(s);  // group 1 is empty
  s = {};
  s.param = c.data(), s.size = 3, s.name = "c";
  gs[2].params.push_back(s);
  gs[2].hyper.lr = 0.5;
  optim::flat_params<Config> f;
  REQUIRE(optim::flatten(gs, f).ok());
  REQUIRE(f.specs.size() == 3);
  CHECK(f.specs[0].name == "a");
  CHECK(f.specs[1].name == "param.1");
  CHECK(f.specs[2].name == "c");
  CHECK(f.group == std::vector<std::int32_t>{0, 2, 2});
  CHECK(f.hypers.size() == 3);
  CHECK(f.hypers[2].lr == 0.5);

  optim::arena_layout<Config> l;
  REQUIRE(optim::arena_layout<Config>::plan(f.specs, l).ok());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(l.offset[i] == at);
    CHECK(l.offset[i] % 256 == 0);
    at += flashoptim::state_layout<Config>::for_size(f.specs[i].size).bytes;
  }
  CHECK(l.bytes == at);
  flashoptim::tensor_ref<Config> t;
  alignas(256) static unsigned char base[1 << 14];
  REQUIRE(l.bytes <= static_cast<std::int64_t>(sizeof base));
  l.carve(base, 1, t);
  CHECK(t.size == 70);
  CHECK(reinterpret_cast<unsigned char*>(t.aux) == base + l.offset[1]);

  // errors: `f` and `l` stay as they were
  const auto names = f.specs.size();
  gs[2].params[0].rows = 8;
  CHECK(optim::flatten(gs, f).code() == status_code::size_mismatch);
  CHECK(f.specs.size() == names);
  std::vector<optim::param_spec> huge(40);
  for (auto& h : huge) h.size = flashoptim::max_elements;  // 40 x 2^56 x ~3.25 B: past 2^63
  const auto bytes = l.bytes;
  CHECK(optim::arena_layout<Config>::plan(huge, l).code() == status_code::capacity_exceeded);
  CHECK(l.bytes == bytes);
  huge.resize(1);
  huge[0].size = flashoptim::max_elements + 1;
  CHECK(optim::arena_layout<Config>::plan(huge, l).code() == status_code::invalid_argument);
}

TEST_CASE("lr check: report lists what a tiny lr cannot move; strict refuses steps until the lr is raised") {
  using Config = adamw_default;
  trainer<Config> tr;
  auto gs = tr.groups(true);
  gs[0].hyper.lr = 1e-9;  // group 0 only: a bf16 + int8 weight of ~0.5 ignores an update of 1e-9
  flashoptim::cpu::optimizer<Config> opt;

  SUBCASE("report") {
    REQUIRE(opt.init(gs, {0, optim::lr_check_mode::report}).ok());
    REQUIRE(!opt.lr_report().empty());
    for (const auto& e : opt.lr_report().cannot_move) {
      CHECK(e.group == 0);
      CHECK(e.name == opt.names()[e.tensor]);
    }
    CHECK(opt.lr_report().tensors == tr.sizes.size());
    tr.fill_grads();
    CHECK(opt.step().ok());  // report mode only reports
    REQUIRE(opt.set_lr(0, 1e-3).ok());
    CHECK(opt.lr_report().empty());
  }
  SUBCASE("strict") {
    REQUIRE(opt.init(gs, {0, optim::lr_check_mode::strict}).ok());
    REQUIRE(!opt.lr_report().empty());
    tr.fill_grads();
    const snapshot<Config> s0(opt);
    const auto refused = opt.step();
    CHECK(refused.code() == status_code::hyperparameter_out_of_range);
    CHECK(std::string(refused.message()).find("strict") != std::string::npos);
    CHECK(opt.begin_step().code() == status_code::hyperparameter_out_of_range);
    flashoptim::grad_pass_config cfg;
    flashoptim::grad_control ctl = flashoptim::rule::initial_control(cfg);
    const auto c0 = raw(ctl);
    CHECK(opt.step(cfg, ctl).code() == status_code::hyperparameter_out_of_range);
    CHECK(raw(ctl) == c0);
    CHECK(snapshot<Config>(opt) == s0);
    REQUIRE(opt.set_lr(0, 1e-3).ok());
    CHECK(opt.lr_report().empty());
    CHECK(opt.step().ok());
    CHECK(opt.step_count() == 1);
  }
  SUBCASE("off") {
    REQUIRE(opt.init(gs, {0, optim::lr_check_mode::off}).ok());
    CHECK(opt.lr_report().empty());
    CHECK(opt.lr_report().tensors == 0);
  }
  SUBCASE("refresh_lr_check measures the weights again") {
    REQUIRE(opt.init(tr.groups(true), {0, optim::lr_check_mode::report}).ok());
    REQUIRE(opt.lr_report().empty());
    // group 1 (no decay): an update of ~lr = 1e-2 cannot move a weight of 1e4
    for (auto& p : tr.params[4]) p = flashoptim::format::from_float<bf16>(1.0e4f);
    CHECK(opt.lr_report().empty());  // measured at init
    REQUIRE(opt.refresh_lr_check().ok());
    REQUIRE(opt.lr_report().cannot_move.size() == 1);
    CHECK(opt.lr_report().cannot_move[0].tensor == 4);
  }
}

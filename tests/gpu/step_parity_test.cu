// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// GPU == CPU, bit for bit (docs/test-matrix.md C5 on the GPU, C16, C20): every
// configuration of tests/common/configs.hpp is stepped by the device plan
// and by cpu::step_serial on identical bytes, and every byte of every
// buffer (padding sentinels included) is compared after every step.
#include "common/configs.hpp"
#include "gpu_harness.hpp"

using namespace gpu_test;
namespace tc = testconfigs;

namespace {

template <class Config>
typename Config::hyper default_hyper() {
  typename Config::hyper h;
  if constexpr (std::is_same<typename Config::rule, rule::sgd>::value ||
                std::is_same<typename Config::rule, rule::sgdw>::value) {
    h.lr = 0.05;
    h.momentum = Config::state0::stores_state ? 0.9 : 0.0;
    h.weight_decay = 0.01;
  } else if constexpr (std::is_same<typename Config::rule, rule::lion>::value) {
    h.lr = 1e-3;
    h.weight_decay = 0.1;
  } else {
    h.lr = 1e-2;
    h.weight_decay = 0.1;
  }
  return h;
}

/// Steps `sizes` as one plan for `steps` steps; compares after every step.
template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
void check_parity(const typename Config::hyper& h, const std::vector<std::int64_t>& sizes, int steps,
                  std::uint64_t seed, bool non_finite = false, int grid = 0) {
  tensor_set<Config> ts;
  ts.allocate(sizes);
  testdata::generator gen(seed);
  ts.init(gen);
  ts.upload();
  device::step_plan<Config, Policy> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size()));
  const auto r = grid > 0 ? plan.ref().with_grid(grid) : plan.ref();
  for (int s = 1; s <= steps; ++s) step_and_compare(ts, r, h, s, gen, non_finite);
}

template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
void parity_suite(const char* name) {
  INFO("config ", name);
  const auto h = default_hyper<Config>();
  check_parity<Config, Policy>(h, {1, 33, 1025, 278011, 0}, 12, 11);  // an empty tensor last (C16)
  check_parity<Config, Policy>(h, {1, 33, 1025}, 100, 12);
  check_parity<Config, Policy>(h, {4097, 65}, 5, 13, /*non_finite=*/true);
}

}  // namespace

#define PARITY_CASE(cfg) \
  TEST_CASE("parity " #cfg) { parity_suite<tc::cfg>(#cfg); }

PARITY_CASE(sgd_plain)
PARITY_CASE(sgd_momentum)
PARITY_CASE(sgdw_momentum)
PARITY_CASE(adam_default)
PARITY_CASE(adamw_default)
PARITY_CASE(lion_default)
PARITY_CASE(adamw_fp32_native)
PARITY_CASE(adamw_bf16_native)
PARITY_CASE(adamw_fp16_native)
PARITY_CASE(adamw_bf16_master)
PARITY_CASE(adamw_fp16_master)
PARITY_CASE(adamw_ulp16)
PARITY_CASE(adamw_fp16_ulp8)
PARITY_CASE(adamw_fp16_ulp16)
PARITY_CASE(adamw_exact)
PARITY_CASE(adamw_rounded)
PARITY_CASE(lion_rounded)
// SGD with momentum on the rounded split (its default policy: warp tiles).
using sgd_momentum_rounded = step_config<rule::sgd, codec::rounded_split, bf16, codec::defaults::momentum>;
TEST_CASE("parity sgd_momentum_rounded") { parity_suite<sgd_momentum_rounded>("sgd_momentum_rounded"); }
PARITY_CASE(adamw_fp32_grad)
PARITY_CASE(adamw_reference)
PARITY_CASE(adamw_fp32_states)
PARITY_CASE(adamw_bf16_states)
PARITY_CASE(adamw_bf16_sr_states)
PARITY_CASE(adamw_fp16_states)
PARITY_CASE(adamw_fp16_sr_states)
PARITY_CASE(adamw_fp8_states)
PARITY_CASE(adamw_mixed_states)
PARITY_CASE(lion_fp32)
PARITY_CASE(lion_reference)
PARITY_CASE(sgd_fp16_master)
PARITY_CASE(sgdw_exact_fp8)
PARITY_CASE(adam_fp16_reference)
PARITY_CASE(adamw_sr_codes)
// AMSGrad: a third state slot (max_exp_avg_sq), v's codec by default, an
// fp32 one, and plain bf16 states with stochastic rounding.
PARITY_CASE(adam_amsgrad_default)
PARITY_CASE(adamw_amsgrad_default)
PARITY_CASE(adamw_amsgrad_fp32_max)
PARITY_CASE(adamw_amsgrad_bf16)

// maximize (torch's maximize=True): the gradient multiplier's sign flips,
// every rule; non-finite gradients included (parity_suite's third run).
TEST_CASE("parity: maximize for SGD, AdamW, AMSGrad and Lion") {
  {
    auto h = default_hyper<tc::sgd_momentum>();
    h.maximize = true;
    h.nesterov = true;
    INFO("sgd_momentum maximize");
    check_parity<tc::sgd_momentum>(h, {1, 33, 1025, 278011, 0}, 12, 71);
    check_parity<tc::sgd_momentum>(h, {4097, 65}, 5, 72, /*non_finite=*/true);
  }
  {
    auto h = default_hyper<tc::sgd_plain>();
    h.maximize = true;
    INFO("sgd_plain maximize");
    check_parity<tc::sgd_plain>(h, {1, 33, 1025, 278011}, 5, 73);
  }
  {
    auto h = default_hyper<tc::adamw_default>();
    h.maximize = true;
    INFO("adamw_default maximize");
    check_parity<tc::adamw_default>(h, {1, 33, 1025, 278011, 0}, 12, 74);
    check_parity<tc::adamw_default>(h, {1, 33, 1025}, 100, 75);
    check_parity<tc::adamw_default>(h, {4097, 65}, 5, 76, /*non_finite=*/true);
    check_parity<tc::adamw_default, tuning::previous_step_policy>(h, {1, 33, 1025, 278011}, 5, 77);
  }
  {
    auto h = default_hyper<tc::adamw_amsgrad_default>();
    h.maximize = true;
    INFO("adamw_amsgrad_default maximize");
    check_parity<tc::adamw_amsgrad_default>(h, {1, 33, 1025, 278011, 0}, 12, 78);
    check_parity<tc::adamw_amsgrad_default>(h, {4097, 65}, 5, 79, /*non_finite=*/true);
  }
  {
    auto h = default_hyper<tc::lion_default>();
    h.maximize = true;
    INFO("lion_default maximize");
    check_parity<tc::lion_default>(h, {1, 33, 1025, 278011, 0}, 12, 80);
    check_parity<tc::lion_default>(h, {4097, 65}, 5, 81, /*non_finite=*/true);
  }
}

// The other policies the benchmarks compare (bench/gpu/bench_step.cu): the
// previous defaults and the proven-range and staging variants, on the rules
// and layouts whose kernels they change. (The default is the 2-block
// range-checked one with 3 stages.)
TEST_CASE("parity: previous and candidate step policies") {
  using previous = tuning::previous_step_policy;
  using unstaged = tuning::unstaged_step_policy;
  using s2_b3 = tuning::step_policy<256, 8, 3, true, true, true, true, true, false, 2>;
  using s4_b2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 4>;
  using s3_t128 = tuning::step_policy<128, 8, 6, true, true, true, true, true, false, 3>;
  parity_suite<tc::adamw_default, unstaged>("adamw_default, t256_n8_b3_checked (unstaged)");
  parity_suite<tc::adamw_default, s2_b3>("adamw_default, s2_t256_n8_b3");
  parity_suite<tc::adamw_default, s4_b2>("adamw_default, s4_t256_n8_b2");
  parity_suite<tc::lion_reference, s4_b2>("lion_reference, s4_t256_n8_b2 (2-byte scales staged as 4-byte words)");
  parity_suite<tc::sgdw_exact_fp8, s3_t128>("sgdw_exact_fp8, s3_t128_n8_b6");
  // The staged loop with and without the block barrier before each tile
  // (Policy::sync_stages), whichever the default uses.
  using s3_barrier = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, true>;
  using s3_free = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false>;
  using s2_barrier = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 2, true>;
  parity_suite<tc::adamw_default, s3_barrier>("adamw_default, s3_t256_n8_b2 with the barrier");
  parity_suite<tc::adamw_default, s3_free>("adamw_default, s3_t256_n8_b2 without the barrier");
  parity_suite<tc::adamw_default, s2_barrier>("adamw_default, s2_t256_n8_b2 with the barrier");
  parity_suite<tc::lion_reference, s3_barrier>("lion_reference, s3 with the barrier (2-byte scales staged as words)");
  // Long runs: a few blocks walk many units each, through every stage of the ring.
  for (int grid : {1, 2, 5}) {
    CAPTURE(grid);
    check_parity<tc::adamw_default, s3_barrier>(default_hyper<tc::adamw_default>(), {278011, 4097, 2048 * 7}, 3, 14,
                                                false, grid);
    check_parity<tc::adamw_default, s3_free>(default_hyper<tc::adamw_default>(), {278011, 4097, 2048 * 7}, 3, 14,
                                             false, grid);
    check_parity<tc::adamw_default, s4_b2>(default_hyper<tc::adamw_default>(), {278011, 4097, 2048 * 7}, 3, 14,
                                           false, grid);
    check_parity<tc::adamw_default>(default_hyper<tc::adamw_default>(), {278011, 4097, 2048 * 7}, 3, 15, false,
                                    grid);
  }
  using b2 = tuning::step_policy<256, 8, 2, true, true, true, true, true>;
  using unchecked = tuning::step_policy<256, 8, 2, true, true, true, true, false>;
  using b2_prefetch = tuning::step_policy<256, 8, 2, true, true, true, true, true, true>;
  using b3_prefetch = tuning::step_policy<256, 8, 3, true, true, true, true, true, true>;
  parity_suite<tc::adamw_default, previous>("adamw_default, previous policy");
  parity_suite<tc::adamw_default, b2>("adamw_default, t256_n8_b2_checked");
  parity_suite<tc::adamw_default, unchecked>("adamw_default, t256_n8_b2_proven_runs");
  parity_suite<tc::adamw_default, b2_prefetch>("adamw_default, t256_n8_b2_checked_prefetch");
  parity_suite<tc::adamw_default, b3_prefetch>("adamw_default, t256_n8_b3_checked_prefetch");
  parity_suite<tc::adam_default, b2>("adam_default, t256_n8_b2_checked");
  parity_suite<tc::lion_default, b2>("lion_default, t256_n8_b2_checked");
  parity_suite<tc::sgd_momentum, b2>("sgd_momentum, t256_n8_b2_checked");
  parity_suite<tc::adamw_fp16_ulp16, b2>("adamw_fp16_ulp16, t256_n8_b2_checked");
  parity_suite<tc::lion_default, b3_prefetch>("lion_default, t256_n8_b3_checked_prefetch");
  // Three slots through the staging ring and the unstaged and previous kernels.
  parity_suite<tc::adamw_amsgrad_default, previous>("adamw_amsgrad_default, previous policy");
  parity_suite<tc::adamw_amsgrad_default, unstaged>("adamw_amsgrad_default, unstaged");
  parity_suite<tc::adamw_amsgrad_default, s4_b2>("adamw_amsgrad_default, s4_t256_n8_b2");
}

// Warp tiles (Policy::warp_tiles, kernel/step_kernel.cuh's step_staged_run):
// each warp steps R consecutive tiles of a run, its 4-byte group scales read
// from a window its lanes copied together. Runs of R units and the tail of
// fewer than R after them; windows rotating through their ring (grids of 1,
// 2 and 5 walk many units per block); slots without a window beside ones
// with (2-byte scales, plain states); the third AMSGrad slot; the barrier
// loop; the 5-stage ring; non-finite gradients, whose tiles are redone from
// global memory after a failed range check.
TEST_CASE("parity: warp tiles") {
  using w4 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 4>;
  using w8 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 8>;
  using w2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 2>;
  using w4_s5 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 5, false, 4>;
  using w4_s2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 2, false, 4>;
  using w4_barrier = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, true, 4>;
  const std::vector<std::int64_t> long_runs = {278011, 4097, 2048 * 7, 2048 * 8};
  for (int grid : {1, 2, 5}) {
    CAPTURE(grid);
    check_parity<tc::adamw_default, w4>(default_hyper<tc::adamw_default>(), long_runs, 3, 90, false, grid);
    check_parity<tc::adamw_default, w8>(default_hyper<tc::adamw_default>(), long_runs, 3, 91, false, grid);
    check_parity<tc::adamw_default, w2>(default_hyper<tc::adamw_default>(), long_runs, 2, 92, false, grid);
    check_parity<tc::adamw_default, w4_s2>(default_hyper<tc::adamw_default>(), long_runs, 2, 93, false, grid);
    check_parity<tc::adamw_default, w4_barrier>(default_hyper<tc::adamw_default>(), long_runs, 2, 94, false, grid);
    check_parity<tc::adamw_fp8_states, w4_s5>(default_hyper<tc::adamw_fp8_states>(), long_runs, 3, 95, false, grid);
    check_parity<tc::lion_default, w4>(default_hyper<tc::lion_default>(), long_runs, 3, 96, false, grid);
    check_parity<tc::lion_default, w4_s2>(default_hyper<tc::lion_default>(), long_runs, 3, 98, false, grid);
    check_parity<tc::adamw_default, w4>(default_hyper<tc::adamw_default>(), {2048 * 9 + 5, 278011}, 4, 97,
                                        /*non_finite=*/true, grid);
  }
  // (parity_suite's full grid gives each block a unit or two: the tails; a
  // grid of 2 gives every block runs of many groups of R units.)
#define WARP_TILES_CASE(cfg, policy, seed, what)                                                      \
  parity_suite<tc::cfg, policy>(#cfg ", " what);                                                    \
  check_parity<tc::cfg, policy>(default_hyper<tc::cfg>(), long_runs, 3, seed, false, 2);              \
  check_parity<tc::cfg, policy>(default_hyper<tc::cfg>(), {2048 * 9 + 5, 278011}, 3, seed + 1, true, 2)
  WARP_TILES_CASE(adamw_default, w4, 100, "warp tiles 4");
  WARP_TILES_CASE(sgd_momentum, w4, 102, "warp tiles 4");
  WARP_TILES_CASE(adamw_amsgrad_default, w4, 104, "warp tiles 4 (three windowed slots)");
  WARP_TILES_CASE(adamw_mixed_states, w4, 106, "warp tiles 4 (int8 and bf16-SR states)");
  WARP_TILES_CASE(lion_reference, w4, 108, "warp tiles 4 (2-byte scales staged per tile)");
  WARP_TILES_CASE(sgd_momentum, w4_s2, 114, "warp tiles 4, 2 stages");
  WARP_TILES_CASE(adamw_bf16_states, w4, 110, "warp tiles 4 (no scales)");
  WARP_TILES_CASE(sgdw_exact_fp8, w4_s5, 112, "warp tiles 4, 5 stages");
#undef WARP_TILES_CASE
}

// The default takes warp tiles for the rounded split with every stored state
// in groups with fp32 scales and int8 / uint8 / fp8 codes rounded to nearest
// (tuning/step_policy.hpp: measured faster there), and not for the other
// layouts.
namespace warp_tile_default {
namespace c = codec;
namespace p = codec::precision;
using fp8_rounded = step_config<rule::adamw, c::rounded_split, bf16, p::fp8_momentum, p::fp8_second_moment>;
using mixed_rounded = step_config<rule::adamw, c::rounded_split, bf16, c::defaults::momentum, p::bf16_sr>;
using reference_rounded = step_config<rule::adamw, c::rounded_split, bf16, c::reference::momentum, c::reference::second_moment>;
using sr_codes_rounded = step_config<rule::adamw, c::rounded_split, bf16,
                                     c::grouped<c::int8_code<true>, c::softsign, c::scale_fp32, c::code_rounding::stochastic>,
                                     c::defaults::second_moment>;
template <class Config>
constexpr int R = tuning::default_step_policy<Config>::type::warp_tiles;
static_assert(R<tc::adamw_rounded> == 4, "rounded split, 8-bit states");
static_assert(R<tc::lion_rounded> == 4, "rounded split, int8 momentum");
static_assert(R<fp8_rounded> == 4, "rounded split, fp8 states");
static_assert(R<mixed_rounded> == 1, "a state without a window");
static_assert(R<sr_codes_rounded> == 1, "stochastically rounded codes (not measured)");
static_assert(R<reference_rounded> == 1, "fp16 scales: no window");
static_assert(R<tc::adamw_default> == 1, "the paper's split");
static_assert(R<tc::adamw_bf16_native> == 1, "native<bf16>");
static_assert(R<tc::adamw_fp16_ulp8> == 1, "fp16 + int8");
static_assert(R<tc::adamw_ulp16> == 4, "bf16 + int16 ULP (its decode's Newton step)");
static_assert(R<tc::adamw_fp16_ulp16> == 1, "fp16 + int16 ULP (not measured)");
}  // namespace warp_tile_default

// The range-checked attempt without master_update's keep select
// (Policy::checked_reencode; kernel_config.cuh, codec::reencodes_every_pair):
// the default takes it where it measured faster, and every stored parameter
// pattern (every rounded-split pair, NaN parameters, infinities and zeros
// with a negative correction among them) keeps the bytes the CPU's
// master_update gives it under a zero update (lr = 0: every finite value is
// unchanged), then under a real one. A NaN parameter sends its tile to the
// exact step, which treats it as the CPU does (codec::updated_bits: before
// this test the CPU kept a bf16 0x7fc0 that the GPU re-encoded, and
// re-encoded an fp16 NaN that the GPU kept).
namespace checked_reencode {
namespace c = codec;
namespace p = codec::precision;
using fp8_rounded = step_config<rule::adamw, c::rounded_split, bf16, p::fp8_momentum, p::fp8_second_moment>;
using native_reference = step_config<rule::adamw, c::native<bf16>, bf16, c::reference::momentum, c::reference::second_moment>;
template <class Config>
constexpr bool on = tuning::default_step_policy<Config>::type::checked_reencode;
static_assert(on<tc::adamw_bf16_native> && on<tc::adamw_fp16_native>, "native<T>: measured faster");
static_assert(!on<fp8_rounded>, "rounded split, fp8 states: faster in one lease only");
static_assert(!on<tc::adamw_rounded> && !on<tc::lion_rounded>, "rounded split, int8 states: AdamW measured slower");
static_assert(!on<tc::adamw_default>, "the paper's split is not listed by reencodes_every_pair");
/// The default policy of the rounded split with 8-bit states, re-encoding.
using w4_reencode = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 4, true>;
using r1_reencode = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 1, true>;
// With a reference-layout state the finite guard is off, so the attempt
// keeps the select whatever the policy says.
static_assert(std::is_same<kernel::kernel_config<native_reference, true, true, true, true, true>::master,
                           c::native<bf16>>::value);
static_assert(std::is_same<kernel::kernel_config<tc::adamw_bf16_native, true, true, true, true, true>::master,
                           kernel::reencoding_master<c::native<bf16>>>::value);
static_assert(std::is_same<kernel::kernel_config<tc::adamw_bf16_native, true, true, true, true, false>::master,
                           c::native<bf16>>::value);
// The rounded split's attempt encodes without its NaN select, with the keep
// select or without it (kernel::checked_attempt_master); the exact step
// (not Checked) keeps both, and a reference-layout state (finite guard off)
// keeps the mode itself.
static_assert(std::is_same<kernel::kernel_config<tc::adamw_rounded, true, true, true, true, false>::master,
                           kernel::non_nan_master<c::rounded_split>>::value);
static_assert(std::is_same<kernel::kernel_config<tc::adamw_rounded, true, true, true, true, true>::master,
                           kernel::reencoding_master<c::rounded_split>>::value);
static_assert(std::is_same<kernel::kernel_config<tc::adamw_rounded, true, true, true, false, false>::master,
                           c::rounded_split>::value);
static_assert(std::is_same<kernel::kernel_config<step_config<rule::adamw, c::rounded_split, bf16, c::reference::momentum,
                                                             c::reference::second_moment>,
                                                 true, true, true, true, false>::master,
                           c::rounded_split>::value);

/// Every parameter pattern (with every correction for a one-byte aux), in
/// two tensors; a zero update then a real one.
template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
void every_pattern(std::uint64_t seed) {
  constexpr bool aux8 = Config::has_aux && sizeof(typename Config::aux_type) == 1;
  const std::int64_t patterns = aux8 ? (std::int64_t{1} << 24) : (std::int64_t{1} << 16);
  tensor_set<Config> ts;
  ts.allocate({patterns / 2 + 3, patterns / 2 - 3});
  testdata::generator gen(seed);
  ts.init(gen);
  std::int64_t k = 0;
  for (std::size_t t = 0; t < ts.count(); ++t) {
    auto r = ts.ref(t, false);
    for (std::int64_t e = 0; e < r.size; ++e, ++k) {
      r.param[e].bits = static_cast<std::uint16_t>(k);
      if constexpr (aux8) r.aux[e] = static_cast<typename Config::aux_type>(static_cast<std::uint8_t>(k >> 16));
    }
  }
  ts.upload();
  device::step_plan<Config, Policy> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size()));
  for (int s = 1; s <= 2; ++s) {
    auto h = default_hyper<Config>();
    if (s == 1) h.lr = 0.0;
    step_and_compare(ts, plan.ref(), h, s, gen, false);
  }
}
}  // namespace checked_reencode

TEST_CASE("parity: every stored parameter pattern, the re-encoding attempt") {
  using namespace checked_reencode;
  every_pattern<tc::adamw_bf16_native>(130);
  every_pattern<tc::adamw_fp16_native>(131);
  every_pattern<fp8_rounded, tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 5, false, 4, true>>(132);
  every_pattern<tc::adamw_rounded, w4_reencode>(133);
  every_pattern<tc::lion_rounded, w4_reencode>(134);
  every_pattern<tc::adamw_rounded>(135);  // the default: the select kept
  every_pattern<native_reference, r1_reencode>(136);
  // the paper's split (no re-encoding attempt): the NaN rule's other side,
  // a NaN parameter whose decoded value is the canonical NaN
  every_pattern<tc::adamw_default>(137);
}

// A small case of the same for compute-sanitizer (racecheck, synccheck):
// one block over 9 units of two tensors: a group of 4 units with windows and
// the tail unit of the first tensor, then the second tensor's group of 4.
TEST_CASE("parity: warp tiles, small") {
  using w4 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 4>;
  check_parity<tc::adamw_default, w4>(default_hyper<tc::adamw_default>(), {2048 * 5, 2048 * 4}, 1, 120, false, 1);
}
// The same with 2 stages: the copies into a stage's buffer are issued right
// after the warp has read it.
TEST_CASE("parity: warp tiles, 2 stages, small") {
  using w4_s2 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 2, false, 4>;
  check_parity<tc::lion_rounded, w4_s2>(default_hyper<tc::lion_rounded>(), {2048 * 5, 2048 * 4}, 1, 121, false, 1);
}

// fp8 states step with a 5-stage ring by default (tuning/step_policy.hpp);
// the other layouts keep 3. Long runs walk every slot of the longer ring
// several times; the 3-stage fp8 kernel stays checked beside it.
static_assert(tuning::default_step_policy<tc::adamw_fp8_states>::type::stages == 5, "fp8 states: 5 stages");
static_assert(tuning::default_step_policy<tc::sgdw_exact_fp8>::type::stages == 5, "one fp8 state: 5 stages");
static_assert(tuning::default_step_policy<tc::adamw_default>::type::stages == 3, "8-bit default states: 3 stages");
static_assert(tuning::default_step_policy<tc::adamw_mixed_states>::type::stages == 3, "int8 and bf16-SR states: 3");
// Rules with one stored state keep 3 stages with warp tiles (2 were faster in
// one lease and slower in another: tuning/step_policy.hpp); an fp8 momentum
// takes 5.
using lion_fp8_rounded = step_config<rule::lion, codec::rounded_split, bf16, codec::precision::fp8_momentum>;
static_assert(tuning::default_step_policy<tc::lion_rounded>::type::stages == 3, "Lion, warp tiles: 3 stages");
static_assert(tuning::default_step_policy<sgd_momentum_rounded>::type::stages == 3, "SGD-m, warp tiles: 3 stages");
static_assert(tuning::default_step_policy<tc::adamw_rounded>::type::stages == 3, "AdamW, warp tiles: 3 stages");
static_assert(tuning::default_step_policy<tc::lion_default>::type::stages == 3, "Lion, no warp tiles: 3 stages");
static_assert(tuning::default_step_policy<lion_fp8_rounded>::type::stages == 5, "an fp8 momentum: 5 stages");
// The paper's split (bf16 + int8 ULP; tc's *_default and reference layouts)
// steps 512 x 16 tiles, one block per SM; fp16 + int8, 4-byte gradients and
// three states keep 256 x 8 (tuning/step_policy.hpp, wide_tiles).
template <class C>
using default_of = typename tuning::default_step_policy<C>::type;
static_assert(default_of<tc::adamw_default>::threads == 512 &&
                  default_of<tc::adamw_default>::elements_per_thread == 16 &&
                  default_of<tc::adamw_default>::min_blocks_per_sm == 1,
              "the paper's split: 512 x 16, 1 block per SM");
static_assert(default_of<tc::adamw_reference>::elements_per_thread == 16, "reference states: 512 x 16");
static_assert(default_of<tc::sgd_momentum>::elements_per_thread == 16 &&
                  default_of<tc::lion_default>::elements_per_thread == 16,
              "SGD momentum and Lion with the paper's split: 512 x 16");
static_assert(default_of<tc::adamw_fp16_ulp8>::elements_per_thread == 8, "fp16 + int8: 256 x 8");
static_assert(default_of<tc::adamw_fp32_grad>::elements_per_thread == 8,
              "fp32 gradients: 256 x 8 (the ring would not fit)");
static_assert(default_of<tc::adamw_amsgrad_default>::elements_per_thread == 8, "three states: 256 x 8");
static_assert(default_of<tc::adamw_bf16_states>::elements_per_thread == 8, "16-bit states: 256 x 8");
static_assert(default_of<tc::adamw_rounded>::elements_per_thread == 8, "the rounded split: 256 x 8");
// Long runs of the wide tiles: a grid of 1 to 5 blocks walks many 8192-element
// units through each block's ring (the suites' grids give a block one unit).
TEST_CASE("parity: the paper's split's 512 x 16 tiles, long runs") {
  const std::vector<std::int64_t> sizes{8192 * 23 + 4099, 8192 * 4, 3000, 16 * 301 + 7};
  check_parity<tc::adamw_default>(default_hyper<tc::adamw_default>(), sizes, 4, 141, false, 1);
  check_parity<tc::adamw_default>(default_hyper<tc::adamw_default>(), sizes, 3, 142, /*non_finite=*/true, 2);
  check_parity<tc::adamw_reference>(default_hyper<tc::adamw_reference>(), sizes, 4, 143, false, 5);
  check_parity<tc::adamw_reference>(default_hyper<tc::adamw_reference>(), sizes, 3, 144, /*non_finite=*/true, 1);
  check_parity<tc::sgd_momentum>(default_hyper<tc::sgd_momentum>(), sizes, 4, 145, false, 3);
  check_parity<tc::lion_default>(default_hyper<tc::lion_default>(), sizes, 4, 146, false, 2);
}

TEST_CASE("parity: fp8 states' 5-stage ring, long runs") {
  using s3 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3>;
  for (int grid : {1, 2, 5}) {
    CAPTURE(grid);
    check_parity<tc::adamw_fp8_states>(default_hyper<tc::adamw_fp8_states>(), {278011, 4097, 2048 * 11}, 3, 16,
                                       false, grid);
    check_parity<tc::sgdw_exact_fp8>(default_hyper<tc::sgdw_exact_fp8>(), {278011, 2048 * 11}, 3, 17, false, grid);
  }
  parity_suite<tc::adamw_fp8_states, s3>("adamw_fp8_states, s3_t256_n8_b2 (the previous default)");
}

TEST_CASE("parity: SGD hyperparameter variants (momentum, nesterov, dampening, decay)") {
  using C = tc::sgd_momentum;
  using CW = tc::sgdw_momentum;
  struct variant {
    double momentum, dampening, wd;
    bool nesterov;
  };
  for (const variant v : {variant{0.9, 0.0, 0.0, false}, variant{0.9, 0.5, 0.01, false}, variant{0.9, 0.0, 0.01, true},
                          variant{0.5, 0.0, 0.1, true}}) {
    CAPTURE(v.momentum);
    CAPTURE(v.dampening);
    CAPTURE(v.nesterov);
    C::hyper h;
    h.lr = 0.05, h.momentum = v.momentum, h.dampening = v.dampening, h.weight_decay = v.wd, h.nesterov = v.nesterov;
    check_parity<C>(h, {33, 1025}, 10, 21);
    CW::hyper hw;
    hw.lr = 0.05, hw.momentum = v.momentum, hw.dampening = v.dampening, hw.weight_decay = v.wd,
    hw.nesterov = v.nesterov;
    check_parity<CW>(hw, {33, 1025}, 10, 22);
  }
  tc::adamw_default::hyper ha;
  ha.decouple_lr = true;
  ha.initial_lr = 2e-3;
  check_parity<tc::adamw_default>(ha, {1025}, 5, 23);
}

TEST_CASE("determinism across grid sizes and single vs multi-tensor (C20)") {
  using C = tc::adamw_sr_codes;  // stochastic rounding: the key must be the element's index in its tensor
  const auto h = default_hyper<C>();
  for (int grid : {1, 3, 7, 64, 1000}) {
    CAPTURE(grid);
    check_parity<C>(h, {5000, 1, 40000, 31, 0, 4096}, 3, 31, false, grid);
  }
  // Each tensor alone in its own plan gives the bytes the shared plan gives
  // (both equal the CPU's, which steps tensors independently).
  for (std::int64_t n : {5000, 1, 40000, 31, 4096}) check_parity<C>(h, {n}, 3, 32);
}

TEST_CASE("100,000 tensors in one launch") {
  using C = tc::adamw_default;
  testdata::generator sizes_gen(41);
  std::vector<std::int64_t> sizes(100000);
  for (auto& n : sizes) n = static_cast<std::int64_t>(sizes_gen.u32() % 300);
  sizes[5] = 0;
  sizes.back() = 0;
  check_parity<C>(default_hyper<C>(), sizes, 2, 42);
}

TEST_CASE("many tensors of whole units (vector path, a tensor per unit)") {
  using C = tc::adamw_default;
  std::vector<std::int64_t> sizes(600, 4096);
  sizes[100] = 8192;
  sizes[301] = 4096 * 3 + 5;
  sizes[599] = 40;
  check_parity<C>(default_hyper<C>(), sizes, 2, 61);
  check_parity<C>(default_hyper<C>(), sizes, 2, 62, false, 7);
}

TEST_CASE("N = 0 and N = 1, empty lists (C16)") {
  using C = tc::adamw_default;
  const auto h = default_hyper<C>();
  check_parity<C>(h, {0}, 2, 51);
  check_parity<C>(h, {1}, 3, 52);
  check_parity<C>(h, {0, 0, 1, 0}, 3, 53);
  device::step_plan<C> plan;
  STATUS_OK(plan.build(static_cast<const tensor_ref<C>*>(nullptr), 0));
  step_args a;
  STATUS_OK(plan.step_async(h, a, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
}

// Parameter groups (docs/optimizer.md): tensors of several groups in one
// launch, each with its group's hyperparameters, give the bytes of the CPU
// step of each group and of one plan per group; with device inputs, lr is
// read per group.
template <class Config>
void check_groups(int groups, bool device_inputs, std::uint64_t seed) {
  const std::vector<std::int64_t> sizes{1, 4096, 33, 278011, 0, 1025, 8192, 65};
  std::vector<std::int32_t> tensor_group(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) tensor_group[i] = static_cast<std::int32_t>((i * 5 + 3) % groups);
  std::vector<typename Config::hyper> h(groups, default_hyper<Config>());
  for (int g = 0; g < groups; ++g) {
    h[g].lr *= 1.0 + 0.25 * g;
    h[g].weight_decay = g % 2 == 0 ? 0.0 : 0.1;  // decay / no decay
  }
  tensor_set<Config> ts, split;  // one plan with groups; the same bytes stepped by a plan per group
  ts.allocate(sizes);
  split.allocate(sizes);
  testdata::generator gen(seed), gen2(seed);
  ts.init(gen);
  split.init(gen2);
  ts.upload();
  split.upload();
  device::step_plan<Config> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size(), tensor_group.data(), groups));
  CHECK(plan.groups() == groups);
  std::vector<device::step_plan<Config>> per_group(groups);
  const auto split_refs = split.refs(true);
  for (int g = 0; g < groups; ++g) {
    std::vector<tensor_ref<Config>> mine;
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (tensor_group[i] == g) mine.push_back(split_refs[i]);
    STATUS_OK(per_group[g].build(mine.data(), mine.size()));
  }
  double* lr = nullptr;
  GPU_CHECK(cudaMalloc(&lr, sizeof(double) * groups));
  for (int s = 1; s <= 6; ++s) {
    ts.fill_grads(gen, 1.0f, 0.05, s == 4);
    split.fill_grads(gen2, 1.0f, 0.05, s == 4);
    ts.upload(s_grad);
    split.upload(s_grad);
    step_args a;
    a.step = s;
    // The CPU reference: each group's tensors with that group's
    // hyperparameters (the device-input run is compared with host-mode
    // plans per group, which equal the CPU: the rest of this file).
    const auto host = ts.refs(false);
    for (int g = 0; g < groups && !device_inputs; ++g) {
      std::vector<tensor_ref<Config>> mine;
      for (std::size_t i = 0; i < sizes.size(); ++i)
        if (tensor_group[i] == g) mine.push_back(host[i]);
      STATUS_OK(cpu::step_serial<Config>(h[g], a, mine.data(), mine.size()));
    }
    if (device_inputs) {
      std::vector<double> lrs(groups);
      for (int g = 0; g < groups; ++g) lrs[g] = h[g].lr * (1.0 + 0.1 * s);
      GPU_CHECK(cudaMemcpy(lr, lrs.data(), sizeof(double) * groups, cudaMemcpyHostToDevice));
      std::vector<typename Config::hyper> hs = h;
      for (int g = 0; g < groups; ++g) hs[g].lr = lrs[g];
      device::device_inputs in;
      in.lr = lr;
      STATUS_OK(plan.step_async(h.data(), groups, a, in, nullptr));
      for (int g = 0; g < groups; ++g) STATUS_OK(per_group[g].step_async(hs[g], a, nullptr));
    } else {
      STATUS_OK(plan.step_async(h.data(), groups, a, nullptr));
      for (int g = 0; g < groups; ++g) STATUS_OK(per_group[g].step_async(h[g], a, nullptr));
    }
    GPU_CHECK(cudaDeviceSynchronize());
    // One launch == a plan per group, every byte.
    for (int k = 0; k < s_count; ++k) {
      const auto x = ts.download(k), y = split.download(k);
      INFO("step ", s, " slot ", slot_name(k));
      REQUIRE(x == y);
    }
    if (!device_inputs) {
      std::string where;
      const bool same = ts.same(where);
      INFO("step ", s, ": ", where);
      REQUIRE(same);
    }
  }
  GPU_CHECK(cudaFree(lr));
}

TEST_CASE("parameter groups: one launch == a plan per group == the CPU step per group") {
  for (int groups : {1, 2, 3, tuning::max_step_groups}) {
    CAPTURE(groups);
    check_groups<tc::adamw_default>(groups, false, 91);
    check_groups<tc::adamw_default>(groups, true, 92);
    check_groups<tc::sgd_momentum>(groups, false, 93);
    check_groups<tc::lion_default>(groups, true, 94);
    check_groups<tc::adamw_amsgrad_default>(groups, false, 95);
  }
}

TEST_CASE("parameter groups: bad group lists are refused and nothing is launched") {
  using C = tc::adamw_default;
  tensor_set<C> ts;
  ts.allocate({33, 64});
  testdata::generator gen(96);
  ts.init(gen);
  ts.upload();
  const auto refs = ts.refs(true);
  device::step_plan<C> plan;
  const std::int32_t bad[] = {0, 2};
  CHECK(plan.build(refs.data(), refs.size(), bad, 2).code() == status_code::invalid_argument);
  const std::int32_t negative[] = {-1, 0};
  CHECK(plan.build(refs.data(), refs.size(), negative, 2).code() == status_code::invalid_argument);
  const std::int32_t ok[] = {0, 1};
  CHECK(plan.build(refs.data(), refs.size(), ok, tuning::max_step_groups + 1).code() == status_code::invalid_argument);
  CHECK(plan.build(refs.data(), refs.size(), ok, 0).code() == status_code::invalid_argument);
  CHECK_FALSE(plan.built());
  STATUS_OK(plan.build(refs.data(), refs.size(), ok, 2));
  const auto h = default_hyper<C>();
  step_args a;
  // One hyper for a plan of two groups: refused.
  CHECK(plan.step_async(h, a, nullptr).code() == status_code::invalid_argument);
  const C::hyper two[] = {h, h};
  CHECK(plan.step_async(two, 1, a, nullptr).code() == status_code::invalid_argument);
  C::hyper invalid[] = {h, h};
  invalid[1].lr = -1.0;
  CHECK_FALSE(plan.step_async(invalid, 2, a, nullptr).ok());
  GPU_CHECK(cudaDeviceSynchronize());
  std::string where;
  CHECK(ts.same(where));  // nothing was written (the host copy was never stepped)
}

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Exact zeros in an Adam gradient on the GPU (kernel/range_checked.cuh, the
// zero-tolerant attempt): GPU == CPU bit for bit, and which warp tiles were
// stepped again; and rows left idle, whose m sticks at subnormal values. The range-checked first attempt rejects m = 0 and v = 0, so
// a tile with a zero gradient over zero states fails it; the zero-tolerant
// second attempt must then keep the tile (no exact redo), and a tile whose
// failure is not a zero must still reach the exact step. The counts come
// from the kernel's test hook (FLASHOPTIM_COUNT_REDONE_TILES, defined here
// only), one per warp tile: [0] zero-tolerant attempts, [1] exact redos.
#define FLASHOPTIM_COUNT_REDONE_TILES 1

#include "common/configs.hpp"
#include "gpu_harness.hpp"

using namespace gpu_test;
namespace tc = testconfigs;

namespace {

struct redo_counts {
  unsigned long long zero_attempts = 0, exact = 0;
};

/// The counts since the last call (and zeroes them).
redo_counts take_counts() {
  unsigned long long c[2] = {0, 0};
  GPU_CHECK(cudaMemcpyFromSymbol(c, kernel::redone_tiles, sizeof(c)));
  const unsigned long long zero[2] = {0, 0};
  GPU_CHECK(cudaMemcpyToSymbol(kernel::redone_tiles, zero, sizeof(zero)));
  return {c[0], c[1]};
}

/// How a step's gradients are drawn.
enum class pattern {
  dense,        ///< N(0, 1), no zeros
  zeros,        ///< N(0, 1) with +0 in rows of 4096 never touched, in rows that move each
                ///< step and in one element in ~211 elsewhere
  signed_zeros, ///< the same with -0 for half the zeros
  zeros_huge,   ///< zeros, and in one 512-element stretch in ~64 a gradient of 1e30 (v overflows:
                ///< a failure that is not a zero)
};

template <class Config>
void fill(tensor_set<Config>& ts, testdata::generator& gen, int s, pattern pt) {
  for (std::size_t i = 0; i < ts.count(); ++i) {
    auto* g = ts.template at<typename Config::grad_type>(s_grad, i, false);
    for (std::int64_t e = 0; e < ts.sizes[i]; ++e) {
      float x = gen.normal(1.0f);
      if (pt != pattern::dense) {
        const std::int64_t row = e / 4096 + static_cast<std::int64_t>(i);
        const bool untouched = row % 8 == 3, moving = (row + s) % 4 == 0;
        if (untouched || moving || gen.u32() % 211 == 0)
          x = pt == pattern::signed_zeros && (gen.u32() & 1) ? -0.0f : 0.0f;
        if (pt == pattern::zeros_huge && e % 512 == 7 && gen.u32() % 64 == 0) x = 1e30f;
      }
      g[e] = format::from_float<typename Config::grad_type>(x);
    }
  }
}

template <class Config>
typename Config::hyper hyper() {
  typename Config::hyper h;
  h.lr = 1e-2;
  // Adam's L2 decay adds decay * p to the gradient: 0 keeps the zeros.
  h.weight_decay = Config::rule::decoupled_decay ? 0.1 : 0.0;
  return h;
}

/// One step on the CPU and with the plan, then every byte compared.
template <class Config, class Plan>
void step_both(tensor_set<Config>& ts, Plan& plan, const typename Config::hyper& h, int s) {
  ts.upload(s_grad);
  step_args a;
  a.step = s;
  STATUS_OK(cpu_step(ts, h, a));
  STATUS_OK(plan.ref().step_async(h, a, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  std::string where;
  const bool same = ts.same(where);
  INFO(where);
  REQUIRE(same);
}

/// Steps a set of tensors through the patterns (each step compared byte for
/// byte with the CPU) and checks the redo counts. A range-checked Adam step
/// with the zero-tolerant attempt keeps a zero tile in that attempt and
/// never steps it exactly, never steps a dense tile twice, and still sends
/// a gradient of 1e30 (v = inf, the last step) to the exact step; without
/// the attempt (Policy::zero_attempt false) zero tiles take the exact step;
/// a step without Adam's range check (an unchecked policy, AMSGrad) steps
/// only a non-finite value twice.
template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
void zero_gradients(std::uint64_t seed) {
  // (AMSGrad's rule is not range-checked: its first attempt has the IEEE
  // functions' own slow paths, and zeros never fail it.)
  constexpr bool checked_adam =
      Policy::range_checked && kernel::range_checked_rule<typename Config::rule>::has_zero_attempt;
  constexpr bool attempts =
      checked_adam && kernel::kernel_config<Config, Policy::tabulate, Policy::branch_free, Policy::proven_ranges, true,
                                            Policy::checked_reencode, Policy::zero_attempt>::has_zero_attempt;
  static_assert(attempts == (checked_adam && Policy::zero_attempt), "the policy decides");
  tensor_set<Config> ts;
  ts.allocate({278011, 8192 * 5, 4099});
  testdata::generator gen(seed);
  ts.init(gen, 0.0);  // parameters without special values: only the gradients decide
  ts.upload();
  device::step_plan<Config, Policy> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size()));
  take_counts();
  const auto h = hyper<Config>();
  // Rows untouched until the dense step keep zero states, so every step
  // before it has tiles whose only failures are zeros; the moving rows
  // give zero gradients over nonzero states. (zeros_huge last: its
  // non-finite states send their tiles to the exact step in every later
  // step.)
  const pattern steps[] = {pattern::zeros, pattern::zeros, pattern::zeros, pattern::signed_zeros,
                           pattern::zeros, pattern::dense, pattern::zeros_huge};
  int s = 0;
  for (const pattern pt : steps) {
    ++s;
    CAPTURE(s);
    CAPTURE(static_cast<int>(pt));
    fill(ts, gen, s, pt);
    step_both(ts, plan, h, s);
    const redo_counts c = take_counts();
    CAPTURE(c.zero_attempts);
    CAPTURE(c.exact);
    if (!checked_adam) {
      CHECK(c.zero_attempts == 0);
      if (pt != pattern::zeros_huge) CHECK(c.exact == 0);
    } else if (!attempts) {
      CHECK(c.zero_attempts == 0);
      if (pt == pattern::dense) CHECK(c.exact == 0);
      if (pt == pattern::zeros) CHECK(c.exact > 0);  // zero tiles take the exact step
    } else if (pt == pattern::dense) {
      CHECK(c.zero_attempts == 0);  // the first attempt keeps every tile
      CHECK(c.exact == 0);
    } else if (pt == pattern::zeros) {
      CHECK(c.zero_attempts > 0);  // +0 gradients make m = v = +0 over zero states
      CHECK(c.exact == 0);         // and the second attempt keeps those tiles
    } else if (pt == pattern::zeros_huge) {
      CHECK(c.exact > 0);  // v = inf: no attempt keeps that tile
      CHECK(c.exact <= c.zero_attempts);  // every exact step follows a second attempt
    }
    // (signed_zeros: m = -0 where a state decoded to -0 meets a -0 gradient
    // goes to the exact step; only the bytes are checked.)
  }
}

/// Rows left idle: 10 dense steps, then `idle` steps in which every row with
/// row % 8 == 3 (rows of 4096) has gradient +0 while the others stay dense.
/// Their m decays to subnormal values and sticks there (k * 2^-149, k <= 4
/// for beta1 = 0.9; bench/results/2026-12-04/session20/stuck_layouts.cpp),
/// outside both attempts' range. Every step is compared byte for byte with
/// the CPU; the counts of the last step say how the stuck tiles were stepped.
/// Returns them.
template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
redo_counts idle_rows(std::uint64_t seed, int idle) {
  tensor_set<Config> ts;
  ts.allocate({8192 * 6 + 1000, 4099});
  testdata::generator gen(seed);
  ts.init(gen, 0.0);
  ts.upload();
  device::step_plan<Config, Policy> plan;
  const auto refs = ts.refs(true);
  STATUS_OK(plan.build(refs.data(), refs.size()));
  const auto h = hyper<Config>();
  redo_counts c;
  for (int s = 1; s <= 10 + idle; ++s) {
    CAPTURE(s);
    for (std::size_t i = 0; i < ts.count(); ++i) {
      auto* g = ts.template at<typename Config::grad_type>(s_grad, i, false);
      for (std::int64_t e = 0; e < ts.sizes[i]; ++e) {
        const bool idle_row = s > 10 && (e / 4096 + static_cast<std::int64_t>(i)) % 8 == 3;
        g[e] = format::from_float<typename Config::grad_type>(idle_row ? 0.0f : gen.normal(1e-3f));
      }
    }
    take_counts();
    step_both(ts, plan, h, s);
    c = take_counts();
  }
  return c;
}

}  // namespace

// The default policies: the second attempt everywhere but the wide tiles
// (tuning/step_policy.hpp, zero_attempt: at 512 x 16 it costs 4-10% on dense
// gradients), which take it when asked.
template <class C>
using default_of = typename tuning::default_step_policy<C>::type;
static_assert(default_of<tc::adamw_rounded>::zero_attempt && default_of<tc::adamw_fp8_states>::zero_attempt &&
                  default_of<tc::adamw_fp16_ulp8>::zero_attempt && default_of<tc::adamw_bf16_native>::zero_attempt,
              "256 x 8 layouts: the zero-tolerant attempt");
static_assert(!default_of<tc::adamw_default>::zero_attempt && !default_of<tc::adamw_reference>::zero_attempt,
              "the wide tiles (512 x 16): without it");
static_assert(default_of<tc::adamw_fp16_ulp8>::elements_per_thread == 8, "fp16 + int8 keeps 256 x 8");
/// The wide tiles' default with the zero-tolerant attempt.
using wide_z = tuning::step_policy<512, 16, 1, true, true, true, true, true, false, 3, false, 1, false, true>;

TEST_CASE("zero gradients: the paper's split (512 x 16), AdamW and Adam") {
  zero_gradients<tc::adamw_default>(1);  // the default: no second attempt
  zero_gradients<tc::adamw_default, wide_z>(13);
  zero_gradients<tc::adam_default, wide_z>(2);
  zero_gradients<tc::adamw_reference, wide_z>(14);
}

TEST_CASE("zero gradients: every range-checked layout") {
  zero_gradients<tc::adamw_rounded>(3);        // warp tiles
  zero_gradients<tc::adamw_reference>(4);      // 512 x 16, no second attempt by default
  zero_gradients<tc::adamw_fp8_states>(5);     // fp8 codes, 5 stages
  zero_gradients<tc::adamw_fp16_ulp8>(6);      // fp16 gradients and parameters
  zero_gradients<tc::adamw_amsgrad_default>(7);  // AMSGrad: not range-checked, no attempt
  zero_gradients<tc::adamw_mixed_states>(8);   // a bf16-SR second moment (no sqrt compander)
  zero_gradients<tc::adamw_bf16_native>(9);    // the re-encoding attempt
  zero_gradients<tc::adamw_fp32_grad>(10);
  zero_gradients<tc::adam_fp16_reference>(11);
  zero_gradients<tc::adamw_sr_codes>(12);      // stochastically rounded codes
}

TEST_CASE("zero gradients: other step policies") {
  using unstaged = tuning::unstaged_step_policy;
  using w4 = tuning::step_policy<256, 8, 2, true, true, true, true, true, false, 3, false, 4>;
  zero_gradients<tc::adamw_default, unstaged>(20);
  zero_gradients<tc::adamw_default, w4>(21);
  zero_gradients<tc::adamw_default, tuning::previous_step_policy>(22);  // not range-checked: no attempts
}

// Rows left idle (docs/gpu.md, "Rows left untouched for long"): after
// ~250-270 idle steps the idle rows' m is subnormal, outside the first
// attempt's range and the zero-tolerant one's; the default policies' second
// attempt tolerates tiny values (TinyAttempt, on since the twenty-first
// session), so those tiles are kept by it and never stepped exactly. Without
// it (the wide tiles, or a policy that leaves it out) they took the exact
// step on every later step. The bytes must match the CPU's all along.
TEST_CASE("idle rows: m stuck at subnormal values, the default policies keep them off the exact step") {
  for (const auto c : {idle_rows<tc::adamw_rounded>(30, 300), idle_rows<tc::adamw_fp8_states>(31, 300),
                       idle_rows<tc::adamw_fp32_states>(32, 300)}) {
    CAPTURE(c.zero_attempts);
    CAPTURE(c.exact);
    CHECK(c.zero_attempts > 0);
    CHECK(c.exact == 0);
  }
  // 100 idle steps: m still normal, no tile stepped twice beyond the first
  // attempt's failures on zeros (none: m != 0 over nonzero states)
  const auto early = idle_rows<tc::adamw_rounded>(33, 100);
  CHECK(early.exact == 0);
  // The same rows with the zero-tolerant attempt alone (the default policy
  // until the twenty-first session): the stuck tiles fail both attempts and
  // take the exact step, so the rows above did reach the stuck state.
  const auto zeros_only = idle_rows<tc::adamw_rounded, tuning::with_tiny_attempt<default_of<tc::adamw_rounded>, false>>(34, 300);
  CAPTURE(zeros_only.zero_attempts);
  CAPTURE(zeros_only.exact);
  CHECK(zeros_only.exact > 0);
  CHECK(zeros_only.exact <= zeros_only.zero_attempts);
}

// The tiny-tolerant second attempt asked for explicitly (with_tiny_attempt;
// for the 256 x 8 layouts that is their default policy itself, here with
// other seeds and layouts), also for the wide tiles, which leave the second
// attempt out by default: the idle rows' tiles are kept by the second
// attempt, never stepped exactly, with the same bytes as the CPU.
template <class C>
using tiny_of = tuning::with_tiny_attempt<default_of<C>>;
using wide_tiny = tuning::with_tiny_attempt<wide_z>;
static_assert(default_of<tc::adamw_rounded>::tiny_attempt && default_of<tc::adamw_fp8_states>::tiny_attempt &&
                  !default_of<tc::adamw_default>::tiny_attempt,
              "on wherever the zero-tolerant attempt is");

TEST_CASE("idle rows: the tiny-tolerant second attempt keeps them off the exact step") {
  for (const auto c : {idle_rows<tc::adamw_rounded, tiny_of<tc::adamw_rounded>>(40, 300),
                       idle_rows<tc::adamw_fp8_states, tiny_of<tc::adamw_fp8_states>>(41, 300),
                       idle_rows<tc::adamw_fp32_states, tiny_of<tc::adamw_fp32_states>>(42, 300),
                       idle_rows<tc::adamw_bf16_states, tiny_of<tc::adamw_bf16_states>>(43, 300),
                       idle_rows<tc::adamw_default, wide_tiny>(44, 300)}) {
    CAPTURE(c.zero_attempts);
    CAPTURE(c.exact);
    CHECK(c.zero_attempts > 0);
    CHECK(c.exact == 0);
  }
}

TEST_CASE("zero gradients: the tiny-tolerant second attempt") {
  zero_gradients<tc::adamw_rounded, tiny_of<tc::adamw_rounded>>(45);
  zero_gradients<tc::adamw_fp8_states, tiny_of<tc::adamw_fp8_states>>(46);
  zero_gradients<tc::adamw_bf16_native, tiny_of<tc::adamw_bf16_native>>(47);
  zero_gradients<tc::adamw_mixed_states, tiny_of<tc::adamw_mixed_states>>(48);
  zero_gradients<tc::adam_default, wide_tiny>(49);
  zero_gradients<tc::adamw_reference, wide_tiny>(50);  // its codec takes the exact encode in that attempt
  zero_gradients<tc::adamw_sr_codes, tiny_of<tc::adamw_sr_codes>>(51);
}

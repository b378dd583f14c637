// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Launch shapes of the GPU kernels, apart from the algorithms (CUB-style
// tuning policies). Every number here was chosen by a measurement on an
// H200; the comment next to it names the benchmark and what it showed
// (BENCHMARKS.md and docs/gpu.md have the tables).
#pragma once

#include <cstddef>
#include <type_traits>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/codec/state.hpp"

namespace flashoptim::tuning {

/// Shape of the fused step kernel.
///   Threads            threads per block
///   ElementsPerThread  consecutive elements of one tensor per thread (a
///                      tile); a group of 32 spans 32 / ElementsPerThread lanes
///   MinBlocksPerSm     __launch_bounds__ occupancy hint (caps registers)
///   Tabulate           decode 1-byte codes and int8 corrections through
///                      256-entry shared-memory tables built by each block
///   BranchFree         encode ULP corrections and softsign codes without
///                      branches (kernel/code_tables.cuh: same bits, checked
///                      over every input by tests/gpu/exhaustive_test.cu)
///   ProvenRanges       ULP corrections and fp32-scale sentinel codecs
///                      computed for the ranges their operands are proven
///                      to lie in (kernel/proven_math.hpp: same bits, fewer
///                      instructions)
///   UnitRuns           walk runs of whole units with 32-bit offsets from
///                      per-thread pointers (the vector path's addresses in
///                      one IMAD.WIDE per buffer)
///   RangeChecked       (needs UnitRuns) step a vector tile with the fast
///                      paths of division, sqrt and normalization under
///                      range checks, redone exactly by a warp where one
///                      fails (kernel/range_checked.cuh)
///   Prefetch           (needs UnitRuns) ask L2 for a run's next tile before
///                      stepping the current one
///   Stages             (needs UnitRuns) tiles of a run in flight per thread:
///                      above 1, the next Stages - 1 tiles are copied into
///                      shared memory (cp.async) while one is stepped
///   SyncStages         (needs Stages > 1) a block barrier per staged tile
///   WarpTiles          (needs Stages > 1) tiles a warp steps in a row: above
///                      1, a run's units go WarpTiles at a time, each warp
///                      taking WarpTiles consecutive tiles of them instead of
///                      one tile of each unit, and the warp copies those
///                      tiles' 4-byte group scales in one request into a
///                      window of shared memory (docs/gpu.md, "Warp tiles")
///   CheckedReencode    (needs RangeChecked) the range-checked attempt
///                      encodes a master that codec::reencodes_every_pair
///                      lists without master_update's keep select: it
///                      commits no tile with a NaN parameter, where alone
///                      the select acts (docs/gpu.md, "The master's keep
///                      select")
///   ZeroAttempt        (needs RangeChecked) a warp whose range-checked
///                      attempt failed steps its tile once more with Adam's
///                      m = +0 and v = +0 accepted, before the exact step
///                      (kernel/range_checked.cuh: zero gradients over zero
///                      states; docs/gpu.md, "Exact zeros in the gradient")
///   TinyAttempt        (needs ZeroAttempt) that second attempt also accepts
///                      tiny m and v and group maxima below 2^-64, lifted by
///                      powers of two into the proven ranges (rows left idle,
///                      whose m sticks at subnormal values; docs/gpu.md,
///                      "Rows left untouched for long"). default_step_policy
///                      turns it on wherever it takes the zero-tolerant
///                      attempt
template <int Threads, int ElementsPerThread, int MinBlocksPerSm, bool Tabulate = true, bool BranchFree = false,
          bool ProvenRanges = false, bool UnitRuns = false, bool RangeChecked = false, bool Prefetch = false,
          int Stages = 1, bool SyncStages = false, int WarpTiles = 1, bool CheckedReencode = false,
          bool ZeroAttempt = RangeChecked, bool TinyAttempt = false>
struct step_policy {
  static constexpr int threads = Threads;
  static constexpr int elements_per_thread = ElementsPerThread;
  static constexpr int min_blocks_per_sm = MinBlocksPerSm;
  static constexpr bool tabulate = Tabulate;
  static constexpr bool branch_free = BranchFree;
  static constexpr bool proven_ranges = ProvenRanges;
  static constexpr bool unit_runs = UnitRuns;
  static constexpr bool range_checked = RangeChecked;
  static constexpr bool prefetch = Prefetch;
  static constexpr int stages = Stages;
  /// The block's threads meet at a barrier before each staged tile, and
  /// issue the next tile's copies after it (docs/gpu.md, "A barrier per
  /// staged tile").
  static constexpr bool sync_stages = SyncStages;
  /// Consecutive tiles per warp in a run (1: a warp's tile of each unit).
  static constexpr int warp_tiles = WarpTiles;
  /// The range-checked attempt encodes reencodes_every_pair masters without
  /// the keep select.
  static constexpr bool checked_reencode = CheckedReencode;
  /// A zero-tolerant second attempt before the exact step (Adam and AdamW).
  static constexpr bool zero_attempt = ZeroAttempt;
  /// The second attempt also tolerates tiny values (kernel/range_checked.cuh).
  static constexpr bool tiny_attempt = TinyAttempt;
  /// Elements one block steps per iteration of its persistent loop: the
  /// unit of work that tensors are cut into (a tensor's last unit may be
  /// partial; units never span two tensors).
  static constexpr long long unit_elements = static_cast<long long>(Threads) * ElementsPerThread;
  static_assert(Threads % 32 == 0, "whole warps");
  static_assert(32 % ElementsPerThread == 0, "a group of 32 spans whole tiles");
  static_assert(UnitRuns || !RangeChecked, "range-checked tiles are the unit runs' vector tiles");
  static_assert(UnitRuns || !Prefetch, "prefetching follows the unit runs");
  static_assert(Stages >= 1, "at least the tile being stepped");
  static_assert(UnitRuns || Stages == 1, "staging follows the unit runs");
  static_assert(RangeChecked || !CheckedReencode, "the re-encoding attempt is the range-checked one");
  static_assert(RangeChecked || !ZeroAttempt, "the zero-tolerant attempt follows the range-checked one");
  static_assert(ZeroAttempt || !TinyAttempt, "the tiny-tolerant attempt is the zero-tolerant one's option");
  static_assert(!SyncStages || Stages > 1, "the barrier is the staged loop's");
  static_assert(WarpTiles >= 1 && (WarpTiles & (WarpTiles - 1)) == 0, "a power of two");
  static_assert(WarpTiles == 1 || Stages > 1, "warp tiles are the staged loop's");
};

/// The previous default (until 2026-11-29): 256 threads x 8 elements, 2
/// blocks per SM, tables and branch-free encoders. Kept as the one-line way
/// back: `using type = previous_step_policy;` below. A group of 32 spans 4
/// lanes (two shuffles); bf16 tiles are one 16-byte access, one-byte codes
/// 8 bytes. How it was chosen (bench/gpu, AdamW default layout, 268M
/// parameters in one tensor, H200, two runs of the same binary,
/// 2026-11-29):
///   256 x 8,  2 blocks/SM        2.057 / 2.044 ms   <- chosen then
///   512 x 16, 1 block/SM         2.089 / 2.081 ms
///   256 x 8,  3 blocks/SM        2.094 / 2.095 ms   (80 registers: spills)
///   128 x 8,  6 blocks/SM        2.173 / 2.156 ms
///   256 x 16, 2 blocks/SM        2.219 / 2.215 ms   (the first default)
///   128 x 16, 4 blocks/SM        2.328 / 2.306 ms
///   256 x 16, 1 block/SM         2.576 / 2.553 ms   (165 registers, 8 warps/SM)
///   256 x 16, 2, BranchFree off  2.668 / 2.650 ms
///   256 x 16, 2, Tabulate off    3.404 / 3.382 ms
/// (Those kernels used a branch-free device sqrt_rn, since reverted to
/// __fsqrt_rn, which measured 2% faster.) Nsight Compute on the 256 x 16
/// kernel: issue-bound, not memory-bound (DRAM 32% busy, issue on 64% of
/// scheduler cycles, 4 warps per scheduler, registers limit occupancy);
/// docs/gpu.md has the analysis.
using previous_step_policy = step_policy<256, 8, 2, true, true>;

/// The default before staging (2026-11-29, until 19:58 UTC): 256 threads x
/// 8 elements, 3 blocks per SM (80 registers, a few 64-bit pointers spilled
/// to L1), tables, branch-free encoders, proven-range arithmetic, unit runs,
/// range-checked tiles (kernel/proven_math.hpp, kernel/range_checked.cuh).
/// Instructions issued per element along the vector path of a tile without
/// special values, AdamW default layout (tools/sass_hot_path.py on
/// cuobjdump -sass; docs/gpu.md "Instruction budget"): 145.5 (previous) ->
/// 89.0. Measured on an H200, one run, 2026-11-29 18:14 UTC, bench_gpu_step
/// built from this tree (build/opt, CMAKE_CUDA_ARCHITECTURES=90),
/// `--benchmark_filter='^step/(adamw_default|lion_default|sgd_momentum)/
/// (flat268M|llama1B|10k_x_4096)/...'`, copy bandwidth 4292 GB/s:
///                                       AdamW 268M   Llama 1B   Lion 268M   SGD-m 268M
///   previous_step_policy                  1.821 ms   10.096 ms   1.278 ms    1.322 ms
///   proven ranges only (b2)               1.289
///   + unit runs (b2)                      1.276
///   + range checked, 2 blocks/SM          1.217       6.694      0.911       0.935
///   + range checked, 3 blocks/SM          1.146       6.104      0.837       0.862   <- chosen then
///   range checked + L2 prefetch, b2       1.197
///   range checked + L2 prefetch, b3       1.174       6.663
using unstaged_step_policy = step_policy<256, 8, 3, true, true, true, true, true>;

/// The default for every configuration: the unstaged policy above with its
/// loads staged through shared memory, 3 stages (each thread has the next
/// two tiles of its run in flight as cp.async copies while it steps one),
/// 2 blocks per SM (122 registers, no spills; 52 KB of shared memory per
/// block). Nsight Compute on the unstaged kernel (2026-11-29 19:48 UTC):
/// 44% of the warps' stall cycles waited on the tile's global loads (long
/// scoreboard), DRAM 64% busy, issue slots 66% busy; keeping the next tile
/// in registers instead spilled and lost 10-45%. Staged, 3 stages, 2
/// blocks/SM: long-scoreboard stalls 3.6 -> 0.45 cycles per issued
/// instruction, issue slots 75% busy, ~91 instructions per element (the
/// step is issue-bound again). Measured on an H200, 2026-11-29 19:58 UTC,
/// two repetitions of one binary (.device/pipe: bench_step.cu built with
/// the candidates below), copy bandwidth ~4290 GB/s:
///                                AdamW 268M     Llama 1B       Lion 268M  SGD-m 268M  fp32 master
///   unstaged (t256_n8_b3)        1.105 / 1.188  6.108 / 6.567  0.835      0.857       1.607
///   staged 2, t256 b3            1.045 / 1.131  5.974 / 6.109
///   staged 3, t256 b3            1.046 / 1.111  5.963 / 6.019  0.774      0.794       1.411
///   staged 4, t256 b3            1.058 / 1.108
///   staged 2, t256 b2            1.050 / 1.077
///   staged 3, t256 b2            1.020 / 1.042  5.726 / 5.795  0.776      0.794       1.402  <- chosen
///   staged 2, t128 b6            1.088 / 1.107
///   staged 3, t128 b6            1.075 / 1.092
/// (The 10,000 x 4,096 list: 0.202 -> 0.195 ms.)
/// The other layouts under the same candidates (one run, 2026-11-29 20:20
/// UTC, 268M parameters, ms; the scratch build registered these policies
/// for each layout beside the default):
///                      default  unstaged  s2 b2  s3 b3  s4 b2  s3 t128 b4  s3 t512 b1
///   Lion               0.777    0.862     0.807  0.789  0.791  0.798       0.785
///   SGD momentum       0.796    0.878     0.828  0.838  0.811  0.837       0.800
///   fp32 master        1.398    1.613     1.445  1.421  1.379  1.397       1.408
///   exact split        1.152    1.333     1.182  1.161  1.154  1.173       1.134
///   fp32 native        1.253    1.264     1.280  1.240  1.224  1.258       1.250
///   fp32 states        1.689    1.671     1.707  1.677  1.687  1.691       1.698
///   reference states   1.629    1.598     1.644  1.569  1.644  1.718       1.589
///   AdamW default      0.996                            1.060  1.077       1.048
/// No layout gains more than ~4% from another shape (reference states: 3
/// blocks/SM), so one default serves all; none of these reaches 85% on
/// Lion, SGD momentum or the wider master modes (issue-bound, docs/gpu.md).
///
/// fp8 states (every stored state in fp8 codes, `precision::fp8_*`) take 5
/// stages: their tile's arithmetic is ~10% shorter than the default's
/// (79.4 against 88.5 SASS instructions per element), and Nsight Compute
/// put 13% of the fp8 kernel's stall samples on the first read of a staged
/// tile whose copies had not landed (6% in the default kernel;
/// bench/results/2026-12-02/session4/ncu_summary.md). Interleaved A/B on an
/// H200, AdamW 268M, median of 25 rounds (round F of
/// bench/results/2026-12-02/session4/README.md): fp8 states 3 stages
/// 0.9950 ms, 4 stages 0.9743, 5 stages 0.9437 (-5.2%); the reference
/// layout 1.0130 / 1.0006 / 1.0144 and the default (3 stages, the
/// control) 1.0183. Earlier rounds of the same session agree in sign (5
/// stages -1.5% to -7% for fp8 states; no consistent gain for the other
/// 8-bit layouts, whose 3 stages stay). 5 stages of the fp8 layout's tiles
/// are 80 KB of shared memory per block (2 blocks per SM fit).
template <class Config>
struct default_step_policy {
 private:
  template <class S>
  struct fp8_state : std::false_type {};
  template <class T, class Compander, class Scale, codec::code_rounding R>
  struct fp8_state<codec::grouped<codec::fp8_code<T>, Compander, Scale, R>> : std::true_type {};
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  static constexpr bool fp8_states = (fp8_state<S0>::value || !S0::stores_state) &&
                                     (fp8_state<S1>::value || !S1::stores_state) &&
                                     (fp8_state<S0>::value || fp8_state<S1>::value);
  /// Warp tiles (WarpTiles = 4) for the layouts they measured faster for:
  /// the rounded split or the bf16 + int16 ULP split, with every stored
  /// state in groups with fp32 scales and int8 / uint8 / fp8 codes rounded
  /// to nearest (each has a window). Round A2 of
  /// bench/results/2026-12-03/session10 (H200, one binary, 21 interleaved
  /// rounds, two passes, medians, ms; R = 1 / R = 4, warp_tiles_per_turn 2):
  ///   AdamW default 268M    1.0294 / 0.9630 (-6.5%)   1.0383 / 0.9653 (-7.0%)
  ///   AdamW default Llama   5.5535 / 5.3558 (-3.6%)   5.5940 / 5.3828 (-3.8%)
  ///   fp8 states            0.9021 / 0.8597 (-4.7%)   0.9009 / 0.8600 (-4.5%)
  ///   Lion default          0.7288 / 0.7157 (-1.8%)   0.7285 / 0.7173 (-1.5%)
  ///   SGD momentum          0.7295 / 0.7181 (-1.6%)   0.7285 / 0.7186 (-1.4%)
  ///   bf16 + int16 ULP      1.1193 / 1.1126 (-0.6%)   1.1187 / 1.1116 (-0.6%)
  ///   native<bf16> master   0.7904 / 0.8022 (+1.5%)   0.7952 / 0.7989 (+0.5%)
  ///   fp16 + int8 ULP       1.0015 / 1.0558 (+5.4%)   1.0018 / 1.0638 (+6.2%)
  /// and round C (three passes; the paper's split, bf16 + int8 ULP, with the
  /// default states, beside the rounded split's AdamW):
  ///   AdamW, paper's split  0.9815 / 1.0332 (+5.3%) ... 0.9922 / 1.0426 (+5.1%)
  ///   Lion, paper's split   0.7367 / 0.7536 (+2.3%) ... 0.7370 / 0.7553 (+2.5%)
  ///   SGD-m, paper's split  0.7550 / 0.7745 (+2.6%) ... 0.7591 / 0.7772 (+2.4%)
  ///   AdamW default         1.0104 / 0.9376 (-7.2%) ... 1.0088 / 0.9415 (-6.7%)
  /// The bf16 + int16 ULP split joined them once its decode's division by
  /// 32767 became one Newton step (proven::ulp_arithmetic::fraction; 794 ->
  /// 717 instructions per tile): round G1 of
  /// bench/results/2026-12-03/session12 (two binaries alternated, 21
  /// interleaved rounds, two passes, medians, ms; R = 1 / R = 4):
  ///   bf16 + int16 ULP, __fdiv_rn      1.1742 / 1.1758   1.1831 / 1.1799
  ///   bf16 + int16 ULP, Newton step    1.0943 / 1.0747   1.0963 / 1.0745
  /// The windows lift the memory pattern (the default layout's bytes without
  /// arithmetic: 88.8% -> 92.1% of copy bandwidth, round V1 of
  /// bench/results/2026-12-03/session9); the ULP splits' longer loop bodies
  /// miss the instruction cache (fp16 + int8: warps waiting on instruction
  /// fetch 0.08 -> 0.25 per issue, Nsight Compute) and native<bf16> gains
  /// nothing (docs/gpu.md, "Warp tiles, two per turn").
  /// (Stochastically rounded codes, whose step draws random bits, were not
  /// measured and keep R = 1.)
  template <class Q>
  struct measured_code : std::bool_constant<std::is_same<Q, codec::int8_code<true>>::value ||
                                            std::is_same<Q, codec::uint8_code<true>>::value> {};
  template <class T>
  struct measured_code<codec::fp8_code<T>> : std::true_type {};
  template <class S>
  struct windowed : std::bool_constant<!S::stores_state> {};
  template <class Q, class Compander, codec::code_rounding R>
  struct windowed<codec::grouped<Q, Compander, codec::scale_fp32, R>>
      : std::bool_constant<measured_code<Q>::value && R != codec::code_rounding::stochastic> {};
  /// The master modes measured faster with warp tiles (above).
  template <class M>
  struct measured_master : std::bool_constant<std::is_same<M, codec::rounded_split>::value ||
                                              std::is_same<M, codec::ulp_correction<bf16, std::int16_t>>::value> {};
  static constexpr bool warp_tiles = measured_master<typename Config::master>::value &&
                                     windowed<S0>::value && windowed<S1>::value &&
                                     (S0::stores_state || S1::stores_state);
  /// Rules with one stored state (Lion, SGD with momentum) keep 3 stages
  /// with warp tiles too: 2 stages were faster in one lease and slower in
  /// another (H200, one binary, 21 interleaved rounds, three passes,
  /// medians, ms; R = 4; rounds D of bench/results/2026-12-03/session10 and
  /// E3 of bench/results/2026-12-03/session11):
  ///                          2 stages                  3 stages
  ///   Lion, round D          0.7108 / 0.7109 / 0.7113  0.7175 / 0.7166 / 0.7183
  ///   Lion, round E3         0.7315 / 0.7364 / 0.7363  0.7168 / 0.7170 / 0.7189
  ///   SGD momentum, round D  0.7091 / 0.7098 / 0.7090  0.7216 / 0.7202 / 0.7211
  ///   SGD momentum, round E3 0.7404 / 0.7412 / 0.7414  0.7341 / 0.7349 / 0.7372
  /// (in round E3 Lion's 2-stage runs spread from 0.711 ms to well past
  /// their median, its 3-stage runs' best within 0.5% of theirs; round
  /// E4's sustained steps, another lease: equal; Nsight Compute at a fixed
  /// 1.49 GHz: Lion 827 against 819 us, SGD momentum 845 against 848 us,
  /// the warps' long-scoreboard stalls per issue 0.35 against 0.08 and 0.14
  /// against 0.04).
  static constexpr int stages = fp8_states ? 5 : 3;
  /// 512 threads x 16 elements, 1 block per SM (wide tiles) for the paper's
  /// split, bf16 + int8 ULP, with bf16 or fp16 gradients and 8-bit states
  /// rounded to nearest (the default states or the `reference` ones): the
  /// layouts it measured faster for. Round C3 of
  /// bench/results/2026-12-04/session17 (H200, one binary per group of
  /// layouts, 15 interleaved rounds, three passes, medians, ms; 256 x 8, 2
  /// blocks per SM / 512 x 16; round C2, another lease: -15% and -9%):
  ///   AdamW, the paper's split        0.9673 / 0.8638   0.9607 / 0.8663   0.9619 / 0.8686  (-10%)
  ///   AdamW, `reference` states       1.0078 / 0.9180   1.0324 / 0.9092   1.0221 / 0.9055  (-9 to -12%)
  ///   SGD momentum, the paper's split 0.7377 / 0.7313   0.7389 / 0.7307   0.7386 / 0.7326  (-1%)
  ///   Lion, the paper's split         0.7359 / 0.7351   0.7335 / 0.7335   0.7365 / 0.7336  (equal)
  /// and slower for every other layout measured: fp16 + int8 ULP +8% to
  /// +11% (partly its gradients' exact zeros, which the range-checked
  /// attempt failed on: with them replaced it ran 0.902 ms at 512 x 16
  /// against 1.006 at 256 x 8, round D4 of bench/results/2026-12-04/session18;
  /// with the zero-tolerant attempt, which still redoes those tiles once,
  /// 512 x 16 kept losing, 0.979-0.999 against 0.919-0.954 ms, rounds E1 and
  /// E2 of session19; docs/gpu.md, "Exact zeros in the gradient"), bf16 +
  /// int16 ULP +2%, the exact split +6%, native<bf16> +2%, fp8
  /// states +5%, and the rounded split's AdamW +4%, SGD momentum +1%, Lion
  /// equal (its warp tiles given up for R = 1). 256 x 16 with 2 blocks per
  /// SM took half the gain or none (AdamW, the paper's split, -3% to -6%;
  /// `reference` -4%; Lion +2%), and 512 x 8 none (round C3). A tile of 16
  /// elements is two lanes per group of 32 (one shuffle of the group
  /// maximum instead of two), 32-byte parameter and gradient accesses and
  /// 16-byte code accesses per thread; the stage ring then holds 61 KB per
  /// stage at 512 threads (3 stages, 184 KB: one block per SM), which is why
  /// 4-byte gradients keep the default shape (a 4th stage, or fp32
  /// gradients, would not fit).
  template <class Q>
  struct integer_code : std::false_type {};
  template <bool Sentinel>
  struct integer_code<codec::int8_code<Sentinel>> : std::true_type {};
  template <bool Sentinel>
  struct integer_code<codec::uint8_code<Sentinel>> : std::true_type {};
  template <class S>
  struct wide_state : std::bool_constant<!S::stores_state> {};
  template <class Q, class Compander, class Scale, codec::code_rounding R>
  struct wide_state<codec::grouped<Q, Compander, Scale, R>>
      : std::bool_constant<integer_code<Q>::value && R != codec::code_rounding::stochastic &&
                           (std::is_same<Scale, codec::scale_fp32>::value ||
                            std::is_same<Scale, codec::scale_fp16_reference>::value)> {};
  static constexpr bool wide_tiles =
      std::is_same<typename Config::master, codec::ulp_correction<bf16, std::int8_t>>::value &&
      sizeof(typename Config::grad_type) == 2 && Config::num_slots <= 2 && wide_state<S0>::value &&
      wide_state<S1>::value && (S0::stores_state || S1::stores_state);
  /// The range-checked attempt without the master's keep select
  /// (CheckedReencode) for native<T> parameters, the one layout it measured
  /// faster for in two leases. Not for the rounded split, whose AdamW kernel,
  /// 5% fewer instructions along its path, measured slower in both, and
  /// whose fp8-state kernel gained in one lease only. Rounds H1 and H2 of
  /// bench/results/2026-12-04/session13 (H200, binaries alternated, two
  /// passes of 15 interleaved rounds each, medians, ms; with the select /
  /// without it for every such master):
  ///                         H1                                  H2
  ///   native<bf16> master   0.8313 / 0.7849  0.8352 / 0.7868    0.7959 / 0.7672  0.7970 / 0.7689
  ///   fp8 states            0.8962 / 0.8732  0.8960 / 0.8743    0.8680 / 0.8734  0.8691 / 0.8728
  ///   AdamW default         0.9456 / 0.9623  0.9453 / 0.9630    0.9086 / 0.9172  0.9106 / 0.9172
  ///   Lion default          0.7161 / 0.7174  0.7164 / 0.7194    0.7145 / 0.7189  0.7158 / 0.7180
  ///   SGD momentum          0.7219 / 0.7215  0.7211 / 0.7233    0.7176 / 0.7224  0.7180 / 0.7231
  ///   the paper's split     1.0046 / 1.0042  1.0080 / 1.0045    0.9566 / 0.9569  0.9633 / 0.9576
  /// (the paper's split, no master of reencodes_every_pair: the same code).
  /// Since the attempt's rounded split encodes without its NaN select
  /// (kernel::checked_attempt_master), dropping the keep select as well
  /// still gains nothing: round B1 of bench/results/2026-12-04/session16
  /// (three passes of 15 interleaved rounds, medians, ms; the default /
  /// CheckedReencode) 0.8838 / 0.8853, 0.8841 / 0.8855, 0.8843 / 0.8864.
  template <class M>
  struct native_master : std::false_type {};
  template <class T>
  struct native_master<codec::native<T>> : std::true_type {};
  static constexpr bool checked_reencode = native_master<typename Config::master>::value;
  /// The zero-tolerant second attempt (ZeroAttempt; Adam and AdamW only) for
  /// every layout but the wide tiles': with it a tile whose gradient and
  /// states are exactly 0 is stepped by a second attempt instead of the
  /// exact step, and at 256 x 8 the dense step costs what it did; the
  /// 512 x 16 kernels, at their 128-register cap, then spill pointers in
  /// the hot path and lose 4-10% on dense gradients. H200, AdamW 268M, ms,
  /// without / with; round E1 of bench/results/2026-12-04/session19 (two
  /// binaries, before and after, alternated, four passes of 15 interleaved
  /// rounds), round E2 (one binary, both variants, four passes); medians of
  /// the pass medians, the best round in brackets (the medians of some
  /// variants moved between rounds by more than the differences here; the
  /// best rounds agree):
  ///                          E1 dense                        E2 dense                        a quarter 0 (E1)
  ///   AdamW default 256 x 8  0.878 [0.875] / 0.918 [0.874]   0.898 [0.877] / 0.876 [0.874]   2.915 / 1.625
  ///   fp8 states 256 x 8     0.879 [0.875] / 0.876 [0.869]   0.897 [0.872] / 0.929 [0.880]   2.739 / 1.429
  ///   fp16 + int8 256 x 8    0.933 [0.931] / 0.919 [0.917]   0.976 [0.948] / 0.954 [0.935]   (its own ~6e-5 zeros)
  ///   paper's split 512x16   0.861 [0.859] / 0.952 [0.945]   1.008 [0.860] / 0.955 [0.943]   3.071 / 2.051
  ///   `reference` 512 x 16   0.863 [0.860] / 0.900 [0.898]   0.893 [0.862] / 0.898 [0.896]   3.923 / 1.908
  /// (one gradient in 8192 equal to 0, the default layout: 1.149 -> 0.902).
  /// fp16 + int8 stays at 256 x 8: at 512 x 16 it took 0.979-0.999 with the
  /// attempt. A user of the wide tiles whose gradients hold many zeros
  /// (untouched embedding rows) can ask for it: step_policy's argument
  /// ZeroAttempt.
  static constexpr bool zero_attempt = !wide_tiles;
  /// The second attempt tolerates tiny values too (TinyAttempt) wherever it
  /// is taken: rows left idle for more than ~250 steps keep a subnormal m,
  /// which failed both attempts, so their tiles took the exact step on every
  /// later step. H200, AdamW 268M, ms, off / on, one binary (ab_tiny.cu),
  /// five passes of 15 interleaved rounds, median of the pass medians
  /// (bench/results/2026-12-05/session21, round H12):
  ///                                  off      on
  ///   default layout, dense          0.8780   0.8759
  ///   default, a quarter idle        2.9727   1.6720   (10 dense steps, 400 idle)
  ///   default, a quarter never set   1.4763   1.6396   (+11%: the longer attempt)
  ///   fp8 states, dense              0.8768   0.8756
  ///   fp8 states, a quarter idle     2.8740   1.6183
  /// Rows never touched (m = v = 0) pay 11% more; rows idle for long (a rare
  /// token's embedding row between its batches) 44% less, and a zero row now
  /// costs about the same either way.
  static constexpr bool tiny_attempt = zero_attempt;

 public:
  using type = step_policy<wide_tiles ? 512 : 256, wide_tiles ? 16 : 8, wide_tiles ? 1 : 2, true, true, true, true,
                           true, false, stages, false, warp_tiles ? 4 : 1, checked_reencode, zero_attempt,
                           tiny_attempt>;
};

/// Policy P with its second attempt tolerating tiny values as well
/// (TinyAttempt; P must have the zero-tolerant attempt), or with Tiny =
/// false P with the zero-tolerant attempt alone.
template <class P, bool Tiny = true>
using with_tiny_attempt =
    step_policy<P::threads, P::elements_per_thread, P::min_blocks_per_sm, P::tabulate, P::branch_free, P::proven_ranges,
                P::unit_runs, P::range_checked, P::prefetch, P::stages, P::sync_stages, P::warp_tiles,
                P::checked_reencode, P::zero_attempt, Tiny>;

/// Tiles per turn of the warp tiles' loop (Policy::warp_tiles > 1): its body
/// holds this many tiles, whose offsets from the turn's first are then
/// compile-time constants. Per tile of the default AdamW kernel's loop, SASS
/// instructions along the vector path: 690 with one tile of each unit (R =
/// 1), 745 for R = 4 one tile per turn, 705 two per turn, 689 four per turn
/// (bench/results/2026-12-03/session10, sass_loop.py). Four per turn makes
/// the body of the longer layouts larger than the SM's instruction cache
/// holds: on an H200 (round A1) AdamW 1.03 -> 1.13 ms and fp16 + int8
/// 0.96 -> 1.62 ms against R = 1 (Nsight Compute: warps waiting on the
/// instruction fetch 0.08 -> 4.16 per issue for fp16 + int8).
inline constexpr int warp_tiles_per_turn = 2;

/// Persistent grid: blocks per multiprocessor actually launched is
/// min(occupancy, this) times the multiprocessor count (and never more than
/// there are units of work).
inline constexpr int step_max_blocks_per_sm = 8;

/// Hyperparameter sets (parameter groups) one step launch carries in its
/// kernel parameters: each tensor of the table names its group, so groups
/// that differ only in hyperparameters step in one launch. More groups take
/// one launch per max_step_groups (device::optimizer does this).
inline constexpr int max_step_groups = 8;

/// Gradient statistics: a plain grid-stride reduction over the same table.
struct grad_stats_policy {
  static constexpr int threads = 256;
  static constexpr int elements_per_thread = 16;
  static constexpr int blocks_per_sm = 4;
  static constexpr long long unit_elements = static_cast<long long>(threads) * elements_per_thread;
};

/// Elementwise helpers (initialization, split / reconstruct): not on the
/// step path, no measurement needed beyond "fills the GPU".
inline constexpr int elementwise_threads = 256;
inline constexpr int elementwise_blocks_per_sm = 8;

}  // namespace flashoptim::tuning

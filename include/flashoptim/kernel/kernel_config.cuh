// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// kernel_config<Config, ...>: Config as the step kernel runs it, with the
// master mode and state codecs replaced by their kernel wrappers according
// to the step policy's flags (tables and branch-free encoders:
// kernel/code_tables.cuh; proven ranges: kernel/proven_codecs.cuh; the
// range-checked first attempt of a tile: kernel/range_checked.cuh).
#pragma once

#include <type_traits>

#include "flashoptim/kernel/code_tables.cuh"
#include "flashoptim/kernel/proven_codecs.cuh"
#include "flashoptim/kernel/range_checked.cuh"
#include "flashoptim/rule/config.hpp"
#include "flashoptim/rule/tile.hpp"

namespace flashoptim::kernel {

/// A grouped codec whose code is one byte. (fp8 codes keep their table:
/// sm_89+ decodes them with the conversion instructions instead, sm_80 and
/// sm_86 read the table; the launch's shared memory is the same either way.)
template <class C>
struct is_tabulable_codec
    : std::integral_constant<bool, codec::is_grouped<C>::value && sizeof(typename C::code_type) == 1> {};

namespace detail {
template <class M, bool Tabulate, bool BranchFree, bool Proven>
struct master_select {
  using type = M;
  static constexpr bool tabulated = false;
};
template <class T, class C, bool Tabulate, bool BranchFree, bool Proven>
struct master_select<codec::ulp_correction<T, C>, Tabulate, BranchFree, Proven> {
  static constexpr bool tabulated = Tabulate && std::is_same<C, std::int8_t>::value;
  using type = std::conditional_t<Proven, proven_master<codec::ulp_correction<T, C>, tabulated>,
                                  kernel_master<codec::ulp_correction<T, C>, tabulated, BranchFree>>;
};

/// The range-checked attempt's master (kernel::checked_attempt_master), for
/// a step with the finite guard (which a reference-layout state turns off):
/// that attempt commits a tile only if every updated parameter is finite,
/// and a NaN parameter stays NaN through every rule, so no committed element
/// had a NaN value. So the rounded split encodes there without its NaN
/// select, and with Policy::checked_reencode a master listed by
/// codec::reencodes_every_pair drops the keep select too (master_update is
/// the encode), the one case where that select acts being a NaN value.
template <class M, class Config, bool Checked, bool Reencode>
struct checked_master_select {
  using type = M;
};
template <class M, class Config, bool Reencode>
struct checked_master_select<M, Config, true, Reencode> {
  using type = std::conditional_t<::flashoptim::finite_guard<Config>::enabled,
                                  typename checked_attempt_master<M, Reencode>::type, M>;
};

template <class C, int Slot, bool Tabulate, bool BranchFree, bool Proven, bool CheckedSqrt = false,
          bool CheckedRange = false, bool Zeros = false, bool Tiny = false, bool Grouped = codec::is_grouped<C>::value>
struct codec_select {
  using type = C;
  static constexpr bool tabulated = false;
};
/// CheckedSqrt: the rule checks the range of this state's new value, so a
/// sqrt compander may use the square root's fast path. CheckedRange: the
/// rule bounds this state's new values as range_checked_adam does for m and
/// v (the reference layout's encoder relies on it). Zeros: the zero-tolerant
/// attempt's check (+0 passes as well). Tiny: the tiny-tolerant attempt's
/// (tiny values and group maxima pass too).
template <class C, int Slot, bool Tabulate, bool BranchFree, bool Proven, bool CheckedSqrt, bool CheckedRange,
          bool Zeros, bool Tiny>
struct codec_select<C, Slot, Tabulate, BranchFree, Proven, CheckedSqrt, CheckedRange, Zeros, Tiny, true> {
  static constexpr bool tabulated = Tabulate && is_tabulable_codec<C>::value;
  using pre = std::conditional_t<CheckedSqrt && codec::compander_kind_of<typename C::compander> == codec::compander_kind::sqrt,
                                 range_checked_sqrt_compander<Zeros, Tiny>, typename C::compander>;
  using type = std::conditional_t<
      Proven && is_proven_codec<C>::value, proven_codec<C, Slot, tabulated, BranchFree, pre, Tiny>,
      // (not in the tiny-tolerant attempt: this encoder needs the rule's m
      // and v ranges, which that attempt widens; the codec's own encode is
      // exact anywhere, and the reference layout's fp16 scales never leave
      // an idle row's m tiny, so it has nothing to gain there)
      std::conditional_t<Proven && CheckedRange && !Tiny && proven::is_reference_checked_codec<C>::value,
                         reference_checked_codec<C, Slot, tabulated, BranchFree, pre>,
                         kernel_codec<C, Slot, tabulated, BranchFree>>>;
};
}  // namespace detail

/// slot_map of a kernel_config: its slots' kernel codecs.
template <class KC, class Seq>
struct kernel_slot_map;
template <class KC, int... I>
struct kernel_slot_map<KC, std::integer_sequence<int, I...>> {
  template <template <class> class F>
  using map = slot_list<F<typename KC::template state<I>>...>;
};

/// Config as the kernel runs it: everything step_tile reads, with the
/// master mode and state codecs replaced by their kernel wrappers.
/// Checked: the first attempt of a range-checked step (rule with fast
/// division and square root, scalars carrying the check's flag).
/// Reencode (with Checked): Policy::checked_reencode.
/// ZeroAttempt (with Checked): Policy::zero_attempt, a zero-tolerant second
/// attempt, which a warp runs when the first failed on its tile, before the
/// exact redo (kernel/range_checked.cuh); Zeros: this config is that attempt.
/// TinyAttempt (with ZeroAttempt): Policy::tiny_attempt, that attempt also
/// tolerates tiny values (range_checked.cuh, checked_adam_math's Tiny).
template <class Config, bool Tabulate, bool BranchFree = false, bool Proven = false, bool Checked = false,
          bool Reencode = false, bool ZeroAttempt = false, bool Zeros = false, bool TinyAttempt = false>
struct kernel_config {
  using base = Config;
  static constexpr bool checked = Checked;
  using rule_check = range_checked_rule<typename Config::rule>;
  static_assert(!Zeros || (Checked && rule_check::has_zero_attempt),
                "a zero-tolerant attempt is a checked Adam step's");
  /// Whether this is a first attempt with a zero-tolerant second one (the
  /// rule has one and the policy asks for it), and that second attempt's
  /// config (this one where there is none).
  static constexpr bool has_zero_attempt = Checked && ZeroAttempt && !Zeros && rule_check::has_zero_attempt;
  static_assert(ZeroAttempt || !TinyAttempt, "the tiny-tolerant attempt is the zero-tolerant one's option");
  using zero_attempt = std::conditional_t<
      has_zero_attempt, kernel_config<Config, Tabulate, BranchFree, Proven, Checked, Reencode, true, true, TinyAttempt>,
      kernel_config>;
  using master_sel = detail::master_select<typename Config::master, Tabulate, BranchFree, Proven>;
  /// Slot I's codec as the kernel runs it: slots 0 and 1 may decode
  /// through table slots 1 and 2; later slots are not tabulated.
  template <int I>
  using state_sel = detail::codec_select<typename Config::template state<I>, (I + 1 < table_slots ? I + 1 : 0),
                                         Tabulate && (I + 1 < table_slots), BranchFree, Proven,
                                         I == 1 && Checked && rule_check::checks_second_moment,
                                         I < 2 && Checked && rule_check::checks_second_moment, Zeros, Zeros && TinyAttempt>;
  using state0_sel = state_sel<0>;
  using state1_sel = state_sel<1>;
  static constexpr int num_slots = Config::num_slots;
  template <int I>
  struct slot_tabulated : std::bool_constant<state_sel<I>::tabulated> {};
  static constexpr bool any = master_sel::tabulated || any_of_slots<num_slots, slot_tabulated>;

  using rule = std::conditional_t<
      Checked,
      std::conditional_t<Zeros,
                         std::conditional_t<TinyAttempt, typename rule_check::tiny_tolerant_type,
                                            typename rule_check::zero_tolerant_type>,
                         typename rule_check::type>,
      typename Config::rule>;
  using master = typename detail::checked_master_select<typename master_sel::type, Config, Checked, Reencode>::type;
  using param_type = typename Config::param_type;
  using aux_type = typename Config::aux_type;
  using grad_type = typename Config::grad_type;
  template <int I>
  using state = typename state_sel<I>::type;
  using state0 = state<0>;
  using state1 = state<1>;
  template <template <class> class F>
  using slot_map = typename kernel_slot_map<kernel_config, std::make_integer_sequence<int, num_slots>>::template map<F>;
  using hyper = typename Config::hyper;
  using scalars = std::conditional_t<Checked, checked_scalars<typename Config::rule>, typename Config::scalars>;
  static constexpr bool has_aux = Config::has_aux;
  static constexpr int group_size = Config::group_size;

  /// Dynamic shared memory a launch must reserve.
  static constexpr std::size_t shared_bytes = any ? table_slots * table_entries * sizeof(float) : 0;

  /// Every thread of the block calls this, then the block synchronizes.
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void fill_tables() {
#if FLASHOPTIM_DEVICE_CODE
    if constexpr (any) {
      float* t = shared_tables();
      for (unsigned b = threadIdx.x; b < static_cast<unsigned>(table_entries); b += blockDim.x) {
        if constexpr (master_sel::tabulated) t[0 * table_entries + b] = master::entry(b);
        for_each_slot<num_slots>([&](auto s) {
          constexpr int I = decltype(s)::value;
          if constexpr (state_sel<I>::tabulated) t[(I + 1) * table_entries + b] = state<I>::entry(b);
        });
      }
    }
#endif
  }
};

}  // namespace flashoptim::kernel

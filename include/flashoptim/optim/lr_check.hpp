// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The lr check (docs/lr-check.md): can the step-1 update of a rule move the
// largest weights of a tensor at all, in the tensor's master-weight mode?
// A too-small lr is otherwise dropped silently: the update rounds away in
// fp32 or in the re-encode, and no stored byte changes.
//
// The answer comes from the mode's own arithmetic, not from a bit count: the
// check steps representative stored states of the binade of max |p| (every
// correction code of a ULP correction, both rounding parities) by the exact
// fp32 update the rule computes, with the same fma, decode and encode the
// step uses, and asks whether a byte changes. Host-only C++17.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "flashoptim/codec/master.hpp"
#include "flashoptim/optim/params.hpp"
#include "flashoptim/rule/adam.hpp"
#include "flashoptim/rule/lion.hpp"
#include "flashoptim/rule/sgd.hpp"

namespace flashoptim::optim {

/// The check of one tensor. "Largest weights": the stored states whose
/// decoded |x| lies in the binade [2^E, 2^(E+1)) of max_abs_param, and the
/// state of max_abs_param itself; when max_abs_param is exactly 2^E (e.g.
/// LayerNorm weights of 1.0) that state alone, moving down onto the finer
/// grid below 2^E as well as up. Not covered: an element exactly at 2^E
/// below a larger maximum, moving toward zero (the grid below is finer: it
/// can move with less), and corrections clamped at +-max_code (see
/// docs/lr-check.md).
struct lr_verdict {
  /// false: no such state, whatever its gradient's sign, correction code or
  /// rounding parity, changes a stored byte at step 1. Exact when weight
  /// decay is 0; with weight decay it errs toward true (see `exact`).
  bool can_move = true;
  /// false: the update could not be computed (SGD without a gradient
  /// magnitude, a rule the check does not know); can_move is then true.
  bool update_known = true;
  /// false: weight decay (decoupled, or coupled into the gradient) made the
  /// check conservative: "cannot move" is still certain, "can move" may only
  /// hold for elements whose gradient pushes toward zero with the decay.
  bool exact = true;
  /// The step-1 update magnitude: lr * |m_hat / (sqrt(v_hat) + eps)| for
  /// Adam/AdamW/AMSGrad (~lr), lr for Lion, lr * |g| (or lr * |g + mu*g|
  /// with Nesterov) for SGD, as the exact product of the two fp32 factors
  /// the rule multiplies; with decoupled weight decay plus (1 - decay) *
  /// max_abs_param, with coupled decay the gradient taken as |g| + wd*|p|.
  /// NaN when !update_known.
  double update = 0.0;
  /// The smallest change of the decoded fp32 value the master mode can
  /// store at |p| = max_abs_param (the spacing of stored values there). An
  /// update moves a weight when it reaches about half of it (round to
  /// nearest); docs/lr-check.md gives the exact rule per mode.
  double resolution = 0.0;
};

namespace detail {

/// Mantissa bits and smallest normal exponent of a parameter format.
template <class T>
struct lr_format {
  static constexpr int mant_bits = format::format_traits<T>::spec::mant_bits;
  static constexpr int emin = format::format_traits<T>::spec::emin;
};
template <>
struct lr_format<float> {
  static constexpr int mant_bits = 23;
  static constexpr int emin = -126;
};

/// Spacing of T's values in the binade [2^E, 2^(E+1)) (subnormals: fixed).
template <class T>
inline double lr_spacing(int e) {
  return std::ldexp(1.0, (e > lr_format<T>::emin ? e : lr_format<T>::emin) - lr_format<T>::mant_bits);
}

template <class M>
struct lr_master_traits;
template <class T>
struct lr_master_traits<codec::native<T>> {
  static std::string name() { return std::string("native ") + format::format_traits<T>::name; }
  static double resolution(int e) { return lr_spacing<T>(e); }
};
template <class T>
struct lr_master_traits<codec::fp32_master<T>> {
  static std::string name() { return std::string("fp32 master (") + format::format_traits<T>::name + " param)"; }
  static double resolution(int e) { return lr_spacing<float>(e); }
};
template <class T, class C>
struct lr_master_traits<codec::ulp_correction<T, C>> {
  static std::string name() {
    return std::string(format::format_traits<T>::name) +
           (std::is_same<C, std::int8_t>::value ? " + int8 correction" : " + int16 correction");
  }
  /// Correction steps of half an ULP of T / max_code, but the decoded value
  /// is fp32: nothing finer than fp32's spacing is ever stored (fp16 + int16:
  /// steps of 2^-26 relative, fp32 spacing 2^-23).
  static double resolution(int e) {
    const double step = lr_spacing<T>(e) / 2.0 / codec::ulp_correction<T, C>::max_code;
    const double fp32 = lr_spacing<float>(e);
    return step > fp32 ? step : fp32;
  }
};
template <>
struct lr_master_traits<codec::exact_split> {
  static std::string name() { return "bf16 + 16-bit exact split"; }
  static double resolution(int e) { return lr_spacing<float>(e); }
};
/// The 24-bit value's spacing: fp32's times 2^8.
template <>
struct lr_master_traits<codec::rounded_split> {
  static std::string name() { return "bf16 + int8 rounded split"; }
  static double resolution(int e) { return lr_spacing<float>(e) * 256.0; }
};

/// Binade exponent of a magnitude: floor(log2 a); 0 and fp32-subnormal
/// magnitudes use fp32's subnormal spacing.
inline int lr_binade(double a) {
  if (!(a > 0.0)) return -149;
  int e = 0;
  (void)std::frexp(a, &e);
  return e - 1 < -149 ? -149 : e - 1;
}

/// The float just at or above a nonnegative double.
inline float lr_round_up(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

/// One stored state of a master mode.
template <class Master>
struct lr_state {
  typename Master::param_type p{};
  typename Master::aux_type a{};
};

template <class Master>
lr_state<Master> lr_encode(float x) {
  lr_state<Master> s;
  Master::encode(x, s.p, s.a);
  return s;
}

template <class T>
T lr_next_up(T v) {
  if constexpr (std::is_same<T, float>::value) {
    return std::nextafter(v, std::numeric_limits<float>::infinity());
  } else {
    v.bits = static_cast<decltype(v.bits)>(v.bits + 1u);  // positive values: the next one up
    return v;
  }
}

/// Representative positive states of binade e: two neighbours of 1.25 * 2^e
/// (both rounding parities of the stored value and of the fp32 grid), and
/// for a ULP correction every non-clamped code on them (int16: a window of
/// 257 codes, enough for both parities; its resolution is fp32's, so any
/// change of the fp32 value changes a code, see the test).
template <class Master>
struct lr_candidates {
  static void add(int e, std::vector<lr_state<Master>>& out) {
    const float mid = static_cast<float>(std::ldexp(1.25, e));
    const float x0 = Master::decode(lr_encode<Master>(mid).p, lr_encode<Master>(mid).a);
    out.push_back(lr_encode<Master>(x0));
    out.push_back(lr_encode<Master>(std::nextafter(x0, std::numeric_limits<float>::infinity())));
  }
};
template <class T>
struct lr_candidates<codec::native<T>> {
  static void add(int e, std::vector<lr_state<codec::native<T>>>& out) {
    const T lo = format::from_float<T>(static_cast<float>(std::ldexp(1.25, e)));
    out.push_back({lo, {}});
    out.push_back({lr_next_up(lo), {}});
  }
};
template <class T, class C>
struct lr_candidates<codec::ulp_correction<T, C>> {
  static void add(int e, std::vector<lr_state<codec::ulp_correction<T, C>>>& out) {
    constexpr int M = codec::ulp_correction<T, C>::max_code;
    constexpr int window = M < 128 ? M - 1 : 128;
    const T lo = format::from_float<T>(static_cast<float>(std::ldexp(1.25, e)));
    for (const T l : {lo, lr_next_up(lo)})
      for (int c = -window; c <= window; ++c) out.push_back({l, static_cast<C>(c)});
  }
};

/// rounded_split: the 24-bit value at 1.25 * 2^e and the next one up (both
/// parities of the value the update is rounded to).
template <>
struct lr_candidates<codec::rounded_split> {
  static void add(int e, std::vector<lr_state<codec::rounded_split>>& out) {
    const lr_state<codec::rounded_split> s = lr_encode<codec::rounded_split>(static_cast<float>(std::ldexp(1.25, e)));
    const float x0 = codec::rounded_split::decode(s.p, s.a);
    out.push_back(s);
    out.push_back(lr_encode<codec::rounded_split>(format::float_from_bits(format::bits_of(x0) + 0x100u)));
  }
};

/// The rule's step-1 update of an element, as the two fp32 factors it
/// multiplies in its final fma (update = s * q exactly), and its decay.
struct lr_factors {
  bool known = false;
  float s = 0.0f, q = 0.0f;
  float decay = 1.0f;         ///< decoupled decay factor (1: none)
  double coupled_wd = 0.0;    ///< coupled weight decay (added to |g| as wd * |p|)
};

/// The rule's own step-1 update of a zero parameter from zero states with
/// gradient g_abs, given scalars whose step size the caller has set to
/// -1: no decay, no unscaling. Returns |update| as the rule computes it.
template <class R>
float lr_unit_update(typename R::scalars sc, double g_abs) {
  sc.decay = 1.0f;
  sc.weight_decay = 0.0f;
  sc.inv_grad_scale = 1.0f;
  float p = 0.0f;
  float st[R::num_states] = {};
  R::apply(sc, static_cast<float>(g_abs), p, st);
  return -p;
}

/// A rule the check does not know: unknown update.
template <class Rule>
lr_factors lr_rule_factors(const Rule*, const typename Rule::hyper&, double) {
  return lr_factors{};
}

/// Adam family: q = m / (sqrt(v) * inv_sqrt_bc2 + eps) at step 1 from zero
/// states, computed by the rule's own apply with a unit step size, no decay.
/// Unknown |g|: q <= (1 - beta1) / (sqrt(1 - beta2) * inv_sqrt_bc2) up to a
/// few fp32 roundings; 2^-20 relative headroom covers them (errs toward
/// "can move").
template <bool D, bool A>
lr_factors lr_rule_factors(const rule::adam_rule<D, A>*, const typename rule::adam_rule<D, A>::hyper& h,
                           double g_abs) {
  using R = rule::adam_rule<D, A>;
  auto sc = R::make_scalars(h, h.lr, 1, 1.0);
  lr_factors f;
  f.known = true;
  f.s = -sc.neg_step_size;
  f.decay = D ? sc.decay : 1.0f;
  f.coupled_wd = D ? 0.0 : h.weight_decay;
  if (g_abs < 0.0) {
    const double bound = static_cast<double>(sc.one_minus_beta1) /
                         (std::sqrt(static_cast<double>(sc.one_minus_beta2)) * sc.inv_sqrt_bc2) * (1.0 + 0x1p-20);
    f.q = lr_round_up(bound);
    return f;
  }
  sc.neg_step_size = -1.0f;
  f.q = lr_unit_update<R>(sc, g_abs);
  return f;
}

/// Lion: the update is lr * sign, exactly fp32(lr) (0 when |g| is 0).
inline lr_factors lr_rule_factors(const rule::lion*, const rule::lion::hyper& h, double g_abs) {
  const auto sc = rule::lion::make_scalars(h, h.lr, 1, 1.0);
  lr_factors f;
  f.known = true;
  f.s = -sc.neg_lr;
  f.q = g_abs == 0.0 ? 0.0f : 1.0f;
  f.decay = sc.decay;
  return f;
}

/// SGD / SGDW: step 1 takes the buffer = g, so the update is lr * g (Nesterov:
/// lr * fma(mu, g, g)); needs |g|.
template <bool D>
lr_factors lr_rule_factors(const rule::sgd_rule<D>*, const typename rule::sgd_rule<D>::hyper& h, double g_abs) {
  using R = rule::sgd_rule<D>;
  lr_factors f;
  if (g_abs < 0.0) return f;
  auto sc = R::make_scalars(h, h.lr, 1, 1.0);
  f.known = true;
  f.s = -sc.neg_lr;
  f.decay = D ? sc.decay : 1.0f;
  f.coupled_wd = D ? 0.0 : h.weight_decay;
  sc.neg_lr = -1.0f;
  f.q = lr_unit_update<R>(sc, g_abs);
  return f;
}

/// The factors with the gradient magnitude raised by coupled decay.
template <class Rule>
lr_factors lr_factors_of(const typename Rule::hyper& h, double max_abs_param, double g_abs) {
  lr_factors f = lr_rule_factors(static_cast<const Rule*>(nullptr), h, g_abs);
  if (f.known && f.coupled_wd > 0.0 && g_abs >= 0.0) {
    // g' = fma(wd, p, g) is largest when p and g share a sign.
    const double g2 = static_cast<double>(lr_round_up(g_abs + f.coupled_wd * max_abs_param)) * (1.0 + 0x1p-20);
    lr_factors raised = lr_rule_factors(static_cast<const Rule*>(nullptr), h, g2);
    raised.coupled_wd = f.coupled_wd;
    return raised;
  }
  return f;
}

}  // namespace detail

/// The check of one tensor whose largest |decoded value| is max_abs_param,
/// under hyperparameters h (their lr), at step 1 (Adam's bias-corrected
/// update is then ~lr). max_abs_grad: the largest |gradient| as the rule
/// sees it (after unscaling); negative = unknown (SGD: update unknown,
/// can_move true; Adam: an upper bound of the update). lr = 0 asks for no
/// update and is never reported (can_move true). A NaN or infinite
/// max_abs_param says nothing (can_move true, resolution NaN).
template <class Config>
lr_verdict lr_check_tensor(const typename Config::hyper& h, double max_abs_param, double max_abs_grad = -1.0) {
  using Master = typename Config::master;
  lr_verdict v;
  max_abs_param = std::fabs(max_abs_param);
  const bool finite_param = std::isfinite(max_abs_param) && max_abs_param <= std::numeric_limits<float>::max();
  const int e = detail::lr_binade(max_abs_param);
  v.resolution = finite_param ? detail::lr_master_traits<Master>::resolution(e)
                              : std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(max_abs_grad)) max_abs_grad = -1.0;
  const detail::lr_factors f =
      detail::lr_factors_of<typename Config::rule>(h, finite_param ? max_abs_param : 0.0, max_abs_grad);
  if (!f.known) {
    v.update_known = false;
    v.update = std::numeric_limits<double>::quiet_NaN();
    return v;
  }
  const double decay_amount = (1.0 - static_cast<double>(f.decay)) * max_abs_param;
  v.exact = f.decay == 1.0f && f.coupled_wd == 0.0;
  v.update = static_cast<double>(f.s) * static_cast<double>(f.q) + (v.exact ? 0.0 : decay_amount);
  if (!(h.lr > 0.0) || !finite_param || !std::isfinite(v.update)) return v;

  // Exact (no weight decay): the rule's final fma on the decoded value.
  // With weight decay an element x (|x| <= max_abs_param) is first rounded
  // to x * decay, then stepped: on the fp32 grid of the binade (spacing u32)
  // it moves by at most D = rhu(A / u32) * u32 + rhu(u / u32) * u32, A =
  // (1 - decay) * max_abs_param, rhu = round half up; with coupled decay u
  // is taken at |g| + wd * max_abs_param (2^-20 relative headroom for the
  // fp32 roundings of g' and of Adam's normalisation). The candidates are
  // stepped by exactly D both ways: "cannot move" stays certain.
  float s = f.s, q = f.q;
  if (!v.exact) {
    const double u32 = std::ldexp(1.0, (e > -126 ? e : -126) - 23);
    const double u = static_cast<double>(f.s) * static_cast<double>(f.q) * (f.coupled_wd > 0.0 ? 1.0 + 0x1p-20 : 1.0);
    const double d = std::floor(decay_amount / u32 + 0.5) * u32 + std::floor(u / u32 + 0.5) * u32;
    s = detail::lr_round_up(d);
    q = 1.0f;
  }
  // Far from the threshold the answer is known without stepping states
  // (a check per tensor per lr change: keep it cheap). Every mode's
  // threshold lies in [res/4, res/2] (res/4: a maximum of 2^E moving down
  // onto the twice finer grid), so <= res/5 cannot and >= res can move.
  const double step = static_cast<double>(s) * static_cast<double>(q);
  if (step <= v.resolution / 5) {
    v.can_move = false;
    return v;
  }
  if (step >= v.resolution) return v;
  std::vector<detail::lr_state<Master>> cands;
  const double bottom = std::ldexp(1.0, e);
  if (max_abs_param != bottom) {
    // States of the binade's interior: they behave alike wherever they are
    // in it (the fp32 grid and the correction step depend on the binade
    // only), so they stand for the elements below the maximum.
    detail::lr_candidates<Master>::add(e, cands);
    const double top = std::ldexp(2.0, e);
    std::size_t k = 0;
    for (const auto& c : cands) {
      const double x = Master::decode(c.p, c.a);
      if (x >= bottom && x < top) cands[k++] = c;
    }
    cands.resize(k);
  }
  // The maximum's own state; alone when it is exactly 2^E (LayerNorm's 1.0):
  // every other element is then in a finer binade, and it moves down onto
  // the finer grid below 2^E.
  cands.push_back(detail::lr_encode<Master>(static_cast<float>(max_abs_param)));

  v.can_move = false;
  for (const auto& c : cands) {
    const float x0 = Master::decode(c.p, c.a);
    for (const float sign : {-1.0f, 1.0f}) {
      const float x1 = format::fma_rn(sign * s, q, x0);
      if (format::bits_of(x1) == format::bits_of(x0)) continue;  // the step keeps the bytes
      // Moved: the re-encoded value decodes to another value. (A correction
      // clamped at +-max_code can change bytes without changing the value:
      // lo + h and next(lo) - h are one value; that is not a move.)
      const auto moved = detail::lr_encode<Master>(x1);
      if (format::bits_of(Master::decode(moved.p, moved.a)) != format::bits_of(x0)) {
        v.can_move = true;
        return v;
      }
    }
  }
  return v;
}

/// Name of a configuration's master mode for reports ("bf16 + int8
/// correction", "native fp16", ...).
template <class Config>
std::string lr_mode_name() {
  return detail::lr_master_traits<typename Config::master>::name();
}

struct lr_report_entry {
  std::size_t tensor = 0;
  std::int32_t group = 0;
  std::string name;
  double max_abs_param = 0.0, update = 0.0, resolution = 0.0;
  double lr = 0.0;
  std::int64_t size = 0;
  std::string mode;  ///< the master mode, lr_mode_name
};

/// The tensors an lr cannot move, out of all tensors checked.
struct lr_report {
  std::vector<lr_report_entry> cannot_move;
  std::size_t tensors = 0;      ///< tensors checked
  std::int64_t parameters = 0;  ///< their elements

  bool empty() const { return cannot_move.empty(); }

  /// One line: "flashoptim: lr 1e-05 cannot move 3 of 10 tensors (12.5% of
  /// parameters): first 'w.0' |p|max 1.5, update 1e-05 < half the resolution
  /// 3.1e-05 (bf16 + int8 correction); see docs/lr-check.md". Empty when
  /// nothing is reported.
  std::string summary() const {
    if (cannot_move.empty()) return std::string();
    std::int64_t stuck = 0;
    for (const auto& e : cannot_move) stuck += e.size;
    const double share = parameters > 0 ? 100.0 * static_cast<double>(stuck) / static_cast<double>(parameters) : 0.0;
    const auto& f = cannot_move.front();
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "flashoptim: lr %g cannot move %zu of %zu tensors (%.3g%% of parameters): first '%s' |p|max %.3g, "
                  "update %.3g < half the resolution %.3g (%s); see docs/lr-check.md",
                  f.lr, cannot_move.size(), tensors, share, f.name.c_str(), f.max_abs_param, f.update, f.resolution,
                  f.mode.c_str());
    return std::string(buf);
  }
};

/// Checks one tensor and records it in `r` (counted; listed when the lr
/// cannot move it). Returns the verdict.
template <class Config>
lr_verdict lr_report_add(lr_report& r, std::size_t tensor, std::int32_t group, const std::string& name,
                         std::int64_t size, const typename Config::hyper& h, double max_abs_param,
                         double max_abs_grad = -1.0) {
  const lr_verdict v = lr_check_tensor<Config>(h, max_abs_param, max_abs_grad);
  ++r.tensors;
  r.parameters += size;
  if (!v.can_move) {
    lr_report_entry e;
    e.tensor = tensor;
    e.group = group;
    e.name = name;
    e.max_abs_param = std::fabs(max_abs_param);
    e.update = v.update;
    e.resolution = v.resolution;
    e.lr = h.lr;
    e.size = size;
    e.mode = lr_mode_name<Config>();
    r.cannot_move.push_back(std::move(e));
  }
  return v;
}

/// Host helper: max |decoded value| over a host tensor (param + correction),
/// for the check. NaNs are skipped (an infinity is returned as such); 0 for
/// an empty tensor; NaN for a null pointer with n > 0 (the check then says
/// nothing).
template <class Config>
double max_abs_param(const typename Config::param_type* p, const typename Config::aux_type* aux, std::int64_t n) {
  using Master = typename Config::master;
  if (n <= 0) return 0.0;
  if (p == nullptr || (Config::has_aux && aux == nullptr)) return std::numeric_limits<double>::quiet_NaN();
  float m = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    typename Config::aux_type a{};
    if constexpr (Config::has_aux) a = aux[i];
    const float x = format::abs_bits(Master::decode(p[i], a));
    if (x > m) m = x;  // false for NaN
  }
  return m;
}

/// An owning optimizer's lr check (cpu::optimizer and device::optimizer
/// share it): the report over every tensor, from its measured largest
/// |value| and its group's hyperparameters; in report mode one line on
/// stderr the first time the report is not empty (`warned` remembers it).
template <class Config, class Tensors>
lr_report optimizer_lr_report(lr_check_mode mode, const Tensors& tensors, const std::vector<double>& max_abs,
                              const std::vector<std::int32_t>& group, const std::vector<std::string>& names,
                              const std::vector<typename Config::hyper>& hypers, bool& warned) {
  lr_report r;
  if (mode != lr_check_mode::off)
    for (std::size_t i = 0; i < tensors.size() && i < max_abs.size(); ++i)
      lr_report_add<Config>(r, i, group[i], names[i], tensors[i].size, hypers[static_cast<std::size_t>(group[i])],
                            max_abs[i]);
  if (mode == lr_check_mode::report && !r.empty() && !warned) {
    std::fprintf(stderr, "%s\n", r.summary().c_str());
    warned = true;
  }
  return r;
}

/// Strict mode's refusal of a step while the report is not empty.
inline status lr_strict_refusal(lr_check_mode mode, const lr_report& r, const char* who) {
  if (mode == lr_check_mode::strict && !r.empty())
    return status(status_code::hyperparameter_out_of_range, "%s refused (lr_check_mode::strict): %.160s", who,
                  r.summary().c_str());
  return status();
}

}  // namespace flashoptim::optim

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The owning CPU optimizer: what a trainer holds instead of laying out and
// allocating a correction and state buffers for every tensor by hand. It
// keeps the trainer's parameter and gradient pointers (it owns neither),
// allocates one 256-byte-aligned arena for every tensor's correction and
// states (optim::arena_layout), and steps the tensors group by group through
// cpu::step, so its bytes are cpu::step_serial's (and the GPU's). Gradient
// statistics, clipping, the skip on overflow and GradScaler's update run
// through cpu::grad_pass; gradient release steps tensors one at a time.
// Move-only; every call checks its inputs first and writes nothing on error.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "flashoptim/codec/bulk.hpp"
#include "flashoptim/cpu/fp8_param.hpp"
#include "flashoptim/cpu/grad_pass.hpp"
#include "flashoptim/cpu/step.hpp"
#include "flashoptim/optim/fp8_outputs.hpp"
#include "flashoptim/optim/lr_check.hpp"
#include "flashoptim/optim/params.hpp"

namespace flashoptim::cpu {

namespace optim_detail {
/// The arena's allocation unit: an over-aligned block, so the allocator
/// (rebound to it) returns 256-byte-aligned memory with no slack to trim.
struct alignas(256) arena_block {
  unsigned char bytes[256];
};

/// A byte range of the optimizer's written buffers (params, the arena).
struct byte_span {
  std::uintptr_t begin, end;
  std::size_t tensor;
  const char* name;
};
}  // namespace optim_detail

template <class Config, class Allocator = std::allocator<unsigned char>>
class optimizer {
 public:
  using config = Config;
  using hyper_type = typename Config::hyper;
  using tensor_type = tensor_ref<Config>;
  using allocator_type = Allocator;
  static constexpr std::size_t arena_alignment = 256;

  optimizer() = default;
  explicit optimizer(const Allocator& alloc) : alloc_(alloc) {}
  ~optimizer() { release_arena(); }
  optimizer(const optimizer&) = delete;
  optimizer& operator=(const optimizer&) = delete;
  optimizer(optimizer&& o) noexcept : alloc_(o.alloc_) { swap(o); }
  optimizer& operator=(optimizer&& o) noexcept {
    if (this != &o) {
      optimizer dead(std::move(o));
      swap(dead);
    }
    return *this;
  }
  void swap(optimizer& o) noexcept {
    using std::swap;
    swap(alloc_, o.alloc_);
    swap(arena_, o.arena_);
    swap(arena_blocks_, o.arena_blocks_);
    swap(initialized_, o.initialized_);
    swap(flat_, o.flat_);
    swap(group_begin_, o.group_begin_);
    swap(layout_, o.layout_);
    swap(tensors_, o.tensors_);
    swap(names_, o.names_);
    swap(written_, o.written_);
    swap(options_, o.options_);
    swap(step_options_, o.step_options_);
    swap(step_count_, o.step_count_);
    swap(releasing_, o.releasing_);
    swap(release_inv_, o.release_inv_);
    swap(stepped_, o.stepped_);
    swap(lr_report_, o.lr_report_);
    swap(max_abs_, o.max_abs_);
    swap(warned_, o.warned_);
    swap(fp8_, o.fp8_);
    swap(fp8_form_, o.fp8_form_);
  }

  /// Flattens and validates the groups (optim::flatten), plans and
  /// allocates the arena, points one tensor_ref per tensor into it, and
  /// initializes it: corrections split from param_spec::init_fp32
  /// (codec::split), or, without it, from the existing param: the
  /// correction of encode(x) for x = the param's value (so the pair
  /// decodes to it: an fp32 master holds it, a ULP or exact-split
  /// correction is 0); the param itself is not written, so its bytes stay
  /// the trainer's (encode(x) would give them back for every mode except
  /// for NaN payloads, canonical under exact_split); states
  /// zero. Tensor i's seed is optim::tensor_seed(options.seed, i), its
  /// index_base 0; the step count starts at 0. Checks everything (the step
  /// options, every buffer, no written buffer overlapping another or an
  /// init_fp32 source) before writing; on error the object is unchanged
  /// and nothing is written. May be called again to start over.
  status init(std::vector<optim::param_group<Config>> groups, const optim::optimizer_options& options = {},
              const step_options& step_opts = {}) {
    FLASHOPTIM_RETURN_IF_ERROR(dispatch::validate_options(step_opts));
    switch (options.lr_check) {
      case optim::lr_check_mode::off:
      case optim::lr_check_mode::report:
      case optim::lr_check_mode::strict: break;
      default:
        return status(status_code::invalid_argument, "optimizer: lr_check mode %d is not one of optim::lr_check_mode",
                      static_cast<int>(options.lr_check));
    }
    if (options.offload_fraction != 0.0)  // its state is host memory already; silently ignoring it would mislead
      return status(status_code::invalid_argument,
                    "cpu::optimizer: offload_fraction %g is a device::optimizer option (must be 0 here)",
                    options.offload_fraction);
    optimizer next(alloc_);
    FLASHOPTIM_RETURN_IF_ERROR(optim::flatten(groups, next.flat_));
    FLASHOPTIM_RETURN_IF_ERROR(optim::arena_layout<Config>::plan(next.flat_.specs, next.layout_));
    FLASHOPTIM_RETURN_IF_ERROR(next.allocate_arena(next.layout_.bytes));
    const std::size_t n = next.flat_.specs.size();
    next.tensors_.resize(n);
    next.names_.resize(n);
    next.group_begin_.assign(next.flat_.hypers.size() + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const optim::param_spec& p = next.flat_.specs[i];
      tensor_type& t = next.tensors_[i];
      next.layout_.carve(next.arena_, i, t);
      t.param = static_cast<typename Config::param_type*>(p.param);
      t.grad = static_cast<const typename Config::grad_type*>(p.grad);
      t.seed = optim::tensor_seed(options.seed, i);
      t.index_base = 0;
      next.names_[i] = p.name;
      ++next.group_begin_[static_cast<std::size_t>(next.flat_.group[i]) + 1];
    }
    for (std::size_t g = 1; g < next.group_begin_.size(); ++g) next.group_begin_[g] += next.group_begin_[g - 1];
    // Params against one another (the arena cannot overlap them: it is new).
    // Gradients are checked where they are used (set_grad, every step).
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(next.tensors_.data(), n, false));
    next.build_written_spans();
    FLASHOPTIM_RETURN_IF_ERROR(next.check_init_sources());
    next.options_ = options;
    next.step_options_ = step_opts;
    next.initialized_ = true;
    // Nothing above wrote a byte the caller owns; from here on nothing fails.
    for (std::size_t i = 0; i < n; ++i) next.init_tensor(i);
    next.measure_params();
    next.check_lr();
    swap(next);
    return status();
  }

  bool initialized() const { return initialized_; }
  std::size_t group_count() const { return flat_.hypers.size(); }
  std::size_t tensor_count() const { return tensors_.size(); }
  /// Group g's hyperparameters (std::out_of_range past group_count()).
  const hyper_type& hyper(std::size_t g) const { return flat_.hypers.at(g); }
  /// Replaces group g's hyperparameters after Rule::validate. Refused
  /// inside a release step (its tensors must all step with one set).
  status set_hyper(std::size_t g, const hyper_type& h) {
    FLASHOPTIM_RETURN_IF_ERROR(check_group(g, "set_hyper"));
    if (releasing_)
      return status(status_code::invalid_argument,
                    "set_hyper(%zu): a release step is open (begin_step .. end_step): every tensor of a step uses "
                    "the same hyperparameters; change them after end_step()",
                    g);
    const status s = Config::rule::validate(h);
    if (!s.ok()) return status(s.code(), "group %zu: %s", g, s.message());
    flat_.hypers[g] = h;
    check_lr();
    return status();
  }
  /// set_hyper with only the learning rate changed (a schedule's call).
  status set_lr(std::size_t g, double lr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_group(g, "set_lr"));
    hyper_type h = flat_.hypers[g];
    h.lr = lr;
    return set_hyper(g, h);
  }
  /// The tensors the current lrs cannot move (optim/lr_check.hpp), from
  /// each tensor's largest |value| measured at init (or at the last
  /// refresh_lr_check) and every group's hyperparameters; redone by every
  /// set_hyper / set_lr. Empty with lr_check_mode::off. In report mode a
  /// one-line warning goes to stderr the first time it is not empty; in
  /// strict mode step(), step(cfg, ctl) and begin_step refuse while it is
  /// not empty.
  const optim::lr_report& lr_report() const { return lr_report_; }
  /// Measures every tensor's largest |value| again (the weights have moved
  /// since init) and redoes the check.
  status refresh_lr_check() {
    if (!initialized_)
      return status(status_code::invalid_argument, "refresh_lr_check: the optimizer has no successful init()");
    measure_params();
    check_lr();
    return status();
  }
  /// Steps completed (the next step is step_count() + 1).
  std::int64_t step_count() const { return step_count_; }
  /// Sets the step count (a resumed run); refused inside a release step.
  status set_step_count(std::int64_t count) {
    if (count < 0)
      return status(status_code::invalid_argument, "set_step_count: %" PRId64 " is negative", count);
    if (releasing_)
      return status(status_code::invalid_argument, "set_step_count: a release step is open (begin_step .. end_step)");
    step_count_ = count;
    return status();
  }
  /// The views of every tensor, group by group (param and grad are the
  /// trainer's; correction and states point into the arena).
  const std::vector<tensor_type>& tensors() const { return tensors_; }
  const std::vector<std::string>& names() const { return names_; }
  /// Group index of each tensor.
  const std::vector<std::int32_t>& tensor_group() const { return flat_.group; }
  const optim::optimizer_options& options() const { return options_; }
  const step_options& cpu_step_options() const { return step_options_; }
  /// Memory by kind, from the arena as allocated (table_bytes 0 on the CPU).
  optim::memory_report memory() const {
    optim::memory_report r = layout_.report(flat_.specs);
    r.arena_bytes = static_cast<std::int64_t>(arena_blocks_ * sizeof(optim_detail::arena_block));
    r.padding_bytes = r.arena_bytes - r.correction_bytes - r.state_code_bytes - r.state_scale_bytes;
    return r;
  }

  /// Rebinds tensor i's gradient (host memory, Config::grad_type, its
  /// size). Null unbinds it (a step that reads it then fails). Refused
  /// when misaligned or overlapping a buffer the step writes.
  status set_grad(std::size_t i, const void* grad) {
    FLASHOPTIM_RETURN_IF_ERROR(check_tensor(i, "set_grad"));
    const auto* g = static_cast<const typename Config::grad_type*>(grad);
    if (g != nullptr) {
      ::flashoptim::detail::buffer_span unused{};
      FLASHOPTIM_RETURN_IF_ERROR(::flashoptim::detail::check_buffer(i, "grad", g, tensors_[i].size, unused, false));
      FLASHOPTIM_RETURN_IF_ERROR(check_grad_overlap(i, g));
    }
    tensors_[i].grad = g;
    flat_.specs[i].grad = grad;
    return status();
  }

  /// One step of every tensor with its group's hyperparameters: step
  /// step_count() + 1, gradients multiplied by 1. The count advances on
  /// success; on error nothing is written.
  status step() {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("step()"));
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("step()"));
    step_args a;
    a.step = step_count_ + 1;
    FLASHOPTIM_RETURN_IF_ERROR(check_step(a));
    run_groups(a);
    ++step_count_;
    return write_fp8();
  }

  /// The gradient pass, then the step: cpu::grad_pass reads every gradient
  /// (fixed-order global norm, clip coefficient, non-finite check,
  /// GradScaler update; `ctl` carries GradScaler's state in and every
  /// result out), then every tensor steps with inv_grad_scale =
  /// ctl.multiplier. When ctl.skip is set (a non-finite gradient, or the
  /// unscale overflows) no parameter or state byte is written and the
  /// count does not advance, as GradScaler skips optimizer.step(). Checks
  /// the buffers, hyperparameters, `cfg` and `ctl` first; on such an error
  /// nothing (ctl included) is written. Should the multiplier itself be
  /// refused by the step (it rounds to 0 in fp32), ctl is already updated
  /// and nothing else is written. Refused inside a release step.
  status step(const grad_pass_config& cfg, grad_control& ctl) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("step(grad_pass_config, grad_control)"));
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("step(grad_pass_config, grad_control)"));
    step_args a;
    a.step = step_count_ + 1;
    FLASHOPTIM_RETURN_IF_ERROR(check_step(a));
    std::vector<grad_tensor> grads(tensors_.size());
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      grads[i] = grad_tensor{tensors_[i].grad, dtype_v<typename Config::grad_type>, tensors_[i].size};
    const grad_list list{grads.data(), static_cast<std::int64_t>(grads.size())};
    grad_pass_options po;
    po.threads = step_options_.threads;
    FLASHOPTIM_RETURN_IF_ERROR(grad_pass(list, cfg, &ctl, {}, po));
    if (ctl.skip != 0) return status();
    a.inv_grad_scale = ctl.multiplier;
    FLASHOPTIM_RETURN_IF_ERROR(check_groups(a));
    run_groups(a);
    ++step_count_;
    return write_fp8();
  }

  /// Gradient release: opens step step_count() + 1, whose tensors are then
  /// stepped one by one with step_tensor as their gradients arrive, in any
  /// order, each exactly once, and closed by end_step. The bytes are
  /// step()'s (a tensor's step depends on its own buffers only). The
  /// gradients are multiplied by inv_grad_scale (a fixed loss scale); the
  /// gradient pass (global clip, skip on overflow, scale update) needs every
  /// gradient at once and cannot run here. Checks every group's
  /// hyperparameters for this step first.
  status begin_step(double inv_grad_scale = 1.0) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("begin_step()"));
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("begin_step()"));
    step_args a;
    a.step = step_count_ + 1;
    a.inv_grad_scale = inv_grad_scale;
    FLASHOPTIM_RETURN_IF_ERROR(check_groups(a));
    stepped_.assign(tensors_.size(), 0);
    release_inv_ = inv_grad_scale;
    releasing_ = true;
    return status();
  }
  /// Steps tensor i now (its gradient must be bound), with the open step's
  /// count and gradient multiplier. A tensor steps at most once per step.
  status step_tensor(std::size_t i) {
    if (!releasing_)
      return status(status_code::invalid_argument, "step_tensor(%zu): no release step is open; call begin_step() first",
                    i);
    FLASHOPTIM_RETURN_IF_ERROR(check_tensor(i, "step_tensor"));
    if (stepped_[i] != 0)
      return status(status_code::invalid_argument,
                    "step_tensor(%zu): tensor '%.80s' was already stepped in step %" PRId64
                    " (each tensor steps once between begin_step and end_step)",
                    i, names_[i].c_str(), step_count_ + 1);
    const tensor_type& t = tensors_[i];
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(i, t));
    FLASHOPTIM_RETURN_IF_ERROR(check_grad_overlap(i, t.grad));
    step_args a;
    a.step = step_count_ + 1;
    a.inv_grad_scale = release_inv_;
    FLASHOPTIM_RETURN_IF_ERROR(
        cpu::step<Config>(flat_.hypers[static_cast<std::size_t>(flat_.group[i])], a, &t, 1, step_options_));
    stepped_[i] = 1;
    return status();
  }
  /// Closes the release step: every tensor must have been stepped (else an
  /// error naming the first that was not; the step stays open), then the
  /// count advances.
  status end_step() {
    if (!releasing_) return status(status_code::invalid_argument, "end_step(): no release step is open");
    const auto missing = std::find(stepped_.begin(), stepped_.end(), static_cast<unsigned char>(0));
    if (missing != stepped_.end()) {
      const auto i = static_cast<std::size_t>(missing - stepped_.begin());
      const auto done = static_cast<std::size_t>(std::count(stepped_.begin(), stepped_.end(), 1));
      return status(status_code::invalid_argument,
                    "end_step(): tensor %zu ('%.80s') was not stepped in step %" PRId64
                    " (%zu of %zu were); step it with step_tensor(%zu)",
                    i, names_[i].c_str(), step_count_ + 1, done, stepped_.size(), i);
    }
    releasing_ = false;
    stepped_.clear();
    ++step_count_;
    return write_fp8();
  }
  /// Whether a release step is open (begin_step called, end_step not yet).
  bool in_release_step() const { return releasing_; }

  // ---- FP8 copies (docs/fp8-params.md, "In the owning optimizers") -----

  /// From now on every step (step(), step with the gradient pass, end_step
  /// of a release step) ends by writing the FP8 copy of every tensor whose
  /// output has buffers, from the master the step left: values and block
  /// scales equal to cpu::fp8_param_write on that master (a skipped step
  /// leaves the master, and so the copy, as it was). `outputs` has one
  /// entry per tensor (tensors() order; null buffers: no copy); the copy is
  /// written once now. Host memory. Checks everything first (see
  /// optim::build_fp8_refs: an FP8 buffer may overlap no buffer of any
  /// tensor); on error nothing is written and the previous outputs stay.
  /// Refused inside a release step. A later init() drops them.
  template <class F8>
  status set_fp8_outputs(const std::vector<optim::fp8_output<F8>>& outputs, const fp8_param_options& options = {}) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("set_fp8_outputs"));
    if (releasing_)
      return status(status_code::invalid_argument, "set_fp8_outputs: a release step is open (begin_step .. end_step)");
    auto w = std::make_unique<fp8_writer_of<F8>>();
    w->options = options;
    optim::fp8_form form;
    std::vector<std::size_t> index;
    const status checked = optim::build_fp8_refs<Config, F8>(tensors_, flat_.specs, names_, outputs.data(),
                                                             outputs.size(), options.pow2_scales, w->refs, index, form);
    FLASHOPTIM_RETURN_IF_ERROR(checked);
    FLASHOPTIM_RETURN_IF_ERROR(w->write(step_options_.threads));
    fp8_ = std::move(w);
    fp8_form_ = std::move(form);
    return status();
  }
  /// Steps stop writing FP8 copies.
  void clear_fp8_outputs() {
    fp8_.reset();
    fp8_form_ = optim::fp8_form{};
  }
  bool has_fp8_outputs() const { return fp8_ != nullptr; }
  /// The form written (empty without outputs); save() records it.
  const optim::fp8_form& fp8_form() const { return fp8_form_; }
  /// Writes the FP8 copies from the current master now (the steps do it
  /// themselves; load() calls it after restoring the master). No outputs:
  /// nothing to do.
  status write_fp8() const { return fp8_ != nullptr ? fp8_->write(step_options_.threads) : status(); }

 private:
  /// The FP8 write, with the format erased (set_fp8_outputs<F8> makes one).
  struct fp8_writer {
    virtual ~fp8_writer() = default;
    virtual status write(int threads) const = 0;
  };
  template <class F8>
  struct fp8_writer_of final : fp8_writer {
    std::vector<fp8_param_ref<typename Config::master, F8>> refs;
    fp8_param_options options;
    status write(int threads) const override {  // validated by set_fp8_outputs; no per-step check
      cpu::detail::fp8_param_write_checked(refs.data(), refs.size(), options, threads);
      return status();
    }
  };

  using block_alloc = typename std::allocator_traits<Allocator>::template rebind_alloc<optim_detail::arena_block>;
  using block_traits = std::allocator_traits<block_alloc>;

  status allocate_arena(std::int64_t bytes) {
    release_arena();
    if (bytes <= 0) return status();
    const auto blocks = static_cast<std::size_t>(bytes / static_cast<std::int64_t>(arena_alignment));
    block_alloc a(alloc_);
    optim_detail::arena_block* p = nullptr;
    try {
      p = block_traits::allocate(a, blocks);
    } catch (const std::bad_alloc&) {
      return status(status_code::capacity_exceeded, "optimizer: could not allocate the %" PRId64 "-byte state arena",
                    bytes);
    } catch (const std::length_error&) {
      return status(status_code::capacity_exceeded, "optimizer: could not allocate the %" PRId64 "-byte state arena",
                    bytes);
    }
    if (p == nullptr)
      return status(status_code::capacity_exceeded, "optimizer: the allocator returned null for %" PRId64 " bytes",
                    bytes);
    if (reinterpret_cast<std::uintptr_t>(p) % arena_alignment != 0) {
      const status s(status_code::misaligned, "optimizer: the allocator returned %p, not 256-byte aligned",
                     static_cast<void*>(p));
      block_traits::deallocate(a, p, blocks);
      return s;
    }
    arena_ = p;
    arena_blocks_ = blocks;
    std::memset(static_cast<void*>(p), 0, blocks * sizeof(optim_detail::arena_block));  // zero states
    return status();
  }
  void release_arena() noexcept {
    if (arena_ != nullptr) {
      block_alloc a(alloc_);
      block_traits::deallocate(a, static_cast<optim_detail::arena_block*>(arena_), arena_blocks_);
    }
    arena_ = nullptr;
    arena_blocks_ = 0;
  }

  /// Every buffer the step writes, sorted (validate_tensor_list has shown
  /// they do not overlap), for O(log k) gradient checks.
  void build_written_spans() {
    written_.clear();
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      for_each_buffer(tensors_[i], [&](const char* name, const void* p, std::size_t bytes, bool written) {
        if (!written || p == nullptr || bytes == 0) return;
        const auto b = reinterpret_cast<std::uintptr_t>(p);
        written_.push_back({b, b + bytes, i, name});
      });
    }
    std::sort(written_.begin(), written_.end(),
              [](const optim_detail::byte_span& a, const optim_detail::byte_span& b) { return a.begin < b.begin; });
  }
  /// The written span overlapping [begin, end), if any.
  const optim_detail::byte_span* find_written(std::uintptr_t begin, std::uintptr_t end) const {
    if (begin == end) return nullptr;
    // the last span starting before `end` is the only candidate (they are disjoint and sorted)
    auto it = std::lower_bound(written_.begin(), written_.end(), end,
                               [](const optim_detail::byte_span& s, std::uintptr_t e) { return s.begin < e; });
    if (it == written_.begin()) return nullptr;
    --it;
    return it->end > begin ? &*it : nullptr;
  }
  status check_grad_overlap(std::size_t i, const typename Config::grad_type* g) const {
    if (g == nullptr || tensors_[i].size == 0) return status();
    const auto b = reinterpret_cast<std::uintptr_t>(g);
    const auto e = b + static_cast<std::uintptr_t>(tensors_[i].size) * sizeof(*g);
    if (const auto* s = find_written(b, e))
      return status(status_code::aliasing, "tensor %zu: grad overlaps tensor %zu's %s", i, s->tensor, s->name);
    return status();
  }
  /// init_fp32 sources: valid arrays that no written buffer overlaps (a
  /// source read after another tensor's param was split would be stale).
  status check_init_sources() const {
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const float* x = flat_.specs[i].init_fp32;
      if (x == nullptr) continue;
      const std::int64_t n = tensors_[i].size;
      const status s = codec::detail::check_array("init_fp32", x, n);
      if (!s.ok()) return status(s.code(), "tensor %zu: %s", i, s.message());
      if (n == 0) continue;
      const auto b = reinterpret_cast<std::uintptr_t>(x);
      if (const auto* w = find_written(b, b + static_cast<std::uintptr_t>(n) * sizeof(float)))
        return status(status_code::aliasing, "tensor %zu: init_fp32 overlaps tensor %zu's %s", i, w->tensor, w->name);
    }
    return status();
  }
  /// Writes tensor i's correction (after every check).
  void init_tensor(std::size_t i) {
    using M = typename Config::master;
    const tensor_type& t = tensors_[i];
    const float* x = flat_.specs[i].init_fp32;
    if (x != nullptr) {
      (void)codec::split<M>(x, t.size, t.param, t.aux);  // checked: cannot fail
      return;
    }
    if constexpr (Config::has_aux) {
      const std::int64_t n = t.size;
      auto* param = t.param;
      auto* aux = t.aux;
FLASHOPTIM_OMP_PARALLEL_FOR
      for (std::int64_t k = 0; k < n; ++k) {
        typename M::aux_type c{};
        // the param's value, not decode(param, 0): an fp32 master ignores
        // the param when decoding (it would start at 0)
        typename M::param_type p = param[k];
        M::encode(format::to_float(p), p, c);
        aux[k] = c;
      }
    }
  }

  /// Every tensor's largest |decoded value|, for the lr check.
  void measure_params() {
    max_abs_.assign(tensors_.size(), 0.0);
    if (options_.lr_check == optim::lr_check_mode::off) return;
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      max_abs_[i] = optim::max_abs_param<Config>(tensors_[i].param, tensors_[i].aux, tensors_[i].size);
  }
  /// Redoes the lr report from the measured magnitudes; warns once.
  void check_lr() {
    lr_report_ = optim::optimizer_lr_report<Config>(options_.lr_check, tensors_, max_abs_, flat_.group, names_,
                                                    flat_.hypers, warned_);
  }
  status check_strict(const char* who) const { return optim::lr_strict_refusal(options_.lr_check, lr_report_, who); }

  status check_group(std::size_t g, const char* who) const {
    if (g >= flat_.hypers.size())
      return status(status_code::invalid_argument, "%s: group %zu is out of range (%zu groups)", who, g,
                    flat_.hypers.size());
    return status();
  }
  status check_tensor(std::size_t i, const char* who) const {
    if (i >= tensors_.size())
      return status(status_code::invalid_argument, "%s: tensor %zu is out of range (%zu tensors)", who, i,
                    tensors_.size());
    return status();
  }
  status check_ready(const char* who) const {
    if (!initialized_) return status(status_code::invalid_argument, "%s: the optimizer has no successful init()", who);
    if (releasing_)
      return status(status_code::invalid_argument,
                    "%s: a release step is open (begin_step .. end_step); step its tensors with step_tensor and "
                    "close it with end_step(). A global clip, a skip on overflow and the loss-scale update need every "
                    "gradient at once: use step(grad_pass_config, grad_control) outside release",
                    who);
    return status();
  }
  /// Every group's hyperparameters and scalars for step args `a`.
  status check_groups(const step_args& a) const {
    for (std::size_t g = 0; g < flat_.hypers.size(); ++g) {
      const status s = validate_step_args<Config>(flat_.hypers[g], a);
      if (!s.ok()) return status(s.code(), "group %zu: %s", g, s.message());
    }
    return status();
  }
  /// check_groups and every tensor's buffers, gradients included.
  status check_step(const step_args& a) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_groups(a));
    return validate_tensor_list(tensors_.data(), tensors_.size(), true);
  }
  /// Steps every group (after check_step: cannot fail).
  void run_groups(const step_args& a) {
    for (std::size_t g = 0; g < flat_.hypers.size(); ++g) {
      const std::size_t b = group_begin_[g], e = group_begin_[g + 1];
      if (b == e) continue;
      (void)cpu::step<Config>(flat_.hypers[g], a, tensors_.data() + b, e - b, step_options_);
    }
  }

  Allocator alloc_{};
  void* arena_ = nullptr;
  std::size_t arena_blocks_ = 0;
  bool initialized_ = false;
  optim::flat_params<Config> flat_;
  std::vector<std::size_t> group_begin_;  ///< group g's tensors are [group_begin_[g], group_begin_[g + 1])
  optim::arena_layout<Config> layout_;
  std::vector<tensor_type> tensors_;
  std::vector<std::string> names_;
  std::vector<optim_detail::byte_span> written_;
  optim::optimizer_options options_{};
  step_options step_options_{};
  std::int64_t step_count_ = 0;
  bool releasing_ = false;
  double release_inv_ = 1.0;
  std::vector<unsigned char> stepped_;
  optim::lr_report lr_report_;
  std::vector<double> max_abs_;  ///< each tensor's largest |value| for the lr check
  bool warned_ = false;          ///< report mode's stderr line was printed
  std::unique_ptr<fp8_writer> fp8_;  ///< set_fp8_outputs; null: no FP8 copy
  optim::fp8_form fp8_form_;
};

}  // namespace flashoptim::cpu

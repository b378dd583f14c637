// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The owning GPU optimizer: what a trainer holds instead of laying out,
// allocating and initializing a correction and state buffers for every
// tensor and keeping step counts and seeds by hand. It keeps the trainer's
// parameter and gradient pointers (device memory; it owns neither),
// allocates one 256-byte-aligned arena for every tensor's correction and
// states (optim::arena_layout) and a small control block, and steps every
// parameter group of up to tuning::max_step_groups groups in one launch.
//
// The step count, each group's lr and the training-loop scalars
// (grad_control: loss scale, clip coefficient, skip flag) live in device
// memory, so a whole step -- statistics pass, step, step-count advance --
// is stream-ordered with no host synchronization and can be captured in a
// CUDA graph; set_lr writes the device lr with a stream-ordered kernel.
// Hyperparameters other than lr are baked into a captured launch: capture
// again after set_hyper.
//
//   flashoptim::device::optimizer<cfg> opt;
//   FLASHOPTIM_RETURN_IF_ERROR(opt.init({{decay, matrices}, {no_decay, norms}}));
//   FLASHOPTIM_RETURN_IF_ERROR(opt.step_async(stream));
//
// cuCollections' model: an owning, move-only object with an allocator
// template parameter (std-allocator shaped: allocate(n) / deallocate(p, n);
// device::cuda_allocator by default). Set-up calls (init, set_grad,
// set_grad_pass, enable_release, save, load) may allocate and synchronize;
// step calls never do. Every call checks its inputs first and writes
// nothing on error.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "flashoptim/device/grad_pass.cuh"
#include "flashoptim/device/memory_kind.cuh"
#include "flashoptim/device/state_init.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/kernel/init_kernels.cuh"
#include "flashoptim/optim/lr_check.hpp"
#include "flashoptim/optim/params.hpp"

namespace flashoptim::device {

/// Device memory from cudaMalloc, shaped like a std allocator (so
/// rmm/thrust-style allocators can take its place). allocate throws
/// std::bad_alloc on failure; the optimizer turns that into a status.
template <class T>
struct cuda_allocator {
  using value_type = T;
  cuda_allocator() = default;
  template <class U>
  cuda_allocator(const cuda_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    void* p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of a failed allocation
      throw std::bad_alloc();
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { cudaFree(p); }
  template <class U>
  bool operator==(const cuda_allocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const cuda_allocator<U>&) const noexcept {
    return false;
  }
};

/// The device-resident scalars of an optimizer (one allocation, followed by
/// one lr per parameter group).
struct optimizer_control {
  std::int64_t next_step = 1;  ///< the 1-based number of the next step (step_count() + 1)
  std::int32_t error = 0;      ///< set by a step whose device inputs were invalid (see device_inputs::error)
  std::int32_t reserved = 0;
  grad_control control{};      ///< the training-loop pass's scalars (set_grad_pass)
  grad_summary summary{};      ///< the last pass's gradient statistics
};

template <class Config, class Policy = typename tuning::default_step_policy<Config>::type,
          class Allocator = cuda_allocator<unsigned char>>
class optimizer {
 public:
  using config = Config;
  using policy = Policy;
  using hyper_type = typename Config::hyper;
  using tensor_type = tensor_ref<Config>;
  using allocator_type = Allocator;
  static constexpr std::size_t arena_alignment = 256;

  optimizer() = default;
  explicit optimizer(const Allocator& alloc) : alloc_(alloc) {}
  ~optimizer() { release(); }
  optimizer(const optimizer&) = delete;
  optimizer& operator=(const optimizer&) = delete;
  optimizer(optimizer&& o) noexcept : alloc_(o.alloc_) { swap(o); }
  optimizer& operator=(optimizer&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }

  /// Builds the optimizer over `groups` (device memory of the current
  /// device; every gradient pointer set). Corrections come from each
  /// param_spec::init_fp32 (split) or from the 16-bit parameters as they are
  /// (resplit_async); states start at zero; tensor i's seed is
  /// optim::tensor_seed(options.seed, i). Synchronizes `stream`. On error
  /// the optimizer is left as it was.
  status init(std::vector<optim::param_group<Config>> groups, const optim::optimizer_options& options = {},
              cudaStream_t stream = nullptr) {
    optimizer next(alloc_);
    FLASHOPTIM_RETURN_IF_ERROR(next.build(groups, options, stream));
    swap(next);
    return status();
  }

  bool initialized() const { return initialized_; }
  std::size_t group_count() const { return flat_.hypers.size(); }
  std::size_t tensor_count() const { return tensors_.size(); }
  const hyper_type& hyper(std::size_t g) const { return flat_.hypers.at(g); }
  /// The tensors' device views (the arena's buffers and the trainer's
  /// params and grads).
  const std::vector<tensor_type>& tensors() const { return tensors_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::int32_t>& tensor_group() const { return flat_.group; }
  const std::vector<optim::param_spec>& params() const { return flat_.specs; }
  const optim::optimizer_options& options() const { return options_; }
  /// Launches one step takes (one per tuning::max_step_groups groups).
  std::size_t launches() const { return plans_.size(); }

  /// Device memory this optimizer owns, by kind, measured from its
  /// allocations (the arena as laid out, the step tables, the control
  /// block), beside the trainer's parameter and gradient bytes.
  optim::memory_report memory() const {
    optim::memory_report r = arena_.report(flat_.specs);
    std::int64_t tables = static_cast<std::int64_t>(control_bytes_);
    for (const auto& p : plans_) tables += static_cast<std::int64_t>(p.table_bytes());
    for (const auto& p : release_plans_) tables += static_cast<std::int64_t>(p.table_bytes());
    r.table_bytes = tables;
    return r;
  }

  /// The device control block (step count, the pass's grad_control: its
  /// loss_scale is the scale for the next backward).
  const optimizer_control* device_control() const { return control_; }
  /// Device pointer to the lr of group g (what step_async reads).
  const double* device_lr(std::size_t g) const { return g < group_count() ? lrs_ + g : nullptr; }

  /// Steps completed (skipped steps do not count). Synchronous: copies the
  /// device counter after the work queued on `stream`.
  status step_count(std::int64_t& out, cudaStream_t stream = nullptr) const {
    optimizer_control c;
    FLASHOPTIM_RETURN_IF_ERROR(read_control(c, stream));
    out = c.next_step - 1;
    return status();
  }
  /// The control block as the device has it after the work on `stream`.
  status read_control(optimizer_control& out, cudaStream_t stream = nullptr) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("read_control"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "read_control: synchronize"));
    return detail::cuda_status(cudaMemcpy(&out, control_, sizeof(out), cudaMemcpyDeviceToHost), "read_control: copy");
  }

  /// Group g's lr, for the next step: the host copy and (stream-ordered,
  /// no host synchronization) the device value the step reads.
  status set_lr(std::size_t g, double lr, cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_group(g, "set_lr"));
    hyper_type h = flat_.hypers[g];
    h.lr = lr;
    return set_hyper(g, h, stream);
  }
  /// Group g's hyperparameters (validated). Captured graphs keep the old
  /// values of everything but lr: capture again.
  status set_hyper(std::size_t g, const hyper_type& h, cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_group(g, "set_hyper"));
    if (releasing_)  // the tensors stepped later would take other hyperparameters than the earlier ones
      return status(status_code::invalid_argument, "set_hyper/set_lr: a gradient-release step is in progress");
    const status v = Config::rule::validate(h);
    if (!v.ok()) return status(v.code(), "set_hyper: group %zu: %s", g, v.message());
    FLASHOPTIM_RETURN_IF_ERROR(write_lr(g, h.lr, stream));
    flat_.hypers[g] = h;
    check_lr();
    return status();
  }

  /// Points tensor i at another gradient buffer (same size and type; device
  /// memory). Rebuilds the step tables (set-up: synchronous; capture again).
  status set_grad(std::size_t i, const void* grad) {
    FLASHOPTIM_RETURN_IF_ERROR(check_tensor(i, "set_grad"));
    if (releasing_) return status(status_code::invalid_argument, "set_grad: a gradient-release step is in progress");
    std::vector<tensor_type> next = tensors_;
    next[i].grad = static_cast<const typename Config::grad_type*>(grad);
    std::vector<step_plan<Config, Policy>> plans;
    FLASHOPTIM_RETURN_IF_ERROR(build_plans(next, plans));
    std::vector<step_plan<Config, Policy>> rplans;
    if (!release_plans_.empty()) FLASHOPTIM_RETURN_IF_ERROR(build_release_plans(next, rplans));
    grad_pass_plan pass;
    if (pass_.built()) FLASHOPTIM_RETURN_IF_ERROR(build_pass(next, pass_config_, pass));
    tensors_ = std::move(next);
    flat_.specs[i].grad = grad;
    plans_ = std::move(plans);
    release_plans_ = std::move(rplans);
    if (pass_.built()) pass_ = std::move(pass);
    return status();
  }

  /// The tensors the current lrs cannot move (optim/lr_check.hpp), from
  /// each tensor's largest |value| measured at init (or at the last
  /// refresh_lr_check) and every group's hyperparameters. Empty with
  /// lr_check_mode::off. In report mode a one-line warning goes to stderr
  /// the first time it is not empty; in strict mode step_async and
  /// begin_step refuse while it is not empty.
  const optim::lr_report& lr_report() const { return lr_report_; }
  /// Measures every tensor's largest |value| again (set-up: copies the
  /// parameters to the host) and redoes the check.
  status refresh_lr_check(cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("refresh_lr_check"));
    FLASHOPTIM_RETURN_IF_ERROR(measure_params(stream));
    check_lr();
    return status();
  }

  /// Every tensor's bytes on the host: parameters, and the arena
  /// (corrections and states) with tensor views over them; what a
  /// checkpoint writes (optim/device_optimizer_io.cuh) and reads.
  struct host_copy {
    std::vector<unsigned char> params;
    std::vector<unsigned char> arena;
    std::vector<tensor_type> tensors;  ///< views into the two vectors above (seeds and index bases the device's)
    std::int64_t step_count = 0;
  };
  /// Copies everything to `out` after the work queued on `stream` (synchronous).
  status copy_to_host(host_copy& out, cudaStream_t stream = nullptr) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("copy_to_host"));
    host_copy h;
    FLASHOPTIM_RETURN_IF_ERROR(step_count(h.step_count, stream));
    h.arena.resize(arena_blocks_ * sizeof(block));
    if (!h.arena.empty())
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemcpy(h.arena.data(), arena_base_, h.arena.size(), cudaMemcpyDeviceToHost), "copy_to_host: arena"));
    std::vector<std::size_t> at(tensors_.size());
    std::size_t total = 0;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      at[i] = total;
      total += (static_cast<std::size_t>(tensors_[i].size) * sizeof(typename Config::param_type) + 255) / 256 * 256;
    }
    h.params.resize(total);
    h.tensors.resize(tensors_.size());
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const tensor_type& d = tensors_[i];
      tensor_type t;
      if (!h.arena.empty()) arena_.carve(h.arena.data(), i, t);
      t.size = d.size;
      t.seed = d.seed;
      t.index_base = d.index_base;
      t.param = d.size > 0 ? reinterpret_cast<typename Config::param_type*>(h.params.data() + at[i]) : nullptr;
      t.grad = nullptr;
      if (d.size == 0) t.aux = nullptr;
      if (d.size > 0)
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpy(t.param, d.param, static_cast<std::size_t>(d.size) * sizeof(typename Config::param_type),
                       cudaMemcpyDeviceToHost),
            "copy_to_host: params"));
      h.tensors[i] = t;
    }
    out = std::move(h);
    return status();
  }
  /// Writes a host copy (made by copy_to_host of this optimizer, then
  /// changed, e.g. by a checkpoint load) back: parameters, arena, the step
  /// count; hypers[g] for every group when given. Synchronous.
  status copy_from_host(const host_copy& in, const hyper_type* hypers = nullptr, cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("copy_from_host"));
    if (releasing_) return status(status_code::invalid_argument, "copy_from_host: a release step is in progress");
    if (in.tensors.size() != tensors_.size() || in.arena.size() != arena_blocks_ * sizeof(block))
      return status(status_code::size_mismatch, "copy_from_host: the copy is not of this optimizer");
    if (in.step_count < 0 || in.step_count == INT64_MAX)
      return status(status_code::invalid_argument, "copy_from_host: step count %" PRId64 " is out of range",
                    in.step_count);
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (in.tensors[i].size != tensors_[i].size)
        return status(status_code::size_mismatch, "copy_from_host: tensor %zu has %" PRId64 " elements, not %" PRId64, i,
                      in.tensors[i].size, tensors_[i].size);
    if (hypers != nullptr)
      for (std::size_t g = 0; g < group_count(); ++g) {
        const status v = Config::rule::validate(hypers[g]);
        if (!v.ok()) return status(v.code(), "copy_from_host: group %zu: %s", g, v.message());
      }
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "copy_from_host: synchronize"));
    if (!in.arena.empty())
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemcpy(arena_base_, in.arena.data(), in.arena.size(), cudaMemcpyHostToDevice), "copy_from_host: arena"));
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].size > 0)
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpy(tensors_[i].param, in.tensors[i].param,
                       static_cast<std::size_t>(tensors_[i].size) * sizeof(typename Config::param_type),
                       cudaMemcpyHostToDevice),
            "copy_from_host: params"));
    optimizer_control c;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMemcpy(&c, control_, sizeof(c), cudaMemcpyDeviceToHost),
                                                   "copy_from_host: control"));
    c.next_step = in.step_count + 1;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMemcpy(control_, &c, sizeof(c), cudaMemcpyHostToDevice),
                                                   "copy_from_host: control"));
    if (hypers != nullptr) {
      std::vector<double> lrs(group_count());
      for (std::size_t g = 0; g < group_count(); ++g) {
        flat_.hypers[g] = hypers[g];
        lrs[g] = hypers[g].lr;
      }
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemcpy(lrs_, lrs.data(), lrs.size() * sizeof(double), cudaMemcpyHostToDevice), "copy_from_host: lr"));
    }
    if (options_.lr_check != optim::lr_check_mode::off) {
      FLASHOPTIM_RETURN_IF_ERROR(measure_params(stream));
      check_lr();
    }
    return status();
  }

  // ---- The training-loop pass ----------------------------------------

  /// From now on every step_async first runs the gradient pass over every
  /// gradient (found-non-finite, the fixed-order global norm, the clip
  /// coefficient, GradScaler's skip and update; device/grad_pass.cuh) and
  /// the step reads its multiplier and skip flag from device memory. Resets
  /// the loss scale to cfg.scaler's initial value. Set-up: synchronous.
  status set_grad_pass(const grad_pass_config& cfg, cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("set_grad_pass"));
    if (releasing_)
      return status(status_code::invalid_argument, "set_grad_pass: a gradient-release step is in progress");
    grad_pass_plan pass;
    FLASHOPTIM_RETURN_IF_ERROR(build_pass(tensors_, cfg, pass));
    FLASHOPTIM_RETURN_IF_ERROR(pass.reset_control_async(stream));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "set_grad_pass: synchronize"));
    pass_ = std::move(pass);
    pass_config_ = cfg;
    return status();
  }
  /// Steps without the pass again (multiplier 1, no skip).
  void clear_grad_pass() { pass_ = grad_pass_plan(); }
  bool has_grad_pass() const { return pass_.built(); }

  // ---- The step --------------------------------------------------------

  /// One step of every tensor, each with its group's hyperparameters and
  /// the device lr: [gradient pass] -> one launch per max_step_groups
  /// groups -> the step count advances on the device (not on a skipped
  /// step). Stream-ordered, no host synchronization, no allocation:
  /// capturable in a CUDA graph.
  status step_async(cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("step_async"));
    if (releasing_)
      return status(status_code::invalid_argument,
                    "step_async: a gradient-release step is in progress (finish it with end_step_async)");
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("step_async"));
    if (!pass_.built()) return launch_steps(nullptr, nullptr, stream);
    FLASHOPTIM_RETURN_IF_ERROR(pass_.run_async(stream));
    return launch_steps(&control_->control.multiplier, &control_->control.skip, stream);
  }
  /// One step whose multiplier and skip flag come from a gradient pass run
  /// by someone else over more tensors than this optimizer's (device
  /// memory; optimizer_set runs one pass for optimizers of several
  /// configurations). This optimizer's own pass, if set, is not run.
  status step_async(const grad_control* shared, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("step_async"));
    if (shared == nullptr) return status(status_code::null_pointer, "step_async: the shared grad_control is null");
    if (releasing_)
      return status(status_code::invalid_argument,
                    "step_async: a gradient-release step is in progress (finish it with end_step_async)");
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("step_async"));
    return launch_steps(&shared->multiplier, &shared->skip, stream);
  }

  // ---- Gradient release ------------------------------------------------

  /// Builds a one-tensor step table per tensor, so tensors can be stepped
  /// one at a time as their gradients become ready (set-up: synchronous).
  status enable_release() {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("enable_release"));
    std::vector<step_plan<Config, Policy>> rplans;
    FLASHOPTIM_RETURN_IF_ERROR(build_release_plans(tensors_, rplans));
    release_plans_ = std::move(rplans);
    return status();
  }
  /// Starts a release step: every tensor is then stepped once by
  /// step_tensor_async, in any order, with the gradient multiplier given
  /// here (a loss scale known before backward). What needs every gradient
  /// first -- the global norm clip, the skip on overflow, the loss-scale
  /// update -- cannot run per tensor: with a gradient pass set, this is
  /// refused. The result is step_async's, bit for bit.
  status begin_step(double inv_grad_scale = 1.0) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("begin_step"));
    if (release_plans_.empty())
      return status(status_code::invalid_argument, "begin_step: call enable_release() first (it builds the tables)");
    if (releasing_) return status(status_code::invalid_argument, "begin_step: a release step is already in progress");
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("begin_step"));
    if (pass_.built())
      return status(status_code::invalid_argument,
                    "begin_step: gradient release cannot run the gradient pass (global clip, skip on overflow and "
                    "the loss-scale update need every gradient first); clear_grad_pass() or step with step_async");
    if (!std::isfinite(inv_grad_scale) || !(inv_grad_scale > 0.0))
      return status(status_code::invalid_argument, "begin_step: gradient multiplier %g is not finite and positive",
                    inv_grad_scale);
    releasing_ = true;
    release_multiplier_ = inv_grad_scale;
    stepped_.assign(tensors_.size(), 0);
    return status();
  }
  /// Steps tensor i now (its gradient is ready), stream-ordered.
  status step_tensor_async(std::size_t i, cudaStream_t stream) {
    FLASHOPTIM_RETURN_IF_ERROR(check_tensor(i, "step_tensor_async"));
    if (!releasing_) return status(status_code::invalid_argument, "step_tensor_async: call begin_step() first");
    if (stepped_[i])
      return status(status_code::invalid_argument, "step_tensor_async: tensor %zu ('%.80s') was already stepped in this step",
                    i, names_[i].c_str());
    const std::size_t g = static_cast<std::size_t>(flat_.group[i]);
    step_args a;
    a.inv_grad_scale = release_multiplier_;
    device_inputs in;
    in.lr = lrs_ + g;
    in.step = &control_->next_step;
    in.error = &control_->error;
    FLASHOPTIM_RETURN_IF_ERROR(release_plans_[i].step_async(flat_.hypers[g], a, in, stream));
    stepped_[i] = 1;
    return status();
  }
  /// Ends a release step: every tensor must have been stepped; the step
  /// count advances (stream-ordered).
  status end_step_async(cudaStream_t stream) {
    if (!releasing_) return status(status_code::invalid_argument, "end_step_async: no release step in progress");
    for (std::size_t i = 0; i < stepped_.size(); ++i)
      if (!stepped_[i])
        return status(status_code::invalid_argument, "end_step_async: tensor %zu ('%.80s') was not stepped", i,
                      names_[i].c_str());
    FLASHOPTIM_RETURN_IF_ERROR(advance_step_async(&control_->next_step, nullptr, stream));
    releasing_ = false;
    return status();
  }
  bool in_release_step() const { return releasing_; }

  void swap(optimizer& o) noexcept {
    using std::swap;
    swap(alloc_, o.alloc_);
    swap(flat_, o.flat_);
    swap(arena_, o.arena_);
    swap(tensors_, o.tensors_);
    swap(names_, o.names_);
    swap(options_, o.options_);
    swap(arena_base_, o.arena_base_);
    swap(arena_blocks_, o.arena_blocks_);
    swap(control_, o.control_);
    swap(control_bytes_, o.control_bytes_);
    swap(lrs_, o.lrs_);
    swap(plans_, o.plans_);
    swap(release_plans_, o.release_plans_);
    swap(pass_, o.pass_);
    swap(pass_config_, o.pass_config_);
    swap(releasing_, o.releasing_);
    swap(release_multiplier_, o.release_multiplier_);
    swap(stepped_, o.stepped_);
    swap(initialized_, o.initialized_);
    swap(max_abs_, o.max_abs_);
    swap(lr_report_, o.lr_report_);
    swap(warned_, o.warned_);
  }

 private:
  /// The arena's allocation unit, so a rebound allocator returns
  /// 256-byte-aligned memory (cudaMalloc's alignment, and layout's).
  struct alignas(256) block {
    unsigned char bytes[256];
  };
  using block_allocator = typename std::allocator_traits<Allocator>::template rebind_alloc<block>;

  status build(std::vector<optim::param_group<Config>>& groups, const optim::optimizer_options& options,
               cudaStream_t stream) {
    FLASHOPTIM_RETURN_IF_ERROR(optim::flatten<Config>(groups, flat_));
    if (flat_.hypers.empty()) return status(status_code::invalid_argument, "optimizer: no parameter groups");
    if (options.lr_check != optim::lr_check_mode::off && options.lr_check != optim::lr_check_mode::report &&
        options.lr_check != optim::lr_check_mode::strict)
      return status(status_code::invalid_argument, "optimizer: lr_check mode %d is not one of optim::lr_check_mode",
                    static_cast<int>(options.lr_check));
    options_ = options;
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    using P = typename Config::param_type;
    for (std::size_t i = 0; i < flat_.specs.size(); ++i) {
      const auto& s = flat_.specs[i];
      if (s.size > 0 && s.grad == nullptr)
        return status(status_code::null_pointer,
                      "tensor %zu ('%.80s'): the device optimizer needs the gradient buffer at init", i, s.name.c_str());
      if (s.init_fp32 != nullptr)
        FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "init_fp32", s.init_fp32,
                                                     static_cast<std::size_t>(s.size) * sizeof(float),
                                                     memory_need::device, dev));
    }
    FLASHOPTIM_RETURN_IF_ERROR(optim::arena_layout<Config>::plan(flat_.specs, arena_));

    // The control block: optimizer_control, then one lr per group.
    const std::size_t lr_offset = (sizeof(optimizer_control) + 255) / 256 * 256;
    const std::size_t control_bytes = lr_offset + flat_.hypers.size() * sizeof(double);
    const std::size_t arena_blocks = static_cast<std::size_t>((arena_.bytes + 255) / 256);
    const std::size_t control_blocks = (control_bytes + 255) / 256;
    try {
      block_allocator a(alloc_);
      if (arena_blocks > 0) {
        arena_base_ = std::allocator_traits<block_allocator>::allocate(a, arena_blocks);
        arena_blocks_ = arena_blocks;
      }
      block* c = std::allocator_traits<block_allocator>::allocate(a, control_blocks);
      control_ = reinterpret_cast<optimizer_control*>(c);
      control_bytes_ = control_blocks * 256;
    } catch (const std::bad_alloc&) {
      return status(status_code::capacity_exceeded, "optimizer: allocating %lld bytes of state on the device failed",
                    static_cast<long long>(arena_.bytes + static_cast<std::int64_t>(control_bytes)));
    } catch (...) {
      return status(status_code::capacity_exceeded, "optimizer: the allocator failed");
    }
    lrs_ = reinterpret_cast<double*>(reinterpret_cast<unsigned char*>(control_) + lr_offset);

    // Views: the trainer's param and grad, the arena's correction and states.
    tensors_.resize(flat_.specs.size());
    names_.resize(flat_.specs.size());
    for (std::size_t i = 0; i < flat_.specs.size(); ++i) {
      const auto& s = flat_.specs[i];
      tensor_type t;
      if (arena_base_ != nullptr) arena_.carve(arena_base_, i, t);
      t.param = static_cast<P*>(s.param);
      t.grad = static_cast<const typename Config::grad_type*>(s.grad);
      t.size = s.size;
      if (s.size == 0) t.param = nullptr, t.grad = nullptr, t.aux = nullptr;
      t.seed = optim::tensor_seed(options.seed, i);
      t.index_base = 0;
      tensors_[i] = t;
      names_[i] = s.name;
    }
    FLASHOPTIM_RETURN_IF_ERROR(build_plans(tensors_, plans_));  // validates the views and their memory

    // Initial values: zero arena (states and padding), then each correction.
    if (arena_base_ != nullptr)
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemsetAsync(arena_base_, 0, arena_blocks_ * sizeof(block), stream), "optimizer: zeroing the arena"));
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const auto& t = tensors_[i];
      if (t.size == 0) continue;
      if (flat_.specs[i].init_fp32 != nullptr)
        FLASHOPTIM_RETURN_IF_ERROR(
            split_async<typename Config::master>(flat_.specs[i].init_fp32, t.size, t.param, t.aux, stream));
      else
        FLASHOPTIM_RETURN_IF_ERROR(resplit_async<typename Config::master>(t.param, t.aux, t.size, stream));
    }
    optimizer_control c0;
    std::vector<double> lrs(flat_.hypers.size());
    for (std::size_t g = 0; g < lrs.size(); ++g) lrs[g] = flat_.hypers[g].lr;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "optimizer: initializing"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMemcpy(control_, &c0, sizeof(c0), cudaMemcpyHostToDevice),
                                                   "optimizer: initializing the control block"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
        cudaMemcpy(lrs_, lrs.data(), lrs.size() * sizeof(double), cudaMemcpyHostToDevice), "optimizer: uploading lr"));
    initialized_ = true;
    if (options_.lr_check != optim::lr_check_mode::off) {
      FLASHOPTIM_RETURN_IF_ERROR(measure_params(stream));
      check_lr();
    }
    return status();
  }

  /// Each tensor's largest |decoded value| (param and correction copied to
  /// the host, one tensor at a time).
  status measure_params(cudaStream_t stream) {
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "lr check: synchronize"));
    std::vector<double> m(tensors_.size(), 0.0);
    std::vector<typename Config::param_type> p;
    std::vector<typename Config::aux_type> a;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const tensor_type& t = tensors_[i];
      if (t.size == 0) continue;
      p.resize(static_cast<std::size_t>(t.size));
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemcpy(p.data(), t.param, p.size() * sizeof(p[0]), cudaMemcpyDeviceToHost), "lr check: params"));
      if constexpr (Config::has_aux) {
        a.resize(static_cast<std::size_t>(t.size));
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpy(a.data(), t.aux, a.size() * sizeof(a[0]), cudaMemcpyDeviceToHost), "lr check: corrections"));
      }
      m[i] = optim::max_abs_param<Config>(p.data(), Config::has_aux ? a.data() : nullptr, t.size);
    }
    max_abs_ = std::move(m);
    return status();
  }

  /// The step launches (one per max_step_groups groups) and the count's
  /// advance, reading the multiplier and skip flag where given.
  status launch_steps(const double* multiplier, const std::int32_t* skip, cudaStream_t stream) const {
    step_args a;
    for (std::size_t c = 0; c < plans_.size(); ++c) {
      const std::size_t first = c * tuning::max_step_groups;
      const int groups = static_cast<int>(std::min<std::size_t>(tuning::max_step_groups, group_count() - first));
      device_inputs in;
      in.lr = lrs_ + first;
      in.step = &control_->next_step;
      in.inv_grad_scale = multiplier;
      in.skip = skip;
      in.error = &control_->error;
      FLASHOPTIM_RETURN_IF_ERROR(plans_[c].step_async(flat_.hypers.data() + first, groups, a, in, stream));
    }
    return advance_step_async(&control_->next_step, skip, stream);
  }

  /// Redoes the lr report from the cached magnitudes; warns once.
  void check_lr() {
    lr_report_ = optim::optimizer_lr_report<Config>(options_.lr_check, tensors_, max_abs_, flat_.group, names_,
                                                    flat_.hypers, warned_);
  }
  status check_strict(const char* who) const { return optim::lr_strict_refusal(options_.lr_check, lr_report_, who); }

  /// One plan per max_step_groups groups; each holds its groups' tensors.
  status build_plans(const std::vector<tensor_type>& tensors, std::vector<step_plan<Config, Policy>>& out) const {
    const std::size_t chunks = (group_count() + tuning::max_step_groups - 1) / tuning::max_step_groups;
    std::vector<step_plan<Config, Policy>> plans(chunks);
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::int32_t first = static_cast<std::int32_t>(c * tuning::max_step_groups);
      const int groups = static_cast<int>(std::min<std::size_t>(tuning::max_step_groups, group_count() - first));
      std::vector<tensor_type> mine;
      std::vector<std::int32_t> local;
      for (std::size_t i = 0; i < tensors.size(); ++i)
        if (flat_.group[i] >= first && flat_.group[i] < first + groups) {
          mine.push_back(tensors[i]);
          local.push_back(flat_.group[i] - first);
        }
      const status s = plans[c].build(mine.data(), mine.size(), local.data(), groups);
      if (!s.ok()) return status(s.code(), "optimizer: groups %d..%d: %s", first, first + groups - 1, s.message());
    }
    out = std::move(plans);
    return status();
  }

  status build_release_plans(const std::vector<tensor_type>& tensors, std::vector<step_plan<Config, Policy>>& out) const {
    std::vector<step_plan<Config, Policy>> plans(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const status s = plans[i].build(&tensors[i], 1);
      if (!s.ok()) return status(s.code(), "optimizer: tensor %zu: %s", i, s.message());
    }
    out = std::move(plans);
    return status();
  }

  status build_pass(const std::vector<tensor_type>& tensors, const grad_pass_config& cfg, grad_pass_plan& out) const {
    std::vector<grad_tensor> grads(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i)
      grads[i] = grad_tensor{tensors[i].grad, dtype_of<typename Config::grad_type>::value, tensors[i].size};
    grad_list list{grads.data(), static_cast<std::int64_t>(grads.size())};
    grad_pass_outputs outs;
    outs.control = &control_->control;
    outs.summary = &control_->summary;
    return out.build(list, cfg, outs);
  }

  status write_lr(std::size_t g, double lr, cudaStream_t stream) {
    kernel::write_value_kernel<double><<<1, 32, 0, stream>>>(lrs_ + g, lr);
    return detail::cuda_status(cudaGetLastError(), "set_lr launch");
  }

  status check_ready(const char* who) const {
    if (!initialized_) return status(status_code::invalid_argument, "%s: the optimizer is not initialized", who);
    return status();
  }
  status check_group(std::size_t g, const char* who) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready(who));
    if (g >= group_count())
      return status(status_code::invalid_argument, "%s: group %zu of %zu", who, g, group_count());
    return status();
  }
  status check_tensor(std::size_t i, const char* who) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready(who));
    if (i >= tensor_count())
      return status(status_code::invalid_argument, "%s: tensor %zu of %zu", who, i, tensor_count());
    return status();
  }

  void release() noexcept {
    block_allocator a(alloc_);
    if (arena_base_ != nullptr) std::allocator_traits<block_allocator>::deallocate(a, arena_base_, arena_blocks_);
    if (control_ != nullptr)
      std::allocator_traits<block_allocator>::deallocate(a, reinterpret_cast<block*>(control_), control_bytes_ / 256);
    arena_base_ = nullptr;
    arena_blocks_ = 0;
    control_ = nullptr;
    control_bytes_ = 0;
    lrs_ = nullptr;
    plans_.clear();
    release_plans_.clear();
    pass_ = grad_pass_plan();
    initialized_ = false;
  }

  Allocator alloc_{};
  optim::flat_params<Config> flat_;
  optim::arena_layout<Config> arena_;
  std::vector<tensor_type> tensors_;
  std::vector<std::string> names_;
  optim::optimizer_options options_{};
  block* arena_base_ = nullptr;
  std::size_t arena_blocks_ = 0;
  optimizer_control* control_ = nullptr;
  std::size_t control_bytes_ = 0;
  double* lrs_ = nullptr;
  std::vector<step_plan<Config, Policy>> plans_;
  std::vector<step_plan<Config, Policy>> release_plans_;
  grad_pass_plan pass_;
  grad_pass_config pass_config_{};
  bool releasing_ = false;
  double release_multiplier_ = 1.0;
  std::vector<unsigned char> stepped_;
  bool initialized_ = false;
  std::vector<double> max_abs_;  ///< each tensor's largest |value| for the lr check
  optim::lr_report lr_report_;
  bool warned_ = false;
};

}  // namespace flashoptim::device

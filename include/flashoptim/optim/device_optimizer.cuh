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
//
// Two things a trainer in a framework needs on top (docs/optimizer.md):
// set_grad(i, ptr, stream) rebinds a gradient with a stream-ordered write
// of the device tables (no rebuild, no synchronization), so a framework
// that hands a fresh gradient buffer to every backward (PyTorch gradient
// release) can step it; and optimizer_options::offload_fraction keeps the
// corrections and states of the leading tensors in pinned host memory,
// stepped on CPU threads while the GPU steps the rest, bit for bit the
// all-GPU result.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "flashoptim/cpu/fp8_param.hpp"
#include "flashoptim/cpu/step.hpp"
#include "flashoptim/device/chunk_team.cuh"
#include "flashoptim/device/fp8_step_plan.cuh"
#include "flashoptim/device/grad_pass.cuh"
#include "flashoptim/device/memory_kind.cuh"
#include "flashoptim/device/state_init.cuh"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/kernel/fp8_param_kernel.cuh"
#include "flashoptim/kernel/init_kernels.cuh"
#include "flashoptim/layout/offload.hpp"
#include "flashoptim/optim/fp8_outputs.hpp"
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
  /// device; a null gradient leaves that tensor unbound until set_grad binds
  /// one, and no whole step runs before). Corrections come from each
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
  /// The tensors' views (the arena's buffers and the trainer's params and
  /// grads; an off-loaded tensor's correction and states are in pinned host
  /// memory, its param and grad the trainer's device buffers).
  const std::vector<tensor_type>& tensors() const { return tensors_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::int32_t>& tensor_group() const { return flat_.group; }
  const std::vector<optim::param_spec>& params() const { return flat_.specs; }
  const optim::optimizer_options& options() const { return options_; }
  /// Launches one step takes (one per tuning::max_step_groups groups).
  std::size_t launches() const { return plans_.size(); }

  /// Memory this optimizer owns, by kind, measured from its allocations
  /// (the arena as laid out, the step tables, the control block), beside
  /// the trainer's parameter and gradient bytes. With off-loaded tensors,
  /// host_arena_bytes is the arena's part in pinned host memory and
  /// host_bytes every pinned byte (that part, the parameters' host copies,
  /// the staging buffers and step scalars); device_bytes() the rest.
  optim::memory_report memory() const {
    optim::memory_report r = arena_.report(flat_.specs);
    std::int64_t tables = static_cast<std::int64_t>(control_bytes_);
    for (const auto& p : plans_) tables += static_cast<std::int64_t>(p.table_bytes());
    for (const auto& p : release_plans_) tables += static_cast<std::int64_t>(p.table_bytes());
    r.table_bytes = tables;
    if (host_ != nullptr) {
      r.host_arena_bytes = static_cast<std::int64_t>(host_arena_bytes());
      r.host_bytes = host_->bytes(host_arena_bytes());
    }
    return r;
  }
  /// Tensors [0, host_tensor_count()) are off-loaded (options().offload_fraction):
  /// their views' corrections and states (tensors()) are pinned host memory.
  std::size_t host_tensor_count() const { return host_count_; }
  /// The CPU steps host copies of the off-loaded parameters (and copies
  /// them back to the trainer's buffers each step); after the trainer
  /// changed those buffers itself (loaded weights), copy them in again.
  /// Set-up: synchronizes `stream`. Nothing to do without off-load.
  status refresh_host_params(cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("refresh_host_params"));
    if (host_ == nullptr) return status();
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "refresh_host_params: synchronize"));
    FLASHOPTIM_RETURN_IF_ERROR(host_idle());
    for (std::size_t i = 0; i < host_count_; ++i)
      if (tensors_[i].size > 0)
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpy(host_->param[i], tensors_[i].param,
                       static_cast<std::size_t>(tensors_[i].size) * sizeof(typename Config::param_type),
                       cudaMemcpyDeviceToHost),
            "refresh_host_params"));
    return status();
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

  /// Points tensor i at another gradient buffer (its size elements of
  /// Config::grad_type, device memory of the current device) without
  /// rebuilding anything: the new address is written into the step table,
  /// the release table and the gradient pass's table by one-thread kernels
  /// on `stream` (no allocation, no host synchronization, no host-to-device
  /// copy). Work queued on `stream` before the call reads the old buffer,
  /// work after it the new one; allowed between begin_step and
  /// step_tensor_async, so a framework that hands a fresh gradient buffer to
  /// every backward rebinds each one as its hook fires. Legal while `stream`
  /// is being captured: the graph then replays the write of this pointer
  /// (capture it where the pointer does not change, or rebind outside the
  /// graph). Checks alignment, the memory kind and that the buffer
  /// overlaps no buffer the step writes (parameters, the arena, the control
  /// block); on error nothing is written.
  ///
  /// Null unbinds tensor i's gradient (a framework that frees each
  /// gradient right after its step drops its reference): nothing is
  /// written to the device, and every call that would read the gradient
  /// (step_async, step_tensor_async(i), set_grad_pass) refuses until a
  /// buffer is bound again. A tensor may also start unbound: a null
  /// param_spec::grad at init (a framework whose gradients do not exist yet).
  status set_grad(std::size_t i, const void* grad, cudaStream_t stream) {
    FLASHOPTIM_RETURN_IF_ERROR(check_tensor(i, "set_grad"));
    using G = typename Config::grad_type;
    const tensor_type& t = tensors_[i];
    if (t.size == 0) {  // nothing reads it (the views keep null)
      flat_.specs[i].grad = grad;
      return status();
    }
    const auto* g = static_cast<const G*>(grad);
    if (g == nullptr) {  // unbound: the tables keep the old address, which no step reads while any tensor is unbound
      if (tensors_[i].grad != nullptr) ++unbound_;
      tensors_[i].grad = nullptr;
      flat_.specs[i].grad = nullptr;
      return status();
    }
    if (reinterpret_cast<std::uintptr_t>(g) % alignof(G) != 0)
      return status(status_code::misaligned, "set_grad: tensor %zu ('%.80s'): gradient at %p is not %zu-byte aligned",
                    i, names_[i].c_str(), grad, alignof(G));
    const std::size_t bytes = static_cast<std::size_t>(t.size) * sizeof(G);
    // Overlap first: a span over a buffer the step writes is refused as
    // such even where it also runs past that allocation's end.
    FLASHOPTIM_RETURN_IF_ERROR(check_grad_aliasing(i, grad, bytes));
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "grad", grad, bytes, memory_need::device, dev));
    if (i >= host_count_) {
      const plan_slot& at = slots_[i];
      FLASHOPTIM_RETURN_IF_ERROR(plans_[at.plan].rebind_grad_async(at.index, g, stream));
      if (!release_plans_.empty() && release_plans_[i].built())
        FLASHOPTIM_RETURN_IF_ERROR(release_plans_[i].rebind_grad_async(0, g, stream));
    }
    if (pass_.built()) FLASHOPTIM_RETURN_IF_ERROR(pass_.rebind_async(static_cast<std::int64_t>(i), grad, stream));
    if (tensors_[i].grad == nullptr) --unbound_;
    tensors_[i].grad = g;  // an off-loaded tensor's gradient is copied from this address at each step
    flat_.specs[i].grad = grad;
    return status();
  }
  /// The same, set-up style (the signature of earlier versions): the writes
  /// go to the default stream, which is then synchronized, so any stream's
  /// later work sees the new buffer. Not for use while a stream is captured.
  status set_grad(std::size_t i, const void* grad) {
    FLASHOPTIM_RETURN_IF_ERROR(set_grad(i, grad, nullptr));
    return detail::cuda_status(cudaStreamSynchronize(nullptr), "set_grad: synchronize");
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
    FLASHOPTIM_RETURN_IF_ERROR(host_idle());
    // The arena as laid out: the off-loaded tensors' part (pinned host
    // memory) first, then the device part; the same bytes either way.
    h.arena.resize(static_cast<std::size_t>(arena_.bytes));
    const std::size_t hb = host_arena_bytes();
    if (hb > 0) std::memcpy(h.arena.data(), host_->arena, hb);
    if (h.arena.size() > hb)
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemcpy(h.arena.data() + hb, arena_base_, h.arena.size() - hb, cudaMemcpyDeviceToHost),
          "copy_to_host: arena"));
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
    if (in.tensors.size() != tensors_.size() || in.arena.size() != static_cast<std::size_t>(arena_.bytes))
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
    FLASHOPTIM_RETURN_IF_ERROR(host_idle());
    const std::size_t hb = host_arena_bytes();
    if (hb > 0) std::memcpy(host_->arena, in.arena.data(), hb);
    if (in.arena.size() > hb)
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemcpy(arena_base_, in.arena.data() + hb, in.arena.size() - hb, cudaMemcpyHostToDevice),
          "copy_from_host: arena"));
    for (std::size_t i = 0; i < host_count_; ++i)  // the off-loaded parameters' host copies: what the CPU steps
      if (tensors_[i].size > 0)
        std::memcpy(host_->param[i], in.tensors[i].param,
                    static_cast<std::size_t>(tensors_[i].size) * sizeof(typename Config::param_type));
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
    if (fp8_ != nullptr) {  // the master is the copy's now: so is the FP8 copy made from it
      FLASHOPTIM_RETURN_IF_ERROR(fp8_->write_async(stream));
      return detail::cuda_status(cudaStreamSynchronize(stream), "copy_from_host: FP8 copy");
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
    FLASHOPTIM_RETURN_IF_ERROR(check_bound("set_grad_pass"));
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
  ///
  /// With off-loaded tensors (host_tensor_count() > 0) the call is not
  /// asynchronous and not capturable: it queues the GPU part, steps the
  /// off-loaded part on CPU threads as its gradients arrive (reading the
  /// step count, lrs and the pass's multiplier and skip flag from the
  /// device, after the pass), and returns when they are done; `stream`
  /// waits for their parameters' copy back.
  status step_async(cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("step_async"));
    if (releasing_)
      return status(status_code::invalid_argument,
                    "step_async: a gradient-release step is in progress (finish it with end_step_async)");
    FLASHOPTIM_RETURN_IF_ERROR(check_strict("step_async"));
    FLASHOPTIM_RETURN_IF_ERROR(check_bound("step_async"));
    FLASHOPTIM_RETURN_IF_ERROR(check_not_capturing_offload(stream, "step_async"));
    if (pass_.built()) FLASHOPTIM_RETURN_IF_ERROR(pass_.run_async(stream));
    const grad_control* ctl = pass_.built() ? &control_->control : nullptr;
    if (host_) FLASHOPTIM_RETURN_IF_ERROR(host_enqueue(0, host_->chunks.size(), ctl, stream));
    if (!pass_.built()) FLASHOPTIM_RETURN_IF_ERROR(launch_steps(nullptr, nullptr, stream));
    else FLASHOPTIM_RETURN_IF_ERROR(launch_steps(&control_->control.multiplier, &control_->control.skip, stream));
    if (host_) FLASHOPTIM_RETURN_IF_ERROR(host_run(0, host_->chunks.size(), ctl != nullptr, 1.0, true, stream));
    return write_unfused_fp8_async(stream);
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
    FLASHOPTIM_RETURN_IF_ERROR(check_bound("step_async"));
    FLASHOPTIM_RETURN_IF_ERROR(check_not_capturing_offload(stream, "step_async"));
    if (host_) FLASHOPTIM_RETURN_IF_ERROR(host_enqueue(0, host_->chunks.size(), shared, stream));
    FLASHOPTIM_RETURN_IF_ERROR(launch_steps(&shared->multiplier, &shared->skip, stream));
    if (host_) FLASHOPTIM_RETURN_IF_ERROR(host_run(0, host_->chunks.size(), true, 1.0, true, stream));
    return write_unfused_fp8_async(stream);
  }

  // ---- Gradient release ------------------------------------------------

  /// Builds a one-tensor step table per tensor, so tensors can be stepped
  /// one at a time as their gradients become ready (set-up: synchronous).
  /// An off-loaded tensor needs no table: step_tensor_async steps it on the
  /// CPU (and returns when it is done).
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
    // the off-loaded tensors' host copies are rewritten by this step's CPU
    // part: the last step's copies of them back must be done (host_run)
    if (host_) FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(host_->h2d),
                                                               "begin_step: the last parameter copies"));
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
    if (tensors_[i].size > 0 && tensors_[i].grad == nullptr)
      return status(status_code::null_pointer, "step_tensor_async: tensor %zu ('%.80s') has no gradient (set_grad)", i,
                    names_[i].c_str());
    const std::size_t g = static_cast<std::size_t>(flat_.group[i]);
    step_args a;
    a.inv_grad_scale = release_multiplier_;
    device_inputs in;
    in.lr = lrs_ + g;
    in.step = &control_->next_step;
    in.error = &control_->error;
    if (i < host_count_) {  // off-loaded: the CPU steps it now, with the device's step count and lr
      FLASHOPTIM_RETURN_IF_ERROR(check_not_capturing_offload(stream, "step_tensor_async"));
      const std::size_t b = host_->tensor_chunk[i], e = host_->tensor_chunk[i + 1];
      FLASHOPTIM_RETURN_IF_ERROR(host_enqueue(b, e, nullptr, stream));
      FLASHOPTIM_RETURN_IF_ERROR(host_run(b, e, false, release_multiplier_, false, stream));
    } else {
      FLASHOPTIM_RETURN_IF_ERROR(release_plans_[i].step_async(flat_.hypers[g], a, in, stream));
    }
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
    return write_fp8_async(stream);
  }
  bool in_release_step() const { return releasing_; }

  // ---- FP8 copies (docs/fp8-params.md, "In the owning optimizers") -----

  /// From now on every step (step_async, either form, and end_step_async)
  /// writes the FP8 copy of every tensor whose output has buffers, from the
  /// master the step left: the bytes of cpu::fp8_param_write on that master
  /// (a skipped step leaves the master and so the copy). step_async writes
  /// the 1 x 128 copies whose rows are whole blocks (1-D tensors, widths a
  /// multiple of 128) in the step's own launch (the fused step,
  /// device/fp8_step_plan.cuh: no second read of the master) and the others
  /// (128 x 128 blocks, other widths) in one launch after it
  /// (kernel::fp8_param_plan); end_step_async writes them all after a
  /// release step. The policy's tiles must lie in one block (4 to 128
  /// elements per thread, dividing 128) for the fused launch; with any
  /// other, every copy takes the second launch. `outputs`:
  /// one per tensor (tensors() order; null buffers: no copy), device
  /// memory. An off-loaded tensor's copy (offload_fraction: its correction
  /// lives in host memory) is written by the CPU from the master it keeps,
  /// into pinned memory, and copied to `outputs` after the step (the bytes
  /// of the same recipe). The copy is written once now. Checks everything
  /// first (optim::build_fp8_refs; the buffers' memory kind); on error
  /// nothing is written and the previous outputs stay. Set-up:
  /// allocates the launch table and synchronizes `stream`. Refused inside a
  /// release step. A later init() drops them.
  template <class F8>
  status set_fp8_outputs(const std::vector<optim::fp8_output<F8>>& outputs, const fp8_param_options& options = {},
                         cudaStream_t stream = nullptr) {
    FLASHOPTIM_RETURN_IF_ERROR(check_ready("set_fp8_outputs"));
    if (releasing_) return status(status_code::invalid_argument, "set_fp8_outputs: a release step is in progress");
    std::vector<fp8_param_ref<typename Config::master, F8>> refs;
    std::vector<std::size_t> index;
    optim::fp8_form form;
    const status checked = optim::build_fp8_refs<Config, F8>(tensors_, flat_.specs, names_, outputs.data(),
                                                             outputs.size(), options.pow2_scales, refs, index, form);
    FLASHOPTIM_RETURN_IF_ERROR(checked);
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    for (std::size_t k = 0; k < refs.size(); ++k) {
      const std::size_t i = index[k];
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "fp8 values", refs[k].values,
                                                   static_cast<std::size_t>(refs[k].shape.size), memory_need::device,
                                                   dev));
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(
          i, "fp8 scales", refs[k].scales, static_cast<std::size_t>(refs[k].shape.scale_count()) * sizeof(float),
          memory_need::device, dev));
    }
    // Off-loaded tensors (their correction is in host memory) are written by
    // the CPU from the master it keeps, then copied; the rest on the device.
    std::vector<fp8_param_ref<typename Config::master, F8>> on_device, on_host;
    std::vector<std::size_t> device_index;
    for (std::size_t k = 0; k < refs.size(); ++k) {
      if (index[k] < host_count_) {
        on_host.push_back(refs[k]);
      } else {
        on_device.push_back(refs[k]);
        device_index.push_back(index[k]);
      }
    }
    auto w = std::make_unique<fp8_writer_of<F8>>();
    w->options = options;
    FLASHOPTIM_RETURN_IF_ERROR(w->plan.build(on_device.data(), on_device.size()));
    FLASHOPTIM_RETURN_IF_ERROR(build_fused_fp8(on_device, device_index, dev, *w));
    FLASHOPTIM_RETURN_IF_ERROR(build_host_fp8(refs, index, *w));
    FLASHOPTIM_RETURN_IF_ERROR(w->write_async(stream));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(stream), "set_fp8_outputs: synchronize"));
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
  /// The form written (empty without outputs); device::save records it.
  const optim::fp8_form& fp8_form() const { return fp8_form_; }
  /// Writes the FP8 copies from the current master now, stream-ordered
  /// (the steps and copy_from_host do it themselves). No outputs: nothing.
  status write_fp8_async(cudaStream_t stream) const { return fp8_ != nullptr ? fp8_->write_async(stream) : status(); }
  /// How many tensors' FP8 copies step_async writes in its own launches
  /// (the rest take the launch after it). 0 without outputs.
  std::size_t fused_fp8_count() const { return fp8_ != nullptr ? fp8_->fused_count() : 0; }

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
    swap(host_count_, o.host_count_);
    swap(host_, o.host_);
    swap(slots_, o.slots_);
    swap(written_, o.written_);
    swap(unbound_, o.unbound_);
    swap(fp8_, o.fp8_);
    swap(fp8_form_, o.fp8_form_);
  }

 private:
  /// The fused FP8 write needs a step tile inside one 1 x 128 block.
  static constexpr bool fp8_fusable_policy =
      fp8_block_cols % Policy::elements_per_thread == 0 && 32 * Policy::elements_per_thread >= fp8_block_cols;

  /// The FP8 write, with the format erased (set_fp8_outputs<F8> makes one).
  struct fp8_writer {
    virtual ~fp8_writer() = default;
    /// Every copy (after a release step, a load, set_fp8_outputs).
    virtual status write_async(cudaStream_t stream) const = 0;
    /// The copies step_async's launches do not write.
    virtual status write_unfused_async(cudaStream_t stream) const = 0;
    /// Whether plans_[c]'s launch is the fused one, and that launch.
    virtual bool fused(std::size_t c) const = 0;
    virtual status fused_step_async(std::size_t c, const hyper_type* h, int groups, const step_args& a,
                                    const device_inputs& in, cudaStream_t stream) const = 0;
    virtual std::size_t fused_count() const = 0;
  };
  template <class F8>
  struct fp8_writer_of final : fp8_writer {
    using entry = kernel::fp8_out_entry<F8>;
    kernel::fp8_param_plan<typename Config::master, F8> plan;      ///< every copy
    kernel::fp8_param_plan<typename Config::master, F8> unfused;  ///< the copies no fused launch writes
    std::size_t unfused_count = 0, fused_tensors = 0;
    fp8_param_options options;
    /// Per plans_ chunk: the fused launch's grid over that plan's table and
    /// its output table (null: the chunk steps plainly).
    std::vector<step_plan_ref<Config, Policy>> refs;
    std::vector<entry*> entries;
    int device = -1;
    fp8_writer_of() = default;
    fp8_writer_of(const fp8_writer_of&) = delete;
    fp8_writer_of& operator=(const fp8_writer_of&) = delete;
    ~fp8_writer_of() override {
      int prev = 0;
      cudaGetDevice(&prev);
      if (prev != device && device >= 0) cudaSetDevice(device);
      for (entry* e : entries)
        if (e != nullptr) cudaFree(e);
      if (copied != nullptr) {
        cudaEventSynchronize(copied);  // copies out of the staging still queued
        cudaEventDestroy(copied);
      }
      if (pinned != nullptr) cudaFreeHost(pinned);
      if (prev != device && device >= 0) cudaSetDevice(prev);
    }
    /// Off-loaded tensors: refs over the host master and pinned staging,
    /// where each copy goes on the device, and the event after the last
    /// copies out of the staging (the next write waits for it).
    std::vector<fp8_param_ref<typename Config::master, F8>> host_refs;
    std::vector<F8*> host_values_to;
    std::vector<float*> host_scales_to;
    void* pinned = nullptr;
    cudaEvent_t copied = nullptr;
    int host_threads = 0;
    status write_async(cudaStream_t stream) const override {
      FLASHOPTIM_RETURN_IF_ERROR(plan.write_async(options, stream));
      return write_host(stream);
    }
    status write_unfused_async(cudaStream_t stream) const override {
      if (unfused_count > 0) FLASHOPTIM_RETURN_IF_ERROR((fused_tensors == 0 ? plan : unfused).write_async(options, stream));
      return write_host(stream);
    }
    /// The off-loaded tensors' copies: written on CPU threads (the master
    /// the CPU step left is current when the step returns), then copied to
    /// the device on `stream`.
    status write_host(cudaStream_t stream) const {
      if (host_refs.empty()) return status();
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaEventSynchronize(copied), "FP8 copies: the last copies"));
      cpu::detail::fp8_param_write_checked(host_refs.data(), host_refs.size(), options, host_threads);
      for (std::size_t k = 0; k < host_refs.size(); ++k) {
        const fp8_param_ref<typename Config::master, F8>& r = host_refs[k];
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpyAsync(host_values_to[k], r.values, static_cast<std::size_t>(r.shape.size), cudaMemcpyHostToDevice,
                            stream),
            "FP8 copies: values to the device"));
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpyAsync(host_scales_to[k], r.scales, static_cast<std::size_t>(r.shape.scale_count()) * sizeof(float),
                            cudaMemcpyHostToDevice, stream),
            "FP8 copies: scales to the device"));
      }
      return detail::cuda_status(cudaEventRecord(copied, stream), "FP8 copies: event record");
    }
    bool fused(std::size_t c) const override { return c < entries.size() && entries[c] != nullptr; }
    status fused_step_async(std::size_t c, const hyper_type* h, int groups, const step_args& a,
                            const device_inputs& in, cudaStream_t stream) const override {
      if constexpr (fp8_fusable_policy)
        return fp8_fused_step_async<Config, Policy, F8>(refs[c], entries[c], h, groups, a, in, options, stream);
      else
        return status(status_code::invalid_argument, "the step policy has no fused FP8 write");
    }
    std::size_t fused_count() const override { return fused_tensors; }
  };

  /// The fused half of set_fp8_outputs: each plans_ chunk with a 1 x 128
  /// copy whose rows are whole blocks gets an output table over its own
  /// step table (rebinding a gradient there serves both launches) and the
  /// fused kernel's grid; the copies left (128 x 128, other widths) form
  /// w.unfused. refs / index: build_fp8_refs' list (checked).
  template <class F8>
  status build_fused_fp8(const std::vector<fp8_param_ref<typename Config::master, F8>>& refs,
                         const std::vector<std::size_t>& index, int dev, fp8_writer_of<F8>& w) const {
    w.device = dev;
    w.unfused_count = refs.size();
    if constexpr (!fp8_fusable_policy) {
      return status();
    } else {
      using entry = kernel::fp8_out_entry<F8>;
      std::vector<std::vector<entry>> tables(plans_.size());
      for (std::size_t c = 0; c < plans_.size(); ++c) tables[c].resize(plans_[c].ref().table().count);
      std::vector<fp8_param_ref<typename Config::master, F8>> rest;
      for (std::size_t k = 0; k < refs.size(); ++k) {
        const fp8_block_shape& sh = refs[k].shape;
        if (sh.block_rows != 1 || sh.cols % fp8_block_cols != 0 || sh.size == 0) {
          rest.push_back(refs[k]);
          continue;
        }
        const plan_slot& at = slots_[index[k]];
        entry& e = tables[at.plan][at.index];
        e.values = refs[k].values;
        e.scales = refs[k].scales;
        e.vector_ok = kernel::tile_access<F8, Policy::elements_per_thread>::vector_aligned(refs[k].values) ? 1u : 0u;
        ++w.fused_tensors;
      }
      if (w.fused_tensors == 0) return status();
      int sms = 0;
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                                                     "cudaDeviceGetAttribute"));
      w.refs.resize(plans_.size());
      w.entries.assign(plans_.size(), nullptr);
      for (std::size_t c = 0; c < plans_.size(); ++c) {
        const bool any = std::any_of(tables[c].begin(), tables[c].end(), [](const entry& e) { return e.values != nullptr; });
        if (!any) continue;
        std::int64_t grid = 0;
        FLASHOPTIM_RETURN_IF_ERROR((detail::step_grid<Config, Policy, F8>(plans_[c].ref().units(), sms, grid)));
        w.refs[c] = plans_[c].ref().with_grid(static_cast<int>(grid));
        const std::size_t bytes = std::max<std::size_t>(1, tables[c].size()) * sizeof(entry);
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMalloc(&w.entries[c], bytes), "set_fp8_outputs: output table"));
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpy(w.entries[c], tables[c].data(), tables[c].size() * sizeof(entry), cudaMemcpyHostToDevice),
            "set_fp8_outputs: output table upload"));
      }
      w.unfused_count = rest.size();
      if (!rest.empty()) FLASHOPTIM_RETURN_IF_ERROR(w.unfused.build(rest.data(), rest.size()));
      return status();
    }
  }
  /// The off-loaded half of set_fp8_outputs: each off-loaded tensor's copy
  /// is written by the CPU from the host master (its parameter's host copy,
  /// its correction in the host arena) into one pinned staging buffer, from
  /// which it is copied to its output. refs / index: build_fp8_refs' list.
  template <class F8>
  status build_host_fp8(const std::vector<fp8_param_ref<typename Config::master, F8>>& refs,
                        const std::vector<std::size_t>& index, fp8_writer_of<F8>& w) const {
    std::size_t bytes = 0;
    std::vector<std::size_t> at;
    for (std::size_t k = 0; k < refs.size(); ++k) {
      if (index[k] >= host_count_) continue;
      at.push_back(bytes);
      bytes += (static_cast<std::size_t>(refs[k].shape.size) + 15) / 16 * 16;
      bytes += (static_cast<std::size_t>(refs[k].shape.scale_count()) * sizeof(float) + 15) / 16 * 16;
    }
    if (at.empty()) return status();
    FLASHOPTIM_RETURN_IF_ERROR(
        detail::cuda_status(cudaMallocHost(&w.pinned, std::max<std::size_t>(bytes, 16)), "set_fp8_outputs: pinned staging"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaEventCreateWithFlags(&w.copied, cudaEventDisableTiming),
                                                   "set_fp8_outputs: event"));
    // recorded once, so that the first write finds it complete
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaEventRecord(w.copied, nullptr), "set_fp8_outputs: event record"));
    w.host_threads = options_.offload_threads;
    std::size_t n = 0;
    for (std::size_t k = 0; k < refs.size(); ++k) {
      const std::size_t i = index[k];
      if (i >= host_count_) continue;
      auto* base = static_cast<unsigned char*>(w.pinned) + at[n++];
      fp8_param_ref<typename Config::master, F8> r = refs[k];
      w.host_values_to.push_back(r.values);
      w.host_scales_to.push_back(r.scales);
      r.master = host_->param[i];  // the aux already points into the host arena
      r.values = reinterpret_cast<F8*>(base);
      r.scales = reinterpret_cast<float*>(base + (static_cast<std::size_t>(r.shape.size) + 15) / 16 * 16);
      w.host_refs.push_back(r);
    }
    return status();
  }
  /// What step_async writes after its launches: the copies they do not.
  status write_unfused_fp8_async(cudaStream_t stream) const {
    return fp8_ != nullptr ? fp8_->write_unfused_async(stream) : status();
  }

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
    FLASHOPTIM_RETURN_IF_ERROR(check_offload_options(options));
    options_ = options;
    {  // Megatron's rule over the flattened list: tensors [0, host_count_) are off-loaded
      std::vector<std::int64_t> sizes(flat_.specs.size());
      for (std::size_t i = 0; i < sizes.size(); ++i) sizes[i] = flat_.specs[i].size;
      host_count_ = options.offload_fraction > 0.0 ? layout::offload_count(sizes.data(), sizes.size(),
                                                                             options.offload_fraction)
                                                   : 0;
    }
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    using P = typename Config::param_type;
    std::size_t unbound = 0;  // a tensor may start without a gradient (bound later by set_grad)
    for (std::size_t i = 0; i < flat_.specs.size(); ++i) {
      const auto& s = flat_.specs[i];
      if (s.size > 0 && s.grad == nullptr) ++unbound;
      if (s.init_fp32 != nullptr)
        FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "init_fp32", s.init_fp32,
                                                     static_cast<std::size_t>(s.size) * sizeof(float),
                                                     memory_need::device, dev));
    }
    FLASHOPTIM_RETURN_IF_ERROR(optim::arena_layout<Config>::plan(flat_.specs, arena_));

    // The control block: optimizer_control, then one lr per group.
    const std::size_t lr_offset = (sizeof(optimizer_control) + 255) / 256 * 256;
    const std::size_t control_bytes = lr_offset + flat_.hypers.size() * sizeof(double);
    // The arena's off-loaded part [0, host_arena_bytes()) is pinned host
    // memory, the rest device memory (offsets and pieces are 256-byte multiples).
    const std::size_t arena_blocks = static_cast<std::size_t>((arena_.bytes + 255) / 256) - host_arena_bytes() / 256;
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
    if (host_count_ > 0) FLASHOPTIM_RETURN_IF_ERROR(allocate_host_part());

    // Views: the trainer's param and grad, the arena's correction and states.
    tensors_.resize(flat_.specs.size());
    names_.resize(flat_.specs.size());
    for (std::size_t i = 0; i < flat_.specs.size(); ++i) {
      const auto& s = flat_.specs[i];
      tensor_type t;
      carve_tensor(i, t);
      t.param = static_cast<P*>(s.param);
      t.grad = static_cast<const typename Config::grad_type*>(s.grad);
      t.size = s.size;
      if (s.size == 0) t.param = nullptr, t.grad = nullptr, t.aux = nullptr;
      t.seed = optim::tensor_seed(options.seed, i);
      t.index_base = 0;
      tensors_[i] = t;
      names_[i] = s.name;
    }
    FLASHOPTIM_RETURN_IF_ERROR(build_plans(tensors_, plans_));  // validates the GPU part's views and their memory
    FLASHOPTIM_RETURN_IF_ERROR(check_host_part());               // the off-loaded part's
    // Each plan checked its own tensors, check_host_part the off-loaded
    // views with their host parameter copies: buffers of two plans (more
    // than max_step_groups groups), or a device parameter of an off-loaded
    // tensor and one of a GPU tensor, may still overlap. The whole list
    // once, without gradients (index_written needs disjoint spans)...
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(tensors_.data(), tensors_.size(), /*with_grad=*/false));
    index_slots();
    index_written();
    unbound_ = unbound;
    {
      // ...and every bound gradient against every written buffer
      // (set_grad's check): the plans checked one only against its own
      // tensor's buffers with one unbound, and an off-loaded tensor's not at all
      for (std::size_t i = 0; i < tensors_.size(); ++i)
        if (tensors_[i].size > 0 && tensors_[i].grad != nullptr)
          FLASHOPTIM_RETURN_IF_ERROR(check_grad_aliasing(
              i, tensors_[i].grad, static_cast<std::size_t>(tensors_[i].size) * sizeof(typename Config::grad_type)));
    }

    // Initial values: zero arena (states and padding), then each correction.
    if (arena_base_ != nullptr)
      FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
          cudaMemsetAsync(arena_base_, 0, arena_blocks_ * sizeof(block), stream), "optimizer: zeroing the arena"));
    if (host_count_ > 0) std::memset(host_->arena, 0, host_arena_bytes());
    FLASHOPTIM_RETURN_IF_ERROR(init_host_corrections(stream));
    for (std::size_t i = host_count_; i < tensors_.size(); ++i) {
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
    for (std::size_t i = 0; i < host_count_; ++i)  // the CPU steps host copies of the off-loaded parameters
      if (tensors_[i].size > 0)
        FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
            cudaMemcpy(host_->param[i], tensors_[i].param,
                       static_cast<std::size_t>(tensors_[i].size) * sizeof(P), cudaMemcpyDeviceToHost),
            "optimizer: the off-loaded parameters' host copies"));
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

  // ---- The off-loaded part ---------------------------------------------

  struct host_chunk {
    std::size_t tensor;
    std::int64_t begin;
    std::int64_t count;
  };
  /// The device scalars a step of the off-loaded part reads, copied to
  /// pinned memory on the step's stream (the lrs follow, at lr_offset).
  struct host_scalars {
    std::int64_t next_step;
    grad_control control;
  };
  static constexpr std::size_t host_lr_offset = 256;
  static_assert(sizeof(host_scalars) <= host_lr_offset, "the step scalars overlap the lrs");
  /// Pinned memory, streams and events of the off-loaded part; held by
  /// pointer, so the views into it survive a move of the optimizer.
  struct host_part {
    unsigned char* arena = nullptr;  ///< the arena's first host_arena_bytes() bytes
    unsigned char* params = nullptr; ///< the off-loaded parameters' host copies, 256-byte pieces
    std::size_t param_bytes = 0;
    unsigned char* scalars = nullptr;
    std::size_t scalar_bytes = 0;
    std::vector<typename Config::param_type*> param;  ///< tensor i's host copy
    std::vector<host_chunk> chunks;                   ///< in tensor order, whole groups of 32
    std::vector<std::size_t> tensor_chunk;            ///< tensor i's chunks: [tensor_chunk[i], tensor_chunk[i + 1])
    std::vector<void*> staging;                       ///< pinned gradient buffers
    std::size_t staging_bytes = 0;                    ///< each
    std::vector<cudaEvent_t> copied_in;
    cudaStream_t d2h = nullptr, h2d = nullptr;
    cudaEvent_t ready = nullptr, copied_out = nullptr;
    cpu::step_options cpu{};
    detail::chunk_team_state team;  ///< the chunks' progress during a step (device/chunk_team.cuh)
    int device = 0;                 ///< where the copies run

    host_scalars* values() const { return reinterpret_cast<host_scalars*>(scalars); }
    const double* lrs() const { return reinterpret_cast<const double*>(scalars + host_lr_offset); }
    std::int64_t bytes(std::size_t arena_bytes) const {
      return static_cast<std::int64_t>(arena_bytes + param_bytes + scalar_bytes + staging.size() * staging_bytes);
    }
    ~host_part() {
      for (void* p : staging) cudaFreeHost(p);
      for (cudaEvent_t e : copied_in) cudaEventDestroy(e);
      if (ready) cudaEventDestroy(ready);
      if (copied_out) cudaEventDestroy(copied_out);
      if (d2h) cudaStreamDestroy(d2h);
      if (h2d) cudaStreamDestroy(h2d);
      if (arena) cudaFreeHost(arena);
      if (params) cudaFreeHost(params);
      if (scalars) cudaFreeHost(scalars);
    }
  };

  /// Bytes of the arena that live in pinned host memory: the off-loaded
  /// tensors come first in the layout, so this is where the next one starts.
  std::size_t host_arena_bytes() const {
    if (host_count_ == 0) return 0;
    return static_cast<std::size_t>(host_count_ < arena_.offset.size() ? arena_.offset[host_count_] : arena_.bytes);
  }

  /// Tensor i's correction and state views, in the host or the device part.
  void carve_tensor(std::size_t i, tensor_type& t) const {
    if (i < host_count_) {
      arena_.carve(host_->arena, i, t);
      return;
    }
    if (arena_base_ == nullptr) return;
    const std::size_t at = static_cast<std::size_t>(arena_.offset[i]) - host_arena_bytes();
    arena_.layouts[i].carve(reinterpret_cast<unsigned char*>(arena_base_) + at, t);
  }

  static status check_offload_options(const optim::optimizer_options& o) {
    FLASHOPTIM_RETURN_IF_ERROR(layout::check_offload_fraction(o.offload_fraction));
    if (o.offload_fraction == 0.0) return status();
    if (o.offload_chunk_elements <= 0 || o.offload_chunk_elements % 32 != 0)
      return status(status_code::invalid_argument,
                    "optimizer: offload_chunk_elements = %" PRId64 " must be a positive multiple of 32",
                    o.offload_chunk_elements);
    if (o.offload_staging_buffers < 1)
      return status(status_code::invalid_argument, "optimizer: offload_staging_buffers = %d must be at least 1",
                    o.offload_staging_buffers);
    cpu::step_options c;
    c.threads = o.offload_threads;
    const status s = cpu::step<Config>(hyper_type{}, step_args{}, nullptr, 0, c);  // checks the CPU options only
    if (!s.ok()) return status(s.code(), "optimizer: offload_threads: %s", s.message());
    return status();
  }

  /// Pinned memory, streams and events for tensors [0, host_count_).
  status allocate_host_part() {
    using P = typename Config::param_type;
    auto h = std::make_unique<host_part>();
    h->cpu.threads = options_.offload_threads;
    auto pinned = [](std::size_t bytes, unsigned char*& out, const char* what) {
      void* p = nullptr;
      if (cudaHostAlloc(&p, bytes < 1 ? 1 : bytes, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return status(status_code::capacity_exceeded, "optimizer: allocating %zu bytes of pinned host memory (%s) failed",
                      bytes, what);
      }
      out = static_cast<unsigned char*>(p);
      return status();
    };
    FLASHOPTIM_RETURN_IF_ERROR(pinned(host_arena_bytes(), h->arena, "off-loaded states"));
    std::vector<std::size_t> at(host_count_);
    for (std::size_t i = 0; i < host_count_; ++i) {
      at[i] = h->param_bytes;
      h->param_bytes += (static_cast<std::size_t>(flat_.specs[i].size) * sizeof(P) + 255) / 256 * 256;
    }
    FLASHOPTIM_RETURN_IF_ERROR(pinned(h->param_bytes, h->params, "off-loaded parameters' copies"));
    h->param.resize(host_count_);
    for (std::size_t i = 0; i < host_count_; ++i)
      h->param[i] = flat_.specs[i].size > 0 ? reinterpret_cast<P*>(h->params + at[i]) : nullptr;
    h->scalar_bytes = host_lr_offset + flat_.hypers.size() * sizeof(double);
    FLASHOPTIM_RETURN_IF_ERROR(pinned(h->scalar_bytes, h->scalars, "step scalars"));
    h->tensor_chunk.push_back(0);
    for (std::size_t i = 0; i < host_count_; ++i) {
      for (std::int64_t b = 0; b < flat_.specs[i].size; b += options_.offload_chunk_elements)
        h->chunks.push_back({i, b, std::min<std::int64_t>(options_.offload_chunk_elements, flat_.specs[i].size - b)});
      h->tensor_chunk.push_back(h->chunks.size());
    }
    h->team.resize(h->chunks.size());
    auto cuda = [](cudaError_t e, const char* what) { return detail::cuda_status(e, what); };
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaGetDevice(&h->device), "cudaGetDevice"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaStreamCreateWithFlags(&h->d2h, cudaStreamNonBlocking), "off-load stream"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaStreamCreateWithFlags(&h->h2d, cudaStreamNonBlocking), "off-load stream"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaEventCreateWithFlags(&h->ready, cudaEventDisableTiming), "off-load event"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaEventCreateWithFlags(&h->copied_out, cudaEventDisableTiming), "off-load event"));
    if (!h->chunks.empty()) {
      // Each buffer holds the largest chunk made, not offload_chunk_elements:
      // a huge setting ("one chunk per tensor") would overflow the product
      // (a wrapped, tiny buffer the copies then overrun) and pin memory no
      // chunk uses; chunk counts are tensor sizes, whose bytes fit.
      std::int64_t most = 0;
      for (const host_chunk& c : h->chunks) most = std::max(most, c.count);
      h->staging_bytes = static_cast<std::size_t>(most) * sizeof(typename Config::grad_type);
      for (int b = 0; b < options_.offload_staging_buffers; ++b) {
        unsigned char* p = nullptr;
        FLASHOPTIM_RETURN_IF_ERROR(pinned(h->staging_bytes, p, "gradient staging"));
        h->staging.push_back(p);
        cudaEvent_t e = nullptr;
        FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "off-load event"));
        h->copied_in.push_back(e);
      }
    }
    host_ = std::move(h);
    return status();
  }

  /// The off-loaded views as the CPU steps them (host parameter copy) and
  /// their device parameters and gradients (what the copies move).
  status check_host_part() const {
    if (host_count_ == 0) return status();
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    std::vector<tensor_type> host(tensors_.begin(), tensors_.begin() + static_cast<std::ptrdiff_t>(host_count_));
    for (std::size_t i = 0; i < host_count_; ++i) {
      const tensor_type& d = tensors_[i];
      const auto n = static_cast<std::size_t>(d.size);
      FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "param", d.param, n * sizeof(typename Config::param_type),
                                                   memory_need::device, dev));
      if (d.grad != nullptr || n == 0)  // unbound: checked when set_grad binds one
        FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(i, "grad", d.grad, n * sizeof(typename Config::grad_type),
                                                     memory_need::device, dev));
      host[i].param = host_->param[i];
    }
    return validate_tensor_list(host.data(), host.size(), /*with_grad=*/false);
  }

  /// Corrections of the off-loaded tensors: split (or resplit) on the
  /// device exactly as a GPU tensor's, into a device buffer, then copied to
  /// the host part (so every fraction starts from the same bytes).
  status init_host_corrections(cudaStream_t stream) {
    using A = typename Config::aux_type;
    std::size_t most = 0;
    for (std::size_t i = 0; i < host_count_; ++i)
      most = std::max(most, static_cast<std::size_t>(tensors_[i].size) * storage_bytes<A>);
    block* tmp = nullptr;
    const std::size_t blocks = (most + 255) / 256;
    block_allocator alloc(alloc_);
    try {
      if (blocks > 0) tmp = std::allocator_traits<block_allocator>::allocate(alloc, blocks);
    } catch (...) {
      return status(status_code::capacity_exceeded, "optimizer: allocating %zu bytes to initialize corrections failed",
                    most);
    }
    status st;
    for (std::size_t i = 0; i < host_count_ && st.ok(); ++i) {
      const tensor_type& t = tensors_[i];
      if (t.size == 0) continue;
      const std::size_t bytes = static_cast<std::size_t>(t.size) * storage_bytes<A>;
      A* aux = bytes > 0 ? reinterpret_cast<A*>(tmp) : t.aux;
      if (flat_.specs[i].init_fp32 != nullptr)
        st = split_async<typename Config::master>(flat_.specs[i].init_fp32, t.size, t.param, aux, stream);
      else
        st = resplit_async<typename Config::master>(t.param, aux, t.size, stream);
      if (st.ok() && bytes > 0) {
        st = detail::cuda_status(cudaStreamSynchronize(stream), "optimizer: initializing");
        if (st.ok())
          st = detail::cuda_status(cudaMemcpy(reinterpret_cast<void*>(t.aux), tmp, bytes, cudaMemcpyDeviceToHost),
                                   "optimizer: the off-loaded corrections");
      }
    }
    if (tmp != nullptr) {
      cudaStreamSynchronize(stream);
      std::allocator_traits<block_allocator>::deallocate(alloc, tmp, blocks);
    }
    return st;
  }

  /// Waits for the off-loaded part's own copies (a step's parameters going
  /// back read the host copies), whatever stream the caller synchronized.
  status host_idle() const {
    if (host_ == nullptr) return status();
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamSynchronize(host_->d2h), "off-load: synchronize"));
    return detail::cuda_status(cudaStreamSynchronize(host_->h2d), "off-load: synchronize");
  }

  /// Refuses a call that would step the off-loaded part while `stream` is
  /// captured (the CPU's work cannot be part of a graph).
  status check_not_capturing_offload(cudaStream_t stream, const char* who) const {
    if (host_ == nullptr) return status();
    cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaStreamIsCapturing(stream, &c), "cudaStreamIsCapturing"));
    if (c != cudaStreamCaptureStatusNone)
      return status(status_code::invalid_argument,
                    "%s: %zu tensors are off-loaded (offload_fraction %g) and step on the CPU, which a CUDA graph "
                    "cannot capture",
                    who, host_count_, options_.offload_fraction);
    return status();
  }

  /// Queues, on `stream`, the copy of the scalars the off-loaded chunks
  /// [b, e) step with (the step count before this step's advance, the lrs,
  /// the pass's control where given), then the first gradient chunks' copies.
  status host_enqueue(std::size_t b, std::size_t e, const grad_control* ctl, cudaStream_t stream) const {
    if (b == e) return status();
    host_part& h = *host_;
    auto cuda = [](cudaError_t x, const char* what) { return detail::cuda_status(x, what); };
    host_scalars* v = h.values();
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(&v->next_step, &control_->next_step, sizeof(std::int64_t),
                                                    cudaMemcpyDeviceToHost, stream), "off-load: step count"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(h.scalars + host_lr_offset, lrs_, group_count() * sizeof(double),
                                                    cudaMemcpyDeviceToHost, stream), "off-load: lr"));
    if (ctl != nullptr)
      FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(&v->control, ctl, sizeof(grad_control), cudaMemcpyDeviceToHost,
                                                      stream), "off-load: grad control"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaEventRecord(h.ready, stream), "off-load: event record"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaStreamWaitEvent(h.d2h, h.ready, 0), "off-load: stream wait"));
    h.team.reset(b, e);
    for (std::size_t i = b; i < std::min(e, b + h.staging.size()); ++i) FLASHOPTIM_RETURN_IF_ERROR(host_copy_in(i, b));
    return status();
  }

  status host_copy_in(std::size_t i, std::size_t b) const {
    host_part& h = *host_;
    const host_chunk& c = h.chunks[i];
    const std::size_t slot = (i - b) % h.staging.size();
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(
        cudaMemcpyAsync(h.staging[slot], tensors_[c.tensor].grad + c.begin,
                        static_cast<std::size_t>(c.count) * sizeof(typename Config::grad_type), cudaMemcpyDeviceToHost,
                        h.d2h),
        "off-load: gradient copy"));
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaEventRecord(h.copied_in[slot], h.d2h), "off-load: event record"));
    h.team.mark_queued(i);
    return status();
  }

  /// Steps chunks [b, e) (queued by host_enqueue) on CPU threads as their
  /// gradients land and queues their parameters' copy back; `stream` waits
  /// for those copies. The multiplier and skip flag are the copied
  /// control's (from_control) or `multiplier` and no skip.
  status host_run(std::size_t b, std::size_t e, bool from_control, double multiplier, bool wait_last_copies,
                  cudaStream_t stream) const {
    if (b == e) return status();
    host_part& h = *host_;
    auto cuda = [](cudaError_t x, const char* what) { return detail::cuda_status(x, what); };
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaEventSynchronize(h.ready), "off-load: the step's scalars"));
    // The last step's parameter copies back read the host copies the CPU
    // is about to rewrite. `ready` covers them only when that step ran on
    // this `stream` (it waited for copied_out); a trainer may step on
    // another stream. (A release step waits once, in begin_step: its
    // tensors' host copies are disjoint.)
    if (wait_last_copies)
      FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaStreamSynchronize(h.h2d), "off-load: the last parameter copies"));
    const host_scalars* v = h.values();
    step_args a;
    a.step = v->next_step;
    a.inv_grad_scale = from_control ? v->control.multiplier : multiplier;
    if (from_control && v->control.skip != 0) {
      // the GPU part skips too; the count stays. The gradient copies
      // host_enqueue queued still read the trainer's buffers: wait for them
      // (the caller may free the gradients once this returns)
      return cuda(cudaStreamSynchronize(h.d2h), "off-load: gradient copies of a skipped step");
    }
    using C = Config;
    // the chunks on one team of CPU threads (device/chunk_team.cuh): each
    // thread its share of whole groups of every chunk as the chunk lands
    cpu::step_options one = h.cpu;
    one.threads = 1;
    const std::size_t buffers = h.staging.size();
    FLASHOPTIM_RETURN_IF_ERROR(detail::run_chunk_team(
        h.team, b, e, h.cpu, h.device, [&](std::size_t i) { return cpu::dispatch::group_count(h.chunks[i].count); },
        [&](std::size_t i) {
          return cuda(cudaEventSynchronize(h.copied_in[(i - b) % buffers]), "off-load: gradient copy");
        },
        [&](std::size_t i, std::int64_t g0, std::int64_t g1) {
          const host_chunk& c = h.chunks[i];
          // the share's view: groups [g0, g1) of the chunk, whole groups of
          // one tensor, its gradient in the staging buffer
          const std::int64_t begin = c.begin + g0 * 32;
          tensor_type t = tensors_[c.tensor];
          t.param = h.param[c.tensor] + begin;
          if constexpr (C::has_aux) t.aux += begin;
          for_each_slot<C::num_slots>([&](auto s) {
            constexpr int I = decltype(s)::value;
            using S = typename C::template state<I>;
            if constexpr (S::stores_state) slot_at<I>(t.states).codes += begin;
            if constexpr (codec::is_grouped<S>::value) slot_at<I>(t.states).scales += begin / 32;
          });
          t.grad = reinterpret_cast<const typename C::grad_type*>(h.staging[(i - b) % buffers]) + g0 * 32;
          t.size = std::min(c.count, g1 * 32) - g0 * 32;
          t.index_base += static_cast<std::uint64_t>(begin);
          const std::size_t g = static_cast<std::size_t>(flat_.group[c.tensor]);
          hyper_type hy = flat_.hypers[g];
          hy.lr = h.lrs()[g];  // the device's lr: what the GPU part reads
          return cpu::step<Config>(hy, a, &t, 1, one);
        },
        [&](std::size_t i) {
          const host_chunk& c = h.chunks[i];
          FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaMemcpyAsync(tensors_[c.tensor].param + c.begin, h.param[c.tensor] + c.begin,
                                                          static_cast<std::size_t>(c.count) * sizeof(typename C::param_type),
                                                          cudaMemcpyHostToDevice, h.h2d),
                                          "off-load: parameter copy"));
          return i + buffers < e ? host_copy_in(i + buffers, b) : status();
        }));
    FLASHOPTIM_RETURN_IF_ERROR(cuda(cudaEventRecord(h.copied_out, h.h2d), "off-load: event record"));
    return cuda(cudaStreamWaitEvent(stream, h.copied_out, 0), "off-load: stream wait");
  }

  // ---- set_grad's bookkeeping -------------------------------------------

  /// Where tensor i's entry is in the step tables: plans_[plan], entry index.
  struct plan_slot {
    std::size_t plan = 0;
    std::size_t index = 0;
  };
  void index_slots() {
    slots_.assign(tensors_.size(), plan_slot{});
    std::vector<std::size_t> next(plans_.size(), 0);
    for (std::size_t i = host_count_; i < tensors_.size(); ++i) {
      const std::size_t c = static_cast<std::size_t>(flat_.group[i]) / tuning::max_step_groups;
      slots_[i] = plan_slot{c, next[c]++};
    }
  }
  /// Every device buffer the step writes, sorted (none overlaps another:
  /// init checked): the parameters, the device arena, the control block.
  void index_written() {
    written_.clear();
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].size > 0) {
        const auto b = reinterpret_cast<std::uintptr_t>(tensors_[i].param);
        written_.push_back({b, b + static_cast<std::size_t>(tensors_[i].size) * sizeof(typename Config::param_type), i});
      }
    if (arena_base_ != nullptr) {
      const auto b = reinterpret_cast<std::uintptr_t>(arena_base_);
      written_.push_back({b, b + arena_blocks_ * sizeof(block), SIZE_MAX});
    }
    const auto cb = reinterpret_cast<std::uintptr_t>(control_);
    written_.push_back({cb, cb + control_bytes_, SIZE_MAX - 1});
    std::sort(written_.begin(), written_.end(), [](const written_span& x, const written_span& y) { return x.begin < y.begin; });
  }
  /// O(log n): the spans are disjoint and sorted, so their ends are sorted too.
  status check_grad_aliasing(std::size_t i, const void* grad, std::size_t bytes) const {
    const auto b = reinterpret_cast<std::uintptr_t>(grad), e = b + bytes;
    auto it = std::upper_bound(written_.begin(), written_.end(), b,
                               [](std::uintptr_t x, const written_span& s) { return x < s.end; });
    if (it == written_.end() || it->begin >= e) return status();
    if (it->tensor == SIZE_MAX)
      return status(status_code::aliasing, "set_grad: tensor %zu's gradient overlaps the optimizer's state arena", i);
    if (it->tensor == SIZE_MAX - 1)
      return status(status_code::aliasing, "set_grad: tensor %zu's gradient overlaps the optimizer's control block", i);
    return status(status_code::aliasing, "set_grad: tensor %zu's gradient overlaps tensor %zu ('%.80s') param", i,
                  it->tensor, names_[it->tensor].c_str());
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
            cudaMemcpy(a.data(), t.aux, a.size() * sizeof(a[0]), cudaMemcpyDefault), "lr check: corrections"));
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
      if (fp8_ != nullptr && fp8_->fused(c))
        FLASHOPTIM_RETURN_IF_ERROR(fp8_->fused_step_async(c, flat_.hypers.data() + first, groups, a, in, stream));
      else
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
      for (std::size_t i = host_count_; i < tensors.size(); ++i)  // off-loaded tensors are the CPU's
        if (flat_.group[i] >= first && flat_.group[i] < first + groups) {
          mine.push_back(tensors[i]);
          local.push_back(flat_.group[i] - first);
        }
      const bool unbound = std::any_of(mine.begin(), mine.end(),
                                       [](const tensor_type& t) { return t.size > 0 && t.grad == nullptr; });
      const status s = unbound ? plans[c].build_unbound_grads(mine.data(), mine.size(), local.data(), groups)
                               : plans[c].build(mine.data(), mine.size(), local.data(), groups);
      if (!s.ok()) return status(s.code(), "optimizer: groups %d..%d: %s", first, first + groups - 1, s.message());
    }
    out = std::move(plans);
    return status();
  }

  status build_release_plans(const std::vector<tensor_type>& tensors, std::vector<step_plan<Config, Policy>>& out) const {
    std::vector<step_plan<Config, Policy>> plans(tensors.size());
    for (std::size_t i = host_count_; i < tensors.size(); ++i) {  // off-loaded tensors step on the CPU
      const bool unbound = tensors[i].size > 0 && tensors[i].grad == nullptr;  // bound by set_grad before its step
      const status s = unbound ? plans[i].build_unbound_grads(&tensors[i], 1, nullptr, 1) : plans[i].build(&tensors[i], 1);
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

  /// Refuses while a tensor's gradient is unbound (set_grad(i, nullptr)).
  status check_bound(const char* who) const {
    if (unbound_ == 0) return status();
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].size > 0 && tensors_[i].grad == nullptr)
        return status(status_code::null_pointer, "%s: tensor %zu ('%.80s') has no gradient (set_grad)", who, i,
                      names_[i].c_str());
    return status();
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
    if (host_ != nullptr) {  // its streams may still copy: let them finish before the memory goes
      cudaStreamSynchronize(host_->d2h);
      cudaStreamSynchronize(host_->h2d);
    }
    host_.reset();
    host_count_ = 0;
    unbound_ = 0;
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
  std::size_t host_count_ = 0;        ///< tensors [0, host_count_) are off-loaded
  std::unique_ptr<host_part> host_;   ///< null without off-loaded tensors
  std::vector<plan_slot> slots_;      ///< each GPU tensor's place in plans_
  struct written_span {
    std::uintptr_t begin, end;
    std::size_t tensor;  ///< SIZE_MAX: the arena; SIZE_MAX - 1: the control block
  };
  std::vector<written_span> written_;
  std::size_t unbound_ = 0;  ///< tensors with elements whose gradient is unbound (set_grad(i, nullptr))
  std::unique_ptr<fp8_writer> fp8_;  ///< set_fp8_outputs; null: no FP8 copy
  optim::fp8_form fp8_form_;
};

}  // namespace flashoptim::device

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The host API of the GPU step. A step_plan owns the device-resident table
// of a list of tensors: it validates the list once (sizes, dtypes, null
// pointers, alignment, overlaps within and across tensors), uploads the
// table and sizes the persistent grid. Its trivially copyable view,
// step_plan_ref, launches: step_async (host scalars, or device inputs for
// graph capture), grad_stats_async, zero_states_async. Launches never
// allocate, synchronize, copy host to device or throw; a bad call returns a
// status that says what is wrong and writes nothing.
//
//   flashoptim::device::step_plan<Config> plan;
//   FLASHOPTIM_RETURN_IF_ERROR(plan.build(tensors.data(), tensors.size()));
//   ...
//   FLASHOPTIM_RETURN_IF_ERROR(plan.step_async(hyper, {step}, stream));
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <utility>
#include <vector>

#include "flashoptim/device/memory_kind.cuh"
#include "flashoptim/kernel/grad_stats_kernel.cuh"
#include "flashoptim/kernel/init_kernels.cuh"
#include "flashoptim/kernel/step_kernel.cuh"
#include "flashoptim/rule/erased.hpp"
#include "flashoptim/rule/step_args.hpp"
#include "flashoptim/rule/tensor.hpp"
#include "flashoptim/tuning/step_policy.hpp"

namespace flashoptim::device {

using kernel::device_inputs;
using kernel::grad_stats;

namespace detail {
template <class T>
status check_device_scalar(const char* name, const T* p) {
  if (p != nullptr && reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0)
    return status(status_code::misaligned, "device input %s at %p is not aligned to %zu bytes", name,
                  static_cast<const void*>(p), alignof(T));
  return status();
}

/// The checks of a step with device inputs, before anything is launched:
/// each group's hyperparameters with the host step arguments, and every
/// device pointer given (alignment, memory kind).
template <class Config>
status check_device_step(const typename Config::hyper* h, int groups, const step_args& a, const device_inputs& in) {
  for (int g = 0; g < groups; ++g) FLASHOPTIM_RETURN_IF_ERROR(validate_step_args<Config>(h[g], a));
  FLASHOPTIM_RETURN_IF_ERROR(check_device_scalar("lr", in.lr));
  FLASHOPTIM_RETURN_IF_ERROR(check_device_scalar("step", in.step));
  FLASHOPTIM_RETURN_IF_ERROR(check_device_scalar("inv_grad_scale", in.inv_grad_scale));
  FLASHOPTIM_RETURN_IF_ERROR(check_device_scalar("skip", in.skip));
  return check_device_scalar("error", in.error);
}
}  // namespace detail

template <class Config, class Policy>
class step_plan;

/// A built plan, by value: what launches need. Valid while its step_plan lives.
template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
class step_plan_ref {
 public:
  using config = Config;
  using policy = Policy;
  using hyper = typename Config::hyper;

  step_plan_ref() = default;

  std::int64_t tensor_count() const { return table_.count; }
  /// Units of Policy::unit_elements elements the tensors are cut into.
  std::int64_t units() const { return table_.units; }
  const kernel::table_view<Config>& table() const { return table_; }
  /// Blocks of the persistent step grid.
  int grid() const { return grid_; }
  /// The same plan launched on another number of blocks (results are
  /// bitwise independent of it; tests use this to show it).
  step_plan_ref with_grid(int blocks) const {
    step_plan_ref r = *this;
    r.grid_ = blocks < 1 ? 1 : blocks;
    return r;
  }

  /// Parameter groups of the plan (each tensor steps with its group's
  /// hyperparameters); 1 unless built with a group per tensor.
  int groups() const { return groups_; }

  /// One step with host scalars. Checks the hyperparameters and step_args
  /// first; with a.skip set it returns without launching. For a plan of one
  /// group.
  status step_async(const hyper& h, const step_args& a, cudaStream_t stream) const {
    return step_async(&h, 1, a, stream);
  }
  /// One step of a plan of `groups` parameter groups: h[g] for group g's
  /// tensors, all in one launch.
  status step_async(const hyper* h, int groups, const step_args& a, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_groups(h, groups));
    kernel::step_params<Config> p;
    for (int g = 0; g < groups; ++g) {
      FLASHOPTIM_RETURN_IF_ERROR(validate_step_args<Config>(h[g], a));
      p.scalars[g] = make_step_scalars<Config>(h[g], a);
    }
    if (a.skip || table_.units == 0) return status();
    p.table = table_;
    p.groups = groups;
    p.step = static_cast<std::uint64_t>(a.step);
    return detail::cuda_status(kernel::launch_step<Config, Policy, false>(p, grid_, stream), "step launch");
  }

  /// One step whose lr, step count, gradient multiplier and skip flag are
  /// read from device memory where `in` points (null: the host value from h
  /// and a). The step's scalars are computed on the device by the same
  /// Rule::make_scalars, so a host call with the same values gives the same
  /// bits. Capturable in a CUDA graph; replays see the current device values.
  status step_async(const hyper& h, const step_args& a, const device_inputs& in, cudaStream_t stream) const {
    return step_async(&h, 1, a, in, stream);
  }
  /// The same for `groups` parameter groups: in.lr, when set, points to one
  /// lr per group.
  status step_async(const hyper* h, int groups, const step_args& a, const device_inputs& in,
                    cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_groups(h, groups));
    FLASHOPTIM_RETURN_IF_ERROR(detail::check_device_step<Config>(h, groups, a, in));
    if (a.skip || table_.units == 0) return status();
    kernel::step_params<Config> p;
    p.table = table_;
    for (int g = 0; g < groups; ++g) p.hyper[g] = h[g];
    p.groups = groups;
    p.host_step = a.step;
    p.host_inv_grad_scale = a.inv_grad_scale;
    p.inputs = in;
    return detail::cuda_status(kernel::launch_step<Config, Policy, true>(p, grid_, stream), "step launch");
  }

  /// Writes *out (device memory): any non-finite gradient, and the sum of
  /// squares of all gradients. Pass &out->non_finite as device_inputs::skip
  /// to skip a step on overflow.
  status grad_stats_async(grad_stats* out, cudaStream_t stream) const {
    if (out == nullptr) return status(status_code::null_pointer, "grad_stats output is null");
    if (reinterpret_cast<std::uintptr_t>(out) % alignof(grad_stats) != 0)
      return status(status_code::misaligned, "grad_stats output at %p is not 8-byte aligned", static_cast<void*>(out));
    return detail::cuda_status(
        kernel::launch_grad_stats<Config, Policy::threads>(table_, workspace_, out, grid_stats_, stream),
        "grad_stats launch");
  }

  /// Zeroes every state code and scale of every tensor: a fresh optimizer.
  status zero_states_async(cudaStream_t stream) const {
    if (table_.units == 0) return status();
    kernel::zero_states_kernel<Config, tuning::elementwise_threads>
        <<<grid_stats_, tuning::elementwise_threads, 0, stream>>>(table_);
    return detail::cuda_status(cudaGetLastError(), "zero_states launch");
  }

 private:
  friend class step_plan<Config, Policy>;
  status check_groups(const hyper* h, int groups) const {
    if (h == nullptr) return status(status_code::null_pointer, "hyperparameters are null");
    if (groups != groups_)
      return status(status_code::invalid_argument, "the plan has %d parameter group%s, the step was given %d", groups_,
                    groups_ == 1 ? "" : "s", groups);
    return status();
  }
  kernel::table_view<Config> table_{};
  int groups_ = 1;
  kernel::grad_stats_workspace workspace_{};
  int grid_ = 0;
  int grid_stats_ = 1;
};

namespace detail {
/// Opts the step kernels (host and device inputs; F8: the fused FP8 write,
/// void: the plain step) in to their dynamic shared memory, then gives the
/// persistent grid for `units` units of work on `sms` multiprocessors:
/// min(occupancy of both kernels, tuning::step_max_blocks_per_sm) blocks
/// per multiprocessor, at least 1, never more blocks than units.
template <class Config, class Policy, class F8 = void>
status step_grid(std::int64_t units, int sms, std::int64_t& grid) {
  const std::size_t smem = kernel::step_shared_bytes<Config, Policy>();
  // The default limit (48 KiB) is on static + dynamic shared memory: the
  // kernel's own __shared__ arrays (the group scalars, the block flags)
  // come on top of the stage buffers, so a launch whose dynamic part is
  // 48 KiB or less can still be refused. Opt in whenever there is any.
  if (smem > 0) {
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaFuncSetAttribute(kernel::step_kernel<Config, Policy, false, F8>,
                                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                                static_cast<int>(smem)),
                                           "setting the step kernel's shared memory size"));
    FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaFuncSetAttribute(kernel::step_kernel<Config, Policy, true, F8>,
                                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                                static_cast<int>(smem)),
                                           "setting the step kernel's shared memory size"));
  }
  int occ_host = 0, occ_dev = 0;
  FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                             &occ_host, kernel::step_kernel<Config, Policy, false, F8>,
                                             Policy::threads, smem),
                                         "occupancy query"));
  FLASHOPTIM_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                             &occ_dev, kernel::step_kernel<Config, Policy, true, F8>,
                                             Policy::threads, smem),
                                         "occupancy query"));
  const int per_sm = std::max(1, std::min({occ_host, occ_dev, tuning::step_max_blocks_per_sm}));
  grid = std::max<std::int64_t>(1, std::min<std::int64_t>(units, std::int64_t{sms} * per_sm));
  return status();
}
}  // namespace detail

/// Owns the device table of a list of tensors (cuCollections-style owning
/// type; ref() is its view). Move-only.
template <class Config, class Policy = typename tuning::default_step_policy<Config>::type>
class step_plan {
 public:
  using ref_type = step_plan_ref<Config, Policy>;
  using hyper = typename Config::hyper;

  step_plan() = default;
  step_plan(const step_plan&) = delete;
  step_plan& operator=(const step_plan&) = delete;
  step_plan(step_plan&& o) noexcept { swap(o); }
  step_plan& operator=(step_plan&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }
  ~step_plan() { release(); }

  /// Whether a list can be stepped: every check build() runs before it
  /// touches the device (CUTLASS's can_implement). Host only.
  static status can_implement(const tensor_ref<Config>* tensors, std::size_t count) {
    return validate_tensor_list(tensors, count);
  }
  /// The same with parameter groups: tensor i steps with group
  /// tensor_group[i]'s hyperparameters, 0 <= tensor_group[i] < groups <=
  /// tuning::max_step_groups (null: every tensor in group 0).
  static status can_implement(const tensor_ref<Config>* tensors, std::size_t count, const std::int32_t* tensor_group,
                              int groups) {
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(tensors, count));
    return check_tensor_groups(count, tensor_group, groups);
  }
  /// Run-time typed buffers (bindings): dtypes, correction width and element
  /// counts are checked by flashoptim::bind first.
  static status can_implement(const tensor_buffers* descs, std::size_t count) {
    std::vector<tensor_ref<Config>> refs;
    return convert(descs, count, refs);
  }

  /// Validates (can_implement, then asks the CUDA runtime that every buffer
  /// is device or managed memory of the current device: see
  /// device/memory_kind.cuh), then uploads the table to the current device
  /// and waits for the device (this is set-up, not a step: it may allocate
  /// and synchronize). On error the plan is left as it was.
  status build(const tensor_ref<Config>* tensors, std::size_t count) {
    return build(tensors, count, nullptr, 1);
  }
  /// With parameter groups (see can_implement): one launch steps them all.
  status build(const tensor_ref<Config>* tensors, std::size_t count, const std::int32_t* tensor_group, int groups) {
    FLASHOPTIM_RETURN_IF_ERROR(can_implement(tensors, count, tensor_group, groups));
    std::vector<tensor_ref<Config>> refs(tensors, tensors + count);
    FLASHOPTIM_RETURN_IF_ERROR(check_device_memory(refs));
    return upload(std::move(refs), tensor_group, groups);
  }
  /// As build, but a tensor's gradient may still be null ("unbound"): its
  /// other buffers are checked now, its gradient when rebind_grad_async
  /// binds one. A launch reads every tensor's gradient, so the caller runs
  /// none while a tensor is unbound (device::optimizer refuses), and checks
  /// the bound gradients against the other tensors' written buffers itself
  /// (this checks each against its own tensor's).
  status build_unbound_grads(const tensor_ref<Config>* tensors, std::size_t count, const std::int32_t* tensor_group,
                             int groups) {
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(tensors, count, /*with_grad=*/false));
    for (std::size_t i = 0; i < count; ++i)
      if (tensors[i].grad != nullptr) FLASHOPTIM_RETURN_IF_ERROR(validate_tensor(i, tensors[i]));
    FLASHOPTIM_RETURN_IF_ERROR(check_tensor_groups(count, tensor_group, groups));
    std::vector<tensor_ref<Config>> refs(tensors, tensors + count);
    FLASHOPTIM_RETURN_IF_ERROR(check_device_memory(refs));
    return upload(std::move(refs), tensor_group, groups);
  }
  status build(const tensor_buffers* descs, std::size_t count) {
    std::vector<tensor_ref<Config>> refs;
    FLASHOPTIM_RETURN_IF_ERROR(convert(descs, count, refs));
    FLASHOPTIM_RETURN_IF_ERROR(check_device_memory(refs));
    return upload(std::move(refs), nullptr, 1);
  }

  static status check_tensor_groups(std::size_t count, const std::int32_t* tensor_group, int groups) {
    if (groups < 1 || groups > tuning::max_step_groups)
      return status(status_code::invalid_argument, "%d parameter groups: a plan takes 1 to %d (tuning::max_step_groups)",
                    groups, tuning::max_step_groups);
    if (tensor_group == nullptr) return status();
    for (std::size_t i = 0; i < count; ++i)
      if (tensor_group[i] < 0 || tensor_group[i] >= groups)
        return status(status_code::invalid_argument, "tensor %zu: parameter group %d is outside [0, %d)", i,
                      static_cast<int>(tensor_group[i]), groups);
    return status();
  }

  /// Every buffer of every tensor is memory the current device's kernels can
  /// read and write (device memory of that device, or managed memory).
  static status check_device_memory(const std::vector<tensor_ref<Config>>& tensors) {
    using C = Config;
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const tensor_ref<Config>& t = tensors[i];
      status st;
      for_each_buffer(t, [&](const char* name, const void* p, std::size_t bytes, bool) {
        // null only where validation allowed it: an unbound gradient (build_unbound_grads)
        if (st.ok() && p != nullptr) st = check_memory_kind(i, name, p, bytes, memory_need::device, dev);
      });
      FLASHOPTIM_RETURN_IF_ERROR(st);
    }
    return status();
  }

  bool built() const { return memory_ != nullptr; }
  /// Device bytes the plan allocated (its table and workspace).
  std::size_t table_bytes() const { return memory_bytes_; }
  const ref_type& ref() const { return ref_; }
  /// The host copy of the tensors the table was built from.
  const std::vector<tensor_ref<Config>>& tensors() const { return host_; }

  int groups() const { return ref_.groups(); }
  status step_async(const hyper& h, const step_args& a, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    return ref_.step_async(h, a, stream);
  }
  status step_async(const hyper* h, int groups, const step_args& a, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    return ref_.step_async(h, groups, a, stream);
  }
  status step_async(const hyper& h, const step_args& a, const device_inputs& in, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    return ref_.step_async(h, a, in, stream);
  }
  status step_async(const hyper* h, int groups, const step_args& a, const device_inputs& in,
                    cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    return ref_.step_async(h, groups, a, in, stream);
  }
  status grad_stats_async(grad_stats* out, cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    return ref_.grad_stats_async(out, stream);
  }
  status zero_states_async(cudaStream_t stream) const {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    return ref_.zero_states_async(stream);
  }

  /// Points tensor `index` at another gradient buffer (its size elements of
  /// Config::grad_type) without rebuilding: the whole table entry, its
  /// vector-path flag recomputed for the new address, is written by a
  /// one-thread kernel on `stream` (no allocation, no host synchronization,
  /// no host-to-device copy, so it is legal while `stream` is captured: a
  /// graph replays the write of this pointer). Steps queued on `stream`
  /// before it read the old buffer, steps after it the new one; a step
  /// running on another stream meanwhile is a race (order them). Checks the
  /// index, a null pointer, the alignment, that the buffer is device or
  /// managed memory of the plan's device and that it overlaps none of the
  /// tensor's own written buffers; aliasing with other tensors' buffers is
  /// the caller's check (device::optimizer keeps every written span sorted
  /// for it). On error nothing is written.
  status rebind_grad_async(std::size_t index, const typename Config::grad_type* grad, cudaStream_t stream) {
    FLASHOPTIM_RETURN_IF_ERROR(check_built());
    if (index >= host_.size())
      return status(status_code::invalid_argument, "rebind_grad: tensor %zu of %zu", index, host_.size());
    tensor_ref<Config> t = host_[index];
    if (t.size == 0) return status();  // nothing reads it
    t.grad = grad;
    FLASHOPTIM_RETURN_IF_ERROR(validate_tensor_list(&t, 1));  // null, alignment, overlap with its own buffers
    const std::size_t bytes = static_cast<std::size_t>(t.size) * sizeof(typename Config::grad_type);
    int dev = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    if (dev != device_)
      return status(status_code::invalid_argument, "rebind_grad: the plan is on device %d, the current device is %d",
                    device_, dev);
    FLASHOPTIM_RETURN_IF_ERROR(check_memory_kind(index, "grad", grad, bytes, memory_need::device, device_));
    kernel::table_entry<Config> e;
    e.ref = t;
    e.vector_ok = kernel::vector_aligned<Config, Policy::elements_per_thread>(t) ? 1u : 0u;
    e.group = group_of_.empty() ? 0 : group_of_[index];
    auto* dst = const_cast<kernel::table_entry<Config>*>(ref_.table_.entries) + index;
    kernel::write_value_kernel<kernel::table_entry<Config>><<<1, 32, 0, stream>>>(dst, e);
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetLastError(), "rebind_grad launch"));
    host_[index] = t;
    return status();
  }

 private:
  status check_built() const {
    if (!built()) return status(status_code::invalid_argument, "step_plan used before build() succeeded");
    return status();
  }

  static status convert(const tensor_buffers* descs, std::size_t count, std::vector<tensor_ref<Config>>& refs) {
    if (count > 0 && descs == nullptr) return status(status_code::null_pointer, "tensor list is null");
    refs.resize(count);
    for (std::size_t i = 0; i < count; ++i) FLASHOPTIM_RETURN_IF_ERROR(bind(i, descs[i], refs[i]));
    return validate_tensor_list(refs.data(), count);
  }

  static std::size_t align_up(std::size_t x) { return (x + 255) / 256 * 256; }

  status upload(std::vector<tensor_ref<Config>> tensors, const std::int32_t* tensor_group, int groups) {
    constexpr int N = Policy::elements_per_thread;
    const std::size_t count = tensors.size();
    std::vector<kernel::table_entry<Config>> entries(count);
    std::vector<std::int64_t> unit_begin(count + 1);
    std::int64_t units = 0;
    for (std::size_t i = 0; i < count; ++i) {
      unit_begin[i] = units;
      units += kernel::units_for(tensors[i].size, Policy::unit_elements);
      entries[i].ref = tensors[i];
      entries[i].vector_ok = kernel::vector_aligned<Config, N>(tensors[i]) ? 1u : 0u;
      entries[i].group = tensor_group != nullptr ? tensor_group[i] : 0;
    }
    unit_begin[count] = units;

    int dev = 0, sms = 0;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaGetDevice(&dev), "cudaGetDevice"));
    FLASHOPTIM_RETURN_IF_ERROR(
        detail::cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute"));
    std::int64_t grid = 0;
    FLASHOPTIM_RETURN_IF_ERROR((detail::step_grid<Config, Policy>(units, sms, grid)));
    const std::int64_t grid_stats = std::max<std::int64_t>(
        1, std::min<std::int64_t>(units, std::int64_t{sms} * tuning::grad_stats_policy::blocks_per_sm));

    // One allocation: entries | unit_begin | block sums | block flags | counter.
    const std::size_t off_entries = 0;
    const std::size_t off_units = align_up(off_entries + count * sizeof(kernel::table_entry<Config>));
    const std::size_t off_sums = align_up(off_units + (count + 1) * sizeof(std::int64_t));
    const std::size_t off_flags = align_up(off_sums + static_cast<std::size_t>(grid_stats) * sizeof(double));
    const std::size_t off_done = align_up(off_flags + static_cast<std::size_t>(grid_stats) * sizeof(std::int32_t));
    const std::size_t total = off_done + 256;
    void* mem = nullptr;
    FLASHOPTIM_RETURN_IF_ERROR(detail::cuda_status(cudaMalloc(&mem, total), "allocating the tensor table"));
    char* base = static_cast<char*>(mem);
    status st;
    if (count > 0)
      st = detail::cuda_status(
          cudaMemcpy(base + off_entries, entries.data(), count * sizeof(entries[0]), cudaMemcpyHostToDevice),
          "uploading the tensor table");
    if (st.ok())
      st = detail::cuda_status(cudaMemcpy(base + off_units, unit_begin.data(), (count + 1) * sizeof(std::int64_t),
                                          cudaMemcpyHostToDevice),
                               "uploading the tensor table");
    if (st.ok()) st = detail::cuda_status(cudaMemset(base + off_done, 0, 256), "clearing the workspace");
    // cudaMemcpy from pageable memory may return before its DMA lands, and
    // cudaMemset is asynchronous: a step launched next on a non-blocking
    // stream could read a half-written table (seen with 10,000 tensors).
    // build() is set-up, so it waits for the device.
    if (st.ok()) st = detail::cuda_status(cudaDeviceSynchronize(), "uploading the tensor table");
    if (!st.ok()) {
      cudaFree(mem);
      return st;
    }

    release();
    memory_ = mem;
    memory_bytes_ = total;
    device_ = dev;
    host_ = std::move(tensors);
    group_of_.assign(count, 0);
    if (tensor_group != nullptr) group_of_.assign(tensor_group, tensor_group + count);
    ref_ = ref_type{};
    ref_.table_.entries = reinterpret_cast<const kernel::table_entry<Config>*>(base + off_entries);
    ref_.table_.unit_begin = reinterpret_cast<const std::int64_t*>(base + off_units);
    ref_.table_.count = static_cast<std::int64_t>(count);
    ref_.table_.units = units;
    ref_.table_.unit_elements = Policy::unit_elements;
    ref_.workspace_.block_sums = reinterpret_cast<double*>(base + off_sums);
    ref_.workspace_.block_flags = reinterpret_cast<std::int32_t*>(base + off_flags);
    ref_.workspace_.done = reinterpret_cast<unsigned int*>(base + off_done);
    ref_.grid_ = static_cast<int>(grid);
    ref_.grid_stats_ = static_cast<int>(grid_stats);
    ref_.groups_ = groups;
    return status();
  }

  void release() {
    if (memory_ != nullptr) {
      int prev = 0;
      cudaGetDevice(&prev);
      if (prev != device_) cudaSetDevice(device_);
      cudaFree(memory_);
      if (prev != device_) cudaSetDevice(prev);
    }
    memory_ = nullptr;
    memory_bytes_ = 0;
    host_.clear();
    group_of_.clear();
    ref_ = ref_type{};
  }

  void swap(step_plan& o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(memory_bytes_, o.memory_bytes_);
    std::swap(device_, o.device_);
    std::swap(ref_, o.ref_);
    std::swap(host_, o.host_);
    std::swap(group_of_, o.group_of_);
  }

  void* memory_ = nullptr;
  std::size_t memory_bytes_ = 0;
  int device_ = -1;
  ref_type ref_{};
  std::vector<tensor_ref<Config>> host_;
  std::vector<std::int32_t> group_of_;  ///< each entry's group (rebind_grad_async rewrites whole entries)
};

}  // namespace flashoptim::device

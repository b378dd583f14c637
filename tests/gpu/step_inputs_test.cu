// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The launch API around the kernel: skip (C11), device inputs and graph
// capture, gradient unscale with skip-on-overflow (C12), gradient
// statistics, bad inputs (C14), misaligned buffers (C15) and memory the
// device cannot read (C24).
#include <cmath>

#include "common/configs.hpp"
#include "flashoptim/device/state_init.cuh"
#include "gpu_harness.hpp"

using namespace gpu_test;
using flashoptim::device::device_inputs;
using flashoptim::device::grad_stats;
namespace tc = testconfigs;

namespace {

template <class T>
struct device_value {
  device_bytes mem{sizeof(T)};
  T* get() const { return reinterpret_cast<T*>(mem.ptr); }
  void set(const T& v) { GPU_CHECK(cudaMemcpy(mem.ptr, &v, sizeof(T), cudaMemcpyHostToDevice)); }
  T read() const {
    T v;
    GPU_CHECK(cudaMemcpy(&v, mem.ptr, sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
};

using C = tc::adamw_default;

template <class Cfg = C>
typename Cfg::hyper adam_hyper() {
  typename Cfg::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  return h;
}

/// A plan over `sizes` with host and device copies initialized alike.
template <class Cfg = C>
struct fixture {
  tensor_set<Cfg> ts;
  device::step_plan<Cfg> plan;
  testdata::generator gen;
  explicit fixture(std::vector<std::int64_t> sizes, std::uint64_t seed = 1) : gen(seed) {
    ts.allocate(sizes);
    ts.init(gen);
    ts.fill_grads(gen);
    ts.upload();
    const auto refs = ts.refs(true);
    STATUS_OK(plan.build(refs.data(), refs.size()));
  }
  void check_same(const char* what) {
    std::string where;
    const bool same = ts.same(where);
    INFO(what, ": ", where);
    REQUIRE(same);
  }
  /// A few ordinary steps so the states are not all zero.
  void warm_up(int steps) {
    for (int s = 1; s <= steps; ++s) {
      ts.fill_grads(gen);
      ts.upload(s_grad);
      step_args a;
      a.step = s;
      STATUS_OK(cpu_step(ts, adam_hyper<Cfg>(), a));
      STATUS_OK(plan.step_async(adam_hyper<Cfg>(), a, nullptr));
    }
    GPU_CHECK(cudaDeviceSynchronize());
    check_same("warm-up");
  }
};

}  // namespace

/// Where a launch of Cfg's staged step puts its stage ring when the kernel
/// has StaticBytes of its own __shared__ variables before the dynamic
/// window (the device-inputs variant has 336): out[0] the ring's address
/// modulo 128, out[1] the bytes from the window's start to the ring's end.
template <class Cfg, int StaticBytes>
__global__ void stage_ring_probe(std::uint32_t* out) {
  __shared__ unsigned char own[StaticBytes];
  own[threadIdx.x % StaticBytes] = static_cast<unsigned char>(threadIdx.x);
  __syncthreads();
  using Policy = typename tuning::default_step_policy<Cfg>::type;
  using TC = kernel::kernel_config<Cfg, Policy::tabulate, Policy::branch_free, Policy::proven_ranges>;
  using TCc = kernel::kernel_config<Cfg, Policy::tabulate, Policy::branch_free, Policy::proven_ranges,
                                    Policy::range_checked>;
  using L = kernel::stage_layout<TCc, Policy::elements_per_thread, Policy::threads>;
  if (threadIdx.x == 0) {
    const std::uint32_t window = kernel::detail::shared_address(kernel::shared_tables());
    const std::uint32_t first = kernel::stage_base<TC>();
    out[0] = first % 128u;
    out[1] = first + static_cast<std::uint32_t>(Policy::stages) * L::bytes - window;
    out[2] = own[1];
  }
}

template <class Cfg, int StaticBytes>
void check_stage_ring() {
  using Policy = typename tuning::default_step_policy<Cfg>::type;
  static_assert(Policy::stages > 1, "a staged policy");
  device_bytes mem(3 * sizeof(std::uint32_t));
  const std::size_t window = kernel::step_shared_bytes<Cfg, Policy>();
  auto k = stage_ring_probe<Cfg, StaticBytes>;
  GPU_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(window)));
  k<<<1, Policy::threads, window>>>(reinterpret_cast<std::uint32_t*>(mem.ptr));
  GPU_CHECK(cudaGetLastError());
  std::uint32_t out[3];
  GPU_CHECK(cudaMemcpy(out, mem.ptr, sizeof out, cudaMemcpyDeviceToHost));
  INFO("static __shared__ bytes ", StaticBytes, ", window ", window);
  CHECK(out[0] == 0u);
  CHECK(out[1] <= window);
}

TEST_CASE("the stage ring is 128-byte aligned and inside the launch's window, whatever __shared__ precedes it") {
  // 336: the device-inputs variant's own variables, whose 80 bytes past a
  // line once doubled the copies' shared-memory wavefronts (kernel/step_kernel.cuh).
  check_stage_ring<C, 4>();
  check_stage_ring<C, 80>();
  check_stage_ring<C, 336>();
  check_stage_ring<C, 1000>();
  check_stage_ring<tc::adamw_bf16_states, 336>();
}

TEST_CASE("skip writes nothing (C11)") {
  fixture<> f({1025, 40000});
  f.warm_up(3);
  step_args a;
  a.step = 4;
  a.skip = true;
  STATUS_OK(f.plan.step_async(adam_hyper(), a, nullptr));
  device_value<std::int32_t> skip;
  skip.set(1);
  device_inputs in;
  in.skip = skip.get();
  a.skip = false;
  STATUS_OK(f.plan.step_async(adam_hyper(), a, in, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  f.check_same("after skipped steps");
}

// Every layout of the device-inputs kernel: naive bf16 once failed to launch
// (its 48 KiB of stage buffers plus the kernel's static shared memory).
TEST_CASE_TEMPLATE("device inputs give the host path's bits", Cfg, C, tc::adamw_bf16_plain, tc::adamw_bf16_states,
                   tc::adamw_fp32_native, tc::lion_default) {
  fixture<Cfg> f({1025, 70001, 3});
  f.warm_up(2);
  device_value<double> lr;
  device_value<std::int64_t> step;
  device_value<double> inv;
  device_inputs in;
  in.lr = lr.get();
  in.step = step.get();
  in.inv_grad_scale = inv.get();
  for (int s = 3; s <= 12; ++s) {
    auto h = adam_hyper<Cfg>();
    h.lr = 1e-2 * std::cos(0.1 * s);  // a schedule
    const double inv_scale = s % 2 ? 1.0 : 0.25;
    f.ts.fill_grads(f.gen);
    f.ts.upload(s_grad);
    step_args a;
    a.step = s;
    a.inv_grad_scale = inv_scale;
    STATUS_OK(cpu_step(f.ts, h, a));
    lr.set(h.lr);
    step.set(s);
    inv.set(inv_scale);
    auto h_dev = adam_hyper<Cfg>();  // the device values override lr, step and the multiplier
    step_args a_dev;
    STATUS_OK(f.plan.step_async(h_dev, a_dev, in, nullptr));
    GPU_CHECK(cudaDeviceSynchronize());
    f.check_same("device inputs");
  }
}

TEST_CASE("captured graph: grad stats, step with skip-on-overflow, advance step (C12)") {
  for (double inv_scale : {1.0, std::ldexp(1.0, -16), std::ldexp(1.0, -24)}) {
    CAPTURE(inv_scale);
    fixture<> f({1025, 33, 9000});
    device_value<std::int64_t> step;
    step.set(1);
    device_value<double> inv;
    inv.set(inv_scale);
    device_bytes stats_mem(sizeof(grad_stats));
    auto* stats = reinterpret_cast<grad_stats*>(stats_mem.ptr);
    device_inputs in;
    in.step = step.get();
    in.inv_grad_scale = inv.get();
    in.skip = &stats->non_finite;

    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    STATUS_OK(f.plan.grad_stats_async(stats, stream));
    STATUS_OK(f.plan.step_async(adam_hyper(), step_args{}, in, stream));
    STATUS_OK(device::advance_step_async(step.get(), &stats->non_finite, stream));
    GPU_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));

    std::int64_t host_step = 1;
    for (int iter = 0; iter < 8; ++iter) {
      // Gradients as a scaled-loss backward pass produces them: g / inv_scale.
      auto* g = f.ts.at<C::grad_type>(s_grad, 0, false);
      f.ts.fill_grads(f.gen);
      for (std::size_t t = 0; t < f.ts.count(); ++t) {
        auto* gt = f.ts.at<C::grad_type>(s_grad, t, false);
        for (std::int64_t e = 0; e < f.ts.sizes[t]; ++e) {
          float x = format::to_float(gt[e]);
          if (!std::isfinite(x)) x = 0.5f;
          gt[e] = format::from_float<C::grad_type>(static_cast<float>(x / inv_scale));
        }
      }
      const bool overflow = iter == 3 || iter == 6;
      if (overflow) g[17] = format::from_float<C::grad_type>(iter == 3 ? INFINITY : NAN);
      f.ts.upload(s_grad);
      GPU_CHECK(cudaGraphLaunch(exec, stream));
      GPU_CHECK(cudaStreamSynchronize(stream));
      // Reference: the CPU run that skips the overflowing steps outright.
      if (!overflow) {
        step_args a;
        a.step = host_step++;
        a.inv_grad_scale = inv_scale;
        STATUS_OK(cpu_step(f.ts, adam_hyper(), a));
      }
      CHECK(step.read() == host_step);
      f.check_same("graph replay");
    }
    GPU_CHECK(cudaGraphExecDestroy(exec));
    GPU_CHECK(cudaGraphDestroy(graph));
    GPU_CHECK(cudaStreamDestroy(stream));
  }
}

TEST_CASE("a step on a non-blocking stream right after build sees the whole table") {
  // build() uploads with cudaMemcpy from pageable memory, whose DMA may not
  // have landed when it returns; a non-blocking stream is not ordered after
  // it. build() must wait (a large table makes the race likely).
  fixture<> f(std::vector<std::int64_t>(12000, 512), 81);
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  device::step_plan<C> fresh;
  const auto refs = f.ts.refs(true);
  STATUS_OK(fresh.build(refs.data(), refs.size()));
  step_args a;
  STATUS_OK(fresh.step_async(adam_hyper(), a, stream));
  GPU_CHECK(cudaStreamSynchronize(stream));
  STATUS_OK(cpu_step(f.ts, adam_hyper(), a));
  f.check_same("first step on a non-blocking stream");
  GPU_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE("gradient statistics: flag and sum of squares, deterministic") {
  fixture<> f({1, 1025, 40000, 0, 77777});
  device_bytes mem(2 * sizeof(grad_stats));
  auto* out = reinterpret_cast<grad_stats*>(mem.ptr);
  double want = 0.0;
  for (std::size_t t = 0; t < f.ts.count(); ++t) {
    const auto* g = f.ts.at<C::grad_type>(s_grad, t, false);
    for (std::int64_t e = 0; e < f.ts.sizes[t]; ++e) {
      const double x = format::to_float(g[e]);
      want += x * x;
    }
  }
  STATUS_OK(f.plan.grad_stats_async(out, nullptr));
  STATUS_OK(f.plan.grad_stats_async(out + 1, nullptr));
  grad_stats got[2];
  GPU_CHECK(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
  CHECK(got[0].non_finite == 0);
  CHECK(std::fabs(got[0].sum_squares - want) <= 1e-12 * want);
  CHECK(std::memcmp(&got[0], &got[1], sizeof(grad_stats)) == 0);
  // One NaN anywhere sets the flag.
  auto* g = f.ts.at<C::grad_type>(s_grad, 4, false);
  g[77776] = format::from_float<C::grad_type>(NAN);
  f.ts.upload(s_grad);
  STATUS_OK(f.plan.grad_stats_async(out, nullptr));
  GPU_CHECK(cudaMemcpy(got, out, sizeof(grad_stats), cudaMemcpyDeviceToHost));
  CHECK(got[0].non_finite == 1);
  // An empty plan writes zeros.
  device::step_plan<C> empty;
  STATUS_OK(empty.build(static_cast<const tensor_ref<C>*>(nullptr), 0));
  STATUS_OK(empty.grad_stats_async(out, nullptr));
  GPU_CHECK(cudaMemcpy(got, out, sizeof(grad_stats), cudaMemcpyDeviceToHost));
  CHECK(got[0].non_finite == 0);
  CHECK(got[0].sum_squares == 0.0);
}

TEST_CASE("bad inputs are refused before anything is written (C14)") {
  fixture<> f({1025, 300});
  f.warm_up(2);
  step_args a;
  a.step = 3;
  auto bad = [&](C::hyper h, step_args args, status_code want) {
    const status s = f.plan.step_async(h, args, nullptr);
    CHECK(s.code() == want);
    CHECK(std::strlen(s.message()) > 0);
  };
  auto h = adam_hyper();
  h.lr = -1;
  bad(h, a, status_code::hyperparameter_out_of_range);
  h = adam_hyper();
  h.beta1 = 1.0;
  bad(h, a, status_code::hyperparameter_out_of_range);
  h = adam_hyper();
  h.eps = NAN;
  bad(h, a, status_code::non_finite_hyperparameter);
  step_args a0;
  a0.step = 0;
  bad(adam_hyper(), a0, status_code::invalid_argument);
  step_args ai;
  ai.inv_grad_scale = INFINITY;
  bad(adam_hyper(), ai, status_code::non_finite_hyperparameter);

  // Misaligned device inputs.
  device_bytes raw(64);
  device_inputs in;
  in.lr = reinterpret_cast<const double*>(raw.ptr + 4);
  CHECK(f.plan.step_async(adam_hyper(), a, in, nullptr).code() == status_code::misaligned);

  // Invalid device values: the kernel writes nothing and raises the error flag.
  device_value<double> lr;
  lr.set(-1.0);
  device_value<std::int32_t> err;
  err.set(0);
  device_inputs bad_in;
  bad_in.lr = lr.get();
  bad_in.error = err.get();
  STATUS_OK(f.plan.step_async(adam_hyper(), a, bad_in, nullptr));
  device_value<std::int64_t> step0;
  step0.set(0);
  device_inputs bad_step;
  bad_step.step = step0.get();
  STATUS_OK(f.plan.step_async(adam_hyper(), a, bad_step, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  CHECK(err.read() == 1);
  f.check_same("after refused steps");

  // Plans refuse bad tensor lists, naming the problem.
  auto refs = f.ts.refs(true);
  device::step_plan<C> p;
  auto expect = [&](std::vector<tensor_ref<C>> list, status_code want) {
    const status s = p.build(list.data(), list.size());
    CHECK_MESSAGE(s.code() == want, s.what());
    CHECK(!p.built());
  };
  auto l = refs;
  l[1].grad = nullptr;
  expect(l, status_code::null_pointer);
  l = refs;
  flashoptim::slot_at<1>(l[0].states).codes = reinterpret_cast<std::uint8_t*>(flashoptim::slot_at<1>(l[1].states).codes);  // state1 of two tensors overlap
  expect(l, status_code::aliasing);
  l = refs;
  l[1].param = reinterpret_cast<bf16*>(reinterpret_cast<char*>(l[1].param) + 1);
  expect(l, status_code::misaligned);
  l = refs;
  l.push_back(refs[0]);  // the same tensor twice
  expect(l, status_code::aliasing);
  l = refs;
  l[0].size = -5;
  expect(l, status_code::size_mismatch);

  // Run-time typed buffers: dtype, correction width, element counts.
  tensor_buffers d;
  const auto r = refs[0];
  d.param = {r.param, dtype::bf16, r.size};
  d.aux = {r.aux, dtype::i16, r.size};
  d.grad = {const_cast<bf16*>(r.grad), dtype::bf16, r.size};
  d.states[0].codes = {flashoptim::slot_at<0>(r.states).codes, dtype::i8, r.size};
  d.states[0].scales = {flashoptim::slot_at<0>(r.states).scales, dtype::f32, (r.size + 31) / 32};
  d.states[1].codes = {flashoptim::slot_at<1>(r.states).codes, dtype::u8, r.size};
  d.states[1].scales = {flashoptim::slot_at<1>(r.states).scales, dtype::f32, (r.size + 31) / 32};
  status s = p.build(&d, 1);
  CHECK(s.code() == status_code::dtype_mismatch);
  CHECK(std::string(s.message()).find("correction is int16") != std::string::npos);
  d.aux = {r.aux, dtype::i8, r.size};
  d.grad.count = r.size - 1;
  s = p.build(&d, 1);
  CHECK(s.code() == status_code::size_mismatch);
  d.grad.count = r.size;
  STATUS_OK(p.build(&d, 1));
  f.check_same("after refused builds");
}

TEST_CASE("buffers the device cannot read are refused at build; the context survives (C24)") {
  fixture<> f({1025, 300});
  f.warm_up(1);
  const auto refs = f.ts.refs(true);
  device::step_plan<C> p;
  auto refused = [&](std::vector<tensor_ref<C>> list, const char* needle) {
    const status s = p.build(list.data(), list.size());
    CHECK_MESSAGE(s.code() == status_code::invalid_argument, s.what());
    CHECK_MESSAGE(std::strstr(s.message(), needle) != nullptr, s.what());
    CHECK(!p.built());
  };
  using R = tensor_ref<C>;
  // Pageable host memory (std::vector) in any slot, first or second tensor.
  std::vector<unsigned char> pageable(64 * 1024, 0);
  auto l = refs;
  l[0].param = reinterpret_cast<R::param_type*>(pageable.data());
  refused(l, "pageable");
  l = refs;
  l[1].grad = reinterpret_cast<const R::grad_type*>(pageable.data());
  refused(l, "tensor 1: grad");
  l = refs;
  flashoptim::slot_at<1>(l[1].states).scales = reinterpret_cast<R::scale_t<1>*>(pageable.data());
  refused(l, "state1 scales");
  // Pinned host memory: stepping it across PCIe is what offload_plan is for.
  void* pinned = nullptr;
  GPU_CHECK(cudaHostAlloc(&pinned, 64 * 1024, cudaHostAllocMapped));
  l = refs;
  flashoptim::slot_at<0>(l[0].states).codes = static_cast<R::code_t<0>*>(pinned);
  refused(l, "pinned host memory");
  GPU_CHECK(cudaFreeHost(pinned));
  // Freed device memory.
  void* freed = nullptr;
  GPU_CHECK(cudaMalloc(&freed, 64 * 1024));
  GPU_CHECK(cudaFree(freed));
  l = refs;
  l[0].aux = static_cast<R::aux_type*>(freed);
  refused(l, "tensor 0: correction");
  // The same plan object then accepts the unmodified list.
  STATUS_OK(p.build(refs.data(), refs.size()));

  // The context survived: the original plan still steps like the CPU.
  f.ts.fill_grads(f.gen);
  f.ts.upload(s_grad);
  step_args a;
  a.step = 2;
  STATUS_OK(cpu_step(f.ts, adam_hyper(), a));
  STATUS_OK(f.plan.step_async(adam_hyper(), a, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  f.check_same("after refused builds");

  // Managed memory is accepted by design and steps like device memory.
  void* managed = nullptr;
  GPU_CHECK(cudaMallocManaged(&managed, f.ts.dev[s_param].bytes));
  GPU_CHECK(cudaMemcpy(managed, f.ts.dev[s_param].ptr, f.ts.dev[s_param].bytes, cudaMemcpyDefault));
  GPU_CHECK(cudaFree(f.ts.dev[s_param].ptr));
  f.ts.dev[s_param].ptr = static_cast<unsigned char*>(managed);  // freed by device_bytes (cudaFree takes managed)
  const auto managed_refs = f.ts.refs(true);
  device::step_plan<C> pm;
  STATUS_OK(pm.build(managed_refs.data(), managed_refs.size()));
  f.ts.fill_grads(f.gen);
  f.ts.upload(s_grad);
  a.step = 3;
  STATUS_OK(cpu_step(f.ts, adam_hyper(), a));
  STATUS_OK(pm.step_async(adam_hyper(), a, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  f.check_same("managed parameters");

  // Another GPU's memory, where there is one.
  int devices = 0;
  GPU_CHECK(cudaGetDeviceCount(&devices));
  if (devices > 1) {
    int current = 0;
    GPU_CHECK(cudaGetDevice(&current));
    void* other = nullptr;
    GPU_CHECK(cudaSetDevice(current == 0 ? 1 : 0));
    GPU_CHECK(cudaMalloc(&other, 64 * 1024));
    GPU_CHECK(cudaSetDevice(current));
    l = refs;
    flashoptim::slot_at<1>(l[0].states).codes = static_cast<R::code_t<1>*>(other);
    refused(l, "memory of device");
    GPU_CHECK(cudaFree(other));
  }
}

// The reference layout: its 2-byte scales at a 2-byte offset are accepted
// and step on the element path (staged runs copy them as 4-byte words).
TEST_CASE_TEMPLATE("misaligned buffers: bitwise the aligned result, or a clear error (C15)", Cfg, C,
                   tc::adamw_reference) {
  using traits = slot_traits<Cfg>;
  const auto h = adam_hyper<Cfg>();
  for (int k = 0; k < s_count; ++k) {
    for (int off = 1; off <= 15; ++off) {
      CAPTURE(slot_name(k));
      CAPTURE(off);
      std::array<int, s_count> mis{};
      mis[k] = off;
      tensor_set<Cfg> ts;
      ts.allocate({1025, 77, 4096}, mis);
      testdata::generator gen(61);
      ts.init(gen);
      ts.upload();
      const auto refs = ts.refs(true);
      device::step_plan<Cfg> plan;
      const status st = plan.build(refs.data(), refs.size());
      const std::size_t align = traits::elem_bytes(k) == 0 ? 1 : traits::elem_bytes(k);
      if (off % align != 0) {
        CHECK(st.code() == status_code::misaligned);
        continue;
      }
      STATUS_OK(st);
      for (int s = 1; s <= 3; ++s) {
        ts.fill_grads(gen);
        ts.upload(s_grad);
        step_args a;
        a.step = s;
        STATUS_OK(cpu_step(ts, h, a));
        STATUS_OK(plan.step_async(h, a, nullptr));
      }
      GPU_CHECK(cudaDeviceSynchronize());
      std::string where;
      const bool same = ts.same(where);
      INFO(where);
      CHECK(same);
    }
  }
}

TEST_CASE("state initialization on the device is the host's split") {
  const std::int64_t n = 100003;
  testdata::generator gen(71);
  std::vector<float> x(n);
  for (auto& v : x) v = gen.value(3.0f, 0.1, true);
  device_bytes dx(n * 4);
  GPU_CHECK(cudaMemcpy(dx.ptr, x.data(), n * 4, cudaMemcpyHostToDevice));
  auto check_mode = [&](auto tag) {
    using M = decltype(tag);
    using P = typename M::param_type;
    using A = typename M::aux_type;
    constexpr std::size_t ab = storage_bytes<A>;
    std::vector<P> hp(n);
    std::vector<unsigned char> ha(n * ab + 1);
    STATUS_OK(codec::split<M>(x.data(), n, hp.data(), reinterpret_cast<A*>(ab ? ha.data() : nullptr)));
    device_bytes dp(n * sizeof(P)), da(n * ab + 1);
    STATUS_OK(device::split_async<M>(reinterpret_cast<const float*>(dx.ptr), n, reinterpret_cast<P*>(dp.ptr),
                                     ab ? reinterpret_cast<A*>(da.ptr) : nullptr, nullptr));
    std::vector<P> gp(n);
    std::vector<unsigned char> ga(n * ab + 1);
    GPU_CHECK(cudaMemcpy(gp.data(), dp.ptr, n * sizeof(P), cudaMemcpyDeviceToHost));
    if (ab) GPU_CHECK(cudaMemcpy(ga.data(), da.ptr, n * ab, cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(gp.data(), hp.data(), n * sizeof(P)) == 0);
    CHECK(std::memcmp(ga.data(), ha.data(), n * ab) == 0);
    // and back
    device_bytes dout(n * 4);
    STATUS_OK(device::reconstruct_async<M>(reinterpret_cast<P*>(dp.ptr), ab ? reinterpret_cast<A*>(da.ptr) : nullptr,
                                           n, reinterpret_cast<float*>(dout.ptr), nullptr));
    std::vector<float> hout(n), gout(n);
    STATUS_OK(codec::reconstruct<M>(hp.data(), reinterpret_cast<A*>(ab ? ha.data() : nullptr), n, hout.data()));
    GPU_CHECK(cudaMemcpy(gout.data(), dout.ptr, n * 4, cudaMemcpyDeviceToHost));
    // NaNs compare as NaNs: decode returns the arithmetic's NaN, whose
    // payload differs between host and device (stores canonicalize).
    for (auto* v : {&gout, &hout})
      for (auto& f : *v) f = format::canonicalize_nan(f);
    CHECK(std::memcmp(gout.data(), hout.data(), n * 4) == 0);
  };
  check_mode(codec::ulp_correction<bf16, std::int8_t>{});
  check_mode(codec::ulp_correction<bf16, std::int16_t>{});
  check_mode(codec::ulp_correction<fp16, std::int8_t>{});
  check_mode(codec::exact_split{});
  check_mode(codec::fp32_master<bf16>{});
  check_mode(codec::native<fp16>{});

  // init_tensor_async + state_layout: one allocation per tensor, states zero.
  using L = state_layout<C>;
  const L l = L::for_size(n);
  CHECK(l.bytes >= state_bytes<C>(n));
  device_bytes state(static_cast<std::size_t>(l.bytes));
  GPU_CHECK(cudaMemset(state.ptr, 0x5a, l.bytes));
  device_bytes param(n * 2), grad(n * 2);
  tensor_ref<C> t;
  t.param = reinterpret_cast<bf16*>(param.ptr);
  t.grad = reinterpret_cast<const bf16*>(grad.ptr);
  l.carve(state.ptr, t);
  STATUS_OK(device::init_tensor_async<C>(reinterpret_cast<const float*>(dx.ptr), t, nullptr));
  std::vector<std::int8_t> codes(n);
  GPU_CHECK(cudaMemcpy(codes.data(), flashoptim::slot_at<0>(t.states).codes, n, cudaMemcpyDeviceToHost));
  bool zero = true;
  for (auto c : codes) zero &= c == 0;
  CHECK(zero);
  CHECK(device::init_tensor_async<C>(reinterpret_cast<const float*>(state.ptr), t, nullptr).code() ==
        status_code::aliasing);
}

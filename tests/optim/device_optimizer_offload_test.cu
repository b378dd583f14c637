// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// What a trainer in a framework needs from device::optimizer: set_grad
// rebinding a gradient without a table rebuild (stream-ordered, inside a
// CUDA graph, between begin_step and step_tensor_async with a fresh buffer
// every step, as PyTorch's gradient release hands them out), and
// optimizer_options::offload_fraction (the leading tensors' state in pinned
// host memory, stepped on CPU threads): every fraction steps bit for bit as
// the all-GPU optimizer, with two groups, the gradient pass and gradient
// release; the memory report's host and device parts add up; a checkpoint
// round-trips and moves between fractions. Every comparison is bitwise.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/configs.hpp"
#include "common/data.hpp"
#include "common/gpu_check.hpp"
#include "flashoptim/layout/offload.hpp"
#include "flashoptim/optim/cpu_optimizer.hpp"
#include "flashoptim/optim/device_optimizer.cuh"
#include "flashoptim/optim/device_optimizer_io.cuh"
#include "optimizer_bytes.cuh"

using namespace flashoptim;
namespace tc = testconfigs;

namespace {

// Megatron's rule off-loads 5 of them at 0.3, 7 at 0.5, all 8 at 1.0. The
// optimizer's tensor index is torch's: the groups' lists one after the other
// (group 0's tensors, then group 1's), so each group's tensors are listed
// together here and the test's index is the optimizer's; the two groups
// still share one step plan and split the off-loaded prefix (0.5 off-loads
// group 0 and three of group 1's).
const std::vector<std::int64_t> sizes = {4096, 33, 1025, 0, 8192, 64, 27811, 1};
const std::vector<int> group_of = {0, 0, 0, 0, 1, 1, 1, 1};

/// The trainer's side: params and grads of every tensor on the device, and
/// the host values the grads were made from.
template <class Config>
struct model {
  using P = typename Config::param_type;
  using G = typename Config::grad_type;
  std::vector<P*> dp;
  std::vector<G*> dg;
  std::vector<std::vector<G>> hg;

  explicit model(std::uint64_t seed) {
    testdata::generator gen(seed);
    for (std::int64_t s : sizes) {
      std::vector<P> p(static_cast<std::size_t>(s));
      for (auto& x : p) {
        float v = gen.value(1.0f, 0.02);
        if (!std::isfinite(v) || std::fabs(v) > 1e3f) v = 0.5f;
        x = format::from_float<P>(v);
      }
      P* d = nullptr;
      G* g = nullptr;
      GPU_CHECK(cudaMalloc(&d, std::max<std::size_t>(1, s * sizeof(P))));
      GPU_CHECK(cudaMalloc(&g, std::max<std::size_t>(1, s * sizeof(G))));
      GPU_CHECK(cudaMemcpy(d, p.data(), s * sizeof(P), cudaMemcpyHostToDevice));
      GPU_CHECK(cudaMemset(g, 0, std::max<std::size_t>(1, s * sizeof(G))));
      dp.push_back(d);
      dg.push_back(g);
      hg.emplace_back(static_cast<std::size_t>(s));
    }
  }
  ~model() {
    for (auto* p : dp) cudaFree(p);
    for (auto* g : dg) cudaFree(g);
  }
  model(const model&) = delete;
  model& operator=(const model&) = delete;

  /// New gradient values (host), copied into `to` (default: the model's buffers).
  void new_grads(testdata::generator& gen, bool non_finite = false) {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      for (auto& g : hg[i]) g = format::from_float<G>(gen.value(1.0f, 0.05, non_finite));
    upload(dg);
  }
  void upload(const std::vector<G*>& to) const {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (!hg[i].empty())
        GPU_CHECK(cudaMemcpy(to[i], hg[i].data(), hg[i].size() * sizeof(G), cudaMemcpyHostToDevice));
  }
  std::vector<optim::param_group<Config>> groups(const std::vector<G*>* grads = nullptr) const {
    std::vector<optim::param_group<Config>> out(2);
    for (int g = 0; g < 2; ++g) {
      out[g].hyper.lr = 1e-3 * (1 + g);
      out[g].hyper.weight_decay = g == 0 ? 0.1 : 0.0;
      if constexpr (std::is_same<typename Config::rule, rule::sgd>::value) out[g].hyper.momentum = 0.9;
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      optim::param_spec s;
      s.param = dp[i];
      s.grad = grads != nullptr ? (*grads)[i] : dg[i];
      s.size = sizes[i];
      s.name = "t" + std::to_string(i);
      out[static_cast<std::size_t>(group_of[i])].params.push_back(s);
    }
    return out;
  }
};

using optimizer_test::bytes_of;
using optimizer_test::require_same;

optim::optimizer_options options(double fraction = 0.0) {
  optim::optimizer_options o;
  o.lr_check = optim::lr_check_mode::off;
  o.seed = 7;
  o.offload_fraction = fraction;
  o.offload_chunk_elements = 1024;  // several chunks per tensor, more chunks than staging buffers
  o.offload_staging_buffers = 2;
  o.offload_threads = 2;
  return o;
}

/// Fresh gradient buffers (device), each `shift` elements into its allocation.
template <class G>
struct grad_buffers {
  std::vector<G*> base, at;
  explicit grad_buffers(std::int64_t shift = 0) {
    for (std::int64_t s : sizes) {
      G* g = nullptr;
      GPU_CHECK(cudaMalloc(&g, static_cast<std::size_t>(std::max<std::int64_t>(1, s + shift)) * sizeof(G)));
      base.push_back(g);
      at.push_back(g + shift);
    }
  }
  ~grad_buffers() {
    for (auto* g : base) cudaFree(g);
  }
  grad_buffers(const grad_buffers&) = delete;
  grad_buffers& operator=(const grad_buffers&) = delete;
};

}  // namespace

// ---------------------------------------------------------------- set_grad

TEST_CASE("set_grad rebinds without a rebuild: stepping == a fresh optimizer over the new buffers") {
  using C = tc::adamw_default;
  using G = C::grad_type;
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const std::int64_t shift : {std::int64_t{0}, std::int64_t{1}}) {  // 1: the new buffers leave the vector path
    CAPTURE(shift);
    model<C> a(51), b(51);
    grad_buffers<G> fresh(shift);
    device::optimizer<C> rebound, made;
    STATUS_OK(rebound.init(a.groups(), options()));
    STATUS_OK(made.init(b.groups(&fresh.at), options()));
    grad_pass_config cfg;  // the pass's table is rebound too
    cfg.max_norm = 0.5;
    STATUS_OK(rebound.set_grad_pass(cfg));
    STATUS_OK(made.set_grad_pass(cfg));
    const std::int64_t tables = rebound.memory().table_bytes;
    testdata::generator gen(52);
    for (int s = 1; s <= 3; ++s) {
      a.new_grads(gen);
      a.upload(fresh.at);
      // step 1 on the old buffers (same values), then rebind every tensor
      if (s == 2)
        for (std::size_t i = 0; i < sizes.size(); ++i) STATUS_OK(rebound.set_grad(i, fresh.at[i], stream));
      STATUS_OK(rebound.step_async(stream));
      STATUS_OK(made.step_async(stream));
      require_same<C>(rebound, made, "after a step");
    }
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] > 0) CHECK(rebound.tensors()[i].grad == fresh.at[i]);
    CHECK(rebound.memory().table_bytes == tables);  // nothing was reallocated
  }
  GPU_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE("set_grad inside a CUDA graph capture: the graph replays the rebinding") {
  using C = tc::adamw_default;
  using G = C::grad_type;
  model<C> a(61), b(61);
  grad_buffers<G> fresh;
  device::optimizer<C> rebound, made;
  STATUS_OK(rebound.init(a.groups(), options()));
  STATUS_OK(made.init(b.groups(&fresh.at), options()));
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const status rebind = rebound.set_grad(2, fresh.at[2], stream);
  const status step = rebound.step_async(stream);
  GPU_CHECK(cudaStreamEndCapture(stream, &graph));
  STATUS_OK(rebind);
  STATUS_OK(step);
  // Outside the graph tensor 2 points at the old buffer again: each replay rebinds it.
  STATUS_OK(rebound.set_grad(2, a.dg[2]));
  cudaGraphExec_t exec;
  GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  testdata::generator gen(62);
  for (int s = 1; s <= 3; ++s) {
    a.new_grads(gen);
    a.upload(fresh.at);
    GPU_CHECK(cudaGraphLaunch(exec, stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    STATUS_OK(made.step_async(nullptr));
    require_same<C>(rebound, made, "after a replay");
    STATUS_OK(rebound.set_grad(2, a.dg[2], stream));  // undone outside the graph, redone by the next replay
  }
  GPU_CHECK(cudaGraphExecDestroy(exec));
  GPU_CHECK(cudaGraphDestroy(graph));
  GPU_CHECK(cudaStreamDestroy(stream));
}

TEST_CASE("gradient release with a new gradient buffer every step, in random order == the whole step") {
  using C = tc::adamw_default;
  using G = C::grad_type;
  for (const double fraction : {0.0, 0.5}) {  // 0.5: the off-loaded tensors step on the CPU one at a time
    CAPTURE(fraction);
    model<C> a(71), b(71);
    device::optimizer<C> whole, released;
    STATUS_OK(whole.init(a.groups(), options()));
    STATUS_OK(released.init(b.groups(), options(fraction)));
    STATUS_OK(released.enable_release());
    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    testdata::generator gen(72);
    std::mt19937 rng(73);
    std::unique_ptr<grad_buffers<G>> current;
    for (int s = 1; s <= 4; ++s) {
      a.new_grads(gen);
      // as a backward does: a fresh buffer per tensor (allocated while the last ones live, so the addresses differ)
      auto next = std::make_unique<grad_buffers<G>>();
      a.upload(next->at);
      STATUS_OK(whole.step_async(nullptr));
      std::vector<std::size_t> order(sizes.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      STATUS_OK(released.begin_step());
      for (std::size_t i : order) {
        if (s > 1 && sizes[i] > 0)  // unbound since its last step
          CHECK(released.step_tensor_async(i, stream).code() == status_code::null_pointer);
        STATUS_OK(released.set_grad(i, next->at[i], stream));  // the hook: this backward's buffer, then its step
        STATUS_OK(released.step_tensor_async(i, stream));
        STATUS_OK(released.set_grad(i, nullptr, stream));  // and the buffer is dropped
      }
      STATUS_OK(released.end_step_async(stream));
      GPU_CHECK(cudaStreamSynchronize(stream));
      current = std::move(next);
      require_same<C>(whole, released, "after a released step");
    }
    std::int64_t n = 0;
    STATUS_OK(released.step_count(n));
    CHECK(n == 4);
    GPU_CHECK(cudaStreamDestroy(stream));
  }
}

TEST_CASE("set_grad refuses a bad buffer and writes nothing; null unbinds") {
  using C = tc::adamw_default;
  using G = C::grad_type;
  model<C> a(81);
  device::optimizer<C> opt;
  STATUS_OK(opt.init(a.groups(), options()));
  const G* before = opt.tensors()[2].grad;
  CHECK(opt.set_grad(2, reinterpret_cast<const char*>(a.dg[2]) + 1).code() == status_code::misaligned);
  CHECK(opt.set_grad(2, a.dp[0]).code() == status_code::aliasing);      // over tensor 0's param
  CHECK(opt.set_grad(2, opt.tensors()[0].aux).code() == status_code::aliasing);  // into the state arena
  CHECK(opt.set_grad(2, opt.device_control()).code() == status_code::aliasing);  // the control block
  std::vector<G> host(static_cast<std::size_t>(sizes[2]));
  CHECK_FALSE(opt.set_grad(2, host.data()).ok());  // not device memory
  CHECK(opt.set_grad(99, a.dg[2]).code() == status_code::invalid_argument);
  CHECK(opt.tensors()[2].grad == before);
  STATUS_OK(opt.set_grad(2, a.dg[4]));  // another tensor's gradient: read-only, allowed
  CHECK(opt.tensors()[2].grad == a.dg[4]);
  STATUS_OK(opt.set_grad(3, nullptr));  // an empty tensor reads nothing
  STATUS_OK(opt.step_async(nullptr));
  // null unbinds: every call that would read the gradient refuses until one is bound again
  STATUS_OK(opt.set_grad(2, nullptr));
  STATUS_OK(opt.set_grad(2, nullptr));  // twice is fine
  CHECK(opt.tensors()[2].grad == nullptr);
  CHECK(opt.step_async(nullptr).code() == status_code::null_pointer);
  CHECK(opt.set_grad_pass(grad_pass_config{}).code() == status_code::null_pointer);
  std::int64_t n = -1;
  STATUS_OK(opt.enable_release());  // release tables need no gradient: each is bound before its step
  STATUS_OK(opt.begin_step());
  CHECK(opt.step_tensor_async(2, nullptr).code() == status_code::null_pointer);
  STATUS_OK(opt.set_grad(2, before));
  for (std::size_t i = 0; i < sizes.size(); ++i) STATUS_OK(opt.step_tensor_async(i, nullptr));
  STATUS_OK(opt.end_step_async(nullptr));
  STATUS_OK(opt.step_count(n));
  CHECK(n == 2);
  STATUS_OK(opt.set_grad(2, nullptr));
  STATUS_OK(opt.set_grad(2, before));
  STATUS_OK(opt.step_async(nullptr));
  STATUS_OK(opt.step_count(n));
  CHECK(n == 3);
}

TEST_CASE("init without gradients: every tensor unbound until set_grad; then == an optimizer built with them") {
  // a framework builds its optimizer before the first backward
  using C = tc::adamw_default;
  using G = C::grad_type;
  for (const double fraction : {0.0, 0.5}) {
    CAPTURE(fraction);
    model<C> a(91), b(91), c(91);  // each optimizer steps its own parameters
    const std::vector<G*> none(sizes.size(), nullptr);
    device::optimizer<C> with, without, released;
    STATUS_OK(with.init(a.groups(), options(fraction)));
    STATUS_OK(without.init(b.groups(&none), options(fraction)));
    STATUS_OK(released.init(c.groups(&none), options(fraction)));
    CHECK(without.step_async(nullptr).code() == status_code::null_pointer);  // nothing bound: refused, nothing written
    CHECK(without.set_grad_pass(grad_pass_config{}).code() == status_code::null_pointer);
    STATUS_OK(released.enable_release());
    testdata::generator gen(92);
    for (int s = 1; s <= 3; ++s) {
      a.new_grads(gen);
      b.hg = a.hg;
      b.upload(b.dg);
      c.hg = a.hg;
      c.upload(c.dg);
      STATUS_OK(with.step_async(nullptr));
      for (std::size_t i = 0; i < sizes.size(); ++i) STATUS_OK(without.set_grad(i, b.dg[i], nullptr));
      STATUS_OK(without.step_async(nullptr));
      STATUS_OK(released.begin_step());
      for (std::size_t i = sizes.size(); i-- > 0;) {  // backward order
        STATUS_OK(released.set_grad(i, c.dg[i], nullptr));
        STATUS_OK(released.step_tensor_async(i, nullptr));
        STATUS_OK(released.set_grad(i, nullptr, nullptr));
      }
      STATUS_OK(released.end_step_async(nullptr));
      require_same<C>(with, without, "bound after init");
      require_same<C>(with, released, "released from an unbound start");
    }
  }
}

// ---------------------------------------------------------------- off-load

TEST_CASE("offload_fraction 0.3, 0.5, 1.0 step bit for bit as fraction 0 (two groups)") {
  // Each fraction's optimizer and a fraction-0 optimizer step side by side
  // over two models with the same bytes.
  auto run = [](auto tag, bool with_pass, std::uint64_t seed) {
    using Config = decltype(tag);
    grad_pass_config cfg;
    cfg.max_norm = 0.5;
    cfg.scaler.enabled = true;
    cfg.scaler.init_scale = 1024.0;
    cfg.scaler.growth_interval = 2;
    for (const double fraction : {0.0, 0.3, 0.5, 1.0}) {
      CAPTURE(fraction);
      CAPTURE(with_pass);
      model<Config> ma(seed), mb(seed);
      device::optimizer<Config> ref, built;
      STATUS_OK(ref.init(ma.groups(), options(0.0)));
      STATUS_OK(built.init(mb.groups(), options(fraction)));
      device::optimizer<Config> opt(std::move(built));  // the pinned part survives a move
      std::vector<std::int64_t> s(sizes);
      CHECK(opt.host_tensor_count() == layout::offload_count(s.data(), s.size(), fraction));
      CHECK(opt.host_tensor_count() == (fraction == 0.0 ? 0u : fraction == 0.3 ? 5u : fraction == 0.5 ? 7u : 8u));
      if (with_pass) {
        STATUS_OK(ref.set_grad_pass(cfg));
        STATUS_OK(opt.set_grad_pass(cfg));
      }
      require_same<Config>(opt, ref, "after init");
      cudaStream_t stream;
      GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      testdata::generator ga(seed + 1), gb(seed + 1);
      for (int step = 1; step <= 4; ++step) {
        const bool non_finite = with_pass && step == 3;  // the pass skips this step everywhere
        ma.new_grads(ga, non_finite);
        mb.new_grads(gb, non_finite);
        if (step == 2) {
          STATUS_OK(ref.set_lr(1, 7e-4));
          STATUS_OK(opt.set_lr(1, 7e-4, stream));  // the device lr, which the CPU part reads
        }
        STATUS_OK(ref.step_async(nullptr));
        STATUS_OK(opt.step_async(stream));
        GPU_CHECK(cudaStreamSynchronize(stream));
        require_same<Config>(opt, ref, "after a step");
      }
      std::int64_t a = 0, b = 0;
      STATUS_OK(ref.step_count(a));
      STATUS_OK(opt.step_count(b));
      CHECK(a == b);
      CHECK(b == (with_pass ? 3 : 4));
      if (with_pass) {
        device::optimizer_control x, y;
        STATUS_OK(ref.read_control(x));
        STATUS_OK(opt.read_control(y));
        CHECK(std::memcmp(&x.control, &y.control, sizeof(grad_control)) == 0);
      }
      GPU_CHECK(cudaStreamDestroy(stream));
    }
  };
  run(tc::adamw_default{}, false, 91);
  run(tc::adamw_default{}, true, 92);
  run(tc::sgd_momentum{}, false, 93);
  run(tc::adamw_fp32_native{}, false, 94);  // no correction buffer
  run(tc::adamw_bf16_master{}, false, 95);  // fp32 master as the correction
}

TEST_CASE("offload: the chunk team's shares of whole groups step bit for bit, whatever the team's size") {
  // device/chunk_team.cuh: thread t of T steps groups [g t / T, g (t+1) / T)
  // of each chunk's g groups; 7 groups per chunk give teams of 3 and 5
  // uneven shares and leave threads of the team of 9 without one, and
  // stochastic-rounding states key on the element index, so a share
  // stepped at the wrong offset changes bytes. A tensor stepped alone (a
  // release) runs a team sized for its own groups over its own chunks.
  using C = tc::adamw_bf16_sr_states;
  for (const int team : {1, 3, 5, 9}) {
    CAPTURE(team);
    model<C> ma(71), mb(71);
    optim::optimizer_options o = options(0.5);
    o.offload_chunk_elements = 32 * 7;
    o.offload_staging_buffers = 3;
    o.offload_threads = team;
    device::optimizer<C> ref, opt;
    STATUS_OK(ref.init(ma.groups(), options(0.0)));
    STATUS_OK(opt.init(mb.groups(), o));
    STATUS_OK(opt.enable_release());
    REQUIRE(opt.host_tensor_count() > 1);
    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    testdata::generator ga(72), gb(72);
    for (int step = 1; step <= 3; ++step) {
      ma.new_grads(ga);
      mb.new_grads(gb);
      STATUS_OK(ref.step_async(nullptr));
      if (step == 2) {  // a release step: tensor by tensor, in reverse
        STATUS_OK(opt.begin_step());
        for (std::size_t i = sizes.size(); i-- > 0;) STATUS_OK(opt.step_tensor_async(i, stream));
        STATUS_OK(opt.end_step_async(stream));
      } else {
        STATUS_OK(opt.step_async(stream));
      }
      GPU_CHECK(cudaStreamSynchronize(stream));
      require_same<C>(opt, ref, "after a step");
    }
    GPU_CHECK(cudaStreamDestroy(stream));
  }
}

TEST_CASE("offload: the memory report's host and device parts add up") {
  using C = tc::adamw_default;
  model<C> m(101);
  std::int64_t arena0 = 0;
  for (const double fraction : {0.0, 0.3, 0.5, 1.0}) {
    CAPTURE(fraction);
    device::optimizer<C> opt;
    const auto o = options(fraction);
    STATUS_OK(opt.init(m.groups(), o));
    const optim::memory_report r = opt.memory();
    CHECK(r.correction_bytes + r.state_code_bytes + r.state_scale_bytes + r.padding_bytes == r.arena_bytes);
    if (fraction == 0.0) arena0 = r.arena_bytes;
    CHECK(r.arena_bytes == arena0);  // the same layout, wherever it lives
    std::int64_t host_arena = 0, param_copies = 0, off_elements = 0;
    for (std::size_t i = 0; i < opt.host_tensor_count(); ++i) {
      host_arena += state_layout<C>::for_size(sizes[i]).bytes;
      param_copies += (sizes[i] * static_cast<std::int64_t>(sizeof(C::param_type)) + 255) / 256 * 256;
      off_elements += sizes[i];
    }
    CHECK(r.host_arena_bytes == host_arena);
    if (fraction == 0.0) {
      CHECK(r.host_bytes == 0);
      CHECK(r.host_arena_bytes == 0);
    } else {
      // each buffer holds the largest chunk: offload_chunk_elements here (tensor 0 is off-loaded, 4096 elements)
      const std::int64_t staging = o.offload_staging_buffers * o.offload_chunk_elements *
                                   static_cast<std::int64_t>(sizeof(C::grad_type));
      const std::int64_t scalars = 256 + 2 * static_cast<std::int64_t>(sizeof(double));  // two groups' lrs
      CHECK(r.host_bytes == host_arena + param_copies + staging + scalars);
      const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
      CHECK(static_cast<double>(off_elements) >= fraction * static_cast<double>(total));  // at least the fraction
    }
    if (fraction == 1.0) CHECK(r.host_arena_bytes == r.arena_bytes);
    CHECK(r.device_bytes() == r.arena_bytes - r.host_arena_bytes + r.table_bytes);
    CHECK(r.to_string().find(fraction > 0 ? "pinned host" : "parameters") != std::string::npos);
  }
}

TEST_CASE("offload: a chunk size beyond every tensor (one chunk each) sizes the staging by the largest chunk") {
  // 2^62 fp32 elements are 2^64 bytes: the product wrapped to a 1-byte
  // staging buffer that the gradient copies overran
  using C = tc::adamw_fp32_native;
  model<C> ma(141), mb(141);
  auto o = options(0.5);
  o.offload_chunk_elements = std::int64_t{1} << 62;
  device::optimizer<C> ref, opt;
  STATUS_OK(ref.init(ma.groups(), options(0.0)));
  STATUS_OK(opt.init(mb.groups(), o));
  REQUIRE(opt.host_tensor_count() == 7u);  // tensor 6 (27811 elements) is the largest off-loaded one
  std::int64_t param_copies = 0;
  for (std::size_t i = 0; i < opt.host_tensor_count(); ++i)
    param_copies += (sizes[i] * static_cast<std::int64_t>(sizeof(C::param_type)) + 255) / 256 * 256;
  const std::int64_t staging = o.offload_staging_buffers * 27811 * static_cast<std::int64_t>(sizeof(C::grad_type));
  const optim::memory_report r = opt.memory();
  CHECK(r.host_bytes == r.host_arena_bytes + param_copies + staging + 256 + 2 * 8);  // + the scalars, two lrs
  testdata::generator gen(142);
  for (int step = 1; step <= 3; ++step) {
    ma.new_grads(gen);
    mb.hg = ma.hg;
    mb.upload(mb.dg);
    STATUS_OK(ref.step_async(nullptr));
    STATUS_OK(opt.step_async(nullptr));
    require_same<C>(opt, ref, "one chunk per tensor");
  }
}

TEST_CASE("offload: a checkpoint round-trips, and moves between fractions") {
  using C = tc::adamw_default;
  const std::string path = "device_optimizer_offload_test.fo";
  model<C> ma(111), mb(111), mc(111);
  device::optimizer<C> run, resumed_half, resumed_gpu;
  STATUS_OK(run.init(ma.groups(), options(0.5)));
  STATUS_OK(resumed_half.init(mb.groups(), options(0.5)));  // the same model, fresh state
  STATUS_OK(resumed_gpu.init(mc.groups(), options(0.0)));
  testdata::generator gen(112);
  for (int s = 1; s <= 2; ++s) {
    ma.new_grads(gen);
    STATUS_OK(run.step_async(nullptr));
  }
  STATUS_OK(device::save(run, path));
  STATUS_OK(device::load(resumed_half, path));
  STATUS_OK(device::load(resumed_gpu, path));
  require_same<C>(resumed_half, run, "after load (fraction 0.5)");
  require_same<C>(resumed_gpu, run, "after load (fraction 0)");
  for (int s = 3; s <= 4; ++s) {
    ma.new_grads(gen);
    mb.hg = ma.hg;
    mb.upload(mb.dg);
    mc.hg = ma.hg;
    mc.upload(mc.dg);
    STATUS_OK(run.step_async(nullptr));
    STATUS_OK(resumed_half.step_async(nullptr));
    STATUS_OK(resumed_gpu.step_async(nullptr));
    require_same<C>(resumed_half, run, "resumed at fraction 0.5");
    require_same<C>(resumed_gpu, run, "resumed at fraction 0");
  }
  std::int64_t n = 0;
  STATUS_OK(resumed_half.step_count(n));
  CHECK(n == 4);
  std::remove(path.c_str());
}

TEST_CASE("offload: bad options are refused; the CPU part is not capturable") {
  using C = tc::adamw_default;
  model<C> m(121);
  device::optimizer<C> opt;
  auto o = options(1.5);
  CHECK(opt.init(m.groups(), o).code() == status_code::hyperparameter_out_of_range);
  o = options(0.5);
  o.offload_chunk_elements = 33;
  CHECK(opt.init(m.groups(), o).code() == status_code::invalid_argument);
  o = options(0.5);
  o.offload_staging_buffers = 0;
  CHECK(opt.init(m.groups(), o).code() == status_code::invalid_argument);
  o = options(0.5);
  o.offload_threads = -1;
  CHECK_FALSE(opt.init(m.groups(), o).ok());
  CHECK_FALSE(opt.initialized());
  // an off-loaded tensor's gradient over a parameter the step writes:
  // refused as a GPU tensor's is (its gradient is not in any step table)
  for (const double fraction : {0.0, 0.5}) {
    CAPTURE(fraction);
    std::vector<C::grad_type*> grads(m.dg);
    grads[1] = reinterpret_cast<C::grad_type*>(m.dp[0]);  // tensor 1 (33 elements, off-loaded at 0.5) over tensor 0's param
    CHECK(opt.init(m.groups(&grads), options(fraction)).code() == status_code::aliasing);
    CHECK_FALSE(opt.initialized());
  }
  {  // a GPU tensor's parameter inside an off-loaded tensor's: two parts, one list
    auto groups = m.groups();
    REQUIRE(groups[1].params[3].size == sizes[7]);
    groups[1].params[3].param = m.dp[0];  // tensor 7 (GPU at 0.5) over tensor 0's first element
    CHECK(opt.init(groups, options(0.5)).code() == status_code::aliasing);
    CHECK_FALSE(opt.initialized());
  }
  STATUS_OK(opt.init(m.groups(), options(0.5)));
  cudaStream_t stream;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const status captured = opt.step_async(stream);
  GPU_CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(captured.code() == status_code::invalid_argument);
  CHECK(std::string(captured.message()).find("off-loaded") != std::string::npos);
  GPU_CHECK(cudaGraphDestroy(graph));
  GPU_CHECK(cudaStreamDestroy(stream));
  std::int64_t n = -1;
  STATUS_OK(opt.step_count(n));
  CHECK(n == 0);
}

TEST_CASE("init: parameters of two launches (more than max_step_groups groups) that overlap are refused") {
  // each launch's table checks its own tensors; the whole list is checked once at init
  using C = tc::adamw_default;
  using P = C::param_type;
  using G = C::grad_type;
  const int groups = tuning::max_step_groups + 1;
  P* params = nullptr;
  G* grads = nullptr;
  GPU_CHECK(cudaMalloc(&params, static_cast<std::size_t>(groups) * 64 * sizeof(P)));
  GPU_CHECK(cudaMalloc(&grads, static_cast<std::size_t>(groups) * 64 * sizeof(G)));
  GPU_CHECK(cudaMemset(params, 0, static_cast<std::size_t>(groups) * 64 * sizeof(P)));
  GPU_CHECK(cudaMemset(grads, 0, static_cast<std::size_t>(groups) * 64 * sizeof(G)));
  auto make = [&](bool overlap) {
    std::vector<optim::param_group<C>> gs(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      optim::param_spec sp;
      sp.param = params + 64 * g;
      sp.grad = grads + 64 * g;
      sp.size = 64;
      gs[static_cast<std::size_t>(g)].params.push_back(sp);
    }
    if (overlap) gs.back().params[0].param = params + 32;  // the last launch's tensor over the first's
    return gs;
  };
  device::optimizer<C> opt;
  STATUS_OK(opt.init(make(false), options()));
  CHECK(opt.launches() == 2u);
  CHECK(opt.init(make(true), options()).code() == status_code::aliasing);
  CHECK(opt.launches() == 2u);  // the optimizer as it was
  GPU_CHECK(cudaFree(params));
  GPU_CHECK(cudaFree(grads));
}

TEST_CASE("offload: parameters the trainer changed are taken in by refresh_host_params") {
  using C = tc::adamw_default;
  using P = C::param_type;
  model<C> ma(131), mb(131);
  device::optimizer<C> ref, opt;
  STATUS_OK(ref.init(ma.groups(), options(0.0)));
  STATUS_OK(opt.init(mb.groups(), options(1.0)));
  STATUS_OK(opt.refresh_host_params());  // nothing changed yet: a no-op
  testdata::generator gen(132);
  ma.new_grads(gen);
  mb.hg = ma.hg;
  mb.upload(mb.dg);
  STATUS_OK(ref.step_async(nullptr));
  STATUS_OK(opt.step_async(nullptr));
  // the trainer overwrites tensor 0's weights (as loading a state dict does) in both models
  std::vector<P> w(static_cast<std::size_t>(sizes[0]), format::from_float<P>(0.25f));
  GPU_CHECK(cudaMemcpy(ma.dp[0], w.data(), w.size() * sizeof(P), cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(mb.dp[0], w.data(), w.size() * sizeof(P), cudaMemcpyHostToDevice));
  STATUS_OK(opt.refresh_host_params());
  ma.new_grads(gen);
  mb.hg = ma.hg;
  mb.upload(mb.dg);
  STATUS_OK(ref.step_async(nullptr));
  STATUS_OK(opt.step_async(nullptr));
  require_same<C>(opt, ref, "after a step from the trainer's new weights");
}

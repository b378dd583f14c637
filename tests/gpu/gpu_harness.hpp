// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Host and device copies of a list of tensors under one configuration, laid
// out identically (same offsets, same padding bytes), so the CPU reference
// path (cpu::step_serial) and the GPU plan can step the same bytes and be
// compared byte for byte, padding included: a write past any buffer's end
// shows up as a changed sentinel byte.
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/gpu_check.hpp"
#include "common/data.hpp"
#include "flashoptim/device/step_plan.cuh"
#include "flashoptim/flashoptim.hpp"


namespace gpu_test {

using namespace flashoptim;

inline constexpr unsigned char sentinel_byte = 0xA5;
inline constexpr std::size_t pad_bytes = 64;

// Three state slots (AMSGrad's max_exp_avg_sq is slot 2); slots past a
// configuration's num_slots have codec::none and zero bytes.
enum slot_id : int { s_param, s_aux, s_grad, s_code0, s_scale0, s_code1, s_scale1, s_code2, s_scale2, s_count };
inline const char* slot_name(int k) {
  static const char* names[] = {"param", "aux", "grad", "code0", "scale0", "code1", "scale1", "code2", "scale2"};
  return names[k];
}

template <class Config>
struct slot_traits {
  using S0 = typename Config::state0;
  using S1 = typename Config::state1;
  using S2 = typename Config::template state<2>;
  static std::size_t elem_bytes(int k) {
    switch (k) {
      case s_param: return sizeof(typename Config::param_type);
      case s_aux: return storage_bytes<typename Config::aux_type>;
      case s_grad: return sizeof(typename Config::grad_type);
      case s_code0: return storage_bytes<typename S0::code_type>;
      case s_scale0: return storage_bytes<typename S0::scale_type>;
      case s_code1: return storage_bytes<typename S1::code_type>;
      case s_scale1: return storage_bytes<typename S1::scale_type>;
      case s_code2: return storage_bytes<typename S2::code_type>;
      default: return storage_bytes<typename S2::scale_type>;
    }
  }
  static std::int64_t count(int k, std::int64_t n) {
    if (k == s_scale0) return codec::scale_count<S0>(n);
    if (k == s_scale1) return codec::scale_count<S1>(n);
    if (k == s_scale2) return codec::scale_count<S2>(n);
    return n;
  }
};

struct device_bytes {
  unsigned char* ptr = nullptr;
  std::size_t bytes = 0;
  device_bytes() = default;
  explicit device_bytes(std::size_t b) : bytes(b) {
    if (b) GPU_CHECK(cudaMalloc(&ptr, b));
  }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  device_bytes(device_bytes&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr, o.bytes = 0; }
  device_bytes& operator=(device_bytes&& o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~device_bytes() {
    if (ptr) cudaFree(ptr);
  }
};

/// A list of tensors, each slot of all tensors in one arena (host and
/// device mirror). `misalign[k]` shifts every buffer of slot k by that many
/// bytes from a 256-byte boundary.
template <class Config>
struct tensor_set {
  using traits = slot_traits<Config>;
  std::vector<std::int64_t> sizes;
  std::vector<std::array<std::size_t, s_count>> offsets;
  std::array<std::vector<unsigned char>, s_count> host;
  std::array<device_bytes, s_count> dev;

  void allocate(const std::vector<std::int64_t>& n, std::array<int, s_count> misalign = {}) {
    sizes = n;
    offsets.assign(n.size(), {});
    // The element size is read once per slot, outside the loop over tensors:
    // GCC 13.3 (Ubuntu 24.04's g++, which nvcc uses there) at -O2/-O3
    // folded `count(k, n[i]) * elem_bytes(k)` inside this loop to 0 for
    // configurations whose slot 0 has no scales (sgd_plain, lion_fp32,
    // sgd_fp16_master): every buffer came out 64 bytes and init() wrote
    // past them (host heap corruption). GCC 12 and -O0 compute it right.
    for (int k = 0; k < s_count; ++k) {
      const std::size_t eb = traits::elem_bytes(k);
      std::size_t at = 0;
      for (std::size_t i = 0; i < n.size(); ++i) {
        at = (at + 255) / 256 * 256 + static_cast<std::size_t>(misalign[k]);
        offsets[i][k] = at;
        at += static_cast<std::size_t>(traits::count(k, n[i])) * eb;
      }
      at += pad_bytes;
      host[k].assign(at, sentinel_byte);
      dev[k] = device_bytes(at);
    }
    // A tripwire for that miscompilation: every parameter fits its buffer.
    std::size_t params = 0;
    for (std::int64_t x : n) params += static_cast<std::size_t>(x);
    REQUIRE_MESSAGE(host[s_param].size() >= params * sizeof(typename Config::param_type) + pad_bytes,
                    "tensor_set::allocate sized the parameter buffer wrong (miscompiled?)");
  }
  std::size_t count() const { return sizes.size(); }

  template <class T>
  T* at(int k, std::size_t i, bool device) {
    if (traits::elem_bytes(k) == 0) return nullptr;
    unsigned char* base = device ? dev[k].ptr : host[k].data();
    return reinterpret_cast<T*>(base + offsets[i][k]);
  }
  tensor_ref<Config> ref(std::size_t i, bool device) {
    using R = tensor_ref<Config>;
    R r;
    r.param = at<typename R::param_type>(s_param, i, device);
    r.aux = at<typename R::aux_type>(s_aux, i, device);
    r.grad = at<typename R::grad_type>(s_grad, i, device);
    // Absent or empty buffers are null, as a caller would pass them.
    static_assert(Config::num_slots <= 3, "the harness holds three state slots");
    flashoptim::for_each_slot<Config::num_slots>([&](auto k) {
      constexpr int I = decltype(k)::value;
      auto& x = flashoptim::slot_at<I>(r.states);
      x.codes = at<typename R::template code_t<I>>(s_code0 + 2 * I, i, device);
      x.scales = at<typename R::template scale_t<I>>(s_scale0 + 2 * I, i, device);
      if (sizes[i] == 0) x.codes = nullptr;
      if (traits::count(s_scale0 + 2 * I, sizes[i]) == 0) x.scales = nullptr;
    });
    if (sizes[i] == 0) r.param = nullptr, r.aux = nullptr, r.grad = nullptr;
    r.size = sizes[i];
    r.seed = 0x9e3779b9u * (i + 1);
    r.index_base = 977 * i;  // as if each tensor were a shard of a larger one
    return r;
  }
  std::vector<tensor_ref<Config>> refs(bool device) {
    std::vector<tensor_ref<Config>> v;
    for (std::size_t i = 0; i < count(); ++i) v.push_back(ref(i, device));
    return v;
  }

  void upload(int k) {
    if (dev[k].bytes) GPU_CHECK(cudaMemcpy(dev[k].ptr, host[k].data(), dev[k].bytes, cudaMemcpyHostToDevice));
  }
  void upload() {
    for (int k = 0; k < s_count; ++k) upload(k);
  }
  std::vector<unsigned char> download(int k) const {
    std::vector<unsigned char> out(dev[k].bytes);
    if (dev[k].bytes) GPU_CHECK(cudaMemcpy(out.data(), dev[k].ptr, dev[k].bytes, cudaMemcpyDeviceToHost));
    return out;
  }

  /// Fresh parameters from random fp32 values (with edge cases), zero states.
  void init(testdata::generator& gen, double special = 0.05) {
    for (std::size_t i = 0; i < count(); ++i) {
      auto r = ref(i, false);
      for (std::int64_t e = 0; e < sizes[i]; ++e) {
        float x = gen.value(1.0f, special);
        if (!std::isfinite(x) || std::fabs(x) > 1e4f) x = 1.0f;
        typename Config::aux_type a{};
        Config::master::encode(x, r.param[e], a);
        if constexpr (Config::has_aux) r.aux[e] = a;
      }
      for (int k : {s_code0, s_scale0, s_code1, s_scale1, s_code2, s_scale2}) {
        const std::size_t eb = traits::elem_bytes(k);  // read first: see allocate()
        const std::size_t b = static_cast<std::size_t>(traits::count(k, sizes[i])) * eb;
        if (b) std::memset(host[k].data() + offsets[i][k], 0, b);
      }
    }
  }
  /// New gradients on the host side (upload(s_grad) to mirror them).
  void fill_grads(testdata::generator& gen, float sigma = 1.0f, double special = 0.05, bool non_finite = false) {
    for (std::size_t i = 0; i < count(); ++i) {
      auto* g = at<typename Config::grad_type>(s_grad, i, false);
      for (std::int64_t e = 0; e < sizes[i]; ++e)
        g[e] = format::from_float<typename Config::grad_type>(gen.value(sigma, special, non_finite));
    }
  }

  /// Compares every slot (padding included) of the device copy with the
  /// host copy; names the first difference.
  bool same(std::string& where) const {
    for (int k = 0; k < s_count; ++k) {
      const auto d = download(k);
      if (d.size() != host[k].size()) {
        where = std::string(slot_name(k)) + ": sizes differ";
        return false;
      }
      for (std::size_t b = 0; b < d.size(); ++b) {
        if (d[b] != host[k][b]) {
          std::size_t tensor = 0;
          while (tensor + 1 < offsets.size() && offsets[tensor + 1][k] <= b) ++tensor;
          const std::size_t eb = traits::elem_bytes(k) ? traits::elem_bytes(k) : 1;
          const long long elem = (static_cast<long long>(b) - static_cast<long long>(offsets[tensor][k])) /
                                 static_cast<long long>(eb);
          char buf[256];
          std::snprintf(buf, sizeof buf, "%s: byte %zu (tensor %zu of size %lld, element %lld): gpu %02x cpu %02x",
                        slot_name(k), b, tensor, static_cast<long long>(sizes[tensor]), elem, d[b], host[k][b]);
          where = buf;
          return false;
        }
      }
    }
    return true;
  }
};

/// Steps the host copy with cpu::step_serial.
template <class Config>
status cpu_step(tensor_set<Config>& ts, const typename Config::hyper& h, const step_args& a) {
  const auto refs = ts.refs(false);
  return cpu::step_serial<Config>(h, a, refs.data(), refs.size());
}

/// Step s of `ts` on both sides, cpu::step_serial and the device plan's ref
/// r (step_plan::ref(), or with_grid of it), with fresh gradients (non-finite
/// ones among them when asked); every byte compared afterwards.
template <class Config, class Ref>
void step_and_compare(tensor_set<Config>& ts, const Ref& r, const typename Config::hyper& h, int s,
                      testdata::generator& gen, bool non_finite = false) {
  ts.fill_grads(gen, 1.0f, 0.05, non_finite);
  ts.upload(s_grad);
  step_args a;
  a.step = s;
  STATUS_OK(cpu_step(ts, h, a));
  STATUS_OK(r.step_async(h, a, nullptr));
  GPU_CHECK(cudaDeviceSynchronize());
  std::string where;
  const bool same = ts.same(where);
  INFO("step ", s, " (lr ", h.lr, "): ", where);
  REQUIRE(same);
}

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace gpu_test

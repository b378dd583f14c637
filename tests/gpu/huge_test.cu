// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Tensors past 2^31 elements (docs/test-matrix.md C17): N in {2^31 - 1, 2^31,
// 2^31 + 1, 2^32 + 33}, one tensor each, two steps on the GPU. Windows at
// the start, around 2^31 and at the end are stepped on the CPU from the
// same initial bytes and must match bitwise; sentinel bytes past every
// buffer's end must be untouched. About 31 GB of device memory at the
// largest size.
#include "common/configs.hpp"
#include "gpu_harness.hpp"

using namespace gpu_test;
namespace tc = testconfigs;

namespace {

using C = tc::adamw_default;

FLASHOPTIM_HOST_DEVICE inline std::uint64_t hash(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
FLASHOPTIM_HOST_DEVICE inline float value_of(std::uint64_t h) {
  // roughly N(0, 1)-sized values with a spread of exponents
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f) - 0.5f;
  const int e = static_cast<int>((h >> 8) & 7) - 4;
  return u * format::pow2(e);
}

__global__ void init_kernel(std::int64_t n, bf16* param, std::int8_t* aux) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    C::master::encode(value_of(hash(static_cast<std::uint64_t>(i))), param[i], aux[i]);
}
__global__ void grad_kernel(std::int64_t n, bf16* grad, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    grad[i] = format::from_float<bf16>(value_of(hash(static_cast<std::uint64_t>(i) ^ seed)));
}

struct window {
  std::int64_t begin, end;
};

/// Host copy of one window of every slot.
struct window_bytes {
  std::array<std::vector<unsigned char>, s_count> b;
};

void run(std::int64_t n) {
  using traits = slot_traits<C>;
  INFO("n = ", n);
  std::array<device_bytes, s_count> mem;
  std::array<std::size_t, s_count> bytes{};
  for (int k = 0; k < s_count; ++k) {
    const std::size_t eb = traits::elem_bytes(k);  // read first: see gpu_harness.hpp, allocate()
    bytes[k] = static_cast<std::size_t>(traits::count(k, n)) * eb;
    mem[k] = device_bytes(bytes[k] + pad_bytes);
    GPU_CHECK(cudaMemset(mem[k].ptr + bytes[k], sentinel_byte, pad_bytes));
  }
  GPU_CHECK(cudaMemset(mem[s_code0].ptr, 0, bytes[s_code0]));
  GPU_CHECK(cudaMemset(mem[s_scale0].ptr, 0, bytes[s_scale0]));
  GPU_CHECK(cudaMemset(mem[s_code1].ptr, 0, bytes[s_code1]));
  GPU_CHECK(cudaMemset(mem[s_scale1].ptr, 0, bytes[s_scale1]));
  init_kernel<<<132 * 16, 256>>>(n, reinterpret_cast<bf16*>(mem[s_param].ptr),
                                 reinterpret_cast<std::int8_t*>(mem[s_aux].ptr));
  GPU_CHECK(cudaGetLastError());

  tensor_ref<C> t;
  t.param = reinterpret_cast<bf16*>(mem[s_param].ptr);
  t.aux = reinterpret_cast<std::int8_t*>(mem[s_aux].ptr);
  t.grad = reinterpret_cast<const bf16*>(mem[s_grad].ptr);
  flashoptim::slot_at<0>(t.states).codes = reinterpret_cast<std::int8_t*>(mem[s_code0].ptr);
  flashoptim::slot_at<0>(t.states).scales = reinterpret_cast<float*>(mem[s_scale0].ptr);
  flashoptim::slot_at<1>(t.states).codes = reinterpret_cast<std::uint8_t*>(mem[s_code1].ptr);
  flashoptim::slot_at<1>(t.states).scales = reinterpret_cast<float*>(mem[s_scale1].ptr);
  t.size = n;
  t.seed = 5;
  device::step_plan<C> plan;
  STATUS_OK(plan.build(&t, 1));

  const std::int64_t two31 = std::int64_t{1} << 31;
  const std::vector<window> windows = {
      {0, 8192}, {(two31 - 8192) / 32 * 32, std::min(n, two31 + 8192)}, {(n - 9000) / 32 * 32, n}};
  auto fetch = [&](const window& w, window_bytes& out) {
    for (int k = 0; k < s_count; ++k) {
      const std::int64_t b0 = k == s_scale0 || k == s_scale1 ? w.begin / 32 : w.begin;
      const std::int64_t b1 = k == s_scale0 || k == s_scale1 ? (w.end + 31) / 32 : w.end;
      const std::size_t eb = traits::elem_bytes(k);
      out.b[k].resize(static_cast<std::size_t>(b1 - b0) * eb);
      if (eb)
        GPU_CHECK(cudaMemcpy(out.b[k].data(), mem[k].ptr + static_cast<std::size_t>(b0) * eb, out.b[k].size(),
                             cudaMemcpyDeviceToHost));
    }
  };
  auto host_ref = [&](const window& w, window_bytes& wb) {
    tensor_ref<C> r;
    r.param = reinterpret_cast<bf16*>(wb.b[s_param].data());
    r.aux = reinterpret_cast<std::int8_t*>(wb.b[s_aux].data());
    r.grad = reinterpret_cast<const bf16*>(wb.b[s_grad].data());
    flashoptim::slot_at<0>(r.states).codes = reinterpret_cast<std::int8_t*>(wb.b[s_code0].data());
    flashoptim::slot_at<0>(r.states).scales = reinterpret_cast<float*>(wb.b[s_scale0].data());
    flashoptim::slot_at<1>(r.states).codes = reinterpret_cast<std::uint8_t*>(wb.b[s_code1].data());
    flashoptim::slot_at<1>(r.states).scales = reinterpret_cast<float*>(wb.b[s_scale1].data());
    r.size = w.end - w.begin;
    r.seed = t.seed;
    return r;
  };

  C::hyper h;
  h.lr = 1e-2;
  std::vector<window_bytes> cpu(windows.size());
  for (int s = 1; s <= 2; ++s) {
    grad_kernel<<<132 * 16, 256>>>(n, reinterpret_cast<bf16*>(mem[s_grad].ptr), 1000 + s);
    GPU_CHECK(cudaGetLastError());
    GPU_CHECK(cudaDeviceSynchronize());
    step_args a;
    a.step = s;
    for (std::size_t w = 0; w < windows.size(); ++w) {
      window_bytes cur;
      fetch(windows[w], cur);
      if (s == 1) {
        cpu[w] = cur;
      } else {
        cpu[w].b[s_grad] = cur.b[s_grad];
      }
      const auto r = host_ref(windows[w], cpu[w]);
      STATUS_OK(cpu::step_serial<C>(h, a, &r, 1));
    }
    STATUS_OK(plan.step_async(h, a, nullptr));
    GPU_CHECK(cudaDeviceSynchronize());
  }
  for (std::size_t w = 0; w < windows.size(); ++w) {
    window_bytes gpu;
    fetch(windows[w], gpu);
    for (int k = 0; k < s_count; ++k) {
      CAPTURE(w);
      CAPTURE(slot_name(k));
      CHECK(gpu.b[k] == cpu[w].b[k]);
    }
  }
  for (int k = 0; k < s_count; ++k) {
    std::vector<unsigned char> pad(pad_bytes);
    GPU_CHECK(cudaMemcpy(pad.data(), mem[k].ptr + bytes[k], pad_bytes, cudaMemcpyDeviceToHost));
    bool intact = true;
    for (auto c : pad) intact &= c == sentinel_byte;
    CAPTURE(slot_name(k));
    CHECK(intact);
  }
}

}  // namespace

TEST_CASE("tensors past 2^31 elements (C17)") {
  for (std::int64_t n : {(std::int64_t{1} << 31) - 1, std::int64_t{1} << 31, (std::int64_t{1} << 31) + 1,
                         (std::int64_t{1} << 32) + 33})
    run(n);
}

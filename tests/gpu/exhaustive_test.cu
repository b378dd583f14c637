// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Device == host over every input (docs/test-matrix.md C1/C4 on the GPU): the format
// conversions that use CUDA intrinsics on the device (cvt.rn.bf16, cvt f16,
// cvt satfinite e4m3/e5m2), the master-weight modes' encode and decode, the
// kernel's shared-memory tables, and the device computation of step
// scalars. Each input's output is hashed with its index into a 64-bit sum
// (order-independent, so the GPU adds with atomics); a chunk whose sums
// differ is bisected down to the first differing input. Decoded fp32 NaNs
// are compared as "a NaN": the device's arithmetic returns the canonical
// NaN where the host's keeps a payload, and every store canonicalizes.
#include <omp.h>

#include <cinttypes>
#include <cstdio>

#include "common/data.hpp"
#include "flashoptim/kernel/code_tables.cuh"
#include "flashoptim/kernel/proven_codecs.cuh"
#include "gpu_harness.hpp"

using namespace gpu_test;

namespace {

FLASHOPTIM_HOST_DEVICE inline std::uint64_t mix(std::uint64_t i, std::uint64_t v) {
  std::uint64_t z = v ^ (i * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct no_tables {
  static constexpr std::size_t shared_bytes = 0;
  __device__ static void prepare() {}
};

template <class F>
__global__ void sum_kernel(std::uint64_t begin, std::uint64_t count, unsigned long long* sum) {
  F::prepare();
  __syncthreads();
  unsigned long long s = 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t k = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count; k += stride)
    s += mix(begin + k, F::eval(begin + k));
  atomicAdd(sum, s);
}

template <class F>
__global__ void value_kernel(std::uint64_t begin, std::uint64_t count, std::uint64_t* out) {
  F::prepare();
  __syncthreads();
  for (std::uint64_t k = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    out[k] = F::eval(begin + k);
}

template <class F>
std::uint64_t device_sum(std::uint64_t begin, std::uint64_t count) {
  static device_bytes mem(8);
  GPU_CHECK(cudaMemset(mem.ptr, 0, 8));
  sum_kernel<F><<<132 * 8, 256, F::shared_bytes>>>(begin, count, reinterpret_cast<unsigned long long*>(mem.ptr));
  GPU_CHECK(cudaGetLastError());
  std::uint64_t s = 0;
  GPU_CHECK(cudaMemcpy(&s, mem.ptr, 8, cudaMemcpyDeviceToHost));
  return s;
}

template <class F>
std::uint64_t host_sum(std::uint64_t begin, std::uint64_t count) {
  unsigned long long s = 0;
  const long long n = static_cast<long long>(count);
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (long long k = 0; k < n; ++k) s += mix(begin + k, F::eval(begin + k));
  return s;
}

/// First input in [begin, begin + count) where device and host differ.
template <class F>
std::uint64_t bisect(std::uint64_t begin, std::uint64_t count) {
  while (count > 65536) {
    const std::uint64_t half = count / 2;
    if (device_sum<F>(begin, half) != host_sum<F>(begin, half)) {
      count = half;
    } else {
      begin += half;
      count -= half;
    }
  }
  device_bytes out(count * 8);
  value_kernel<F><<<64, 256, F::shared_bytes>>>(begin, count, reinterpret_cast<std::uint64_t*>(out.ptr));
  std::vector<std::uint64_t> got(count);
  GPU_CHECK(cudaMemcpy(got.data(), out.ptr, count * 8, cudaMemcpyDeviceToHost));
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t want = F::eval(begin + k);
    if (got[k] != want) {
      std::printf("  first difference at input 0x%" PRIx64 ": device 0x%" PRIx64 " host 0x%" PRIx64 "\n", begin + k,
                  got[k], want);
      return begin + k;
    }
  }
  return ~0ull;
}

/// Every input of [0, total), in chunks.
template <class F>
void sweep(const char* name, std::uint64_t total) {
  const std::uint64_t chunk = std::uint64_t{1} << 30;
  const double start = omp_get_wtime();
  int bad_chunks = 0;
  for (std::uint64_t b = 0; b < total; b += chunk) {
    const std::uint64_t c = total - b < chunk ? total - b : chunk;
    if (device_sum<F>(b, c) != host_sum<F>(b, c)) {
      ++bad_chunks;
      std::printf("%s: chunk at 0x%" PRIx64 " differs\n", name, b);
      bisect<F>(b, c);
    }
  }
  // One line per sweep (flushed: a run cut short still says what passed).
  std::printf("%s: %s (%.1f s)\n", name, bad_chunks == 0 ? "same" : "DIFFERS", omp_get_wtime() - start);
  std::fflush(stdout);
  INFO(name);
  CHECK(bad_chunks == 0);
}

inline constexpr std::uint64_t all32 = std::uint64_t{1} << 32;

template <class T>
struct rne : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const T v = format::from_float<T>(format::float_from_bits(static_cast<std::uint32_t>(i)));
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
  }
};

/// Stochastic rounding is the same generic code on both sides: every 4th
/// fp32 pattern (all exponents and signs) with hashed random bits.
template <class T>
struct stochastic : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const std::uint32_t r = static_cast<std::uint32_t>(mix(i, 12345));
    const T v = format::from_float<T>(format::float_from_bits(static_cast<std::uint32_t>(i * 4 + (i >> 28))),
                                      format::rounding::stochastic, r);
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
  }
};

template <class T>
struct widen : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    T v;
    const auto bits = static_cast<decltype(v.bits)>(i);
    std::memcpy(&v, &bits, sizeof v);
    return format::bits_of(format::canonicalize_nan(format::to_float(v)));
  }
};

template <class M>
struct master_encode : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    typename M::param_type p;
    typename M::aux_type a{};
    M::encode(format::float_from_bits(static_cast<std::uint32_t>(i)), p, a);
    std::uint64_t pb = 0, ab = 0;
    std::memcpy(&pb, &p, sizeof p);
    if constexpr (storage_bytes<typename M::aux_type> != 0) std::memcpy(&ab, &a, sizeof a);
    return pb | (ab << 32);
  }
};

/// decode over all (param, aux) pairs: i = param bits | aux bits << 16.
template <class M>
struct master_decode : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    typename M::param_type p;
    typename M::aux_type a;
    const std::uint16_t pb = static_cast<std::uint16_t>(i);
    std::memcpy(&p, &pb, sizeof p);
    const std::uint16_t ab = static_cast<std::uint16_t>(i >> 16);
    std::memcpy(&a, &ab, sizeof a);
    return format::bits_of(format::canonicalize_nan(M::decode(p, a)));
  }
};

/// The kernel's tabulated decode (shared-memory fraction table) on the
/// device against the host's Master::decode.
template <class M>
struct tabulated_decode {
  using T = kernel::kernel_master<M, true, false>;
  static constexpr std::size_t shared_bytes = kernel::table_entries * sizeof(float);
  __device__ static void prepare() {
    for (unsigned b = threadIdx.x; b < 256; b += blockDim.x) kernel::shared_tables()[b] = T::entry(b);
  }
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    typename M::param_type p;
    const std::uint16_t pb = static_cast<std::uint16_t>(i);
    std::memcpy(&p, &pb, sizeof p);
    const auto a = static_cast<std::int8_t>(static_cast<std::uint8_t>(i >> 16));
    return format::bits_of(format::canonicalize_nan(T::decode(p, a)));
  }
};

/// A tabulated codec's table entries and decodes against code_value.
template <class Codec>
struct tabulated_codec_decode {
  using T = kernel::kernel_codec<Codec, 1, true, false>;
  static constexpr std::size_t shared_bytes = 2 * kernel::table_entries * sizeof(float);
  __device__ static void prepare() {
    for (unsigned b = threadIdx.x; b < 256; b += blockDim.x)
      kernel::shared_tables()[kernel::table_entries + b] = T::entry(b);
  }
  /// i = code byte | scale bits << 8 (scales from a hash of i)
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    typename Codec::code_type q[1];
    const unsigned char b = static_cast<unsigned char>(i);
    std::memcpy(&q[0], &b, 1);
    // finite non-negative scales: a NaN scale's payload is not a value
    const std::uint32_t sbits = static_cast<std::uint32_t>(mix(i >> 8, 7)) & (sizeof(typename Codec::scale_type) == 4 ? 0x3fffffffu : 0x7bffu);
    typename Codec::scale_type s;
    std::memcpy(&s, &sbits, sizeof s);
    float out[1];
    T::decode_tile(q, s, out);
    return format::bits_of(format::canonicalize_nan(out[0]));
  }
};

/// A whole tile of 8 codes through kernel_codec::decode_tile (fp8 codes:
/// the hardware conversion, pairs from both halves of each loaded word)
/// against the host's: i's hash gives the codes and the scale, the result
/// is a digest of the 8 decoded values.
template <class Codec>
struct codec_tile_decode : no_tables {
  using T = kernel::kernel_codec<Codec, 1, false, false>;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    typename Codec::code_type q[8];
    const std::uint64_t codes = mix(i, 11);
    std::memcpy(q, &codes, 8);
    const std::uint32_t sbits = static_cast<std::uint32_t>(mix(i, 13)) & 0x3fffffffu;
    typename Codec::scale_type s;
    std::memcpy(&s, &sbits, sizeof s);
    float out[8];
    T::decode_tile(q, s, out);
    std::uint64_t d = 0;
    for (int k = 0; k < 8; ++k) d = mix(d, format::bits_of(format::canonicalize_nan(out[k])));
    return d;
  }
};

}  // namespace

TEST_CASE("bf16 -> fp32 (the device widens through a 16-bit pair move), all inputs") {
  sweep<widen<bf16>>("bf16 -> fp32", 1 << 16);
}

TEST_CASE("fp32 -> bf16 / fp16 / fp8, all 2^32 inputs, device == host") {
  sweep<rne<bf16>>("bf16 rne", all32);
  sweep<rne<fp16>>("fp16 rne", all32);
  sweep<rne<fp8_e4m3>>("e4m3 rne", all32);
  sweep<rne<fp8_e5m2>>("e5m2 rne", all32);
  sweep<stochastic<bf16>>("bf16 stochastic", all32 / 4);
  sweep<stochastic<fp16>>("fp16 stochastic", all32 / 4);
  sweep<widen<bf16>>("bf16 -> fp32", 1 << 16);
  sweep<widen<fp16>>("fp16 -> fp32", 1 << 16);
  sweep<widen<fp8_e4m3>>("e4m3 -> fp32", 256);
  sweep<widen<fp8_e5m2>>("e5m2 -> fp32", 256);
}

TEST_CASE("master modes, encode over all 2^32 fp32 inputs and decode over all pairs, device == host") {
  using namespace flashoptim::codec;
  sweep<master_encode<ulp_correction<bf16, std::int8_t>>>("ulp bf16+int8 encode", all32);
  sweep<master_encode<ulp_correction<bf16, std::int16_t>>>("ulp bf16+int16 encode", all32);
  sweep<master_encode<ulp_correction<fp16, std::int8_t>>>("ulp fp16+int8 encode", all32);
  sweep<master_encode<ulp_correction<fp16, std::int16_t>>>("ulp fp16+int16 encode", all32);
  sweep<master_encode<exact_split>>("exact_split encode", all32);
  sweep<master_encode<rounded_split>>("rounded_split encode", all32);
  sweep<master_encode<fp32_master<bf16>>>("fp32_master encode", all32);
  sweep<master_decode<ulp_correction<bf16, std::int8_t>>>("ulp bf16+int8 decode", 1 << 24);
  sweep<master_decode<ulp_correction<fp16, std::int8_t>>>("ulp fp16+int8 decode", 1 << 24);
  sweep<master_decode<ulp_correction<bf16, std::int16_t>>>("ulp bf16+int16 decode", all32);
  sweep<master_decode<ulp_correction<fp16, std::int16_t>>>("ulp fp16+int16 decode", all32);
  sweep<master_decode<exact_split>>("exact_split decode", all32);
  sweep<master_decode<rounded_split>>("rounded_split decode", 1 << 24);
}

TEST_CASE("the kernel's shared-memory tables decode as the host does") {
  using namespace flashoptim::codec;
  sweep<tabulated_decode<ulp_correction<bf16, std::int8_t>>>("tabulated ulp bf16+int8 decode", 1 << 24);
  sweep<tabulated_decode<ulp_correction<fp16, std::int8_t>>>("tabulated ulp fp16+int8 decode", 1 << 24);
  sweep<tabulated_codec_decode<defaults::momentum>>("defaults::momentum", 1 << 24);
  sweep<tabulated_codec_decode<defaults::second_moment>>("defaults::second_moment", 1 << 24);
  sweep<tabulated_codec_decode<reference::momentum>>("reference::momentum", 1 << 24);
  sweep<tabulated_codec_decode<reference::second_moment>>("reference::second_moment", 1 << 24);
  // fp8 codes decode through the hardware conversion on sm_89+ (no table).
  sweep<tabulated_codec_decode<precision::fp8_momentum>>("fp8 momentum (cvt)", 1 << 24);
  sweep<tabulated_codec_decode<precision::fp8_second_moment>>("fp8 second moment (cvt)", 1 << 24);
  using e5m2_m = grouped<fp8_code<fp8_e5m2>, identity, scale_fp32>;
  using e5m2_v = grouped<fp8_code<fp8_e5m2>, sqrt_compander, scale_fp32, code_rounding::half_up_nonzero>;
  sweep<tabulated_codec_decode<e5m2_m>>("e5m2 momentum (cvt)", 1 << 24);
  sweep<tabulated_codec_decode<e5m2_v>>("e5m2 second moment (cvt)", 1 << 24);
  sweep<codec_tile_decode<precision::fp8_momentum>>("fp8 momentum, tiles of 8 (cvt)", 1 << 22);
  sweep<codec_tile_decode<precision::fp8_second_moment>>("fp8 second moment, tiles of 8 (cvt)", 1 << 22);
  sweep<codec_tile_decode<e5m2_v>>("e5m2 second moment, tiles of 8 (cvt)", 1 << 22);
}

namespace {
/// The kernel's branch-free ULP encode against the host's M::encode.
template <class M>
struct branch_free_encode : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    typename M::param_type p;
    typename M::aux_type a{};
    kernel::kernel_master<M, false, true>::encode(format::float_from_bits(static_cast<std::uint32_t>(i)), p, a);
    std::uint64_t pb = 0, ab = 0;
    std::memcpy(&pb, &p, sizeof p);
    std::memcpy(&ab, &a, sizeof a);
    return pb | (ab << 32);
  }
};

/// The branch-free softsign against the host's softsign::post, all inputs.
struct branch_free_softsign_post : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float y = kernel::branch_free_softsign::post(format::float_from_bits(static_cast<std::uint32_t>(i)));
    return format::bits_of(format::canonicalize_nan(y));
  }
};

/// The clamped softsign over every fp32 value in [-1, 1]: i < half is the
/// positive value with those bits, the rest the negative ones.
struct clamped_softsign_post : no_tables {
  static constexpr std::uint64_t half = 0x3f800001ull;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const std::uint32_t bits =
        i < half ? static_cast<std::uint32_t>(i) : (static_cast<std::uint32_t>(i - half) | 0x80000000u);
    return format::bits_of(kernel::clamped_softsign::post(format::float_from_bits(bits)));
  }
};

/// Code rounding (the device converts with cvt.rmi, the host clamps in
/// float): every fp32 y, four codes and modes at once.
struct round_code_eval : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float y = format::float_from_bits(static_cast<std::uint32_t>(i));
    const auto r = static_cast<std::uint32_t>(mix(i, 3));
    using codec::code_rounding;
    const std::uint64_t a = static_cast<std::uint8_t>(codec::detail::round_code<-127, 127>(y, code_rounding::half_up, 0));
    const std::uint64_t b = static_cast<std::uint8_t>(codec::detail::round_code<0, 254>(y, code_rounding::half_up_nonzero, 0));
    const std::uint64_t c = static_cast<std::uint8_t>(codec::detail::round_code<0, 255>(y, code_rounding::half_up, 0));
    const std::uint64_t d = static_cast<std::uint8_t>(codec::detail::round_code<-127, 127>(y, code_rounding::stochastic, r));
    return a | (b << 8) | (c << 16) | (d << 24);
  }
};

/// format::sqrt_rn: the device's branch-free formulation against the
/// host's sqrtf (IEEE), and the device's __fsqrt_rn against it too.
struct sqrt_rn_eval : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float x = format::float_from_bits(static_cast<std::uint32_t>(i));
    return format::bits_of(format::canonicalize_nan(format::sqrt_rn(x)));
  }
};
struct fsqrt_rn_eval : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float x = format::float_from_bits(static_cast<std::uint32_t>(i));
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(format::canonicalize_nan(__fsqrt_rn(x)));
#else
    return format::bits_of(format::canonicalize_nan(__builtin_sqrtf(x)));
#endif
  }
};
}  // namespace

TEST_CASE("sqrt_rn: device formulation == __fsqrt_rn == host sqrtf, all 2^32 inputs") {
  sweep<sqrt_rn_eval>("format::sqrt_rn", all32);
  sweep<fsqrt_rn_eval>("__fsqrt_rn", all32);
}

TEST_CASE("the kernel's branch-free encoders are the host's, over every input") {
  using namespace flashoptim::codec;
  sweep<branch_free_encode<ulp_correction<bf16, std::int8_t>>>("branch-free ulp bf16+int8 encode", all32);
  sweep<branch_free_encode<ulp_correction<bf16, std::int16_t>>>("branch-free ulp bf16+int16 encode", all32);
  sweep<branch_free_encode<ulp_correction<fp16, std::int8_t>>>("branch-free ulp fp16+int8 encode", all32);
  sweep<branch_free_encode<ulp_correction<fp16, std::int16_t>>>("branch-free ulp fp16+int16 encode", all32);
  sweep<branch_free_softsign_post>("branch-free softsign post", all32);
  sweep<clamped_softsign_post>("clamped softsign post", 2 * clamped_softsign_post::half);
  sweep<round_code_eval>("code rounding", all32);
}

namespace {
template <class Rule>
__global__ void scalars_kernel(const typename Rule::hyper* h, const double* lr, const std::int64_t* step,
                               const double* inv, typename Rule::scalars* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Rule::make_scalars(h[i], lr[i], step[i], inv[i]);
}

template <class Rule>
void check_scalars(testdata::generator& gen) {
  const int n = 20000;
  std::vector<typename Rule::hyper> h(n);
  std::vector<double> lr(n), inv(n);
  std::vector<std::int64_t> step(n);
  for (int i = 0; i < n; ++i) {
    if constexpr (std::is_same<Rule, rule::adamw>::value || std::is_same<Rule, rule::lion>::value) {
      h[i].beta1 = gen.uniform();
      h[i].beta2 = gen.uniform();
    }
    if constexpr (std::is_same<Rule, rule::sgd>::value) {
      h[i].momentum = gen.uniform();
      h[i].dampening = gen.uniform();
    }
    h[i].weight_decay = gen.uniform() * 0.2;
    h[i].decouple_lr = i % 3 == 0;
    h[i].initial_lr = 1e-3 + gen.uniform();
    lr[i] = std::ldexp(gen.uniform(), -static_cast<int>(gen.u32() % 20));
    step[i] = 1 + static_cast<std::int64_t>(gen.u32() % (i % 2 ? 100 : 10000000));
    inv[i] = std::ldexp(1.0 + gen.uniform(), -static_cast<int>(gen.u32() % 30));
  }
  device_bytes dh(n * sizeof(h[0])), dlr(n * 8), dstep(n * 8), dinv(n * 8),
      dout(n * sizeof(typename Rule::scalars));
  GPU_CHECK(cudaMemcpy(dh.ptr, h.data(), dh.bytes, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dlr.ptr, lr.data(), dlr.bytes, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dstep.ptr, step.data(), dstep.bytes, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dinv.ptr, inv.data(), dinv.bytes, cudaMemcpyHostToDevice));
  scalars_kernel<Rule><<<(n + 255) / 256, 256>>>(
      reinterpret_cast<const typename Rule::hyper*>(dh.ptr), reinterpret_cast<const double*>(dlr.ptr),
      reinterpret_cast<const std::int64_t*>(dstep.ptr), reinterpret_cast<const double*>(dinv.ptr),
      reinterpret_cast<typename Rule::scalars*>(dout.ptr), n);
  std::vector<typename Rule::scalars> got(n);
  GPU_CHECK(cudaMemcpy(got.data(), dout.ptr, dout.bytes, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const auto want = Rule::make_scalars(h[i], lr[i], step[i], inv[i]);
    // Compare the float members (padding after bools is not a value).
    bad += std::memcmp(&want, &got[i], offsetof(typename Rule::scalars, inv_grad_scale) + sizeof(float)) != 0;
  }
  INFO(Rule::name);
  CHECK(bad == 0);
}
}  // namespace

TEST_CASE("step scalars computed on the device are the host's") {
  testdata::generator gen(99);
  check_scalars<rule::adamw>(gen);
  check_scalars<rule::sgd>(gen);
  check_scalars<rule::lion>(gen);
}

// ---------------------------------------------------------------------------
// The proven-range arithmetic (kernel/proven_math.hpp) on the device against
// the codecs' own functions on the host, over every input of each domain.
// (The host build of the same arithmetic is checked against the codecs by
// test_proven_math_cpu.)

namespace {
namespace proven = flashoptim::kernel::proven;

/// ULP encode over all 2^32 inputs (the device converts with cvt alone).
template <class T, class C>
struct proven_ulp_encode : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float x = format::float_from_bits(static_cast<std::uint32_t>(i));
    T p;
    C c{};
#if FLASHOPTIM_DEVICE_CODE
    proven::ulp_arithmetic<T, C>::encode(x, p, c);
#else
    codec::ulp_correction<T, C>::encode(x, p, c);
#endif
    std::uint64_t ab = 0;
    std::memcpy(&ab, &c, sizeof c);
    return std::uint64_t{p.bits} | (ab << 32);
  }
};

/// ULP decode over every (param, correction) pair: i = param | correction
/// << 16; int8 corrections through the kernel's shared-memory table.
template <class T, class C>
struct proven_ulp_decode {
  using M = codec::ulp_correction<T, C>;
  static constexpr bool tabulated = sizeof(C) == 1;
  using K = kernel::proven_master<M, tabulated>;
  static constexpr std::size_t shared_bytes = tabulated ? kernel::table_entries * sizeof(float) : 0;
  __device__ static void prepare() {
    if constexpr (tabulated) {
      for (unsigned b = threadIdx.x; b < 256; b += blockDim.x) kernel::shared_tables()[b] = K::entry(b);
    }
  }
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const T p{static_cast<std::uint16_t>(i)};
    const C c = static_cast<C>(static_cast<std::make_unsigned_t<C>>(i >> 16));
#if FLASHOPTIM_DEVICE_CODE
    const float x = K::decode(p, c);
#else
    const float x = M::decode(p, c);
#endif
    return format::bits_of(format::canonicalize_nan(x));
  }
};

/// 1 / s for every s in [2^-64, 2^64] (the division's fast path).
struct proven_reciprocal : no_tables {
  static constexpr std::uint64_t count = 0x40000001ull;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float s = format::float_from_bits(0x1f800000u + static_cast<std::uint32_t>(i));
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::reciprocal(s));
#else
    return format::bits_of(format::div_rn(1.0f, s));
#endif
  }
};

/// sqrt(v) for every v in [2^-100, 2^126] (__fsqrt_rn's fast path).
struct proven_sqrt : no_tables {
  static constexpr std::uint64_t count = 0x71000001ull;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float v = format::float_from_bits(0x0d800000u + static_cast<std::uint32_t>(i));
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::sqrt_in_range(v));
#else
    return format::bits_of(format::sqrt_rn(v));
#endif
  }
};

/// sqrt(v) for v = +0 and every v in [2^-100, 2^126] (the zero-tolerant
/// attempt's square root, kernel/range_checked.cuh).
struct proven_sqrt_or_zero : no_tables {
  static constexpr std::uint64_t count = 0x71000002ull;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float v = i == 0 ? 0.0f : format::float_from_bits(0x0d800000u + static_cast<std::uint32_t>(i - 1));
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::sqrt_in_range_or_zero(v));
#else
    return format::bits_of(format::sqrt_rn(v));
#endif
  }
};

/// a / b for 2^32 pseudo-random pairs with |a|, b in [2^-60, 2^60]
/// (exponents uniform over the range, so every boundary binade is hit).
struct proven_division : no_tables {
  FLASHOPTIM_HOST_DEVICE static void operands(std::uint64_t i, float& a, float& b) {
    const std::uint64_t h = mix(i, 0x5eed);
    const std::uint32_t ea = 67u + static_cast<std::uint32_t>((h >> 8) % 121u);   // 2^-60 .. 2^60
    const std::uint32_t eb = 67u + static_cast<std::uint32_t>((h >> 16) % 121u);
    const std::uint32_t ma = static_cast<std::uint32_t>(h >> 24) & 0x7fffffu;
    const std::uint32_t mb = static_cast<std::uint32_t>(h >> 47) & 0x7fffffu;
    const std::uint32_t sa = static_cast<std::uint32_t>(h & 1u) << 31;
    a = format::float_from_bits(sa | ea << 23 | (ea == 187u ? 0u : ma));
    b = format::float_from_bits(eb << 23 | (eb == 187u ? 0u : mb));
  }
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    float a, b;
    operands(i, a, b);
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::div_in_range(a, b));
#else
    return format::bits_of(format::div_rn(a, b));
#endif
  }
};

/// +0 / b for every b in [2^-60, 2^60] (the zero-tolerant attempt divides
/// m = +0 by d through the fast path, kernel/range_checked.cuh).
struct proven_division_of_zero : no_tables {
  static constexpr std::uint64_t count = (187ull - 67ull) * (1ull << 23) + 1ull;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float b = format::float_from_bits((67u << 23) + static_cast<std::uint32_t>(i));
#if FLASHOPTIM_DEVICE_CODE
    // +0 from the index (i < 2^31): a run-time operand, as m is in the step.
    const float zero = format::float_from_bits(static_cast<std::uint32_t>(i >> 40));
    return format::bits_of(proven::div_in_range(zero, b));
#else
    return format::bits_of(format::div_rn(0.0f, b));
#endif
  }
};

/// sqrt(v) for +0 and every v in (0, 2^126] (the tiny-tolerant attempt's
/// square root: below 2^-100 the fast path of v * 2^64, scaled by 2^-32).
struct proven_sqrt_or_tiny : no_tables {
  static constexpr std::uint64_t count = 0x7e800001ull;  // the patterns 0 .. 2^126
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float v = format::float_from_bits(static_cast<std::uint32_t>(i));
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::sqrt_or_tiny(v));
#else
    return format::bits_of(format::sqrt_rn(v));
#endif
  }
};

/// RN(1 / (s * 2^64)) for every s in [2^-149, 2^-64) (the lifted
/// reciprocal of a group maximum below 2^-64, scale_fp32's make_reciprocal).
struct proven_reciprocal_lifted : no_tables {
  static constexpr std::uint64_t count = 0x1f800000ull - 1ull;  // the patterns 1 .. 2^-64 - ulp
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float s = format::float_from_bits(1u + static_cast<std::uint32_t>(i));
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::reciprocal_lifted(s));
#else
    return format::bits_of(format::div_rn(1.0f, format::mul_rn(s, format::pow2(64))));
#endif
  }
};

/// a / b for 2^32 pseudo-random pairs with |a| below 2^-60 (subnormals and
/// zeros included) and b in [2^-60, 2^60], where RN(a / b) is at least 2^-126
/// (elsewhere the tiny-tolerant attempt guards on the parameter instead; both
/// sides give 0 there).
struct proven_division_tiny : no_tables {
  FLASHOPTIM_HOST_DEVICE static void operands(std::uint64_t i, float& a, float& b) {
    const std::uint64_t h = mix(i, 0x7117);
    const std::uint32_t ea = static_cast<std::uint32_t>((h >> 8) % 67u);  // 0 (subnormal) .. 66 (2^-61)
    const std::uint32_t eb = 67u + static_cast<std::uint32_t>((h >> 16) % 121u);
    const std::uint32_t ma = static_cast<std::uint32_t>(h >> 24) & 0x7fffffu;
    const std::uint32_t mb = static_cast<std::uint32_t>(h >> 47) & 0x7fffffu;
    const std::uint32_t sa = static_cast<std::uint32_t>(h & 1u) << 31;
    a = format::float_from_bits(sa | ea << 23 | ma);
    b = format::float_from_bits(eb << 23 | (eb == 187u ? 0u : mb));
  }
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    float a, b;
    operands(i, a, b);
    const float exact = format::div_rn(a, b);
    if (!(format::abs_bits(exact) >= format::pow2(-126))) return 0;
#if FLASHOPTIM_DEVICE_CODE
    return format::bits_of(proven::div_or_tiny(a, b));
#else
    return format::bits_of(exact);
#endif
  }
};

/// |n| beyond 1 + 2^-22 never reaches the element rules (|n| <= 1 + 2^-23).
FLASHOPTIM_HOST_DEVICE inline bool element_domain(float n) {
  return !format::is_finite(n) || format::abs_bits(n) <= 1.0f + format::pow2(-22);
}

/// The codec's own element on the host: clamp, post, quantize, sentinel.
template <class Codec>
FLASHOPTIM_HOST_DEVICE std::uint64_t reference_code(float n) {
  using Code = typename Codec::code_format;
  typename Codec::code_type q = Code::sentinel();
  if (format::is_finite(n)) {
    q = Code::quantize(Codec::compander::post(format::min_num(format::max_num(n, -1.0f), 1.0f)), Codec::rounding, 0);
  }
  std::uint8_t b;
  std::memcpy(&b, &q, 1);
  return b;
}

/// The softsign int8 element (defaults::momentum) for every fp32 n.
struct proven_softsign_code : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float n = format::float_from_bits(static_cast<std::uint32_t>(i));
    if (!element_domain(n)) return 0;
#if FLASHOPTIM_DEVICE_CODE
    return static_cast<std::uint8_t>(proven::softsign_int8_code(n));
#else
    return reference_code<codec::defaults::momentum>(n);
#endif
  }
};

/// The sqrt-compander uint8 element, half up and half up nonzero
/// (defaults::second_moment), for every n >= 0, -0, NaN and +inf; the third
/// byte is the positive-operand form for every n > 0 in the domain.
struct proven_sqrt_code : no_tables {
  using half_up = codec::grouped<codec::uint8_code<true>, codec::sqrt_compander, codec::scale_fp32>;
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float n = format::float_from_bits(static_cast<std::uint32_t>(i));
    if (!element_domain(n) || n < 0.0f || i == 0xff800000u) return 0;
    const bool positive = n > 0.0f && format::is_finite(n);
#if FLASHOPTIM_DEVICE_CODE
    return static_cast<std::uint8_t>(proven::sqrt_uint8_code<true>(n)) |
           static_cast<std::uint64_t>(static_cast<std::uint8_t>(proven::sqrt_uint8_code<false>(n))) << 8 |
           (positive ? static_cast<std::uint64_t>(static_cast<std::uint8_t>(proven::sqrt_uint8_code_positive(n))) << 16
                     : 0);
#else
    return reference_code<codec::defaults::second_moment>(n) | reference_code<half_up>(n) << 8 |
           (positive ? reference_code<codec::defaults::second_moment>(n) << 16 : 0);
#endif
  }
};

/// proven::floor_word (the device's FADD.RM on 1.5 * 2^23) against its host
/// form (the bias plus the exact floor) for every fp32 y in [-2^22, 2^22],
/// where the codes use it.
struct proven_floor_word : no_tables {
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float y = format::float_from_bits(static_cast<std::uint32_t>(i));
    if (!(y >= -format::pow2(22) && y <= format::pow2(22))) return 0;
    return static_cast<std::uint32_t>(proven::floor_word(y));
  }
};

/// The fp8 element rule's conversion of a pair (s, -s) for every fp32 s,
/// e4m3 and e5m2, with and without the nonzero step: the pair conversion
/// (which byte is which) and the integer maximum on the device, the host's
/// from_float on the host.
struct proven_fp8_codes : no_tables {
  template <class T, bool Nonzero>
  FLASHOPTIM_HOST_DEVICE static std::uint64_t pair(float s) {
    const float in[2] = {s, format::float_from_bits(format::bits_of(s) ^ 0x80000000u)};
    T q[2];
    proven::fp8_element_codes<T, Nonzero>(in, q);
    return static_cast<std::uint64_t>(q[0].bits) | static_cast<std::uint64_t>(q[1].bits) << 8;
  }
  FLASHOPTIM_HOST_DEVICE static std::uint64_t eval(std::uint64_t i) {
    const float s = format::float_from_bits(static_cast<std::uint32_t>(i));
    return pair<fp8_e4m3, false>(s) | pair<fp8_e4m3, true>(s) << 16 | pair<fp8_e5m2, false>(s) << 32 |
           pair<fp8_e5m2, true>(s) << 48;
  }
};
}  // namespace

TEST_CASE("proven ULP encode on the device == ulp_correction::encode, all 2^32 inputs") {
  sweep<proven_ulp_encode<bf16, std::int8_t>>("proven ulp bf16+int8 encode", all32);
  sweep<proven_ulp_encode<fp16, std::int8_t>>("proven ulp fp16+int8 encode", all32);
  sweep<proven_ulp_encode<bf16, std::int16_t>>("proven ulp bf16+int16 encode", all32);
  sweep<proven_ulp_encode<fp16, std::int16_t>>("proven ulp fp16+int16 encode", all32);
}

TEST_CASE("proven ULP decode on the device == ulp_correction::decode, every pair") {
  sweep<proven_ulp_decode<bf16, std::int8_t>>("proven tabulated ulp bf16+int8 decode", 1 << 24);
  sweep<proven_ulp_decode<fp16, std::int8_t>>("proven tabulated ulp fp16+int8 decode", 1 << 24);
  sweep<proven_ulp_decode<bf16, std::int16_t>>("proven ulp bf16+int16 decode", all32);
  sweep<proven_ulp_decode<fp16, std::int16_t>>("proven ulp fp16+int16 decode", all32);
}

TEST_CASE("proven fast paths: reciprocal, sqrt, division in their ranges == IEEE") {
  sweep<proven_reciprocal>("proven reciprocal on [2^-64, 2^64]", proven_reciprocal::count);
  sweep<proven_sqrt>("proven sqrt on [2^-100, 2^126]", proven_sqrt::count);
  sweep<proven_sqrt_or_zero>("proven sqrt on +0 and [2^-100, 2^126]", proven_sqrt_or_zero::count);
  sweep<proven_division>("proven division, 2^32 pairs in [2^-60, 2^60]", all32);
  sweep<proven_division_of_zero>("proven division of +0 by [2^-60, 2^60]", proven_division_of_zero::count);
  // the tiny-tolerant attempt's lifts (kernel/proven_math.hpp)
  sweep<proven_sqrt_or_tiny>("proven sqrt with the tiny lift on [0, 2^126]", proven_sqrt_or_tiny::count);
  sweep<proven_reciprocal_lifted>("proven lifted reciprocal on [2^-149, 2^-64)", proven_reciprocal_lifted::count);
  sweep<proven_division_tiny>("proven division of |a| < 2^-60 by [2^-60, 2^60], normal quotients, 2^32 pairs", all32);
}

TEST_CASE("proven element rules on the device == clamp, post, quantize, sentinel, all 2^32 inputs") {
  sweep<proven_floor_word>("proven floor word on [-2^22, 2^22]", all32);
  sweep<proven_softsign_code>("proven softsign int8 element", all32);
  sweep<proven_sqrt_code>("proven sqrt uint8 elements", all32);
  sweep<proven_fp8_codes>("proven fp8 element pairs (e4m3, e5m2, nonzero)", all32);
}

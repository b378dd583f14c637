// Synthetic streams: the memory pattern of the step (per thread 8 elements,
// staged with cp.async, S stages, persistent blocks over contiguous units,
// in-place writes) without its arithmetic. Not committed.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1);} } while (0)

template <int B> struct vec;
template <> struct vec<4> { using t = unsigned; };
template <> struct vec<8> { using t = uint2; };
template <> struct vec<16> { using t = uint4; };

struct stream_set {
  char* p[8];
  int bytes[8];  // per thread per tile
  bool write[8];
  int n;
};

template <int NS, int S, int B0, int B1, int B2, int B3, int B4, int B5, int B6>
__global__ void __launch_bounds__(256, 2) streams_kernel(stream_set ss, long long units) {
  constexpr int Bs[7] = {B0, B1, B2, B3, B4, B5, B6};
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int per_stage = 256 * (B0 + B1 + B2 + B3 + B4 + B5 + B6);
  const long long per_block = (units + gridDim.x - 1) / gridDim.x;
  const long long u0 = blockIdx.x * per_block;
  const long long u1 = min(units, u0 + per_block);
  const int t = threadIdx.x;
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  auto issue = [&](long long u, int stage) {
    unsigned off = 0;
#pragma unroll
    for (int s = 0; s < NS; ++s) {
      const char* src = ss.p[s] + (u * 256 + t) * Bs[s];
      const unsigned dst = base + stage * per_stage + off + t * Bs[s];
      if (Bs[s] == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
      else if (Bs[s] == 8) asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst), "l"(src));
      else asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src));
      off += 256 * Bs[s];
    }
  };
  for (int k = 0; k < S - 1; ++k) {
    if (u0 + k < u1) issue(u0 + k, k);
    asm volatile("cp.async.commit_group;");
  }
  int cur = 0;
  for (long long u = u0; u < u1; ++u) {
    const long long ahead = u + S - 1;
    if (ahead < u1) issue(ahead, (cur + S - 1) % S);
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group %0;" ::"n"(S - 1));
    unsigned off = 0;
#pragma unroll
    for (int s = 0; s < NS; ++s) {
      unsigned char* sp = smem + cur * per_stage + off + t * Bs[s];
      char* dst = ss.p[s] + (u * 256 + t) * Bs[s];
      if (ss.write[s]) {
        if (Bs[s] == 16) { auto v = *reinterpret_cast<uint4*>(sp); v.x += 1; *reinterpret_cast<uint4*>(dst) = v; }
        else if (Bs[s] == 8) { auto v = *reinterpret_cast<uint2*>(sp); v.x += 1; *reinterpret_cast<uint2*>(dst) = v; }
        else { auto v = *reinterpret_cast<unsigned*>(sp); v += 1; *reinterpret_cast<unsigned*>(dst) = v; }
      }
      off += 256 * Bs[s];
    }
    cur = (cur + 1) % S;
  }
}

template <int NS, int S, int B0, int B1, int B2, int B3, int B4, int B5, int B6>
double run(const char* name, const std::vector<bool>& wr, long long elems, double copy) {
  const int Bs[7] = {B0, B1, B2, B3, B4, B5, B6};
  const long long units = elems / 2048;  // 256 threads x 8 elements
  stream_set ss{};
  ss.n = NS;
  long long moved = 0;
  for (int s = 0; s < NS; ++s) {
    const size_t bytes = static_cast<size_t>(units) * 256 * Bs[s];
    CK(cudaMalloc(&ss.p[s], bytes));
    CK(cudaMemset(ss.p[s], 0, bytes));
    ss.bytes[s] = Bs[s];
    ss.write[s] = wr[s];
    moved += static_cast<long long>(bytes) * (wr[s] ? 2 : 1);
  }
  const int smem = S * 256 * (B0 + B1 + B2 + B3 + B4 + B5 + B6);
  auto k = streams_kernel<NS, S, B0, B1, B2, B3, B4, B5, B6>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int grid = 132 * 2;
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int r = 0; r < 15; ++r) {
    k<<<grid, 256, smem>>>(ss, units);
    CK(cudaEventRecord(a));
    for (int i = 0; i < 10; ++i) k<<<grid, 256, smem>>>(ss, units);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / 10);
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  std::printf("%-34s S=%d %6.1f B/elem  med %.4f ms min %.4f  %5.1f%% of copy (med)  %5.1f%% (min)\n", name, S,
              moved / double(units * 2048), med, ms.front(), 100.0 * moved / (med * 1e-3) / 1e9 / copy,
              100.0 * moved / (ms.front() * 1e-3) / 1e9 / copy);
  for (int s = 0; s < NS; ++s) CK(cudaFree(ss.p[s]));
  return med;
}

int main() {
  const size_t bytes = size_t{4} << 30;
  void *x, *y;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> cms;
  for (int i = 0; i < 23; ++i) {
    CK(cudaEventRecord(a));
    CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    if (i >= 3) cms.push_back(t);
  }
  std::sort(cms.begin(), cms.end());
  const double copy = 2.0 * bytes / (cms[cms.size() / 2] * 1e-3) / 1e9;
  CK(cudaFree(x));
  CK(cudaFree(y));
  std::printf("copy %.1f GB/s\n", copy);
  const long long n = 1ll << 28;
  for (int rep = 0; rep < 2; ++rep) {
    // default layout: param 16 (rw), aux 8 (rw), grad 16 (r), m 8 (rw), m scale 4 (rw), v 8 (rw), v scale 4 (rw)
    run<7, 3, 16, 8, 16, 8, 4, 8, 4>("default 7 streams", {1, 1, 0, 1, 1, 1, 1}, n, copy);
    run<7, 5, 16, 8, 16, 8, 4, 8, 4>("default 7 streams", {1, 1, 0, 1, 1, 1, 1}, n, copy);
    // without the scale streams (5 streams)
    run<5, 3, 16, 8, 16, 8, 8, 0, 0>("default w/o scales (5 streams)", {1, 1, 0, 1, 1}, n, copy);
    // bf16 states layout: param 16, aux 8, grad 16, m 16, v 16
    run<5, 3, 16, 8, 16, 16, 16, 0, 0>("bf16 states 5 streams", {1, 1, 0, 1, 1}, n, copy);
    // copy-like: one read stream, one rw stream of 16
    run<2, 3, 16, 16, 0, 0, 0, 0, 0>("2 streams 16 (r, rw)", {0, 1}, n, copy);
    // the 8-byte streams widened to 16 bytes and scales as 8 (same pattern, different access sizes)
    run<7, 3, 16, 8, 16, 8, 8, 8, 8>("default, scales 8 B/thread", {1, 1, 0, 1, 1, 1, 1}, n, copy);
  }
  return 0;
}

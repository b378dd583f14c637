// Round U1 (2026-12-03, eighth session): variants of the default layout's memory pattern
// (session4/ceil_ab.cu, extended): whole-unit scale copies and a block barrier per tile.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <string>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1);} } while (0)

// Hint: 0 none, 1 L2::64B, 2 L2::128B, 3 L2::256B
template <int Bytes, bool CG, int Hint>
__device__ __forceinline__ void cpa(std::uint32_t dst, const char* src) {
#define CPA(Q, H, N) asm volatile("cp.async." Q ".shared.global" H " [%0], [%1], " #N ";" ::"r"(dst), "l"(src))
  if constexpr (Bytes == 16 && Hint == 0) CPA("cg", "", 16);
  else if constexpr (Bytes == 16 && Hint == 2) CPA("cg", ".L2::128B", 16);
  else if constexpr (Bytes == 16 && Hint == 3) CPA("cg", ".L2::256B", 16);
  else if constexpr (Bytes == 8 && Hint == 0) CPA("ca", "", 8);
  else if constexpr (Bytes == 8 && Hint == 2) CPA("ca", ".L2::128B", 8);
  else if constexpr (Bytes == 8 && Hint == 3) CPA("ca", ".L2::256B", 8);
  else if constexpr (Bytes == 4 && Hint == 0) CPA("ca", "", 4);
  else if constexpr (Bytes == 4 && Hint == 2) CPA("ca", ".L2::128B", 4);
  else if constexpr (Bytes == 4 && Hint == 3) CPA("ca", ".L2::256B", 4);
}
template <int B> __device__ __forceinline__ void back(const unsigned char* s, char* g) {
  if constexpr (B == 16) *reinterpret_cast<uint4*>(g) = *reinterpret_cast<const uint4*>(s);
  if constexpr (B == 8) *reinterpret_cast<uint2*>(g) = *reinterpret_cast<const uint2*>(s);
  if constexpr (B == 4) *reinterpret_cast<unsigned*>(g) = *reinterpret_cast<const unsigned*>(s);
}
struct bufs { char *p, *a, *g, *c0, *k0, *c1, *k1; };


// Round V1 (2026-12-03, ninth session): the default layout's memory pattern with each warp's
// tiles made contiguous over a super-unit of R units (warp w: elements w*R*256 .. of the
// super-unit, R tiles in a row), so that its R tiles' scales are R * 32 contiguous bytes,
// copied once per super-unit by R*2 lanes x 16 B into a per-warp window (double-buffered).
// Mode 1: the step's now (8 lanes x 4 B per warp per tile, L2::256B hint); mode 4: the unit's
// 256 B by warp 0 (round G, no sharing); mode 0: no scales.
// WB: 0 scales written back per tile (8 lanes x 4 B, as the step's owners), 1 once per
// super-unit (R*2 lanes x 16 B from the window).
template <int Mode, int R, int WB, int Stages, bool Barrier = false>
__global__ void __launch_bounds__(256, 2) k(bufs b, std::int64_t units) {
  constexpr int off_a = 256 * 16, off_g = off_a + 256 * 8, off_c0 = off_g + 256 * 16, off_k0 = off_c0 + 256 * 8,
                off_c1 = off_k0 + 1024, off_k1 = off_c1 + 256 * 8, stage_bytes = off_k1 + 1024;
  constexpr int win = 8 * R * 32;  // one window: 8 warps x R*32 B, per scale buffer
  extern __shared__ __align__(128) unsigned char ring[];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const std::int64_t su_all = units / R;
  const std::int64_t s0 = su_all * blockIdx.x / gridDim.x, s1 = su_all * (blockIdx.x + 1) / gridDim.x;
  const std::int64_t u0 = s0 * R, u1 = s1 * R;
  const std::uint32_t base = static_cast<std::uint32_t>(__cvta_generic_to_shared(ring));
  const std::uint32_t wbase = base + Stages * stage_bytes;  // 2 windows x 2 buffers after the ring
  unsigned char* wring = ring + Stages * stage_bytes;
  // element of this thread in tile u (u: the block's tile counter, in units)
  auto elem = [&](std::int64_t u) -> std::int64_t {
    if constexpr (Mode >= 8) {
      const std::int64_t su = u / R, j = u % R;
      return su * R * 2048 + warp * R * 256 + j * 256 + lane * 8;
    } else {
      return u * 2048 + t * 8;
    }
  };
  auto scale_issue = [&](std::uint32_t s, char* k, std::int64_t u, int which) {
    const std::int64_t g = u * 64 + warp * 8;
    if constexpr (Mode == 1) { if (lane < 8) cpa<4, false, 3>(s + t * 4, k + g * 4 + lane * 4); }
    if constexpr (Mode == 4) { if (warp == 0 && lane < 16) cpa<16, true, 0>(s + lane * 16, k + u * 256 + lane * 16); }
    if constexpr (Mode == 9) {
      if (u % R == 0 && lane < 8 * R) {
        const std::int64_t su = u / R;
        const std::uint32_t w = wbase + (((su & 1) * 2 + which) * win) + warp * R * 32;
        cpa<4, false, 0>(w + lane * 4, k + (su * R * 64 + warp * R * 8) * 4 + lane * 4);
      }
    }
    if constexpr (Mode == 8) {
      if (u % R == 0 && lane < 2 * R) {
        const std::int64_t su = u / R;
        const std::uint32_t w = wbase + (((su & 1) * 2 + which) * win) + warp * R * 32;
        cpa<16, true, 0>(w + lane * 16, k + (su * R * 64 + warp * R * 8) * 4 + lane * 16);
      }
    }
  };
  auto scale_back = [&](const unsigned char* s, char* k, std::int64_t u, int which) {
    const std::int64_t g = u * 64 + warp * 8;
    if constexpr (Mode == 1) { if (lane < 8) back<4>(s + t * 4, k + g * 4 + lane * 4); }
    if constexpr (Mode == 4) { if (warp == 0 && lane < 16) back<16>(s + lane * 16, k + u * 256 + lane * 16); }
    if constexpr (Mode >= 8) {
      const std::int64_t su = u / R, j = u % R;
      const unsigned char* w = wring + (((su & 1) * 2 + which) * win) + warp * R * 32;
      char* kg = k + (su * R * 64 + warp * R * 8) * 4;
      if constexpr (WB == 0) { if (lane < 8) back<4>(w + (j * 8 + lane) * 4, kg + (j * 8 + lane) * 4); }
      else { if (j == R - 1 && lane < 2 * R) back<16>(w + lane * 16, kg + lane * 16); }
    }
  };
  auto issue = [&](std::int64_t u, int stage) {
    const std::int64_t e = elem(u);
    const std::uint32_t s = base + stage * stage_bytes;
    cpa<16, true, 0>(s + t * 16, b.p + e * 2);
    cpa<8, false, 0>(s + off_a + t * 8, b.a + e);
    cpa<16, true, 0>(s + off_g + t * 16, b.g + e * 2);
    cpa<8, false, 0>(s + off_c0 + t * 8, b.c0 + e);
    scale_issue(s + off_k0, b.k0, u, 0);
    cpa<8, false, 0>(s + off_c1 + t * 8, b.c1 + e);
    scale_issue(s + off_k1, b.k1, u, 1);
  };
  for (int q = 0; q < Stages - 1; ++q) {
    if (u0 + q < u1) issue(u0 + q, q);
    asm volatile("cp.async.commit_group;");
  }
  int cur = 0;
  for (std::int64_t u = u0; u < u1; ++u) {
    if constexpr (Barrier) {
      asm volatile("cp.async.wait_group %0;" ::"n"(Stages - 2));
      __syncthreads();
      if (u + Stages - 1 < u1) issue(u + Stages - 1, (cur + Stages - 1) % Stages);
      asm volatile("cp.async.commit_group;");
    } else {
      if (u + Stages - 1 < u1) issue(u + Stages - 1, (cur + Stages - 1) % Stages);
      asm volatile("cp.async.commit_group;");
      asm volatile("cp.async.wait_group %0;" ::"n"(Stages - 1));
      if constexpr (Mode >= 8) __syncwarp();
    }
    const std::int64_t e = elem(u);
    const unsigned char* s = ring + cur * stage_bytes;
    back<16>(s + t * 16, b.p + e * 2);
    back<8>(s + off_a + t * 8, b.a + e);
    back<8>(s + off_c0 + t * 8, b.c0 + e);
    scale_back(s + off_k0, b.k0, u, 0);
    back<8>(s + off_c1 + t * 8, b.c1 + e);
    scale_back(s + off_k1, b.k1, u, 1);
    cur = cur + 1 == Stages ? 0 : cur + 1;
  }
}

struct variant { std::string name; void (*launch)(bufs, std::int64_t); double bytes; std::vector<double> ms; };
template <int M, int R, int WB, int S, bool B = false>
void launch(bufs b, std::int64_t units) {
  constexpr int stage_bytes = 256 * (16 + 8 + 16 + 8 + 8) + 2 * 1024;
  constexpr int smem = S * stage_bytes + (M >= 8 ? 4 * 8 * R * 32 : 0);
  static bool once = [] { CK(cudaFuncSetAttribute(k<M, R, WB, S, B>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem)); return true; }();
  (void)once;
  k<M, R, WB, S, B><<<264, 256, smem>>>(b, units);
}

int main() {
  const std::int64_t n = 1ll << 28, units = n / 2048;
  bufs b;
  auto al = [](std::size_t bytes) { char* p; CK(cudaMalloc(&p, bytes)); CK(cudaMemset(p, 0, bytes)); return p; };
  b.p = al(n * 2); b.a = al(n); b.g = al(n * 2); b.c0 = al(n); b.k0 = al(n / 8 + 4096); b.c1 = al(n); b.k1 = al(n / 8 + 4096);
  const double base_bytes = 12.5 * n;
  std::vector<variant> v = {
      {"A the step's (8 lanes x 4 B, L2::256B)", launch<1, 1, 0, 3>, base_bytes},
      {"B unit's 256 B by warp 0 (round G)", launch<4, 1, 0, 3>, base_bytes},
      {"E the step's + block barrier", launch<1, 1, 0, 3, true>, base_bytes},
      {"F no scale buffers", launch<0, 1, 0, 3>, 12.0 * n},
      {"M2 warp-contiguous R=2, per-tile writes", launch<8, 2, 0, 3>, base_bytes},
      {"M4 warp-contiguous R=4, per-tile writes", launch<8, 4, 0, 3>, base_bytes},
      {"M8 warp-contiguous R=8, per-tile writes", launch<8, 8, 0, 3>, base_bytes},
      {"W4 R=4, writes once per super-unit", launch<8, 4, 1, 3>, base_bytes},
      {"W8 R=8, writes once per super-unit", launch<8, 8, 1, 3>, base_bytes},
      {"M4/4 R=4, 4 stages", launch<8, 4, 0, 4>, base_bytes},
      {"N4 R=4, 32 lanes x 4 B, per-tile writes", launch<9, 4, 0, 3>, base_bytes},
      {"N2 R=2, 16 lanes x 4 B, per-tile writes", launch<9, 2, 0, 3>, base_bytes},
  };
  char *x = al(std::size_t{4} << 30), *y = al(std::size_t{4} << 30);
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> c;
  for (int i = 0; i < 23; ++i) { CK(cudaEventRecord(e0)); CK(cudaMemcpyAsync(y, x, std::size_t{4} << 30, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1)); float t; CK(cudaEventElapsedTime(&t, e0, e1)); if (i >= 3) c.push_back(t); }
  std::sort(c.begin(), c.end());
  const double copy = 2.0 * (std::size_t{4} << 30) / (c[c.size() / 2] * 1e-3) / 1e9;
  std::printf("copy %.1f GB/s\n", copy);
  for (auto& q : v) for (int i = 0; i < 3; ++i) q.launch(b, units);
  for (int r = 0; r < 15; ++r)
    for (std::size_t j = 0; j < v.size(); ++j) {
      auto& q = v[(j + r) % v.size()];
      CK(cudaEventRecord(e0));
      for (int i = 0; i < 10; ++i) q.launch(b, units);
      CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
      float t; CK(cudaEventElapsedTime(&t, e0, e1)); q.ms.push_back(t / 10);
    }
  CK(cudaGetLastError());
  for (auto& q : v) {
    std::sort(q.ms.begin(), q.ms.end());
    const double med = q.ms[q.ms.size() / 2];
    std::printf("%-46s med %.4f ms min %.4f  %5.1f%% of copy (med, its own bytes)\n", q.name.c_str(), med, q.ms.front(), 100.0 * q.bytes / (med * 1e-3) / 1e9 / copy);
  }
}

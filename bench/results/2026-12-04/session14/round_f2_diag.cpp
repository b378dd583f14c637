// The default layout's memory pattern with trivial arithmetic (the bytes the CPU step moves per group of
// 32: bf16 param r/w, int8 correction r/w, bf16 grad r, int8 and uint8 codes r/w, two fp32 scales r/w),
// each thread one contiguous run of groups as cpu::step splits them. Prints G elements/s per thread count.
#include <omp.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

void pass(std::uint16_t* p, std::int8_t* a, const std::uint16_t* g, std::int8_t* m, std::uint8_t* v, float* sm, float* sv,
          std::int64_t groups, int threads) {
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const std::int64_t b = groups * t / T, e = groups * (t + 1) / T;
    for (std::int64_t q = b; q < e; ++q) {
      const float s0 = sm[q], s1 = sv[q];
      std::int64_t i0 = q * 32;
#pragma omp simd
      for (int k = 0; k < 32; ++k) {
        const std::int64_t i = i0 + k;
        p[i] = static_cast<std::uint16_t>(p[i] + (g[i] >> 12));
        a[i] = static_cast<std::int8_t>(a[i] ^ 1);
        m[i] = static_cast<std::int8_t>(m[i] + 1);
        v[i] = static_cast<std::uint8_t>(v[i] + 1);
      }
      sm[q] = s0 * 0.5f + 1.0f;
      sv[q] = s1 * 0.5f + 1.0f;
    }
  }
}
int main(int argc, char** argv) {
  const std::int64_t n = std::int64_t{1} << (argc > 1 ? std::atoi(argv[1]) : 26), groups = n / 32;
  std::vector<std::uint16_t> p(n, 1), g(n, 2);
  std::vector<std::int8_t> a(n, 0), m(n, 0);
  std::vector<std::uint8_t> v(n, 0);
  std::vector<float> sm(groups, 1.0f), sv(groups, 1.0f);
  for (int threads : {1, 2, 4, 8, 16}) {
    pass(p.data(), a.data(), g.data(), m.data(), v.data(), sm.data(), sv.data(), groups, threads);
    std::vector<double> r;
    for (int rep = 0; rep < 7; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      pass(p.data(), a.data(), g.data(), m.data(), v.data(), sm.data(), sv.data(), groups, threads);
      r.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(r.begin(), r.end());
    std::printf("pattern_default threads %2d: %.3f G elements/s (%.1f GB/s at 12.5 B/element)\n", threads, n / r[3] * 1e-9,
                n / r[3] * 12.5e-9);
  }
}

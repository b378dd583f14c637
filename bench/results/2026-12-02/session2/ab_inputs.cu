// A/B of the step kernel's host-scalar and device-input variants on the same buffers.
#define main bench_step_main
#include "bench_step.cu"
#undef main
#include <algorithm>
template <class F>
float time_one(cudaStream_t s, F&& f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a, s); f(); cudaEventRecord(b, s); cudaEventSynchronize(b);
  float ms = 0; cudaEventElapsedTime(&ms, a, b); cudaEventDestroy(a); cudaEventDestroy(b); return ms;
}
int main(int argc, char** argv) {
  const bool llama_shape = argc > 1 && std::string(argv[1]) == "llama";
  shape sh = llama_shape ? llama() : flat();
  workspace<adamw_default> w(sh.sizes);
  device::step_plan<adamw_default> plan;
  BENCH_OK(plan.build(w.refs.data(), w.refs.size()));
  auto h = bench_hyper<adamw_default>();
  cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  double* d_lr; std::int64_t* d_step; cudaMalloc(&d_lr, 8); cudaMalloc(&d_step, 8);
  std::int64_t step = 100;
  cudaMemcpy(d_lr, &h.lr, 8, cudaMemcpyHostToDevice); cudaMemcpy(d_step, &step, 8, cudaMemcpyHostToDevice);
  device::device_inputs in; in.lr = d_lr; in.step = d_step;
  device::device_inputs none;
  step_args a; a.step = step;
  auto H = [&] { BENCH_OK(plan.step_async(h, a, st)); };
  auto D = [&] { BENCH_OK(plan.step_async(h, step_args{}, in, st)); };
  auto D0 = [&] { BENCH_OK(plan.step_async(h, a, none, st)); };
  for (int i = 0; i < 5; ++i) { H(); D(); D0(); }
  cudaStreamSynchronize(st);
  std::vector<float> th, td, t0;
  for (int i = 0; i < 150; ++i) { th.push_back(time_one(st, H)); td.push_back(time_one(st, D)); t0.push_back(time_one(st, D0)); }
  auto med = [](std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  auto mn = [](std::vector<float> v) { return *std::min_element(v.begin(), v.end()); };
  std::printf("%s interleaved single launches: host %.4f (min %.4f)  device(lr,step ptrs) %.4f (min %.4f)  device(no ptrs) %.4f (min %.4f)\n",
              sh.name.c_str(), med(th), mn(th), med(td), mn(td), med(t0), mn(t0));
  for (int r = 0; r < 3; ++r) {
    float bh = time_one(st, [&] { for (int i = 0; i < 20; ++i) H(); }) / 20;
    float bd = time_one(st, [&] { for (int i = 0; i < 20; ++i) D(); }) / 20;
    float b0 = time_one(st, [&] { for (int i = 0; i < 20; ++i) D0(); }) / 20;
    std::printf("%s batches of 20: host %.4f device %.4f device(no ptrs) %.4f\n", sh.name.c_str(), bh, bd, b0);
  }
  return 0;
}

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Gradient release on the CPU: each tensor is stepped the moment the
// backward pass has produced its gradient, so no gradient has to outlive its
// own step. Here every gradient is written into ONE scratch buffer the size
// of the largest tensor, which the next tensor's gradient then overwrites:
// the model's resident memory is parameters + corrections + states, 5.25
// bytes per parameter for AdamW's default layout (bf16 + int8 correction,
// 8-bit momentum and second moment, an fp32 scale per 32 values) against 16
// for torch's fp32 AdamW with its gradients.
//
// The model: a two-layer MLP, y = W2 tanh(W1 x + b1) + b2, fitted to a
// random teacher. The backward pass produces gradients last layer first
// (b2, W2, then b1, W1), as autograd does, and the optimizer steps them in
// that order: begin_step(), step_tensor(i) per tensor, end_step(). The bytes
// are those of one opt.step() over all tensors.
//
// Exit status 0 when the memory report says 5.25 B/param under release and
// the loss fell 10-fold (ctest example_release_cpu), 1 otherwise.
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/optim/cpu_optimizer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;
using cfg = fo::step_config<fo::rule::adamw, fo::codec::rounded_split, bf16,
                            fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}
static float val(bf16 v) { return fo::format::to_float(v); }

// Sizes are multiples of 32 (the state codecs' group), so no group is partial.
constexpr int in = 32, hid = 64, out = 32, batch = 64, steps = 200;

int main() {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Parameters (bf16, the trainer's), in forward order: tensors 0..3.
  std::vector<bf16> W1(hid * in), b1(hid), W2(out * hid), b2(out);
  for (auto& v : W1) v = fo::format::from_float<bf16>(normal(rng) / std::sqrt(float(in)));
  for (auto& v : W2) v = fo::format::from_float<bf16>(normal(rng) / std::sqrt(float(hid)));
  for (auto* t : {&b1, &b2})
    for (auto& v : *t) v = fo::format::from_float<bf16>(0.0f);
  // Data from a teacher network of the same shape.
  std::vector<float> x(batch * in), target(batch * out), T1(hid * in), T2(out * hid);
  for (auto& v : x) v = normal(rng);
  for (auto& v : T1) v = normal(rng) / std::sqrt(float(in));
  for (auto& v : T2) v = normal(rng) / std::sqrt(float(hid));
  for (int s = 0; s < batch; ++s)
    for (int o = 0; o < out; ++o) {
      float y = 0.0f;
      for (int h = 0; h < hid; ++h) {
        float a = 0.0f;
        for (int i = 0; i < in; ++i) a += T1[h * in + i] * x[s * in + i];
        y += T2[o * hid + h] * std::tanh(a);
      }
      target[s * out + o] = y;
    }

  // One scratch gradient buffer for every tensor (bf16, the largest size).
  std::vector<bf16> scratch(std::max(W1.size(), W2.size()));
  cfg::hyper decay, no_decay;
  decay.lr = no_decay.lr = 1e-2;
  no_decay.weight_decay = 0.0;
  fo::cpu::optimizer<cfg> opt;
  // Gradients are bound per tensor during the backward pass (set_grad), so none is given here.
  check(opt.init({{decay, {{W1.data(), nullptr, hid * in, "W1"}, {W2.data(), nullptr, out * hid, "W2"}}},
                  {no_decay, {{b1.data(), nullptr, hid, "b1"}, {b2.data(), nullptr, out, "b2"}}}}));
  // Flattened group by group: W1 = 0, W2 = 1, b1 = 2, b2 = 3.
  enum { iW1, iW2, ib1, ib2 };
  const fo::optim::memory_report mem = opt.memory();
  std::printf("%s", mem.to_string().c_str());
  const double resident = mem.bytes_per_param(/*with_grad=*/false);
  std::printf("resident under gradient release: %.4f B/param (+ one %zu-element scratch gradient)\n", resident,
              scratch.size());

  // Release one gradient: it is in `scratch` now; step its tensor at once.
  auto release = [&](int tensor, const std::vector<float>& g) {
    for (std::size_t k = 0; k < g.size(); ++k) scratch[k] = fo::format::from_float<bf16>(g[k]);
    check(opt.set_grad(tensor, scratch.data()));
    check(opt.step_tensor(tensor));
  };

  std::vector<float> a(batch * hid), r(batch * out), dh(batch * hid);
  double first_loss = 0.0, loss = 0.0;
  for (int step = 1; step <= steps; ++step) {
    // Forward (with the stored bf16 weights).
    loss = 0.0;
    for (int s = 0; s < batch; ++s) {
      for (int h = 0; h < hid; ++h) {
        float z = val(b1[h]);
        for (int i = 0; i < in; ++i) z += val(W1[h * in + i]) * x[s * in + i];
        a[s * hid + h] = std::tanh(z);
      }
      for (int o = 0; o < out; ++o) {
        float y = val(b2[o]);
        for (int h = 0; h < hid; ++h) y += val(W2[o * hid + h]) * a[s * hid + h];
        r[s * out + o] = (y - target[s * out + o]) / batch;  // d(0.5 * mean sq. error)/dy
        loss += 0.5 * double(y - target[s * out + o]) * (y - target[s * out + o]) / batch;
      }
    }
    // Backward, last layer first; each gradient is released as soon as it exists.
    check(opt.begin_step());
    std::vector<float> g(out, 0.0f);
    for (int s = 0; s < batch; ++s)
      for (int o = 0; o < out; ++o) g[o] += r[s * out + o];
    release(ib2, g);
    // dh needs the old W2: compute it before W2 steps (autograd's matmul
    // backward also forms both of its gradients before any hook runs).
    for (int s = 0; s < batch; ++s)
      for (int h = 0; h < hid; ++h) {
        float d = 0.0f;
        for (int o = 0; o < out; ++o) d += val(W2[o * hid + h]) * r[s * out + o];
        dh[s * hid + h] = d * (1.0f - a[s * hid + h] * a[s * hid + h]);  // through tanh
      }
    g.assign(out * hid, 0.0f);
    for (int s = 0; s < batch; ++s)
      for (int o = 0; o < out; ++o)
        for (int h = 0; h < hid; ++h) g[o * hid + h] += r[s * out + o] * a[s * hid + h];
    release(iW2, g);
    g.assign(hid, 0.0f);
    for (int s = 0; s < batch; ++s)
      for (int h = 0; h < hid; ++h) g[h] += dh[s * hid + h];
    release(ib1, g);
    g.assign(hid * in, 0.0f);
    for (int s = 0; s < batch; ++s)
      for (int h = 0; h < hid; ++h)
        for (int i = 0; i < in; ++i) g[h * in + i] += dh[s * hid + h] * x[s * in + i];
    release(iW1, g);
    check(opt.end_step());  // every tensor stepped once: the step count advances
    if (step == 1) first_loss = loss;
    if (step == 1 || step % 40 == 0) std::printf("step %3d  loss %.5f\n", step, loss);
  }

  const bool mem_ok = resident == 5.25;
  const bool fell = loss < first_loss / 10.0;
  std::printf("%.4f B/param resident (%s); loss %.5f -> %.5f (%s)\n", resident,
              mem_ok ? "5.25 as expected" : "NOT 5.25", first_loss, loss,
              fell ? "fell 10-fold" : "DID NOT FALL ENOUGH");
  return mem_ok && fell ? 0 : 1;
}

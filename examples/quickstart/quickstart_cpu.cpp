// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Quick start on the CPU: a linear model y = W x + b fitted to a synthetic
// teacher with cpu::optimizer, the owning optimizer a trainer holds instead
// of torch::optim::AdamW. W and b are bf16 (what the model computes with);
// the optimizer allocates and owns the rest: an int8 correction per weight
// (so the bf16 weight plus the correction act as an fp32 master) and the
// 8-bit momentum and second moment. Two parameter groups, as a trainer
// usually has: weight decay on the matrix, none on the bias.
//
// Exit status 0 when the loss fell at least 100-fold (the ctest
// example_quickstart_cpu checks that), 1 otherwise or on any error.
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/optim/cpu_optimizer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;

// Every flashoptim call returns a status; an example stops at the first error.
static void check(const fo::status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.what());
    std::exit(1);
  }
}

int main() {
  constexpr std::int64_t in = 32, out = 8, batch = 256, steps = 300;

  // Synthetic data: inputs x ~ N(0, 1), targets from a fixed teacher (W*, b*).
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(batch * in), target(batch * out), w_teacher(out * in), b_teacher(out);
  for (auto& v : x) v = normal(rng);
  for (auto& v : w_teacher) v = normal(rng) / std::sqrt(float(in));
  for (auto& v : b_teacher) v = normal(rng);
  for (std::int64_t s = 0; s < batch; ++s)
    for (std::int64_t o = 0; o < out; ++o) {
      float y = b_teacher[o];
      for (std::int64_t i = 0; i < in; ++i) y += w_teacher[o * in + i] * x[s * in + i];
      target[s * out + o] = y;
    }

  // The model's parameters and gradients: the trainer's buffers, bf16. The
  // optimizer keeps pointers to them and never owns them.
  std::vector<bf16> W(out * in, fo::format::from_float<bf16>(0.0f)), b(out, fo::format::from_float<bf16>(0.0f));
  std::vector<bf16> dW(W.size()), db(b.size());
  for (auto& v : W) v = fo::format::from_float<bf16>(0.1f * normal(rng));

  // [adopt-cpu]
  using cfg = fo::step_config<fo::rule::adamw, fo::codec::rounded_split, bf16,
                              fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;
  cfg::hyper decay, no_decay;      // torch's AdamW defaults (lr 1e-3, weight_decay 1e-2, ...)
  decay.lr = no_decay.lr = 1e-2;
  no_decay.weight_decay = 0.0;
  fo::cpu::optimizer<cfg> opt;     // allocates and owns the corrections and 8-bit states
  check(opt.init({{decay, {{W.data(), dW.data(), out * in, "W"}}},
                  {no_decay, {{b.data(), db.data(), out, "b"}}}}));
  // [adopt-cpu]

  std::printf("%s", opt.memory().to_string().c_str());

  // Forward, backward (by hand: the gradient of 0.5 * mean squared error),
  // then one optimizer step, like loss.backward(); opt.step(); in torch.
  std::vector<float> gW(W.size()), gb(b.size());
  double first_loss = 0.0, loss = 0.0;
  for (std::int64_t step = 1; step <= steps; ++step) {
    std::fill(gW.begin(), gW.end(), 0.0f);
    std::fill(gb.begin(), gb.end(), 0.0f);
    loss = 0.0;
    for (std::int64_t s = 0; s < batch; ++s)
      for (std::int64_t o = 0; o < out; ++o) {
        float y = fo::format::to_float(b[o]);  // the model computes with the stored bf16 values
        for (std::int64_t i = 0; i < in; ++i) y += fo::format::to_float(W[o * in + i]) * x[s * in + i];
        const float r = y - target[s * out + o];
        loss += 0.5 * double(r) * r / batch;
        for (std::int64_t i = 0; i < in; ++i) gW[o * in + i] += r * x[s * in + i] / batch;
        gb[o] += r / batch;
      }
    for (std::size_t k = 0; k < gW.size(); ++k) dW[k] = fo::format::from_float<bf16>(gW[k]);
    for (std::size_t k = 0; k < gb.size(); ++k) db[k] = fo::format::from_float<bf16>(gb[k]);
    // [adopt-cpu]
    check(opt.step());               // every tensor, each with its group's hyperparameters
    // [adopt-cpu]
    if (step == 1) first_loss = loss;
    if (step == 1 || step % 50 == 0) std::printf("step %4lld  loss %.6f\n", static_cast<long long>(step), loss);
  }

  const bool fell = loss < first_loss / 100.0;
  std::printf("loss %.6f -> %.6f: %s\n", first_loss, loss, fell ? "fell more than 100-fold" : "DID NOT FALL ENOUGH");
  return fell ? 0 : 1;
}

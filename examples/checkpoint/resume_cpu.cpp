// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Checkpoint and resume with cpu::optimizer: train N steps, save the whole
// optimizer (parameter groups with their hyperparameters, the step count,
// every tensor's bf16 parameter, int8 correction and 8-bit states) with
// cpu::save, wipe everything, load it with cpu::load into a freshly built
// optimizer (the same tensors and groups), train N more, and compare with a run of 2N steps that was never
// interrupted: every parameter, correction and state byte must be equal.
// The compressed form stores the bytes as they are, so resuming is exact.
//
// Usage: flashoptim_example_resume_cpu [directory for the checkpoint, default .]
// Exit status 0 when the two runs are bit-identical, 1 otherwise.
#include <flashoptim/flashoptim.hpp>
#include <flashoptim/optim/cpu_optimizer.hpp>
#include <flashoptim/optim/cpu_optimizer_io.hpp>  // cpu::save, cpu::load (link flashoptim::io)

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace fo = flashoptim;
using fo::bf16;
using cfg = fo::step_config<fo::rule::adamw, fo::codec::rounded_split, bf16,
                            fo::codec::defaults::momentum, fo::codec::defaults::second_moment>;

static void check(const fo::status& s) {
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", s.what()), std::exit(1);
}

// A model's buffers: two tensors (a matrix and a bias) and their gradients.
struct model {
  std::vector<bf16> w = std::vector<bf16>(1000), b = std::vector<bf16>(40);
  std::vector<bf16> dw = std::vector<bf16>(1000), db = std::vector<bf16>(40);
};

// The same optimizer every time: decay on w, none on b.
static void build(fo::cpu::optimizer<cfg>& opt, model& m) {
  cfg::hyper decay, no_decay;
  decay.lr = no_decay.lr = 3e-3;
  no_decay.weight_decay = 0.0;
  check(opt.init({{decay, {{m.w.data(), m.dw.data(), 1000, "layer.weight"}}},
                  {no_decay, {{m.b.data(), m.db.data(), 40, "layer.bias"}}}}));
}

// Gradients that depend on the parameters and on the step number (as
// minibatches do), so a resumed run must also resume the step count.
static void train(fo::cpu::optimizer<cfg>& opt, model& m, int steps) {
  for (int k = 0; k < steps; ++k) {
    const double t = double(opt.step_count() + 1);
    auto grad = [&](const std::vector<bf16>& p, std::vector<bf16>& g) {
      for (std::size_t i = 0; i < p.size(); ++i)
        g[i] = fo::format::from_float<bf16>(fo::format::to_float(p[i]) - float(std::sin(0.1 * i + 0.3 * t)));
    };
    grad(m.w, m.dw);
    grad(m.b, m.db);
    check(opt.step());
  }
}

// Every byte the optimizer steps: parameters, corrections, states.
static std::vector<unsigned char> bytes_of(const fo::cpu::optimizer<cfg>& opt) {
  std::vector<unsigned char> out;
  auto add = [&](const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    out.insert(out.end(), c, c + n);
  };
  for (const auto& t : opt.tensors()) {
    const auto layout = fo::state_layout<cfg>::for_size(t.size);
    add(t.param, t.size * sizeof(bf16));
    add(t.aux, layout.aux_bytes);
    add(t.state<0>().codes, layout.slots[0].code_bytes);
    add(t.state<0>().scales, layout.slots[0].scale_bytes);
    add(t.state<1>().codes, layout.slots[1].code_bytes);
    add(t.state<1>().scales, layout.slots[1].scale_bytes);
  }
  return out;
}

int main(int argc, char** argv) {
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/resume_cpu.safetensors";
  constexpr int n = 100;

  // The reference: 2N steps in one go.
  model a;
  fo::cpu::optimizer<cfg> opt_a;
  build(opt_a, a);
  train(opt_a, a, 2 * n);

  // The interrupted run: N steps, then save.
  model b;
  {
    fo::cpu::optimizer<cfg> opt;
    build(opt, b);
    train(opt, b, n);
    check(fo::cpu::save(opt, path));  // atomic: the file appears only complete
    std::printf("saved step %lld to %s\n", static_cast<long long>(opt.step_count()), path.c_str());
  }  // the optimizer and its state are gone

  // A new process would start from scratch: the parameters too.
  b = model{};
  fo::cpu::optimizer<cfg> opt_b;
  build(opt_b, b);
  check(fo::cpu::load(opt_b, path));  // params, corrections, states, hyperparameters, step count
  std::printf("loaded step %lld\n", static_cast<long long>(opt_b.step_count()));
  train(opt_b, b, n);

  const std::vector<unsigned char> ra = bytes_of(opt_a), rb = bytes_of(opt_b);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) differ += ra[i] != rb[i];
  const bool same = ra.size() == rb.size() && differ == 0 && opt_a.step_count() == opt_b.step_count();
  std::printf("%zu bytes compared after %d steps: %zu differ (%s)\n", ra.size(), 2 * n, differ,
              same ? "bit-identical to the uninterrupted run" : "MISMATCH");
  std::remove(path.c_str());
  return same ? 0 : 1;
}

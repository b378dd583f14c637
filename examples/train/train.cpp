// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// flashoptim_train: a real (small) training run, side by side under several
// optimizer configurations with the same seed, weights and data order. A
// byte-level language model (model.hpp) learns the repository's own headers
// and documentation (corpus.hpp); the optimizers are flashoptim's
// (optimizers.hpp: cpu::optimizer, device::optimizer with its offload_fraction;
// the only file that calls the library's optimizer API).
// docs/train.md describes the run and its output.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "model.hpp"
#include "optimizers.hpp"

#ifndef TRAIN_SOURCE_DIR
#error "TRAIN_SOURCE_DIR (the flashoptim source tree, for the corpus and tools/plot_train.py) must be defined"
#endif

namespace {

using namespace train;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

struct options {
  int steps = -1;  // -1: the device's default
  std::string device = "auto";
  std::string configs = "fp32,bf16,flash";
  double offload = 0.0;
  std::string out = "train-out";
  std::string source = TRAIN_SOURCE_DIR;  // the corpus and tools/plot_train.py
  std::uint64_t seed = 1;
  double lr = -1;  // -1: the device's default
  double weight_decay = 0.0;
  int eval_every = -1;
  int val_rows = -1;
  int threads = 0;
  bool check = false;
  bool self_test = false;
  bool plot = true;
  // model knobs, -1: the device's default
  int context = -1, embed = -1, hidden = -1, layers = -1, batch = -1;
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: flashoptim_train [options]\n"
               "  --steps N          training steps per configuration (CPU 3000, GPU 6000)\n"
               "  --device D         cpu | gpu | auto (default: the GPU when there is one)\n"
               "  --configs A,B,...  configurations to run side by side (default fp32,bf16,flash; --list)\n"
               "  --offload F        fraction of the optimizer state in host memory (GPU only, offload_fraction)\n"
               "  --out DIR          output directory (default ./train-out): train_log.csv, corpus.txt, loss.png\n"
               "  --source DIR       the flashoptim source tree to train on and plot with (default: the tree\n"
               "                     this binary was built from, %s)\n"
               "  --seed S           weights, data order and the optimizer's seed (default 1)\n"
               "  --lr X             peak AdamW learning rate (CPU 3e-3, GPU 1e-3); warm-up, cosine to 10%%\n"
               "  --weight-decay X   decoupled weight decay of the matrices and the embedding; biases have none\n"
               "                     (two parameter groups; default 0)\n"
               "  --context N --embed N --hidden N --layers N --batch N   model size\n"
               "  --eval-every N     validation period in steps; --val-rows N validation windows\n"
               "  --threads N        CPU threads of the model and the CPU optimizer step (0: OpenMP's default;\n"
               "                     the results do not depend on it)\n"
               "  --check            exit 1 unless every flashoptim configuration ends with a validation loss\n"
               "                     <= 0.8x its initial and <= 1.01x its rule's fp32 run\n"
               "  --self-test        gradient check of the model and thread-count determinism, then exit\n"
               "  --no-plot          skip the PNG\n"
               "  --list             the configurations\n",
               TRAIN_SOURCE_DIR);
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs %s\n", a.c_str(), what);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](const char* what) {
      const char* v = value(what);
      char* end = nullptr;
      const double x = std::strtod(v, &end);
      if (end == v || *end != '\0' || !std::isfinite(x)) {
        std::fprintf(stderr, "%s: '%s' is not a number\n", a.c_str(), v);
        std::exit(2);
      }
      return x;
    };
    auto count = [&](const char* what, int lo) {
      const double x = number(what);
      if (x != std::floor(x) || x < lo || x > 1e9) {
        std::fprintf(stderr, "%s: %g must be an integer >= %d\n", a.c_str(), x, lo);
        std::exit(2);
      }
      return static_cast<int>(x);
    };
    if (a == "--steps") o.steps = count("a count", 1);
    else if (a == "--device") o.device = value("cpu, gpu or auto");
    else if (a == "--configs") o.configs = value("a list");
    else if (a == "--offload") o.offload = number("a fraction");
    else if (a == "--out") o.out = value("a directory");
    else if (a == "--source") o.source = value("a directory");
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(count("a seed", 0));
    else if (a == "--lr") o.lr = number("a learning rate");
    else if (a == "--weight-decay") o.weight_decay = number("a decay");
    else if (a == "--eval-every") o.eval_every = count("a period", 1);
    else if (a == "--val-rows") o.val_rows = count("a count", 1);
    else if (a == "--threads") o.threads = count("a count", 0);
    else if (a == "--context") o.context = count("a size", 1);
    else if (a == "--embed") o.embed = count("a size", 1);
    else if (a == "--hidden") o.hidden = count("a size", 1);
    else if (a == "--layers") o.layers = count("a count", 1);
    else if (a == "--batch") o.batch = count("a count", 1);
    else if (a == "--check") o.check = true;
    else if (a == "--self-test") o.self_test = true;
    else if (a == "--no-plot") o.plot = false;
    else if (a == "--list") {
      for (const auto& c : configurations()) std::printf("  %-11s %s\n", c.name, c.description);
      std::exit(0);
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "unknown option '%s'\n\n", a.c_str());
      usage(stderr);
      return false;
    }
  }
  if (o.device != "cpu" && o.device != "gpu" && o.device != "auto") {
    std::fprintf(stderr, "--device must be cpu, gpu or auto, not '%s'\n", o.device.c_str());
    return false;
  }
  if (!(o.offload >= 0 && o.offload <= 1)) {
    std::fprintf(stderr, "--offload %g is outside [0, 1]\n", o.offload);
    return false;
  }
  if (o.lr != -1 && !(o.lr > 0)) {
    std::fprintf(stderr, "--lr must be positive\n");
    return false;
  }
  if (!(o.weight_decay >= 0)) {
    std::fprintf(stderr, "--weight-decay must be >= 0\n");
    return false;
  }
  return true;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) v.push_back(x);
  return v;
}

/// Warm-up over the first 5% of the steps, then cosine from lr to lr / 10.
double schedule(double lr, int step, int steps) {
  const int warm = std::max(1, steps / 20);
  if (step <= warm) return lr * step / warm;
  const double t = static_cast<double>(step - warm) / std::max(1, steps - warm);
  return lr * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(3.141592653589793 * t)));
}

/// The model's tensors for the optimizer (model.hpp's order: embedding,
/// then per layer W and b, then the output's): the matrices and the
/// embedding with their 2-D shapes in the weight-decay group, the biases in
/// the group without decay.
std::vector<tensor_info> optimizer_tensors(const model_shape& s) {
  const auto sizes = tensor_sizes(s);
  const auto names = tensor_names(s);
  std::vector<tensor_info> v(sizes.size());
  std::int64_t in = 256;  // the embedding's rows: one per byte value
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    v[i].size = sizes[i];
    v[i].name = names[i];
    v[i].decay = i == 0 || i % 2 == 1;
    if (!v[i].decay) continue;
    v[i].rows = i == 0 ? 256 : in;
    v[i].cols = sizes[i] / v[i].rows;
    in = i == 0 ? static_cast<std::int64_t>(s.context) * s.embed : v[i].cols;
  }
  return v;
}

/// count windows of (context + 1) bytes starting at uniform positions in [lo, hi - context - 1].
void sample_rows(rng& r, const corpus& c, std::int64_t lo, std::int64_t hi, int context, int count, unsigned char* out) {
  const std::int64_t span = hi - lo - context - 1;
  for (int i = 0; i < count; ++i) {
    const std::int64_t p = lo + static_cast<std::int64_t>(r.next() % static_cast<std::uint64_t>(span));
    std::memcpy(out + static_cast<std::size_t>(i) * (context + 1), &c.bytes[p], context + 1);
  }
}

struct run_result {
  std::string config;
  double initial_val = 0, final_val = 0, final_train = 0;
  double step_ms = 0, iter_ms = 0, seconds = 0;
  optimizer_memory mem;
  bool ok = false;
};

class progress {
 public:
  progress(const std::string& label, int steps) : label_(label), steps_(steps), tty_(isatty(2) != 0) {}
  void update(int step, double loss, double val, double iter_ms) {
    if (tty_) {
      const int width = 30, fill = static_cast<int>(static_cast<double>(step) / steps_ * width);
      std::fprintf(stderr, "\r  %-10s [%s%s] %6d/%d  loss %.3f  val %.3f  %7.2f ms/it", label_.c_str(),
                   std::string(fill, '#').c_str(), std::string(width - fill, '.').c_str(), step, steps_, loss, val,
                   iter_ms);
      if (step == steps_) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    }
  }
  void line(int step, double loss, double val, double iter_ms) {
    if (!tty_)
      std::fprintf(stderr, "  %-10s step %6d/%d  loss %.4f  val %.4f  %.2f ms/it\n", label_.c_str(), step, steps_, loss,
                   val, iter_ms);
  }

 private:
  std::string label_;
  int steps_;
  bool tty_;
};

double evaluate(model& m, optimizer& opt, std::size_t tensors, const std::vector<unsigned char>& val, int context,
                int chunk) {
  for (std::size_t i = 0; i < tensors; ++i) opt.param_to_float(i, m.weights(i));
  const int rows = static_cast<int>(val.size() / (context + 1));
  double sum = 0;
  for (int r = 0; r < rows; r += chunk)
    sum += m.eval_batch(&val[static_cast<std::size_t>(r) * (context + 1)], std::min(chunk, rows - r));
  return sum / rows;
}

run_result run_config(const std::string& name, place where, model& m, const model_shape& s, const corpus& c,
                      const std::vector<unsigned char>& val, const options& o, int steps, double lr, int eval_every,
                      std::ofstream& csv) {
  run_result res;
  res.config = name;
  const auto sizes = tensor_sizes(s);
  hyper_params hp;
  hp.lr = lr;
  hp.weight_decay = o.weight_decay;
  hp.cpu_threads = o.threads;
  hp.seed = o.seed;
  std::string error;
  auto opt = make_optimizer(name, where, optimizer_tensors(s), o.offload, hp, error);
  if (!opt) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), error.c_str());
    return res;
  }
  if (error = opt->init(init_weights(s, o.seed)); !error.empty()) {
    std::fprintf(stderr, "%s: init: %s\n", name.c_str(), error.c_str());
    return res;
  }
  res.mem = opt->memory();
  const auto t_start = clock_type::now();
  res.initial_val = evaluate(m, *opt, sizes.size(), val, s.context, s.eval_rows);
  csv << 0 << ',' << name << ",," << res.initial_val << '\n';
  rng data{o.seed * 0x9e3779b97f4a7c15ull + 12345};  // the same batches for every configuration
  std::vector<unsigned char> rows(static_cast<std::size_t>(s.batch) * (s.context + 1));
  progress bar(name, steps);
  double step_time = 0, iter_time = 0, last_val = res.initial_val, tail_loss = 0;
  int timed = 0, tail = 0;
  const int skip_timing = std::min(5, steps / 2);  // first steps warm caches and the GPU
  const int tail_from = steps - std::max(1, steps / 20);
  for (int step = 1; step <= steps; ++step) {
    sample_rows(data, c, 0, c.train_end, s.context, s.batch, rows.data());
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < sizes.size(); ++i) opt->param_to_float(i, m.weights(i));
    const double loss = m.train_batch(rows.data(), s.batch);
    for (std::size_t i = 0; i < sizes.size(); ++i) opt->grad_from_float(i, m.grads(i));
    m.sync();
    const auto t1 = clock_type::now();
    if (error = opt->step(schedule(lr, step, steps), step); !error.empty()) {
      std::fprintf(stderr, "%s: step %d: %s\n", name.c_str(), step, error.c_str());
      return res;
    }
    m.sync();
    const double st = seconds_since(t1), it = seconds_since(t0);
    if (step > skip_timing) step_time += st, iter_time += it, ++timed;
    if (step > tail_from) tail_loss += loss, ++tail;
    if (!std::isfinite(loss)) {
      std::fprintf(stderr, "%s: step %d: the loss is %g\n", name.c_str(), step, loss);
      return res;
    }
    const bool eval_now = step % eval_every == 0 || step == steps;
    if (eval_now) last_val = evaluate(m, *opt, sizes.size(), val, s.context, s.eval_rows);
    csv << step << ',' << name << ',' << loss << ',';
    if (eval_now) csv << last_val;
    csv << '\n';
    const double ms = 1e3 * (timed ? iter_time / timed : it);
    if (eval_now) bar.line(step, loss, last_val, ms);
    if (eval_now || step % 10 == 0) bar.update(step, loss, last_val, ms);
  }
  res.final_val = last_val;
  res.final_train = tail_loss / std::max(1, tail);
  res.step_ms = 1e3 * step_time / std::max(1, timed);
  res.iter_ms = 1e3 * iter_time / std::max(1, timed);
  res.seconds = seconds_since(t_start);
  res.ok = true;
  return res;
}

// ---------------------------------------------------------------- self-test
int self_test() {
  int failures = 0;
  // 1. gradients against central differences of the loss, on a tiny model
  model_shape s;
  s.context = 3, s.embed = 4, s.hidden = 8, s.layers = 2, s.batch = 6, s.eval_rows = 6;
  auto m = make_cpu_model(s, 1);
  const auto w0 = init_weights(s, 7);
  for (std::size_t i = 0; i < w0.size(); ++i) std::copy(w0[i].begin(), w0[i].end(), m->weights(i));
  for (std::size_t i = 0; i < w0.size(); ++i)  // nonzero biases, so their gradients are exercised
    if (i > 0 && i % 2 == 0)
      for (std::size_t j = 0; j < w0[i].size(); ++j) m->weights(i)[j] = 0.1f * static_cast<float>(j % 5) - 0.2f;
  rng r{3};
  std::vector<unsigned char> rows(static_cast<std::size_t>(s.batch) * (s.context + 1));
  for (auto& b : rows) b = static_cast<unsigned char>(r.next() % 8);  // few distinct bytes: shared embedding rows
  m->train_batch(rows.data(), s.batch);
  const auto names = tensor_names(s);
  std::vector<std::vector<float>> g;
  for (std::size_t i = 0; i < w0.size(); ++i) g.emplace_back(m->grads(i), m->grads(i) + w0[i].size());
  double worst = 0;
  for (std::size_t i = 0; i < w0.size(); ++i) {
    for (int k = 0; k < 6; ++k) {
      std::size_t j = static_cast<std::size_t>(r.next() % w0[i].size());
      if (i == 0) j = (r.next() % 8) * s.embed + j % s.embed;  // an embedding row that is used
      float* w = m->weights(i) + j;
      const float keep = *w, h = 1e-2f;
      *w = keep + h;
      const double up = m->eval_batch(rows.data(), s.batch) / s.batch;
      *w = keep - h;
      const double down = m->eval_batch(rows.data(), s.batch) / s.batch;
      *w = keep;
      const double numeric = (up - down) / (2.0 * h), analytic = g[i][j];
      const double err = std::fabs(numeric - analytic) / std::max(1e-3, std::fabs(numeric) + std::fabs(analytic));
      worst = std::max(worst, err);
      if (err > 2e-2) {
        std::printf("  gradient of %s[%zu]: analytic %.6g, numeric %.6g\n", names[i].c_str(), j, analytic, numeric);
        ++failures;
      }
    }
  }
  std::printf("self-test: gradient check, worst relative error %.2g: %s\n", worst, failures ? "FAIL" : "ok");

  // 2. the thread count does not change a bit
  model_shape big;
  big.batch = 37;  // row blocks of 4 with a remainder
  big.eval_rows = 37;
  std::vector<std::vector<float>> grads[2];
  double losses[2];
  for (int t = 0; t < 2; ++t) {
    auto mm = make_cpu_model(big, t == 0 ? 1 : 3);
    const auto w = init_weights(big, 11);
    for (std::size_t i = 0; i < w.size(); ++i) std::copy(w[i].begin(), w[i].end(), mm->weights(i));
    rng d{5};
    std::vector<unsigned char> rr(static_cast<std::size_t>(big.batch) * (big.context + 1));
    for (auto& b : rr) b = static_cast<unsigned char>(d.next());
    losses[t] = mm->train_batch(rr.data(), big.batch);
    for (std::size_t i = 0; i < w.size(); ++i) grads[t].emplace_back(mm->grads(i), mm->grads(i) + w[i].size());
  }
  const bool same = losses[0] == losses[1] && grads[0] == grads[1];
  std::printf("self-test: 1 and 3 threads give the same loss and gradients bit for bit: %s\n", same ? "ok" : "FAIL");
  failures += !same;

  // 3. every configuration starts from the fp32 weights: its master (the
  //    parameter with its correction) within the mode's resolution of them
  const auto w = init_weights(big, 13);
  for (const auto& cfg : configurations()) {
    std::string error;
    auto opt = make_optimizer(cfg.name, place::cpu, optimizer_tensors(big), 0.0, hyper_params{}, error);
    if (opt) error = opt->init(w);
    // relative resolution: fp32 and fp32 masters exact, bf16 half an ulp, bf16 + int8 correction 2^-15
    const std::string n = cfg.name;
    const double bound = n == "bf16" ? 0x1p-8 : n.find("flash") != std::string::npos ? 0x1p-15 : 0.0;
    double worst = 0;
    for (std::size_t i = 0; error.empty() && i < w.size(); ++i) {
      std::vector<float> back(w[i].size());
      error = opt->master_to_float(i, back.data());
      for (std::size_t j = 0; j < back.size(); ++j)
        worst = std::max(worst, std::fabs(static_cast<double>(back[j]) - w[i][j]) / std::max(1e-30, std::fabs(static_cast<double>(w[i][j]))));
    }
    const bool ok = error.empty() && worst <= bound;
    std::printf("self-test: %-11s starts from the fp32 weights (relative error %.3g <= %.3g): %s%s\n", cfg.name, worst,
                bound, ok ? "ok" : "FAIL ", error.c_str());
    failures += !ok;
  }

  // 4. --weight-decay reaches the matrices and the embedding (the decay
  //    group), not the biases (the group without): one step with zero
  //    gradients, where AdamW's update is the decay alone, p * (1 - lr wd)
  {
    auto wd = init_weights(big, 17);
    const auto tensors = optimizer_tensors(big);
    for (std::size_t i = 0; i < wd.size(); ++i)
      if (!tensors[i].decay)
        for (std::size_t j = 0; j < wd[i].size(); ++j) wd[i][j] = 0.5f + 0.01f * static_cast<float>(j % 7);
    hyper_params hp;
    hp.lr = 0.1;
    hp.weight_decay = 0.5;
    std::string error;
    auto opt = make_optimizer("fp32", place::cpu, tensors, 0.0, hp, error);
    if (opt) error = opt->init(wd);
    for (std::size_t i = 0; error.empty() && i < wd.size(); ++i) {
      const std::vector<float> zero(wd[i].size(), 0.0f);
      opt->grad_from_float(i, zero.data());
    }
    if (error.empty()) error = opt->step(hp.lr, 1);
    double worst_decay = 0, worst_bias = 0;
    for (std::size_t i = 0; error.empty() && i < wd.size(); ++i) {
      std::vector<float> now(wd[i].size());
      error = opt->master_to_float(i, now.data());
      const double factor = tensors[i].decay ? 1.0 - hp.lr * hp.weight_decay : 1.0;
      double& worst = tensors[i].decay ? worst_decay : worst_bias;
      for (std::size_t j = 0; j < now.size(); ++j)
        worst = std::max(worst, std::fabs(now[j] - factor * wd[i][j]) / std::max(1e-30, std::fabs(factor * wd[i][j])));
    }
    const bool ok = error.empty() && worst_decay <= 1e-6 && worst_bias == 0;
    std::printf("self-test: weight decay on the matrices (relative error %.2g), none on the biases (%.2g): %s%s\n",
                worst_decay, worst_bias, ok ? "ok" : "FAIL ", error.c_str());
    failures += !ok;
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
  if (o.self_test) return self_test();

  // ---------------------------------------------------------------- device and defaults
  std::string gpu_name;
  const bool have_gpu = gpu_available(&gpu_name);
  place where = place::cpu;
  if (o.device == "gpu" || (o.device == "auto" && have_gpu)) {
    if (!have_gpu) {
      std::fprintf(stderr, "--device gpu: no usable CUDA device (or a build without CUDA)\n");
      return 2;
    }
    where = place::gpu;
  }
  if (o.offload > 0 && where != place::gpu) {
    std::fprintf(stderr, "--offload needs the GPU (it moves part of the GPU optimizer's state to host memory)\n");
    return 2;
  }
  const bool gpu = where == place::gpu;
  model_shape s;
  if (gpu) s.context = 32, s.embed = 64, s.hidden = 1024, s.layers = 3, s.batch = 512, s.eval_rows = 1024;
  if (o.context > 0) s.context = o.context;
  if (o.embed > 0) s.embed = o.embed;
  if (o.hidden > 0) s.hidden = o.hidden;
  if (o.layers > 0) s.layers = o.layers;
  if (o.batch > 0) s.batch = o.batch;
  const int steps = o.steps > 0 ? o.steps : gpu ? 6000 : 3000;
  const double lr = o.lr > 0 ? o.lr : gpu ? 1e-3 : 3e-3;
  const int eval_every = o.eval_every > 0 ? o.eval_every : std::max(1, steps / 20);
  const int val_rows = o.val_rows > 0 ? o.val_rows : gpu ? 32768 : 2048;

  const auto names = split_list(o.configs);
  if (names.empty()) {
    std::fprintf(stderr, "--configs is empty\n");
    return 2;
  }
  for (const auto& n : names)
    if (!find_configuration(n)) {
      std::fprintf(stderr, "unknown configuration '%s'; --list shows them\n", n.c_str());
      return 2;
    }

  // ---------------------------------------------------------------- corpus
  corpus c;
  std::string error;
  if (!load_corpus(o.source, c, error)) {
    std::fprintf(stderr, "corpus: %s (--source DIR names the flashoptim source tree)\n", error.c_str());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) {
    std::fprintf(stderr, "--out %s: %s\n", o.out.c_str(), ec.message().c_str());
    return 1;
  }
  {
    std::ofstream list(o.out + "/corpus.txt");
    list << "# fnv1a64 " << std::hex << c.hash << std::dec << ", " << c.files.size() << " files, " << c.bytes.size()
         << " bytes; validation from byte " << c.train_end << "\n";
    for (std::size_t i = 0; i < c.files.size(); ++i) list << c.file_bytes[i] << ' ' << c.files[i] << '\n';
  }
  const std::int64_t val_bytes = static_cast<std::int64_t>(c.bytes.size()) - c.train_end;
  if (val_bytes < s.context + 2 || c.train_end < s.context + 2) {
    std::fprintf(stderr, "--context %d is too long for the corpus\n", s.context);
    return 2;
  }
  // validation windows evenly spaced over the held-out 5%
  std::vector<unsigned char> val(static_cast<std::size_t>(val_rows) * (s.context + 1));
  const std::int64_t span = val_bytes - s.context - 1;
  for (int i = 0; i < val_rows; ++i) {
    const std::int64_t p = c.train_end + span * i / val_rows;
    std::memcpy(&val[static_cast<std::size_t>(i) * (s.context + 1)], &c.bytes[p], s.context + 1);
  }

  std::unique_ptr<model> m = gpu ? make_gpu_model(s, error) : make_cpu_model(s, o.threads);
  if (!m) {
    std::fprintf(stderr, "model: %s\n", error.c_str());
    return 1;
  }
  std::int64_t params = 0;
  for (auto n : tensor_sizes(s)) params += n;

  std::printf("flashoptim_train: byte-level language model on the repository's own text\n");
  std::printf("  corpus   %zu files under %s (include/, docs/, README.md, BENCHMARKS.md), %zu bytes, fnv1a64 %016llx\n",
              c.files.size(), o.source.c_str(), c.bytes.size(), static_cast<unsigned long long>(c.hash));
  std::printf("           training on the first %lld bytes, validating on %d windows of the last 5%% (list: %s/corpus.txt)\n",
              static_cast<long long>(c.train_end), val_rows, o.out.c_str());
  std::printf("  model    context %d bytes, embedding %d, %d tanh layers of %d, %lld parameters in %zu tensors\n",
              s.context, s.embed, s.layers, s.hidden, static_cast<long long>(params), tensor_sizes(s).size());
  std::printf("  device   %s%s\n", gpu ? gpu_name.c_str() : "CPU", gpu ? "" : "");
  std::printf("           %s\n", m->describe().c_str());
  std::printf("  run      %d steps of %d windows, peak lr %g (warm-up %d steps, cosine to %g), seed %llu%s\n", steps,
              s.batch, lr, std::max(1, steps / 20), lr / 10, static_cast<unsigned long long>(o.seed),
              o.offload > 0 ? (", optimizer off-load fraction " + std::to_string(o.offload)).c_str() : "");
  std::printf("  configs\n");
  for (const auto& n : names) std::printf("    %-11s %s\n", n.c_str(), find_configuration(n)->description);
  std::fflush(stdout);

  std::ofstream csv(o.out + "/train_log.csv");
  csv << "step,config,train_loss,val_loss\n";
  csv.precision(7);
  std::vector<run_result> results;
  const auto t_all = clock_type::now();
  for (const auto& n : names) {
    results.push_back(run_config(n, where, *m, s, c, val, o, steps, lr, eval_every, csv));
    if (!results.back().ok) return 1;
  }
  csv.close();

  // ---------------------------------------------------------------- summary
  std::map<std::string, double> fp32_val;
  for (const auto& r : results)
    if (std::string(find_configuration(r.config)->name).find("fp32") != std::string::npos)
      fp32_val[find_configuration(r.config)->rule] = r.final_val;
  std::printf("\n  %-11s %8s %8s %8s %8s %8s %9s %9s %9s %9s\n", "config", "param", "corr", "states", "total", "+grad",
              "step ms", "iter ms", "train", "val");
  std::printf("  %-11s %8s %8s %8s %8s %8s %9s %9s %9s %9s\n", "", "B/param", "B/param", "B/param", "B/param", "B/param",
              "(optim)", "(all)", "(last 5%)", "final");
  for (const auto& r : results) {
    const double n = static_cast<double>(r.mem.params);
    std::printf("  %-11s %8.3f %8.3f %8.3f %8.3f %8.3f %9.3f %9.3f %9.4f %9.4f", r.config.c_str(), r.mem.param_bytes / n,
                r.mem.correction_bytes / n, r.mem.state_bytes / n,
                (r.mem.param_bytes + r.mem.correction_bytes + r.mem.state_bytes) / n, r.mem.grad_bytes / n, r.step_ms,
                r.iter_ms, r.final_train, r.final_val);
    const auto f = fp32_val.find(find_configuration(r.config)->rule);
    if (f != fp32_val.end() && r.config.find("fp32") == std::string::npos)
      std::printf("  (%.3fx fp32)", r.final_val / f->second);
    std::printf("\n");
  }
  std::printf("  validation loss is nats per byte, from %.4f at step 0; B/param measured from the allocations\n",
              results.front().initial_val);
  std::printf("  (%s), unpadded; %s with the optimizer's padding%s: %.3f%s\n",
              o.offload > 0 ? "the off-load path's state layouts" : "the optimizer's memory() report",
              results.back().config.c_str(), gpu && o.offload == 0 ? " and tables" : "",
              static_cast<double>(results.back().mem.allocated_bytes) / results.back().mem.params,
              results.back().mem.host_bytes ? ", part in pinned host memory (off-load)" : "");
  std::printf("  %.1f s in all; log: %s/train_log.csv\n", seconds_since(t_all), o.out.c_str());

  // ---------------------------------------------------------------- picture
  if (o.plot) {
    if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0) {
      const std::string cmd = std::string("python3 '") + o.source + "/tools/plot_train.py' '" + o.out +
                              "/train_log.csv' '" + o.out + "/loss.png'";
      if (std::system(cmd.c_str()) == 0)
        std::printf("  loss curves: %s/loss.png\n", o.out.c_str());
      else
        std::printf("  tools/plot_train.py failed; no picture\n");
    } else {
      std::printf("  no picture: python3 with matplotlib is not available (pip install matplotlib; then\n"
                  "  python3 tools/plot_train.py %s/train_log.csv %s/loss.png)\n", o.out.c_str(), o.out.c_str());
    }
  }

  // ---------------------------------------------------------------- check
  if (o.check) {
    int failures = 0, checked = 0;
    for (const auto& r : results) {
      if (r.config.find("flash") == std::string::npos) continue;
      ++checked;
      const auto f = fp32_val.find(find_configuration(r.config)->rule);
      const bool vs_start = r.final_val <= 0.8 * r.initial_val;
      const bool vs_fp32 = f != fp32_val.end() && r.final_val <= 1.01 * f->second;
      std::printf("  check %s: val %.4f <= 0.8 x initial %.4f: %s; <= 1.01 x fp32 %.4f: %s\n", r.config.c_str(),
                  r.final_val, r.initial_val, vs_start ? "ok" : "FAIL", f != fp32_val.end() ? f->second : NAN,
                  vs_fp32 ? "ok" : f == fp32_val.end() ? "FAIL (no fp32 run of this rule)" : "FAIL");
      failures += !vs_start + !vs_fp32;
    }
    if (checked == 0) {
      std::printf("  check: no flashoptim configuration in --configs\n");
      return 1;
    }
    return failures ? 1 : 0;
  }
  return 0;
}

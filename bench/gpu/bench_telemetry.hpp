// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The GPU's SM clock, board power and clock-limit reasons while a benchmark
// runs, sampled from NVML on a second thread. NVML is the driver's library
// (libnvidia-ml.so.1): it is opened at run time, so the benchmarks build
// without its header and run where it is missing (the counters are then
// left out). The few entry points used here are declared by hand from
// NVML's C API, which is stable: nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2,
// nvmlDeviceGetClockInfo, nvmlDeviceGetPowerUsage and
// nvmlDeviceGetCurrentClocksThrottleReasons.
//
// Why: a sustained step draws the H200's whole power limit (700 W), and the
// driver lowers the SM clock to stay under it (reason "SW power cap"), so
// an issue-bound kernel's time depends on how much energy its instructions
// take, and one run's numbers on the GPU's temperature
// (docs/gpu.md, "Power").
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace bench_gpu {

class telemetry {
 public:
  struct summary {
    bool valid = false;
    double sm_mhz = 0;     ///< mean SM clock over the samples
    double power_w = 0;    ///< mean board power
    double capped = 0;     ///< fraction of samples with a power or thermal clock limit active
    int samples = 0;
  };

  telemetry() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    auto sym = [&](const char* n) { return dlsym(lib_, n); };
    init_ = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    handle_ = reinterpret_cast<int (*)(unsigned, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
    power_ = reinterpret_cast<int (*)(void*, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
    reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    ok_ = init_ && handle_ && clock_ && power_ && reasons_ && init_() == 0 && handle_(0, &dev_) == 0;
  }
  ~telemetry() {
    stop();
    if (lib_) dlclose(lib_);
  }
  telemetry(const telemetry&) = delete;
  telemetry& operator=(const telemetry&) = delete;

  bool available() const { return ok_; }

  /// Starts sampling every `period_ms` until stop().
  void start(int period_ms = 5) {
    if (!ok_ || running_) return;
    sum_mhz_ = sum_mw_ = 0;
    n_ = capped_n_ = 0;
    running_ = true;
    worker_ = std::thread([this, period_ms] {
      while (running_.load()) {
        unsigned mhz = 0, mw = 0;
        unsigned long long r = 0;
        // NVML_CLOCK_SM = 1. Limit reasons: SW power cap 0x4, HW slowdown
        // 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80.
        if (clock_(dev_, 1, &mhz) == 0 && power_(dev_, &mw) == 0 && reasons_(dev_, &r) == 0) {
          sum_mhz_ += mhz;
          sum_mw_ += mw;
          ++n_;
          if (r & (0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull)) ++capped_n_;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
      }
    });
  }

  summary stop() {
    summary s;
    if (!running_) return s;
    running_ = false;
    worker_.join();
    if (n_ > 0) {
      s.valid = true;
      s.samples = n_;
      s.sm_mhz = sum_mhz_ / n_;
      s.power_w = sum_mw_ / n_ / 1000.0;
      s.capped = static_cast<double>(capped_n_) / n_;
    }
    return s;
  }

 private:
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  bool ok_ = false;
  int (*init_)() = nullptr;
  int (*handle_)(unsigned, void**) = nullptr;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
  std::atomic<bool> running_{false};
  std::thread worker_;
  double sum_mhz_ = 0, sum_mw_ = 0;
  int n_ = 0, capped_n_ = 0;
};

}  // namespace bench_gpu

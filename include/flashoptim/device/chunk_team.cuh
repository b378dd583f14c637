// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The CPU side of an off-loaded step (device/offload.cuh's offload_plan and
// the owning optimizer's off-load, optim/device_optimizer.cuh): chunks of
// whole groups whose gradients arrive by copies from the device, stepped on
// one team of CPU threads.
//
// Thread t of a team of T steps its share (whole groups) of every chunk, in
// chunk order, as soon as that chunk's gradients have landed; the last
// thread done with a chunk finishes it (its caller queues the parameters'
// copy back and the next gradient copy into the staging buffer the chunk
// freed, and marks that chunk queued). There is no barrier between chunks:
// a thread waits only for gradients, so a slow thread or a thread's wake-up
// costs once per step rather than once per chunk, as a cpu::step call per
// chunk (a parallel region each) did. Any split into whole groups gives the
// same bytes (cpu/step.hpp), so the result does not depend on the team.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "flashoptim/cpu/step.hpp"
#include "flashoptim/status.hpp"

namespace flashoptim::device::detail {

/// Per chunk, during a step: whether its gradient copy is queued, and how
/// many threads are done with it. Sized once (when the chunks are made).
class chunk_team_state {
 public:
  void resize(std::size_t n) {
    queued_.reset(n ? new std::atomic<bool>[n] : nullptr);
    done_.reset(n ? new std::atomic<int>[n] : nullptr);
    size_ = n;
  }
  std::size_t size() const { return size_; }
  /// Chunks [first, last), before their first copy is queued.
  void reset(std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      queued_[i].store(false, std::memory_order_relaxed);
      done_[i].store(0, std::memory_order_relaxed);
    }
  }
  /// After chunk i's gradient copy and the event that marks its end are queued.
  void mark_queued(std::size_t i) { queued_[i].store(true, std::memory_order_release); }
  bool queued(std::size_t i) const { return queued_[i].load(std::memory_order_acquire); }
  /// True for the thread that completes chunk i (the team's last).
  bool finish_share(std::size_t i, int team) { return done_[i].fetch_add(1, std::memory_order_acq_rel) == team - 1; }

 private:
  std::unique_ptr<std::atomic<bool>[]> queued_;
  std::unique_ptr<std::atomic<int>[]> done_;
  std::size_t size_ = 0;
};

/// Steps chunks [first, last) of `state` (reset, the first ones marked
/// queued) on a team of cpu::team_size(options, their groups) threads whose
/// CUDA calls run on `device`:
///   groups(i) -> std::int64_t            groups of chunk i (a partial last one counts)
///   landed(i) -> status                  waits for chunk i's gradients (after it is queued)
///   step(i, g0, g1) -> status            steps groups [g0, g1) of chunk i on the calling thread
///   finish(i) -> status                  once per chunk, by the thread that completes it
/// The first failure is returned; the other threads stop at their next
/// chunk (chunks already stepped stay stepped, as with one call per chunk).
/// Each thread's current device is restored when it is done.
template <class Groups, class Landed, class Step, class Finish>
status run_chunk_team(chunk_team_state& state, std::size_t first, std::size_t last, const cpu::step_options& options,
                      int device, Groups&& groups, Landed&& landed, Step&& step, Finish&& finish) {
  std::int64_t all_groups = 0;
  for (std::size_t i = first; i < last; ++i) all_groups += groups(i);
  const int team = cpu::team_size(options, all_groups);
  std::atomic<bool> failed{false};
  std::atomic_flag error_taken = ATOMIC_FLAG_INIT;
  status first_error;
  auto fail = [&](status s) {
    if (!error_taken.test_and_set()) first_error = std::move(s);
    failed.store(true, std::memory_order_release);
  };
  auto stopped = [&] { return failed.load(std::memory_order_acquire); };
  auto work = [&](int t, int size) {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess || (previous != device && cudaSetDevice(device) != cudaSuccess)) {
      fail(status(status_code::cuda_error, "off-load: a CPU thread cannot use device %d", device));
      return;
    }
    for (std::size_t i = first; i < last && !stopped(); ++i) {
      while (!state.queued(i) && !stopped()) std::this_thread::yield();
      if (stopped()) break;
      status s = landed(i);
      const std::int64_t g = groups(i);
      const std::int64_t g0 = g * t / size, g1 = g * (t + 1) / size;
      if (s.ok() && g1 > g0) s = step(i, g0, g1);
      if (s.ok() && state.finish_share(i, size)) s = finish(i);
      if (!s.ok()) {
        fail(std::move(s));
        break;
      }
    }
    if (previous != device) cudaSetDevice(previous);
  };
#if defined(_OPENMP)
  if (team > 1) {
#pragma omp parallel num_threads(team)
    work(omp_get_thread_num(), omp_get_num_threads());
    return stopped() ? first_error : status();
  }
#endif
  (void)team;
  work(0, 1);
  return stopped() ? first_error : status();
}

}  // namespace flashoptim::device::detail

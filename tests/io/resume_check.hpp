// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// docs/test-matrix.md C19, the resume half: run k steps, save, load into fresh
// buffers (filled with garbage, different hyperparameters), run on; the
// result must be bit-identical to an uninterrupted run.
#pragma once

#include "io_test_model.hpp"

namespace io_test {

/// Tensor sizes: a single element, partial groups, a tensor of many groups,
/// and an empty tensor last in the list (docs/test-matrix.md C16).
inline const std::vector<std::int64_t> resume_sizes = {1, 33, 100, 1025, 0};

template <class C>
void check_resume(const typename C::hyper& h, std::int64_t k = 3, std::int64_t more = 3) {
  model<C> uninterrupted(resume_sizes), saver(resume_sizes);
  uninterrupted.run(h, 1, k + more);
  saver.run(h, 1, k);

  const std::string path = temp_path("resume.safetensors");
  REQUIRE(io::save_checkpoint<C>(path, h, k, saver.refs.data(), saver.names.data(), saver.refs.size()).ok());

  model<C> resumed(resume_sizes, /*seed=*/77);
  resumed.scribble(0x5a);
  typename C::hyper loaded{};
  loaded.lr = 0.5;  // must be replaced by the file's
  std::int64_t step = -1;
  const status s = io::load_checkpoint<C>(path, loaded, step, resumed.refs.data(), resumed.names.data(),
                                          resumed.refs.size());
  REQUIRE_MESSAGE(s.ok(), s.what());
  CHECK(step == k);
  CHECK(io::detail::hyper_json<C>(loaded) == io::detail::hyper_json<C>(h));
  CHECK(resumed.snapshot() == saver.snapshot());

  resumed.run(loaded, step + 1, k + more);
  CHECK(resumed.snapshot() == uninterrupted.snapshot());
  // The run moved something: the comparison is not between two untouched states.
  CHECK(resumed.snapshot() != saver.snapshot());
  std::remove(path.c_str());
}

/// Hyperparameters that make every term of each rule matter.
inline rule::adamw::hyper adamw_hyper() {
  rule::adamw::hyper h;
  h.lr = 1e-2;
  h.weight_decay = 0.1;
  return h;
}
inline rule::adam::hyper adam_hyper() {
  rule::adam::hyper h;
  h.lr = 1e-2;
  h.beta2 = 0.99;
  h.weight_decay = 0.01;
  return h;
}
inline rule::sgd::hyper sgd_hyper(double momentum, bool nesterov = false) {
  rule::sgd::hyper h;
  h.lr = 1e-2;
  h.momentum = momentum;
  h.dampening = nesterov || momentum == 0.0 ? 0.0 : 0.1;
  h.weight_decay = 0.01;
  h.nesterov = nesterov;
  return h;
}
inline rule::sgdw::hyper sgdw_hyper() {
  rule::sgdw::hyper h;
  h.lr = 1e-2;
  h.momentum = 0.9;
  h.weight_decay = 0.1;
  h.decouple_lr = true;
  h.initial_lr = 2e-2;
  return h;
}
inline rule::lion::hyper lion_hyper() {
  rule::lion::hyper h;
  h.lr = 1e-3;
  h.weight_decay = 0.1;
  return h;
}

using ulp_bf16_i8 = codec::ulp_correction<bf16, std::int8_t>;
using ulp_bf16_i16 = codec::ulp_correction<bf16, std::int16_t>;
using ulp_fp16_i8 = codec::ulp_correction<fp16, std::int8_t>;
using ulp_fp16_i16 = codec::ulp_correction<fp16, std::int16_t>;

template <class Master, class S0 = codec::defaults::momentum, class S1 = codec::defaults::second_moment>
using adamw_config = step_config<rule::adamw, Master, float, S0, S1>;

}  // namespace io_test

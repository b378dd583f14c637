// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// The user rule of user_types.hpp through a checkpoint: saved under the
// rule name and state names it declares (no specialization of io::rule_io),
// loaded into garbage buffers, resumed bit-identically.
#include "extension/user_types.hpp"
#include "io/resume_check.hpp"

namespace fo = flashoptim;

TEST_CASE("extension: a user rule's checkpoint keys come from the rule") {
  CHECK(std::string(fo::io::rule_io<user::signum>::state_names[0]) == "momentum_buffer");
  const std::string j = fo::io::detail::hyper_json<user::signum_config>(user::signum_hyper());
  CHECK(j.find("\"beta\"") != std::string::npos);
}

TEST_CASE("extension: user rule and user softsign resume bit-identically") {
  io_test::check_resume<user::signum_config>(user::signum_hyper());
  auto h = user::signum_hyper();
  h.maximize = true;
  io_test::check_resume<user::signum_config>(h);
}

TEST_CASE("extension: a compander without a kind resumes bit-identically") {
  io_test::check_resume<user::signum_quadratic>(user::signum_hyper());
}

TEST_CASE("extension: the library's AdamW with a user softsign resumes bit-identically") {
  io_test::check_resume<user::adamw_user_softsign>(io_test::adamw_hyper());
}

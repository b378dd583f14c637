// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Every fallible call returns a `status`: a code with a string for every value
// and a short message that names what is wrong ("tensor 17: grad has 99
// elements, param has 100"). It is trivially copyable and never allocates, so
// launch paths can build one without touching the heap; the throwing
// convenience wrappers of examples and tests turn it into an exception.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "flashoptim/config.hpp"

namespace flashoptim {

enum class status_code : int {
  success = 0,
  invalid_argument,        ///< a value outside its documented domain
  null_pointer,            ///< a required pointer is null
  size_mismatch,           ///< buffers disagree on element or group counts
  dtype_mismatch,          ///< a buffer's element type is not the one configured
  misaligned,              ///< a pointer is not aligned to its element type
  aliasing,                ///< two buffers that are written overlap
  non_finite_hyperparameter,
  hyperparameter_out_of_range,
  capacity_exceeded,       ///< a table or workspace is too small
  cuda_error,              ///< the CUDA runtime reported an error
  not_supported,           ///< this build or device cannot run the request
  io_error,                ///< the operating system refused a file operation
  corrupt_file,            ///< a file's bytes do not describe a valid checkpoint
  config_mismatch,         ///< a checkpoint was written for another configuration
  state_changed,           ///< buffers differ from the ones a plan was built for
};

FLASHOPTIM_HOST_DEVICE inline const char* to_string(status_code c) {
  switch (c) {
    case status_code::success: return "success";
    case status_code::invalid_argument: return "invalid argument";
    case status_code::null_pointer: return "null pointer";
    case status_code::size_mismatch: return "size mismatch";
    case status_code::dtype_mismatch: return "dtype mismatch";
    case status_code::misaligned: return "misaligned pointer";
    case status_code::aliasing: return "aliasing buffers";
    case status_code::non_finite_hyperparameter: return "non-finite hyperparameter";
    case status_code::hyperparameter_out_of_range: return "hyperparameter out of range";
    case status_code::capacity_exceeded: return "capacity exceeded";
    case status_code::cuda_error: return "CUDA error";
    case status_code::not_supported: return "not supported";
    case status_code::io_error: return "I/O error";
    case status_code::corrupt_file: return "corrupt file";
    case status_code::config_mismatch: return "configuration mismatch";
    case status_code::state_changed: return "state changed";
  }
  return "unknown status";
}

class status {
 public:
  static constexpr std::size_t max_message = 240;

  status() = default;
  status(status_code code, const char* fmt, ...) __attribute__((format(printf, 3, 4))) : code_(code) {
    std::va_list args;
    va_start(args, fmt);
    std::vsnprintf(message_, max_message, fmt, args);
    va_end(args);
  }

  static status ok_status() { return status(); }

  bool ok() const { return code_ == status_code::success; }
  explicit operator bool() const { return ok(); }
  status_code code() const { return code_; }
  /// The detail message alone (may be empty).
  const char* message() const { return message_; }
  /// "<code>: <message>", for logs and exceptions.
  const char* what() const {
    std::snprintf(what_, sizeof what_, "%s%s%s", to_string(code_), message_[0] ? ": " : "", message_);
    return what_;
  }

 private:
  status_code code_ = status_code::success;
  char message_[max_message] = {};
  mutable char what_[max_message + 48] = {};
};

}  // namespace flashoptim

/// Returns early from the enclosing function when `expr` is an error status.
#define FLASHOPTIM_RETURN_IF_ERROR(expr)   \
  do {                                     \
    ::flashoptim::status s_ = (expr);      \
    if (!s_.ok()) return s_;               \
  } while (0)

// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Crash-safe file writing and whole-file reading (POSIX).
//
// A checkpoint is written to a fresh temporary file in the destination's
// directory ("<path>.tmp.XXXXXX", created exclusively), flushed and fsync'ed,
// renamed over the final name, and the directory is fsync'ed so the rename
// itself is durable. rename() within one file system is atomic: a reader, or
// a machine that loses power at any instant, sees either the old complete
// file or the new complete file under the final name, never a partial one.
// A crash can leave a stray "*.tmp.*" file behind; nothing reads those.
// Only regular files are read or replaced: a FIFO, directory, socket or
// device is refused at once with a message naming what it is.
#pragma once

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flashoptim/status.hpp"

namespace flashoptim::io {

namespace detail {
inline std::string parent_directory(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

/// What a file type is called in an error message.
inline const char* file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}
}  // namespace detail

/// Reads a whole regular file into `out`. Fails (and leaves `out` empty) on
/// anything but a regular file (a FIFO, directory, socket or device is
/// refused at once, never waited on), a file larger than `max_bytes`, a short
/// read, or any system error.
inline status read_file(const std::string& path, std::vector<unsigned char>& out,
                        std::uint64_t max_bytes = std::uint64_t{1} << 62) {
  out.clear();
  // O_NONBLOCK: opening a FIFO for reading blocks until a writer appears;
  // non-blocking, open returns at once and the fstat below refuses it. The
  // type is checked on the opened descriptor, not the name, so nothing can
  // swap the file between the check and the read. On a regular file
  // O_NONBLOCK changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;  // captured before anything else can change it
    return status(status_code::io_error, "cannot open '%.120s': %s", path.c_str(), std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return status(status_code::io_error, "cannot stat '%.120s': %s", path.c_str(), std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    // No system call failed here: errno says nothing about this refusal.
    ::close(fd);
    return status(status_code::io_error, "'%.120s' is %s, not a regular file", path.c_str(),
                  detail::file_type_name(st.st_mode));
  }
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return status(status_code::capacity_exceeded, "'%.120s' has %" PRIu64 " bytes, more than the %" PRIu64 " allowed",
                  path.c_str(), size, max_bytes);
  }
  try {
    out.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return status(status_code::capacity_exceeded, "no memory to stage the %" PRIu64 "-byte file '%.120s'", size,
                  path.c_str());
  }
  std::uint64_t done = 0;
  while (done < size) {
    const std::uint64_t chunk = size - done < (std::uint64_t{1} << 30) ? size - done : (std::uint64_t{1} << 30);
    const ssize_t r = ::read(fd, out.data() + done, static_cast<std::size_t>(chunk));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int e = r < 0 ? errno : 0;
      ::close(fd);
      out.clear();
      return status(status_code::io_error, "reading '%.120s': %s at byte %" PRIu64 " of %" PRIu64, path.c_str(),
                    e ? std::strerror(e) : "file shrank", done, size);
    }
    done += static_cast<std::uint64_t>(r);
  }
  ::close(fd);
  return status();
}

/// Writes a file under a temporary name and publishes it atomically with
/// commit(). Destroying an uncommitted writer removes the temporary file.
/// Writes are buffered; positions are byte offsets from the file start.
class atomic_file_writer {
 public:
  atomic_file_writer() = default;
  atomic_file_writer(const atomic_file_writer&) = delete;
  atomic_file_writer& operator=(const atomic_file_writer&) = delete;
  ~atomic_file_writer() { abandon(); }

  status open(const std::string& path) {
    abandon();
    if (path.empty()) return status(status_code::invalid_argument, "empty checkpoint path");
    // Refuse what a rename would silently replace or what cannot be a
    // checkpoint, before a byte is written: a missing or non-directory
    // parent, a destination that is a directory, FIFO, socket or device.
    const std::string dir = detail::parent_directory(path);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      const int e = errno;
      return status(status_code::io_error, "cannot save '%.120s': directory '%.120s': %s", path.c_str(), dir.c_str(),
                    std::strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
      return status(status_code::io_error, "cannot save '%.120s': '%.120s' is %s, not a directory", path.c_str(),
                    dir.c_str(), detail::file_type_name(st.st_mode));
    if (::stat(path.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode))
        return status(status_code::io_error, "cannot save '%.120s': it is %s, not a regular file", path.c_str(),
                      detail::file_type_name(st.st_mode));
    } else if (errno != ENOENT) {
      const int e = errno;
      return status(status_code::io_error, "cannot save '%.120s': %s", path.c_str(), std::strerror(e));
    }
    path_ = path;
    tmp_ = path + ".tmp.XXXXXX";
    fd_ = ::mkostemp(&tmp_[0], O_CLOEXEC);
    if (fd_ < 0) {
      const int e = errno;
      tmp_.clear();
      return status(status_code::io_error, "cannot create a temporary file next to '%.120s': %s", path.c_str(),
                    std::strerror(e));
    }
    // mkstemp creates 0600; a checkpoint is an ordinary data file.
    ::fchmod(fd_, 0644);
    buffer_.reserve(buffer_bytes);
    return status();
  }

  status write(const void* data, std::uint64_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (bytes > 0) {
      if (buffer_.size() == buffer_bytes) FLASHOPTIM_RETURN_IF_ERROR(flush());
      const std::uint64_t room = buffer_bytes - buffer_.size();
      const std::uint64_t n = bytes < room ? bytes : room;
      buffer_.insert(buffer_.end(), p, p + n);
      p += n;
      bytes -= n;
    }
    return status();
  }

  /// Overwrites bytes already written (the header, once checksums are known).
  status write_at(std::uint64_t offset, const void* data, std::uint64_t bytes) {
    FLASHOPTIM_RETURN_IF_ERROR(flush());
    const auto* p = static_cast<const unsigned char*>(data);
    while (bytes > 0) {
      const ssize_t w = ::pwrite(fd_, p, static_cast<std::size_t>(bytes), static_cast<off_t>(offset));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return fail("writing", w < 0 ? errno : 0);
      p += w;
      offset += static_cast<std::uint64_t>(w);
      bytes -= static_cast<std::uint64_t>(w);
    }
    return status();
  }

  /// fsync, rename over the final name, fsync the directory.
  status commit() {
    FLASHOPTIM_RETURN_IF_ERROR(flush());
    if (::fsync(fd_) != 0) return fail("flushing", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return fail("closing", errno);
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) return fail("renaming", errno);
    tmp_.clear();
    const std::string dir = detail::parent_directory(path_);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || ::fsync(dfd) != 0) {
      const int e = errno;
      if (dfd >= 0) ::close(dfd);
      return status(status_code::io_error, "'%.120s' was written but syncing its directory failed: %s",
                    path_.c_str(), std::strerror(e));
    }
    ::close(dfd);
    return status();
  }

 private:
  static constexpr std::uint64_t buffer_bytes = std::uint64_t{1} << 22;

  status flush() {
    std::uint64_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return fail("writing", w < 0 ? errno : 0);
      done += static_cast<std::uint64_t>(w);
    }
    buffer_.clear();
    return status();
  }

  /// `e`: the errno of the call that failed, captured right after it (0 when
  /// the call failed without setting errno, e.g. a write of no bytes).
  status fail(const char* what, int e) {
    status s(status_code::io_error, "%s '%.120s' failed: %s", what, tmp_.empty() ? path_.c_str() : tmp_.c_str(),
             e ? std::strerror(e) : "no progress");
    abandon();
    return s;
  }

  void abandon() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    tmp_.clear();
    buffer_.clear();
  }

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  std::vector<unsigned char> buffer_;
};

}  // namespace flashoptim::io

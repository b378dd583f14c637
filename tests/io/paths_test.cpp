// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// C24, checkpoint paths that are not regular files: a FIFO, a directory, a
// device, a socket, a missing file, as the file to load or the file to save.
// Each is refused at once (a FIFO is never waited on) with a message that
// says what the path is, carries a system error only where a call failed,
// and a refused save writes nothing and leaves no temporary file.
//
// Each load or save runs in a child process that the test kills after a
// timeout, so a regression fails the test instead of hanging the suite.
#include <cerrno>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <chrono>

#include "resume_check.hpp"

using namespace io_test;

namespace {

using cfg = adamw_config<ulp_bf16_i8>;
const std::vector<std::int64_t> sizes = {1, 33};

/// The status a call returned in a child process, or finished = false when
/// it had not returned within the timeout (the child is then killed).
struct outcome {
  bool finished = false;
  status_code code = status_code::success;
  std::string message;
};

template <class F>
outcome in_child(F&& call, int timeout_ms = 5000) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    // A stale errno from before the call must never reach a message: the
    // value the issue saw ("Numerical argument out of domain").
    errno = EDOM;
    const status s = call();
    const int code = static_cast<int>(s.code());
    std::string out(reinterpret_cast<const char*>(&code), sizeof code);
    out += s.message();
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t w = ::write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  outcome o;
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[512];
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r <= 0) {
      o.finished = got.size() >= sizeof(int);
      break;
    }
    got.append(buf, static_cast<std::size_t>(r));
  }
  if (!o.finished) ::kill(child, SIGKILL);
  int wstatus = 0;
  ::waitpid(child, &wstatus, 0);
  ::close(fds[0]);
  if (o.finished) {
    int code = 0;
    std::memcpy(&code, got.data(), sizeof code);
    o.code = static_cast<status_code>(code);
    o.message = got.substr(sizeof code);
  }
  return o;
}

bool has(const std::string& s, const char* text) { return s.find(text) != std::string::npos; }

/// A fresh directory for one test's special files.
struct scratch_dir {
  std::string path = temp_path("dir");
  scratch_dir() { REQUIRE(::mkdir(path.c_str(), 0755) == 0); }
  ~scratch_dir() {
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string leaf = e->d_name;
        if (leaf == "." || leaf == "..") continue;
        const std::string full = path + "/" + leaf;
        if (::unlink(full.c_str()) != 0) ::rmdir(full.c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
  std::string operator/(const std::string& leaf) const { return path + "/" + leaf; }
  std::size_t entries() const {
    std::size_t n = 0;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
      ::closedir(d);
    }
    return n;
  }
};

// The buffers are made in the parent: a child of a process that ran OpenMP
// must not start OpenMP itself (the compressed form's save and load do not).
outcome load_from(const std::string& path) {
  model<cfg> m(sizes);
  return in_child([&] {
    cfg::hyper h{};
    std::int64_t step = -1;
    return io::load_checkpoint<cfg>(path, h, step, m.refs.data(), m.names.data(), m.refs.size());
  });
}

outcome save_to(const std::string& path) {
  model<cfg> m(sizes);
  return in_child([&] {
    return io::save_checkpoint<cfg>(path, adamw_hyper(), 1, m.refs.data(), m.names.data(), m.refs.size());
  });
}

/// A refusal that names what the path is and carries no stale errno text.
void check_refused(const outcome& o, const char* what, const char* path) {
  REQUIRE_MESSAGE(o.finished, "the call did not return within the timeout: " << path);
  MESSAGE(o.message);
  CHECK(o.code == status_code::io_error);
  CHECK(has(o.message, what));
  CHECK_FALSE(has(o.message, std::strerror(EDOM)));
}

int unix_socket_at(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof a.sun_path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

}  // namespace

TEST_CASE("C24 loading from a FIFO is refused at once, not waited on") {
  scratch_dir dir;
  const std::string fifo = dir / "ckpt.safetensors";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const auto start = std::chrono::steady_clock::now();
  const outcome o = load_from(fifo);
  check_refused(o, "is a FIFO, not a regular file", fifo.c_str());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  // Through a symbolic link too: the type is that of the file opened.
  const std::string link = dir / "link.safetensors";
  REQUIRE(::symlink(fifo.c_str(), link.c_str()) == 0);
  check_refused(load_from(link), "is a FIFO, not a regular file", link.c_str());
}

TEST_CASE("C24 loading a directory, a device, a socket or a missing file: a clear error") {
  scratch_dir dir;
  check_refused(load_from(dir.path), "is a directory, not a regular file", dir.path.c_str());
  check_refused(load_from("/dev/null"), "is a character device, not a regular file", "/dev/null");

  const std::string sock = dir / "sock";
  const int fd = unix_socket_at(sock);
  // open(2) of a socket fails (ENXIO): that error, and only that, is reported.
  const outcome s = load_from(sock);
  check_refused(s, "cannot open", sock.c_str());
  CHECK(has(s.message, std::strerror(ENXIO)));
  ::close(fd);

  const std::string missing = dir / "missing.safetensors";
  const outcome m = load_from(missing);
  check_refused(m, "cannot open", missing.c_str());
  CHECK(has(m.message, std::strerror(ENOENT)));

  // read_file itself, as tools use it: `out` stays empty.
  std::vector<unsigned char> out(5, 1);
  errno = EDOM;
  const status r = io::read_file(dir.path, out);
  CHECK(r.code() == status_code::io_error);
  CHECK(out.empty());
  CHECK_FALSE(has(r.message(), std::strerror(EDOM)));
}

TEST_CASE("C24 saving over a FIFO, a directory or a device is refused; nothing is written") {
  scratch_dir dir;
  const std::string fifo = dir / "fifo.safetensors";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  // A rename would silently replace the FIFO with a regular file.
  check_refused(save_to(fifo), "is a FIFO, not a regular file", fifo.c_str());
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));

  const std::string sub = dir / "sub";
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  check_refused(save_to(sub), "is a directory, not a regular file", sub.c_str());
  REQUIRE(::lstat(sub.c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));

  const std::string sock = dir / "sock";
  const int fd = unix_socket_at(sock);
  check_refused(save_to(sock), "is a socket, not a regular file", sock.c_str());
  ::close(fd);

  // A device: never /dev/null itself, which a regressed save (a rename over
  // it, as root) would replace with a regular file for the whole machine. A
  // node of the same device in the scratch directory (root only) stands in.
  std::size_t made = 3;
  const std::string dev = dir / "null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    ++made;
    check_refused(save_to(dev), "is a character device, not a regular file", dev.c_str());
    REQUIRE(::lstat(dev.c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  } else {
    MESSAGE("mknod not permitted: the device case is skipped");
  }
  // Only the entries the test made: no temporary file left behind.
  CHECK(dir.entries() == made);
}

TEST_CASE("C24 saving into a missing, non-directory or unwritable directory: a clear error, no file") {
  scratch_dir dir;
  const std::string missing_dir = dir / "no_such_dir";
  const outcome m = save_to(missing_dir + "/ckpt.safetensors");
  check_refused(m, "no_such_dir", missing_dir.c_str());
  CHECK(has(m.message, std::strerror(ENOENT)));

  const std::string file = dir / "plain_file";
  write_all(file, {1, 2, 3});
  check_refused(save_to(file + "/ckpt.safetensors"), "is a regular file, not a directory", file.c_str());
  CHECK(read_all(file) == std::vector<unsigned char>{1, 2, 3});

  // Unwritable: a read-only directory (root writes there anyway, so as root
  // sysfs stands in: no one may create files in it).
  std::string ro = dir / "read_only";
  REQUIRE(::mkdir(ro.c_str(), 0555) == 0);
  if (::geteuid() == 0) ro = "/sys";
  const outcome r = save_to(ro + "/flashoptim_ckpt.safetensors");
  check_refused(r, "cannot create a temporary file", ro.c_str());
  CHECK((has(r.message, std::strerror(EACCES)) || has(r.message, std::strerror(EROFS)) ||
         has(r.message, std::strerror(EPERM))));
  CHECK(dir.entries() == 2);  // plain_file and read_only, nothing else
}

TEST_CASE("C24 an ordinary save and load still work (control)") {
  scratch_dir dir;
  const std::string path = dir / "ok.safetensors";
  const outcome s = save_to(path);
  REQUIRE(s.finished);
  CHECK_MESSAGE(s.code == status_code::success, s.message);
  const outcome l = load_from(path);
  REQUIRE(l.finished);
  CHECK_MESSAGE(l.code == status_code::success, l.message);
  CHECK(dir.entries() == 1);
}

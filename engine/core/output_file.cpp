#include "engine/core/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace arch {

namespace fs = std::filesystem;

namespace {

std::string reason() { return std::strerror(errno); }

fs::path folder_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

std::string hidden_name(const fs::path& target, const char* what) {
  return (folder_of(target) / ("." + target.filename().string() + "." + std::to_string(getpid()) + what)).string();
}

// An unnamed scratch file (nothing to clean up after a kill): in the temp
// folder, else in memory.
int scratch_file() {
  std::error_code ec;  // a TMPDIR that is no folder throws from the other overload
  const fs::path temp = fs::temp_directory_path(ec);
  int fd = ec ? -1 : open(temp.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fd = memfd_create("archetype-output", MFD_CLOEXEC);
  return fd;
}

// All of `fd` from its start to `to`; false with errno set on a failure.
bool copy_all(int fd, int to) {
  if (lseek(fd, 0, SEEK_SET) != 0) return false;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    for (ssize_t at = 0; at < n;) {
      const ssize_t w = write(to, buf + at, size_t(n - at));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      at += w;
    }
  }
}

}  // namespace

std::string OutputFile::shown(const std::string& path) { return path == "-" ? "standard output" : path; }

bool OutputFile::in_place(const std::string& path) {
  struct stat st;
  return path == "-" || (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

Status OutputFile::check(const std::string& path) {
  if (path.empty()) return error("no output path given");
  if (path == "-") return {};
  if (in_place(path)) {
    if (access(path.c_str(), W_OK) != 0) return error(path + ": cannot be written (" + reason() + ")");
    return {};
  }
  const fs::path target(path);
  const fs::path folder = folder_of(target);
  std::error_code ec;
  if (target.filename().empty()) return error(path + ": names a folder, not a file to write");
  if (fs::is_directory(target, ec)) return error(path + ": is a folder, not a file to write");
  if (!fs::is_directory(folder, ec)) return error(path + ": the folder " + folder.string() + " does not exist");
  if (access(folder.c_str(), W_OK) != 0) return error(path + ": the folder " + folder.string() + " is not writable");
  return {};
}

Result<OutputFile> OutputFile::create_in_place(const std::string& path) {
  OutputFile out;
  out.path_ = path;
  if (path == "-") std::fflush(stdout);  // what was printed before comes first
  const int target = path == "-" ? fcntl(1, F_DUPFD_CLOEXEC, 0) : open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (target < 0) return error(shown(path) + ": cannot be written (" + reason() + ")");
  if (lseek(target, 0, SEEK_CUR) >= 0) {
    out.mode_ = Mode::Direct;
    out.fd_ = target;
  } else {
    out.mode_ = Mode::Spooled;
    out.target_fd_ = target;
    out.fd_ = scratch_file();
    if (out.fd_ < 0) return out.fail("cannot make a scratch file for it (" + reason() + ")");
  }
  out.stream_ = fdopen(out.fd_, "wb");
  if (!out.stream_) return out.fail("cannot be written (" + reason() + ")");
  return out;
}

Result<OutputFile> OutputFile::create(const std::string& path) {
  ARCH_TRY_STATUS(check(path));
  if (in_place(path)) return create_in_place(path);
  const fs::path target(path);
  const fs::path folder = folder_of(target);
  OutputFile out;
  out.path_ = path;
  // Unnamed until commit: a kill leaves nothing behind at all.
  out.fd_ = open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (out.fd_ < 0) {
    out.partial_ = hidden_name(target, ".partial");
    out.fd_ = open(out.partial_.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (out.fd_ < 0) return error(path + ": cannot be written (" + reason() + ")");
  }
  out.stream_ = fdopen(out.fd_, "wb");
  if (!out.stream_) {
    const std::string why = reason();
    out.discard();
    return error(path + ": cannot be written (" + why + ")");
  }
  return out;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)),
      partial_(std::move(o.partial_)),
      stream_(o.stream_),
      fd_(o.fd_),
      target_fd_(o.target_fd_),
      mode_(o.mode_),
      done_(o.done_) {
  o.stream_ = nullptr;
  o.fd_ = o.target_fd_ = -1;
  o.done_ = true;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (stream_) std::fclose(stream_);  // closes fd_ too
  else if (fd_ >= 0) close(fd_);
  if (target_fd_ >= 0) close(target_fd_);
  stream_ = nullptr;
  fd_ = target_fd_ = -1;
  if (!done_ && !partial_.empty()) std::remove(partial_.c_str());
  done_ = true;
}

Error OutputFile::fail(const std::string& why) {
  discard();
  return error(shown(path_) + ": " + why);
}

// The device takes what is still buffered; a pipe or FIFO the whole
// scratch file. A full device (ENOSPC) fails here, naming the path.
Status OutputFile::commit_in_place() {
  if (std::fflush(stream_) != 0 || std::ferror(stream_)) return fail("cannot be written (" + reason() + ")");
  if (mode_ == Mode::Spooled && !copy_all(fd_, target_fd_)) return fail("cannot be written (" + reason() + ")");
  const int closed = std::fclose(stream_);
  const std::string why = reason();
  stream_ = nullptr;
  fd_ = -1;
  if (closed != 0) return fail("cannot be written (" + why + ")");
  discard();
  return {};
}

Status OutputFile::commit() {
  if (done_) return error(shown(path_) + ": already written");
  if (mode_ != Mode::Rename) return commit_in_place();
  const fs::path target(path_);
  // A write that failed earlier (a full disk) leaves the error flag set
  // and maybe nothing left to flush: never name a truncated file.
  if (std::fflush(stream_) != 0 || std::ferror(stream_)) {
    const std::string why = reason();
    discard();
    return error(path_ + ": cannot be written (" + why + ")");
  }
  std::string named = partial_;
  if (named.empty()) {
    // An unnamed file gets a name by linking its /proc entry, then takes the
    // target's by rename (link cannot replace an existing file).
    named = hidden_name(target, ".new");
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    std::remove(named.c_str());
    if (linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      const std::string why = reason();
      discard();
      return error(path_ + ": cannot be written (" + why + ")");
    }
  }
  const int closed = std::fclose(stream_);
  stream_ = nullptr;
  fd_ = -1;
  done_ = true;
  if (closed != 0 || std::rename(named.c_str(), path_.c_str()) != 0) {
    const std::string why = reason();
    std::remove(named.c_str());
    return error(path_ + ": cannot be written (" + why + ")");
  }
  return {};
}

}  // namespace arch

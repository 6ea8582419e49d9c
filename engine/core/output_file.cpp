#include "engine/core/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
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

}  // namespace

Result<OutputFile> OutputFile::create(const std::string& path) {
  const fs::path target(path);
  const fs::path folder = folder_of(target);
  std::error_code ec;
  if (target.filename().empty()) return error(path + ": names a folder, not a file to write");
  if (fs::is_directory(target, ec)) return error(path + ": is a folder, not a file to write");
  if (!fs::is_directory(folder, ec)) return error(path + ": the folder " + folder.string() + " does not exist");
  if (access(folder.c_str(), W_OK) != 0) return error(path + ": the folder " + folder.string() + " is not writable");
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
    : path_(std::move(o.path_)), partial_(std::move(o.partial_)), stream_(o.stream_), fd_(o.fd_), done_(o.done_) {
  o.stream_ = nullptr;
  o.fd_ = -1;
  o.done_ = true;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (stream_) std::fclose(stream_);  // closes fd_ too
  else if (fd_ >= 0) close(fd_);
  stream_ = nullptr;
  fd_ = -1;
  if (!done_ && !partial_.empty()) std::remove(partial_.c_str());
  done_ = true;
}

Status OutputFile::commit() {
  if (done_) return error(path_ + ": already written");
  const fs::path target(path_);
  if (std::fflush(stream_) != 0) {
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

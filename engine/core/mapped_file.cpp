#include "engine/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace arch {

namespace {

Error system_error(const std::string& path, const char* what) {
  return error(path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  // O_NONBLOCK so that a FIFO handed to us cannot hang the open; it is
  // rejected just below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return system_error(path, "cannot open");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Error e = system_error(path, "cannot stat");
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(path + ": not a regular file" + (S_ISDIR(st.st_mode) ? " (it is a directory)" : ""));
  }
  size_t size = size_t(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    // Read-only: writable private pages count against the commit limit, so
    // a checkpoint larger than memory (31 GB on a 24 GB machine, whose
    // decode reads a few experts a token) could not be mapped at all.
    p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = system_error(path, "cannot map");
      ::close(fd);
      return e;
    }
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return std::shared_ptr<const MappedFile>(new MappedFile(path, static_cast<std::byte*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace arch

// A whole file mapped into memory, read-only on disk. Checkpoint tensors are
// views into it, so the mapping is shared_ptr-owned: a Tensor's `owner` keeps
// it alive after the SafetensorsFile that made it is gone.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace arch {

class MappedFile {
 public:
  // Maps `path`; the error names the path and the system's reason.
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  // Read-only pages (a checkpoint larger than memory still maps): what
  // changes a tensor's values makes a copy first (to_f32, convert_to,
  // prepared layouts); a write through a mapped Tensor's `data` faults.
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  MappedFile(std::string path, std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  std::byte* data_ = nullptr;  // null for an empty file (mmap refuses length 0)
  size_t size_ = 0;
};

}  // namespace arch

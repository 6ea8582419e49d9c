// An output file written whole or not at all. The bytes go to an unnamed
// file in the target's folder (O_TMPFILE; where the file system has none, a
// hidden ".NAME.PID.partial" beside it) and reach the target's name only at
// commit(), by a rename over whatever was there. A failure, an exception or
// a kill before that leaves the target as it was: no truncated file, and an
// earlier good output not replaced.
#pragma once

#include <cstdio>
#include <string>

#include "engine/core/error.h"

namespace arch {

class OutputFile {
 public:
  // Errors name the path: its folder missing or not writable.
  static Result<OutputFile> create(const std::string& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();  // not committed: the bytes are dropped

  const std::string& path() const { return path_; }
  std::FILE* stream() { return stream_; }  // buffered writes
  int fd() const { return fd_; }           // for a library writing by descriptor (flush stream() first)

  // Flush and give the file its name. After a failure nothing is there.
  Status commit();

 private:
  OutputFile() = default;
  void discard();

  std::string path_;
  std::string partial_;  // the named fallback, empty with O_TMPFILE
  std::FILE* stream_ = nullptr;
  int fd_ = -1;
  bool done_ = false;
};

}  // namespace arch

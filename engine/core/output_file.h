// An output file written whole or not at all. The bytes go to an unnamed
// file in the target's folder (O_TMPFILE; where the file system has none, a
// hidden ".NAME.PID.partial" beside it) and reach the target's name only at
// commit(), by a rename over whatever was there. A failure, an exception or
// a kill before that leaves the target as it was: no truncated file, and an
// earlier good output not replaced.
//
// A target that is not a regular file is never renamed over: replacing
// /dev/null (or a FIFO a reader waits on) with a regular file would break
// what else uses it, and as root the machine. "-" (standard output) and an
// existing device, FIFO or socket (symlinks followed to decide, so
// /dev/stdout too) are written in place, opened as they are, nothing made
// beside them. One that can seek (a device, or "-" the shell sent to a
// regular file it made: a failure leaves that one part written) takes the
// bytes as they come;
// one that cannot (a pipe, a FIFO, a terminal) gets them at commit(), from
// an unnamed scratch file, because some writers (libsndfile's WAV) seek back
// to finish a header, and so a reader gets the output whole or nothing.
#pragma once

#include <cstdio>
#include <string>

#include "engine/core/error.h"

namespace arch {

class OutputFile {
 public:
  // Errors name the path: its folder missing or not writable, a device that
  // cannot be opened for writing.
  static Result<OutputFile> create(const std::string& path);

  // What create() would refuse, checked without making or opening
  // anything: a command checks its output before its work.
  static Status check(const std::string& path);

  // Whether `path` is written in place: "-", or an existing file that is
  // not a regular file (a device, a FIFO, a socket; symlinks followed).
  static bool in_place(const std::string& path);
  // How messages name `path` ("-": standard output).
  static std::string shown(const std::string& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();  // not committed: the bytes are dropped (those a device took already stay taken)

  const std::string& path() const { return path_; }
  std::FILE* stream() { return stream_; }  // buffered writes
  int fd() const { return fd_; }           // for a library writing by descriptor (flush stream() first)

  // Flush and give the file its name (or hand the bytes to the device or
  // pipe). After a failure nothing is there; a full device is an error.
  Status commit();

 private:
  enum class Mode { Rename, Direct, Spooled };
  OutputFile() = default;
  static Result<OutputFile> create_in_place(const std::string& path);
  Status commit_in_place();
  Error fail(const std::string& why);  // dropped, the path and `why` said
  void discard();

  std::string path_;
  std::string partial_;  // the named fallback, empty with O_TMPFILE
  std::FILE* stream_ = nullptr;
  int fd_ = -1;
  int target_fd_ = -1;  // Spooled: the pipe or FIFO the scratch file goes to at commit
  Mode mode_ = Mode::Rename;
  bool done_ = false;
};

}  // namespace arch

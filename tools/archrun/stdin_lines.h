// Lines of standard input as they come, read without stdio's buffering so
// a caller can ask whether a whole line is there yet without waiting for
// one (poll), and wait only when it has nothing else to do.
#pragma once

#include <optional>
#include <string>

namespace arch::cli {

class StdinLines {
 public:
  // The next line, its '\n' (and a '\r' before it) dropped: waiting for one
  // where `wait`; none where no whole line has come yet (not waiting), or
  // the input is over or failed (the last line may lack its '\n').
  std::optional<std::string> next(bool wait);
  // Why the lines stopped before the input's end: a read that failed, or a
  // line past kMaxLineBytes; empty where they did not.
  const std::string& fault() const { return fault_; }
  static constexpr size_t kMaxLineBytes = size_t(1) << 20;

 private:
  std::string buffer_, fault_;
  bool ended_ = false;
};

}  // namespace arch::cli

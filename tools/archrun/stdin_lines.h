// Lines of standard input as they come, read without stdio's buffering so
// a caller can ask whether a whole line is there yet without waiting for
// one (poll), and wait only when it has nothing else to do.
#pragma once

#include <optional>
#include <string>

namespace arch::cli {

class StdinLines {
 public:
  // The next line, its '\n' dropped: waiting for one where `wait`; none
  // where no whole line has come yet (not waiting) or the input is over (the
  // last line may lack its '\n').
  std::optional<std::string> next(bool wait);

 private:
  std::string buffer_;
  bool ended_ = false;
};

}  // namespace arch::cli

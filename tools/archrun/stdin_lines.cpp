#include "tools/archrun/stdin_lines.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace arch::cli {

std::optional<std::string> StdinLines::next(bool wait) {
  while (true) {
    if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (ended_) {
      if (buffer_.empty()) return std::nullopt;
      std::string last;
      last.swap(buffer_);
      return last;
    }
    if (!wait) {
      pollfd p{0, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return std::nullopt;  // nothing there yet (an error shows on the read)
    }
    char chunk[65536];
    const ssize_t n = ::read(0, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ended_ = true;  // the end, or an input that cannot be read
    else buffer_.append(chunk, size_t(n));
  }
}

}  // namespace arch::cli

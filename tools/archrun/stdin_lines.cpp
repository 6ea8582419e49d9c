#include "tools/archrun/stdin_lines.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace arch::cli {

std::optional<std::string> StdinLines::next(bool wait) {
  while (true) {
    const size_t nl = buffer_.find('\n');
    if (std::min(nl, buffer_.size()) > kMaxLineBytes) {  // not a sentence a line
      fault_ = "a line of stdin runs past " + std::to_string(kMaxLineBytes) + " bytes";
      ended_ = true;
      buffer_.clear();
      return std::nullopt;
    }
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    if (ended_) {
      if (buffer_.empty()) return std::nullopt;
      std::string last;
      last.swap(buffer_);
      if (!last.empty() && last.back() == '\r') last.pop_back();
      return last;
    }
    if (!wait) {
      pollfd p{0, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return std::nullopt;  // nothing there yet (an error shows on the read)
    }
    char chunk[65536];
    const ssize_t n = ::read(0, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fault_ = std::string("reading stdin: ") + std::strerror(errno);
    if (n <= 0) ended_ = true;
    else buffer_.append(chunk, size_t(n));
  }
}

}  // namespace arch::cli

#include "engine/serve/connection_gate.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <httplib.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/serve/api_error.h"

namespace arch::serve {

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// The value of header `name` ("content-length") in a lowered header block, or
// npos when absent.
size_t header_value_at(const std::string& head, std::string_view name) {
  const size_t at = head.find("\r\n" + std::string(name) + ":");
  return at == std::string::npos ? at : at + 3 + name.size();
}

void close_quietly(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace

void refuse_connection(int fd, int status, const std::string& message) {
  ApiError e{status, message, status == 503 ? "server_error" : "invalid_request_error", "", ""};
  const std::string body = e.body().dump();
  std::string reply = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                      "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n" + (status == 503 ? "Retry-After: 1\r\n" : "") + "\r\n" + body;
  (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  // What the client already sent is read, so that closing does not reset
  // the connection before it reads the reply.
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
  ::close(fd);
}

int64_t ConnectionGate::request_ready(const std::string& b, size_t from, const GateOptions& opt, int64_t* body_bytes,
                                      RequestScan* scan) {
  RequestScan fresh;
  RequestScan& s = scan ? *scan : fresh;
  const size_t have = b.size() - from;
  if (s.head_bytes == 0) {
    // Resumed where the last look stopped (3 bytes back: an end may straddle).
    const size_t resume = from + std::min(s.scanned, have);
    const size_t end = b.find("\r\n\r\n", resume >= from + 3 ? resume - 3 : from);
    const size_t scan_to = end == std::string::npos ? b.size() : end + 2;
    size_t line_start = from + std::min(s.line_start, have);
    for (size_t i = resume; i < scan_to; ++i) {
      if (b[i] != '\n') continue;
      if (i - line_start > opt.max_line_bytes) return -1;
      line_start = i + 1;
    }
    s.scanned = scan_to - from;
    s.line_start = line_start - from;
    if (end == std::string::npos)
      return (b.size() - line_start > opt.max_line_bytes || have > opt.max_header_bytes) ? -1 : 0;
    const size_t head_bytes = end + 4 - from;
    if (head_bytes > opt.max_header_bytes) return -1;
    // A small body is awaited here too, unless the client waits for a
    // 100 Continue first or sends it in chunks.
    const std::string head = lowered(std::string_view(b).substr(from, head_bytes));
    const size_t at = header_value_at(head, "content-length");
    const bool chunked = header_value_at(head, "transfer-encoding") != std::string::npos;
    // A plain number, bounded: anything else (a sign, 2^63) is no length to
    // count the body by.
    int64_t length = 0;
    if (at != std::string::npos) {
      size_t k = head.find_first_not_of(" \t", at);
      const size_t digits_end = head.find_first_not_of("0123456789", k);
      const size_t line_end = head.find("\r\n", at);
      const size_t rest = head.find_first_not_of(" \t", digits_end);
      if (k == digits_end || digits_end - k > 13 || rest != line_end)
        length = -1;
      else
        length = std::stoll(head.substr(k, digits_end - k));
      if (length > (int64_t(1) << 40)) length = -1;
    }
    s.head_bytes = head_bytes;
    s.body_bytes = chunked ? -1 : length;
    s.wait_body = !chunked && header_value_at(head, "expect") == std::string::npos && length > 0 &&
                  size_t(length) <= opt.small_body_bytes;
  }
  if (body_bytes) *body_bytes = s.body_bytes;
  if (!s.wait_body) return int64_t(s.head_bytes);
  return have >= s.head_bytes + size_t(s.body_bytes) ? int64_t(s.head_bytes) : 0;
}

ConnectionGate::ConnectionGate(GateOptions opt, Serve serve) : opt_(opt), serve_(std::move(serve)) {
  workers_ = std::make_unique<httplib::ThreadPool>(size_t(std::max(1, opt_.workers)));
  light_ = std::make_unique<httplib::ThreadPool>(size_t(std::max(1, opt_.light_workers)));
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { run(); });
}

ConnectionGate::~ConnectionGate() {
  close_waiting();
  if (thread_.joinable()) thread_.join();
  workers_->shutdown();
  light_->shutdown();
  close_quietly(wake_fd_);
}

void ConnectionGate::wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void ConnectionGate::close_waiting() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  wake();
}

GateCounts ConnectionGate::counts() const { return {waiting_.load(), refused_.load(), timed_out_.load(), too_large_.load()}; }

void ConnectionGate::admit(int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closing_ && waiting_ < opt_.max_waiting) {
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->deadline = GateClock::now() + std::chrono::duration_cast<GateClock::duration>(
                                           std::chrono::duration<double>(opt_.first_request_seconds));
      ++waiting_;
      inbox_.push_back(std::move(c));
      fd = -1;
    }
  }
  if (fd < 0) return wake();
  ++refused_;
  refuse_connection(fd, 503, "too many connections are waiting to send a request (" + std::to_string(opt_.max_waiting) +
                                 "); try again shortly");
}

void ConnectionGate::hold(std::unique_ptr<Connection> c) {
  c->pending.erase(0, c->read_at);
  c->read_at = 0;
  c->scan = {};  // the next request's
  c->unexamined = true;  // the next request may have come with the last
  c->deadline = GateClock::now() +
                std::chrono::duration_cast<GateClock::duration>(std::chrono::duration<double>(opt_.idle_seconds));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closing_ && waiting_ < opt_.max_waiting) {
      ++waiting_;
      inbox_.push_back(std::move(c));
    }
  }
  if (!c) return wake();
  close_quietly(c->fd);  // kept alive no longer: the room is full
}

void ConnectionGate::dispatch(std::unique_ptr<Connection> c) {
  const bool light = c->pending.compare(c->read_at, 4, "GET ") == 0;
  Connection* raw = c.release();
  (light ? light_ : workers_)->enqueue([this, raw] {
    std::unique_ptr<Connection> c(raw);
    bool keep = false;
    try {
      keep = serve_(*c);
    } catch (...) {
    }
    if (keep) return hold(std::move(c));
    ::shutdown(c->fd, SHUT_RDWR);
    close_quietly(c->fd);
  });
}

void ConnectionGate::run() {
  std::vector<std::unique_ptr<Connection>> held;
  std::vector<pollfd> fds;
  const size_t most_pending = opt_.max_header_bytes + opt_.small_body_bytes + 4096;
  std::string chunk(16384, '\0');
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) break;
      for (auto& c : inbox_) held.push_back(std::move(c));
      inbox_.clear();
    }
    auto now = GateClock::now();
    auto next = now + std::chrono::seconds(1);
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (const auto& c : held) {
      fds.push_back(pollfd{c->fd, POLLIN, 0});
      next = std::min(next, c->deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
    ::poll(fds.data(), fds.size(), int(std::clamp<int64_t>(wait, 0, 1000)));
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);
    }
    now = GateClock::now();
    for (size_t i = 0; i < held.size(); ++i) {
      std::unique_ptr<Connection>& c = held[i];
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const size_t room = most_pending > c->unread() ? most_pending - c->unread() : 0;
        const ssize_t n = room == 0 ? 0 : ::recv(c->fd, chunk.data(), std::min(room, chunk.size()), MSG_DONTWAIT);
        if (n > 0) c->pending.append(chunk.data(), size_t(n)), c->unexamined = true;
        if (room > 0 && (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))) {  // the client left
          close_quietly(c->fd);
          --waiting_;
          c.reset();
          continue;
        }
      }
      // Scanned again only when something changed: a slow client's
      // kilobytes are not rescanned whenever another connection stirs.
      const int64_t ready = c->unexamined ? request_ready(c->pending, c->read_at, opt_, &c->body_bytes, &c->scan) : 0;
      c->unexamined = false;
      if (ready < 0) {
        ++too_large_;
        --waiting_;
        refuse_connection(c->fd, 431, "the request line and headers exceed " + std::to_string(opt_.max_header_bytes) +
                                          " bytes (or one line exceeds " + std::to_string(opt_.max_line_bytes) + ")");
        c.reset();
      } else if (ready > 0) {
        c->head_bytes = ready;
        --waiting_;
        dispatch(std::move(c));
      } else if (now >= c->deadline) {
        ++timed_out_;
        --waiting_;
        if (c->unread() > 0) refuse_connection(c->fd, 408, "the request did not arrive in time");
        else close_quietly(c->fd);
        c.reset();
      }
    }
    held.erase(std::remove(held.begin(), held.end(), nullptr), held.end());
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto* list : {&held, &inbox_})
    for (auto& c : *list)
      if (c) close_quietly(c->fd);
  held.clear();
  inbox_.clear();
  waiting_ = 0;
}

}  // namespace arch::serve

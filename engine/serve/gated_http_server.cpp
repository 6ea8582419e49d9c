#include "engine/serve/gated_http_server.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

namespace arch::serve {

namespace {

// Waits up to `ms` for `events` on fd; true when they came.
bool wait_for(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR));
  }
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

// The accept thread's queue: the task (hand the socket to the gate) runs at
// once, on that thread.
class RunAtOnce final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

bool ConnectionStream::is_readable() const { return c_.unread() > 0 || wait_for(c_.fd, POLLIN, read_timeout_ms_); }

bool ConnectionStream::is_writable() const {
  if (!wait_for(c_.fd, POLLOUT, write_timeout_ms_)) return false;
  // Gone: readable with nothing to read.
  pollfd p{c_.fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return true;
  char probe;
  return ::recv(c_.fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (c_.unread() == 0) {
    c_.pending.clear();
    c_.read_at = 0;
    if (!wait_for(c_.fd, POLLIN, read_timeout_ms_)) return -1;
    // Small reads (httplib reads header lines a byte at a time) go through
    // the buffer: one system call per chunk, not per byte.
    if (size >= 4096) {
      ssize_t n;
      do n = ::recv(c_.fd, ptr, size, 0);
      while (n < 0 && errno == EINTR);
      if (n > 0) consumed_ += n;
      return n;
    }
    c_.pending.resize(4096);
    ssize_t n;
    do n = ::recv(c_.fd, c_.pending.data(), c_.pending.size(), 0);
    while (n < 0 && errno == EINTR);
    c_.pending.resize(n > 0 ? size_t(n) : 0);
    if (n <= 0) return n;
  }
  const size_t k = std::min(size, c_.unread());
  std::memcpy(ptr, c_.pending.data() + c_.read_at, k);
  c_.read_at += k;
  consumed_ += int64_t(k);
  return ssize_t(k);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (!wait_for(c_.fd, POLLOUT, write_timeout_ms_)) return -1;
    const ssize_t n = ::send(c_.fd, ptr + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return -1;
    done += size_t(n);
  }
  return ssize_t(size);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(c_.fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(c_.fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
}

GatedHttpServer::GatedHttpServer(GateOptions opt) {
  new_task_queue = [] { return new RunAtOnce(); };
  gate_ = std::make_unique<ConnectionGate>(opt, [this](Connection& c) { return serve_one(c); });
}

GatedHttpServer::~GatedHttpServer() { gate_.reset(); }

bool GatedHttpServer::process_and_close_socket(socket_t sock) {
  gate_->admit(sock);
  return true;
}

bool GatedHttpServer::serve_one(Connection& c) {
  ConnectionStream stream(c, int(read_timeout_sec_ * 1000 + read_timeout_usec_ / 1000),
                          int(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000));
  const bool last = ++c.requests >= int(keep_alive_max_count_);
  bool closed = false;
  const bool ok = process_request(stream, last, closed, nullptr);
  if (!ok || closed || last) return false;
  // A reply made before the body was read (a wrong API key) leaves the body
  // where the next request would start: skipped when the gate holds it,
  // else the connection ends.
  if (c.body_bytes < 0) return false;  // chunked, or a length not to trust: where it ended is not known here
  const int64_t unread_body = c.head_bytes + c.body_bytes - stream.consumed();
  if (unread_body <= 0) return true;
  if (int64_t(c.unread()) < unread_body) return false;
  c.read_at += size_t(unread_body);
  return true;
}

}  // namespace arch::serve

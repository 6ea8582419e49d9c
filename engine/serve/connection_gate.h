// Where connections wait for their request without holding a worker thread.
// A thread per connection (httplib's way) lets a few hundred clients that
// connect and send nothing, or a byte at a time, take every thread: the
// server answers no one. Here one thread polls every waiting connection; a
// connection reaches a worker only once its request line, headers and (when
// small) body have arrived. Waiting connections are bounded apart from the
// work: past `max_waiting` a new one is refused at once (503). A request
// that does not arrive in time is dropped (408 when it had begun); headers
// over their bound get a 431. GET requests (health, models) have workers of
// their own, so /health answers while every completion worker is busy.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class ThreadPool;
}

namespace arch::serve {

using GateClock = std::chrono::steady_clock;

// One client connection: its socket and the bytes read from it that no
// request has consumed yet.
// How far request_ready has looked at a connection's bytes (offsets from
// where its request starts), so that each arrival is scanned once: a client
// sending a byte at a time would otherwise cost its whole header again per
// byte.
struct RequestScan {
  size_t scanned = 0;     // bytes with no header end in them and every whole line checked
  size_t line_start = 0;  // where the line being received starts
  size_t head_bytes = 0;  // the request line and headers, once their end is seen (0: not yet)
  int64_t body_bytes = 0; // its Content-Length (-1: chunked, or a length not to trust)
  bool wait_body = false; // a small body the gate awaits before a worker is given
};

struct Connection {
  int fd = -1;
  std::string pending;  // bytes read, from `read_at` on not yet consumed
  size_t read_at = 0;
  int requests = 0;     // served on this connection so far
  GateClock::time_point deadline;
  // The request given to a worker: its line and headers, and its body's
  // length (-1: not known ahead, chunked).
  int64_t head_bytes = 0, body_bytes = -1;
  bool unexamined = true;  // bytes came, or it (re)entered the gate, since request_ready last looked
  RequestScan scan;        // request_ready's progress on the request being received

  size_t unread() const { return pending.size() - read_at; }
};

struct GateOptions {
  int max_waiting = 1024;            // connections waiting for a request at once
  size_t max_header_bytes = 16384;   // request line and headers together
  size_t max_line_bytes = 8192;      // one line of them
  size_t small_body_bytes = 65536;   // bodies up to this arrive before a worker is given
  double first_request_seconds = 10; // a new connection's request must arrive within this
  double idle_seconds = 5;           // a kept-alive connection's next request
  int workers = 8;                   // threads serving requests
  int light_workers = 2;             // threads serving GET requests
};

// What the gate has seen, for /health.
struct GateCounts {
  int64_t waiting = 0, refused = 0, timed_out = 0, too_large = 0;
};

class ConnectionGate {
 public:
  // Serves one whole request on the connection; true: keep it open for the
  // next.
  using Serve = std::function<bool(Connection&)>;

  ConnectionGate(GateOptions opt, Serve serve);
  ~ConnectionGate();  // closes every waiting connection; joins the workers

  // A newly accepted socket (from the accept thread: never blocks).
  void admit(int fd);
  // No new connections; those waiting are closed. Workers finish what they
  // serve (the destructor joins them).
  void close_waiting();
  GateCounts counts() const;

  // Whether `bytes` (from `from` on) hold a whole request under `opt`:
  // 0 not yet, > 0 its length up to the body's start (the body then there
  // too when small), < 0 headers over their bounds. `body_bytes`, when
  // given, is set to the body's Content-Length (0 none; -1 chunked, or a
  // length that is not a plain number up to 2^40: the connection then ends
  // after its reply). `scan`, when given, carries what earlier calls on the
  // same growing bytes saw, so each call looks only at what arrived since.
  static int64_t request_ready(const std::string& bytes, size_t from, const GateOptions& opt,
                               int64_t* body_bytes = nullptr, RequestScan* scan = nullptr);

 private:
  void run();
  void hold(std::unique_ptr<Connection> c);
  void dispatch(std::unique_ptr<Connection> c);
  void wake();

  GateOptions opt_;
  Serve serve_;
  std::unique_ptr<httplib::ThreadPool> workers_, light_;
  int wake_fd_ = -1;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> inbox_;  // admitted, not yet polled
  bool closing_ = false;
  std::atomic<int64_t> waiting_{0}, refused_{0}, timed_out_{0}, too_large_{0};
  std::thread thread_;
};

// Writes a whole small reply (the gate's own 408/431/503) and closes.
void refuse_connection(int fd, int status, const std::string& message);

}  // namespace arch::serve

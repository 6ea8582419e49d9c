// httplib's server with its connections handed to a ConnectionGate: httplib
// accepts, routes and writes replies; the gate decides when a connection has
// a request worth a thread. Each request is read through a ConnectionStream
// that first gives back the bytes the gate already read.
#pragma once

#include <httplib.h>

#include <memory>

#include "engine/serve/connection_gate.h"

namespace arch::serve {

// httplib's Stream over a gated connection: reads take the gate's bytes
// first, then the socket's, waiting at most `read_timeout_ms` each; writes
// wait at most `write_timeout_ms` for room.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(Connection& c, int read_timeout_ms, int write_timeout_ms)
      : c_(c), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override;
  bool is_writable() const override;  // room to write, and the client still there
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return c_.fd; }
  int64_t consumed() const { return consumed_; }  // bytes read through it

 private:
  Connection& c_;
  int64_t consumed_ = 0;
  int read_timeout_ms_, write_timeout_ms_;
};

// httplib's server whose accepted sockets wait in a ConnectionGate until a
// request has arrived. How long a connection may wait is the gate's
// (GateOptions::first_request_seconds, idle_seconds): httplib's
// set_keep_alive_timeout and set_idle_interval change nothing here; its
// keep-alive count, read and write timeouts hold as set.
class GatedHttpServer : public httplib::Server {
 public:
  explicit GatedHttpServer(GateOptions opt);
  ~GatedHttpServer() override;

  // No new connections; those waiting for a request are closed.
  void close_waiting() { gate_->close_waiting(); }
  GateCounts counts() const { return gate_->counts(); }

 private:
  // httplib's hook for an accepted socket: the gate takes it (never blocks).
  bool process_and_close_socket(socket_t sock) override;
  bool serve_one(Connection& c);

  std::unique_ptr<ConnectionGate> gate_;
};

}  // namespace arch::serve

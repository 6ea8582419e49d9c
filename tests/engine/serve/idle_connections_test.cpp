// Clients that connect and send nothing, or a byte at a time, hold no
// worker: /health and completions answer beside 500 of them; past the bound
// of waiting connections a new one is refused at once; a request that does
// not arrive in time is dropped; headers over their bound get a 431.
#include "tests/engine/serve/serve_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>

#include "engine/serve/connection_gate.h"

namespace arch {
namespace {

using testing::RunningServer;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void send_text(int fd, const std::string& s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size())); }

// What the server sends until it closes, or `seconds` pass.
std::string reply_of(int fd, double seconds) {
  std::string out;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  char buf[4096];
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST(ServeConnections, HealthAndCompletionsAnswerBeside500IdleAndSlowClients) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options());
  std::vector<int> idle;
  for (int i = 0; i < 500; ++i) idle.push_back(connect_to(s.port()));
  // A few slow clients: a request line a byte every 50 ms.
  std::atomic<bool> done{false};
  std::vector<std::thread> slow;
  struct Joined {  // however the test ends
    std::atomic<bool>& done;
    std::vector<std::thread>& threads;
    std::vector<int>& fds;
    ~Joined() {
      done = true;
      for (auto& th : threads) th.join();
      for (int fd : fds) ::close(fd);
    }
  } joined{done, slow, idle};
  for (int k = 0; k < 4; ++k)
    slow.emplace_back([&] {
      const int fd = connect_to(s.port());
      const std::string line = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";
      for (size_t i = 0; i < line.size() && !done; ++i) {
        ::send(fd, &line[i], 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      ::close(fd);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // every one of them accepted and waiting

  auto c = s.client();
  c.set_keep_alive(true);
  for (int round = 0; round < 3; ++round) {  // kept alive between them
    const auto t = Clock::now();
    auto h = c.Get("/health");
    ASSERT_TRUE(h) << httplib::to_string(h.error());
    EXPECT_EQ(h->status, 200);
    EXPECT_LT(seconds_since(t), 1.5);
    EXPECT_GE(json::parse(h->body)["connections"]["waiting"].get<int>(), 500);
  }
  const auto t = Clock::now();
  auto r = c.Post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}}.dump(),
                  "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 4);
  EXPECT_LT(seconds_since(t), 2.0);
}

TEST(ServeConnections, PastTheBoundANewConnectionIsRefusedAtOnce) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  auto o = testing::options();
  o.max_waiting = 8;
  RunningServer s(o);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(connect_to(s.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int fd = connect_to(s.port());
  const auto t = Clock::now();
  const std::string reply = reply_of(fd, 2.0);
  EXPECT_LT(seconds_since(t), 1.0);
  EXPECT_EQ(reply.rfind("HTTP/1.1 503", 0), 0u) << reply;
  EXPECT_NE(reply.find("too many connections are waiting"), std::string::npos) << reply;
  ::close(fd);
  for (int i : idle) ::close(i);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the room empties as they leave
  auto h = s.client().Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_GE(json::parse(h->body)["connections"]["refused"].get<int>(), 1);
}

TEST(ServeConnections, ARequestThatDoesNotArriveInTimeIsDropped) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  auto o = testing::options();
  o.request_seconds = 0.5;
  RunningServer s(o);
  const int silent = connect_to(s.port());
  const int partial = connect_to(s.port());
  send_text(partial, "GET /health HTTP/1.1\r\nHost:");
  const auto t = Clock::now();
  EXPECT_EQ(reply_of(silent, 3.0), "");  // closed without a word
  EXPECT_LT(seconds_since(t), 2.0);
  const std::string reply = reply_of(partial, 3.0);
  EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  ::close(silent);
  ::close(partial);
}

TEST(ServeConnections, HeadersOverTheBoundGet431) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options());
  for (const std::string& request : {"GET /health HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n",
                                     "GET /health HTTP/1.1\r\n" + std::string(3000, 'h') + ": 1\r\n" +
                                         [] {
                                           std::string many;
                                           for (int i = 0; i < 400; ++i) many += "X-" + std::to_string(i) + ": 0123456789012345678901234567890123456789\r\n";
                                           return many;
                                         }() + "\r\n"}) {
    const int fd = connect_to(s.port());
    send_text(fd, request);
    const std::string reply = reply_of(fd, 3.0);
    EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply.substr(0, 200);
    EXPECT_NE(reply.find("\"error\""), std::string::npos);
    ::close(fd);
  }
  auto h = s.client().Get("/health");  // and the server still answers
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(ConnectionGate, ARequestIsReadyWhenItsHeadersAndSmallBodyHaveArrived) {
  serve::GateOptions o;
  o.max_header_bytes = 200;
  o.max_line_bytes = 100;
  o.small_body_bytes = 10;
  using serve::ConnectionGate;
  const std::string get = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
  EXPECT_EQ(ConnectionGate::request_ready("", 0, o), 0);
  EXPECT_EQ(ConnectionGate::request_ready(get.substr(0, 20), 0, o), 0);
  EXPECT_EQ(ConnectionGate::request_ready(get, 0, o), int64_t(get.size()));
  EXPECT_EQ(ConnectionGate::request_ready("xx" + get, 2, o), int64_t(get.size()));  // from where the last request ended
  const std::string post = "POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
  EXPECT_EQ(ConnectionGate::request_ready(post + "abc", 0, o), 0);  // a small body is awaited
  EXPECT_EQ(ConnectionGate::request_ready(post + "abcde", 0, o), int64_t(post.size()));
  const std::string big = "POST /v1/completions HTTP/1.1\r\ncontent-length: 50\r\n\r\n";
  EXPECT_EQ(ConnectionGate::request_ready(big, 0, o), int64_t(big.size()));  // a large one is a worker's to read
  const std::string expect = "POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
  EXPECT_EQ(ConnectionGate::request_ready(expect, 0, o), int64_t(expect.size()));  // the client waits for 100 first
  EXPECT_EQ(ConnectionGate::request_ready("GET /" + std::string(120, 'a'), 0, o), -1);  // a line too long, still arriving
  EXPECT_EQ(ConnectionGate::request_ready("GET / HTTP/1.1\r\nX: " + std::string(120, 'a') + "\r\n\r\n", 0, o), -1);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 40; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(ConnectionGate::request_ready(many, 0, o), -1);  // all lines short, too many of them
}

// A Content-Length that is no plain, bounded number (2^63 - 1, a sign, a
// word) counts no body: -1, so the connection ends after its reply instead
// of summing an overflowing length or reading the body as the next request.
TEST(ConnectionGate, AContentLengthNotToTrustEndsTheConnection) {
  serve::GateOptions o;
  using serve::ConnectionGate;
  for (const char* value : {"9223372036854775807", "-5", "5x", "1099511627777", "", "+5"}) {
    const std::string head = std::string("POST / HTTP/1.1\r\nContent-Length: ") + value + "\r\n\r\n";
    int64_t body = 0;
    EXPECT_EQ(ConnectionGate::request_ready(head, 0, o, &body), int64_t(head.size())) << value;
    EXPECT_EQ(body, -1) << value;
  }
  int64_t body = 0;
  const std::string spaced = "POST / HTTP/1.1\r\nContent-Length:  12 \r\n\r\n";
  EXPECT_EQ(ConnectionGate::request_ready(spaced + "0123456789ab", 0, o, &body), int64_t(spaced.size()));
  EXPECT_EQ(body, 12);
}

// Bytes arriving one at a time, each call carrying the last one's scan,
// give what the whole bytes give at once, every verdict at the same byte.
TEST(ConnectionGate, AScanResumedByteByByteAgreesWithOneWhole) {
  serve::GateOptions o;
  o.max_header_bytes = 200;
  o.max_line_bytes = 60;
  o.small_body_bytes = 10;
  using serve::ConnectionGate;
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 40; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  const std::string inputs[] = {
      "xxGET /health HTTP/1.1\r\nHost: a\r\n\r\n",
      "xxPOST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde",
      "xxGET / HTTP/1.1\r\nX: " + std::string(80, 'a') + "\r\n\r\n",
      "xx" + many,
  };
  for (const std::string& whole : inputs) {
    serve::RequestScan scan;
    for (size_t n = 2; n <= whole.size(); ++n) {
      const std::string part = whole.substr(0, n);
      int64_t body_a = 7, body_b = 7;
      const int64_t once = ConnectionGate::request_ready(part, 2, o, &body_a);
      const int64_t resumed = ConnectionGate::request_ready(part, 2, o, &body_b, &scan);
      ASSERT_EQ(resumed, once) << whole.substr(0, 30) << " at " << n;
      if (once < 0) break;  // refused: the gate stops there
      if (once > 0) {
        EXPECT_EQ(body_b, body_a);
      }
    }
  }
}

}  // namespace
}  // namespace arch

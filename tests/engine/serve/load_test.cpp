// Under load: a greedy request's tokens are the same alone and among 63
// concurrent others; a client gone mid-stream frees its sequence; 1,000
// requests leave the server's memory where it was.
#include "tests/engine/serve/serve_fixture.h"
#include "tests/time_bound.h"

#include <fstream>

namespace arch {
namespace {

using testing::RunningServer;
using json = nlohmann::json;

std::vector<int32_t> tokens_of(httplib::Client& c, const json& req) {
  auto r = c.Post("/v1/completions", req.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  if (!r || r->status != 200) return {};
  return testing::body_of(r)["choices"][0]["tokens"].get<std::vector<int32_t>>();
}

TEST(ServeLoad, AGreedyRequestGivesTheSameTokensAloneAndAmong63Others) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(64));
  const json mine = {{"prompt", "Once upon a time, a little dog"}, {"max_tokens", 48}, {"temperature", 0}};
  auto c = s.client();
  const auto alone = tokens_of(c, mine);
  ASSERT_EQ(alone.size(), 48u);
  std::vector<std::thread> others;
  std::atomic<int> ok{0};
  for (int k = 0; k < 63; ++k)
    others.emplace_back([&, k] {
      auto oc = s.client();
      json req = {{"prompt", "Tom had " + std::to_string(k) + " apples and"}, {"max_tokens", 20 + k}, {"stream", k % 3 == 0}};
      if (k % 2) req["temperature"] = 0.8, req["seed"] = k;
      auto r = oc.Post("/v1/completions", req.dump(), "application/json");
      ok += r && r->status == 200;
      if (!r || r->status != 200)
        std::printf("  request %d: %s\n", k, r ? (std::to_string(r->status) + " " + r->body).c_str() : httplib::to_string(r.error()).c_str());
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the others running when it joins
  const auto among = tokens_of(c, mine);
  for (auto& t : others) t.join();
  EXPECT_EQ(among, alone);
  EXPECT_EQ(ok.load(), 63);
  auto h = testing::body_of(c.Get("/health"));
  const double mean_rows = double(h["slots"]["step_rows"]) / std::max(1.0, double(h["slots"]["steps"]));
  std::printf("  64 requests: %lld batched steps, %.1f sequences per step on average\n", (long long)h["slots"]["steps"], mean_rows);
  EXPECT_GT(mean_rows, 4.0);
}

TEST(ServeLoad, AClientGoneMidStreamFreesItsSequence) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(1, 0, 1));
  auto c = s.client();
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = json{{"prompt", "Once upon a time"}, {"max_tokens", 500}, {"stream", true}}.dump();
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 2; };  // gone after two pieces
  auto gone = c.send(req);
  EXPECT_GE(chunks, 2);
  // The one sequence is free again well before 500 tokens would have run.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int running = -1;
  while (std::chrono::steady_clock::now() < until) {
    running = testing::body_of(c.Get("/health"))["slots"]["running"];
    if (running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(running, 0);
  auto next = c.Post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 3}}.dump(), "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
  EXPECT_LT(int(testing::body_of(c.Get("/health"))["slots"]["steps"]), 400) << "the abandoned sequence ran on";
}

int64_t resident_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

TEST(ServeLoad, AThousandRequestsLeaveMemoryWhereItWas) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  if (testing::kAddressSanitizer)
    GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory resident; its leak checker covers this build";
  RunningServer s(testing::options(8));
  auto round = [&](int n) {
    std::vector<std::thread> clients;
    std::atomic<int> ok{0};
    for (int t = 0; t < 8; ++t)
      clients.emplace_back([&, t] {
        auto c = s.client();
        for (int k = t; k < n; k += 8) {
          json req = {{"max_tokens", 4 + k % 12}, {"stream", k % 2 == 0}, {"seed", k}};
          if (k % 3 == 0) req["messages"] = {{{"role", "user"}, {"content", "Story " + std::to_string(k)}}};
          else req["prompt"] = "Once upon a time " + std::to_string(k);
          auto r = c.Post(k % 3 == 0 ? "/v1/chat/completions" : "/v1/completions", req.dump(), "application/json");
          ok += r && r->status == 200;
        }
      });
    for (auto& c : clients) c.join();
    return ok.load();
  };
  EXPECT_EQ(round(100), 100);  // buffers and caches warmed
  const int64_t before = resident_kib();
  EXPECT_EQ(round(1000), 1000);
  const int64_t after = resident_kib();
  std::printf("  resident memory before 1,000 requests %lld KiB, after %lld KiB (%+lld)\n", (long long)before,
              (long long)after, (long long)(after - before));
  EXPECT_LT(after - before, 16 * 1024) << "KiB grown across 1,000 requests";
  EXPECT_EQ(testing::body_of(s.client().Get("/health"))["slots"]["running"], 0);
}

}  // namespace
}  // namespace arch

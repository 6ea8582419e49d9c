// Bad requests get the API's JSON error with the right status, name the
// field at fault, and leave the server serving.
#include "tests/engine/serve/serve_fixture.h"

namespace arch {
namespace {

using testing::RunningServer;
using json = nlohmann::json;

struct Case {
  const char* what;
  const char* path;
  std::string body;
  int status;
  const char* code_or_param;  // the error's code, else its param, else a word of its message
};

TEST(ServeBadRequests, EachGetsItsStatusAndAJsonError) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2, 64));
  auto c = s.client();
  const std::string long_prompt = [] {
    std::string p;
    for (int k = 0; k < 80; ++k) p += "Once upon a time ";
    return p;
  }();
  const std::vector<Case> cases = {
      {"not JSON", "/v1/chat/completions", "{\"messages\": [", 400, "not valid JSON"},
      {"not an object", "/v1/completions", "[1, 2]", 400, "JSON object"},
      {"nested past json_depth", "/v1/completions", "{\"prompt\": \"hi\", \"x\": " + std::string(600, '[') + std::string(600, ']') + "}", 400, "'json_depth'"},
      {"a key given twice", "/v1/completions", "{\"prompt\": \"hi\", \"prompt\": [1, 2]}", 400, "duplicate key 'prompt'"},
      {"missing messages", "/v1/chat/completions", json{{"model", "stories260K"}}.dump(), 400, "messages"},
      {"empty messages", "/v1/chat/completions", json{{"messages", json::array()}}.dump(), 400, "messages"},
      {"a message without content", "/v1/chat/completions", json{{"messages", {{{"role", "user"}}}}}.dump(), 400, "messages[0].content"},
      {"missing prompt", "/v1/completions", json{{"max_tokens", 4}}.dump(), 400, "prompt"},
      {"unknown model", "/v1/chat/completions", json{{"model", "gpt-4"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump(), 404, "model_not_found"},
      {"negative max_tokens", "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", -5}}.dump(), 400, "max_tokens"},
      {"zero max_tokens", "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 0}}.dump(), 400, "max_tokens"},
      {"huge max_tokens", "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1000000000000LL}}.dump(), 400, "context_length_exceeded"},
      {"fractional max_tokens", "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2.5}}.dump(), 400, "max_tokens"},
      {"a prompt longer than the context", "/v1/completions", json{{"prompt", long_prompt}}.dump(), 400, "context_length_exceeded"},
      {"temperature out of range", "/v1/completions", json{{"prompt", "hi"}, {"temperature", 5}}.dump(), 400, "temperature"},
      {"top_p of 0", "/v1/completions", json{{"prompt", "hi"}, {"top_p", 0}}.dump(), 400, "top_p"},
      {"presence_penalty out of range", "/v1/completions", json{{"prompt", "hi"}, {"presence_penalty", 3}}.dump(), 400, "presence_penalty"},
      {"frequency_penalty not a number", "/v1/completions", json{{"prompt", "hi"}, {"frequency_penalty", "high"}}.dump(), 400, "frequency_penalty"},
      {"logit_bias not an object", "/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {1, 2}}}.dump(), 400, "logit_bias"},
      {"logit_bias keyed by a word", "/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {{"the", 5}}}}.dump(), 400, "logit_bias"},
      {"logit_bias of 200", "/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {{"5", 200}}}}.dump(), 400, "logit_bias"},
      {"logit_bias past the vocabulary", "/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {{"99999", -100}}}}.dump(), 400, "logit_bias"},
      {"n of 2", "/v1/completions", json{{"prompt", "hi"}, {"n", 2}}.dump(), 400, "n"},
      {"stop of 5 strings", "/v1/completions", json{{"prompt", "hi"}, {"stop", {"a", "b", "c", "d", "e"}}}.dump(), 400, "stop"},
      {"a token id past the vocabulary", "/v1/completions", json{{"prompt", {1, 99999}}}.dump(), 400, "prompt"},
      {"stream not a bool", "/v1/completions", json{{"prompt", "hi"}, {"stream", "yes"}}.dump(), 400, "stream"},
      {"logprobs of 9 (completions take up to 5)", "/v1/completions", json{{"prompt", "hi"}, {"logprobs", 9}}.dump(), 400, "logprobs"},
      {"top_logprobs without logprobs", "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"top_logprobs", 2}}.dump(), 400, "top_logprobs"},
      {"tools asked for", "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", {{{"type", "function"}}}}}.dump(), 400, "tools"},
      {"embeddings from a decoder", "/v1/embeddings", json{{"input", "hi"}}.dump(), 400, "model"},
      {"no such endpoint", "/v1/engines", "{}", 404, "no such endpoint"},
  };
  for (const auto& k : cases) {
    auto r = c.Post(k.path, k.body, "application/json");
    ASSERT_TRUE(r) << k.what << ": no reply";
    EXPECT_EQ(r->status, k.status) << k.what << ": " << r->body;
    auto j = testing::body_of(r);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << k.what << ": " << r->body;
    const json& e = j["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << k.what;
    const std::string needle = k.code_or_param;
    const bool named = (e["code"].is_string() && e["code"] == needle) || (e["param"].is_string() && e["param"] == needle) ||
                       e["message"].get<std::string>().find(needle) != std::string::npos;
    EXPECT_TRUE(named) << k.what << ": " << r->body;
    std::printf("  %-34s %d %s\n", k.what, r->status, e["message"].get<std::string>().c_str());
  }
  // A large body sent form-encoded (curl -d without a Content-Type) is
  // capped by httplib at 8 KiB: the reply says how to send it.
  auto form = c.Post("/v1/completions", json{{"prompt", std::string(20000, 'a')}}.dump(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 413);
  EXPECT_NE(form->body.find("application/json"), std::string::npos) << form->body;
  // Deeply nested JSON is parsed, not recursed into a crash.
  auto deep = c.Post("/v1/completions", std::string(100000, '[') + std::string(100000, ']'), "application/json");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->status, 400);
  // Still serving.
  auto ok = c.Post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}}.dump(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(ServeBadRequests, A60MBPromptIsRefusedBeforeItIsTokenized) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2, 256));
  auto c = s.client();
  const std::string huge = json{{"prompt", std::string(60 << 20, 'a')}, {"max_tokens", 2}}.dump();
  const auto t = std::chrono::steady_clock::now();
  auto r = c.Post("/v1/completions", huge, "application/json");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  auto e = testing::body_of(r)["error"];
  EXPECT_EQ(e["code"], "prompt_too_large");
  EXPECT_EQ(e["param"], "prompt");
  EXPECT_NE(e["message"].get<std::string>().find("the prompt (62914560 bytes) exceeds the limit 'prompt_bytes' (16384: 64 per "
                                                  "position of the 256-position context)"),
            std::string::npos)
      << e["message"];
  EXPECT_LT(took, 5.0);  // read and parsed, never tokenized
  // Chat: the messages' contents count.
  auto chat = c.Post("/v1/chat/completions",
                     json{{"messages", {{{"role", "user"}, {"content", std::string(20000, 'b')}}}}}.dump(), "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 413);
  EXPECT_EQ(testing::body_of(chat)["error"]["param"], "messages");
  // Just under the bound it is the context's to refuse, after tokenizing.
  auto under = c.Post("/v1/completions", json{{"prompt", std::string(16384, 'a')}}.dump(), "application/json");
  ASSERT_TRUE(under);
  EXPECT_EQ(testing::body_of(under)["error"]["code"], "context_length_exceeded");
}

TEST(ServeBadRequests, AReplyBeforeTheBodyWasReadLeavesTheConnectionsNextRequestWhole) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(4, 0, 0, "sesame"));
  auto c = s.client();
  c.set_keep_alive(true);
  const std::string body = json{{"prompt", "hi"}, {"max_tokens", 2}}.dump();
  for (int round = 0; round < 2; ++round) {
    auto refused = c.Post("/v1/completions", body, "application/json");  // 401 before its body is read
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401);
    auto right = c.Post("/v1/completions", {{"Authorization", "Bearer sesame"}}, body, "application/json");
    ASSERT_TRUE(right);
    EXPECT_EQ(right->status, 200) << right->body;
  }
}

TEST(ServeBadRequests, AWrongApiKeyIs401) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(4, 0, 0, "sesame"));
  auto c = s.client();
  const std::string body = json{{"prompt", "hi"}, {"max_tokens", 2}}.dump();
  auto none = c.Post("/v1/completions", body, "application/json");
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(testing::body_of(none)["error"]["code"], "invalid_api_key");
  auto wrong = c.Post("/v1/completions", {{"Authorization", "Bearer open"}}, body, "application/json");
  EXPECT_EQ(wrong->status, 401);
  auto right = c.Post("/v1/completions", {{"Authorization", "Bearer sesame"}}, body, "application/json");
  EXPECT_EQ(right->status, 200) << right->body;
  EXPECT_EQ(c.Get("/health")->status, 200);  // health needs no key
}

TEST(ServeBadRequests, PastTheQueueIs503WithRetryAfter) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(1, 0, 1));
  std::vector<std::thread> clients;
  std::mutex mu;
  std::vector<int> statuses;
  std::string retry_after;
  // 16 at once (released together) at one slot and one queue place: each
  // takes a while (500 tokens), so most find the server full.
  std::atomic<int> ready{0};
  for (int k = 0; k < 16; ++k)
    clients.emplace_back([&] {
      auto c = s.client();
      ++ready;
      while (ready.load() < 16) std::this_thread::yield();
      auto r = c.Post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 500}, {"ignore_eos", true}}.dump(), "application/json");
      std::lock_guard<std::mutex> lock(mu);
      statuses.push_back(r ? r->status : -1);
      if (r && r->status == 503) retry_after = r->get_header_value("Retry-After");
    });
  for (auto& t : clients) t.join();
  const int served = int(std::count(statuses.begin(), statuses.end(), 200));
  const int busy = int(std::count(statuses.begin(), statuses.end(), 503));
  EXPECT_EQ(served + busy, 16);
  EXPECT_GE(served, 1);
  EXPECT_GE(busy, 1);
  EXPECT_EQ(retry_after, "1");
}

}  // namespace
}  // namespace arch

// The endpoints over a real model: a greedy completion is what generation
// gives in-process, with the request's penalties and bias too, and its
// logprobs are generation's; a streamed chat's deltas add up to the whole
// reply; stop strings end the text before them; embeddings come from an
// encoder.
#include "tests/engine/serve/serve_fixture.h"

#include "engine/runtime/generate.h"
#include "engine/runtime/model_text.h"

namespace arch {
namespace {

using testing::RunningServer;
using json = nlohmann::json;

// The stories model, its tokenizer and "Once upon a time" as ids: what
// generation gives in-process after that prompt is what the server's
// replies are held to.
struct Stories {
  std::shared_ptr<Model> model = testing::stories_model();
  std::shared_ptr<const Tokenizer> tok;
  std::vector<int32_t> prompt;

  Stories() {
    auto t = load_model_tokenizer(testing::stories_dir());
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    if (t.ok()) tok = *t, prompt = tok->encode("Once upon a time", true);
  }
  GenerateResult generated(const GenerateOptions& g) const {
    auto r = generate(*model, prompt, g);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : GenerateResult{};
  }
};

TEST(Serve, HealthAndModels) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2));
  auto c = s.client();
  auto h = testing::body_of(c.Get("/health"));
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["slots"]["total"], 2);
  EXPECT_EQ(h["slots"]["context"], 512);  // the model's max_position_embeddings
  auto m = testing::body_of(c.Get("/v1/models"));
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], "stories260K");
  EXPECT_EQ(testing::body_of(c.Get("/v1/models/stories260K"))["id"], "stories260K");
}

TEST(Serve, AGreedyCompletionIsWhatGenerationGives) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  const Stories st;
  ASSERT_TRUE(st.tok);
  GenerateOptions g;
  g.max_new_tokens = 24;
  g.stop_ids = eos_ids(*st.model, st.tok.get());
  const GenerateResult want = st.generated(g);

  RunningServer s(testing::options(4));
  auto c = s.client();
  auto r = c.Post("/v1/completions", json{{"model", "stories260K"}, {"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = testing::body_of(r);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["tokens"].get<std::vector<int32_t>>(), want.tokens);
  EXPECT_EQ(j["choices"][0]["text"], st.tok->decode(want.tokens, true));
  EXPECT_EQ(j["choices"][0]["finish_reason"], want.stop_reason == "eos" ? "stop" : "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  EXPECT_EQ(j["usage"]["total_tokens"], 29);
  // Token ids in, the same tokens out.
  auto ids = c.Post("/v1/completions", json{{"prompt", st.prompt}, {"max_tokens", 24}, {"temperature", 0}}.dump(),
                    "application/json");
  EXPECT_EQ(testing::body_of(ids)["choices"][0]["tokens"], j["choices"][0]["tokens"]);
}

// presence_penalty, frequency_penalty and logit_bias each reach the
// sequence's draw: the reply is what generation gives with it in-process
// (and not what it gives without), and an id banned by its bias never comes.
TEST(Serve, PenaltiesAndLogitBiasAreTheSamplersOwn) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  const Stories st;
  ASSERT_TRUE(st.tok);
  GenerateOptions g;
  g.max_new_tokens = 32;
  const GenerateResult plain = st.generated(g);
  ASSERT_EQ(plain.tokens.size(), 32u);
  const int32_t banned = plain.tokens[0];

  RunningServer s(testing::options(2));
  auto c = s.client();
  for (const char* field : {"presence_penalty", "frequency_penalty", "logit_bias"}) {
    GenerateOptions with = g;
    json req = {{"prompt", st.prompt}, {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true}};
    if (std::string(field) == "presence_penalty") with.sampling.presence_penalty = 1.5f, req[field] = 1.5;
    if (std::string(field) == "frequency_penalty") with.sampling.frequency_penalty = 0.7f, req[field] = 0.7;
    if (std::string(field) == "logit_bias") with.sampling.logit_bias = {{banned, -100.0f}}, req[field] = {{std::to_string(banned), -100}};
    const GenerateResult want = st.generated(with);
    ASSERT_NE(want.tokens, plain.tokens) << field << " changes nothing here: the test would not see it ignored";
    auto got = testing::body_of(c.Post("/v1/completions", req.dump(), "application/json"));
    const auto tokens = got["choices"][0]["tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokens, want.tokens) << field << ": " << got.dump();
    if (std::string(field) == "logit_bias") {
      EXPECT_EQ(std::count(tokens.begin(), tokens.end(), banned), 0);
    }
  }
}

// logprobs: each token's is generation's own (its log-softmax), the greedy
// token heads its alternatives, and a stream's chunks carry the same ones.
TEST(Serve, LogprobsAreEachTokensUnderTheModel) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  const Stories st;
  ASSERT_TRUE(st.tok);
  GenerateOptions g;
  g.max_new_tokens = 12;
  const GenerateResult want = st.generated(g);
  ASSERT_EQ(want.logprobs.size(), 12u);

  RunningServer s(testing::options(2));
  auto c = s.client();
  json req = {{"prompt", st.prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}, {"logprobs", 3}};
  auto got = testing::body_of(c.Post("/v1/completions", req.dump(), "application/json"));
  const json& lp = got["choices"][0]["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), 12u) << got.dump();
  // Each token's text is what it adds after the one before it.
  auto text_after = [&](int32_t prev, int32_t id) {
    return st.tok->decode(std::vector<int32_t>{prev, id}, false).substr(st.tok->decode(std::vector<int32_t>{prev}, false).size());
  };
  int64_t offset = 0;
  for (size_t i = 0; i < 12; ++i) {
    const std::string piece = text_after(i ? want.tokens[i - 1] : st.prompt.back(), want.tokens[i]);
    EXPECT_EQ(lp["tokens"][i], piece);
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), want.logprobs[i], 1e-5) << i;
    ASSERT_EQ(lp["top_logprobs"][i].size(), 3u) << i;
    EXPECT_NEAR(lp["top_logprobs"][i][piece].get<double>(), want.logprobs[i], 1e-5) << i;  // greedy: the likeliest
    EXPECT_EQ(lp["text_offset"][i], offset);
    offset += int64_t(piece.size());
  }
  // Chat's form, whole and streamed.
  json chat = {{"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 10}, {"temperature", 0},
               {"logprobs", true}, {"top_logprobs", 2}};
  auto whole = testing::body_of(c.Post("/v1/chat/completions", chat.dump(), "application/json"));
  const json& content = whole["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), whole["usage"]["completion_tokens"].get<size_t>()) << whole.dump();
  std::string text;
  for (const json& t : content) {
    EXPECT_EQ(t["top_logprobs"].size(), 2u);
    EXPECT_EQ(t["top_logprobs"][0]["logprob"], t["logprob"]);
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    std::string bytes;
    for (int b : t["bytes"]) bytes += char(b);
    EXPECT_EQ(bytes, t["token"].get<std::string>());
    text += bytes;
  }
  // The tokens' texts read on from the prompt: the reply's text, but for the
  // leading space a decoder strips from a text's start.
  const std::string reply = whole["choices"][0]["message"]["content"];
  EXPECT_TRUE(text == reply || text == " " + reply) << text << " | " << reply;
  chat["stream"] = true;
  auto r = c.Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(r);
  json streamed = json::array();
  for (const auto& e : testing::events_of(r->body))
    if (e.is_object() && e["choices"][0]["logprobs"].is_object())
      for (const json& t : e["choices"][0]["logprobs"]["content"]) streamed.push_back(t);
  EXPECT_EQ(streamed, content);
  // Not asked for: null.
  chat.erase("logprobs"), chat.erase("top_logprobs"), chat["stream"] = false;
  EXPECT_TRUE(testing::body_of(c.Post("/v1/chat/completions", chat.dump(), "application/json"))["choices"][0]["logprobs"].is_null());
}

TEST(Serve, AStreamedChatAddsUpToTheWholeReply) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2));
  auto c = s.client();
  json req = {{"model", "stories260K"}, {"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 40}, {"temperature", 0}};
  auto whole = testing::body_of(c.Post("/v1/chat/completions", req.dump(), "application/json"));
  ASSERT_EQ(whole["object"], "chat.completion") << whole.dump();
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  const std::string text = whole["choices"][0]["message"]["content"];
  EXPECT_FALSE(text.empty());
  req["stream"] = true;
  auto r = c.Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  auto events = testing::events_of(r->body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string streamed;
  size_t with_text = 0;
  for (size_t k = 0; k + 2 < events.size(); ++k) {
    EXPECT_EQ(events[k]["object"], "chat.completion.chunk");
    EXPECT_TRUE(events[k]["choices"][0]["finish_reason"].is_null());
    const std::string delta = events[k]["choices"][0]["delta"].value("content", "");
    streamed += delta;
    with_text += !delta.empty();
  }
  EXPECT_EQ(streamed, text);
  // One event per token, however fast they come (it was one event for all
  // that had come when the stream fell behind the model). This reply's
  // first token is a bare space, which a reply's start drops: it rides
  // with the second.
  EXPECT_EQ(with_text + 1, whole["usage"]["completion_tokens"].get<size_t>());
  const json& last = events[events.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], whole["choices"][0]["finish_reason"]);
  EXPECT_EQ(last["usage"], whole["usage"]);
}

TEST(Serve, AStopStringEndsTheTextBeforeIt) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2));
  auto c = s.client();
  json req = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}};
  const std::string free_text = testing::body_of(c.Post("/v1/completions", req.dump(), "application/json"))["choices"][0]["text"];
  const size_t at = free_text.find("Lily");
  ASSERT_NE(at, std::string::npos) << free_text;
  req["stop"] = {"Lily", "never said"};
  for (bool stream : {false, true}) {
    req["stream"] = stream;
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    ASSERT_TRUE(r);
    std::string text, reason;
    if (stream) {
      for (const auto& e : testing::events_of(r->body))
        if (e.is_object()) text += e["choices"][0].value("text", ""), reason = e["choices"][0]["finish_reason"].is_null() ? reason : std::string(e["choices"][0]["finish_reason"]);
    } else {
      auto j = testing::body_of(r);
      text = j["choices"][0]["text"];
      reason = j["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(text, free_text.substr(0, at)) << "stream " << stream;
    EXPECT_EQ(reason, "stop");
  }
}

TEST(Serve, EmbeddingsFromAnEncoder) {
  const std::string bert = testing::golden_dir("bert");
  ARCH_REQUIRE_SHARED(bert);
  auto m = load_model(bert);
  ASSERT_TRUE(m.ok()) << m.error().message;
  RunningServer s(testing::options(), *m, bert);
  auto c = s.client();
  auto r = c.Post("/v1/embeddings", json{{"model", "bert"}, {"input", {{1, 5, 9, 2}, {1, 7, 2}}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = testing::body_of(r);
  ASSERT_EQ(j["data"].size(), 2u);
  const auto v = j["data"][0]["embedding"].get<std::vector<float>>();
  EXPECT_EQ(int64_t(v.size()), (*m)->config_int("hidden_size", 0));
  double norm = 0;
  for (float x : v) norm += double(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_NE(j["data"][0]["embedding"], j["data"][1]["embedding"]);
  // base64: the same floats' little-endian bytes.
  auto b = testing::body_of(c.Post("/v1/embeddings", json{{"input", {1, 5, 9, 2}}, {"encoding_format", "base64"}}.dump(), "application/json"));
  ASSERT_TRUE(b["data"][0]["embedding"].is_string());
  EXPECT_EQ(b["data"][0]["embedding"].get<std::string>().size(), 4 * ((v.size() * 4 + 2) / 3));
  // A field of the wrong type is a 400 naming it, not an exception's 500.
  auto typed = c.Post("/v1/embeddings", json{{"input", {1, 2}}, {"encoding_format", 5}}.dump(), "application/json");
  EXPECT_EQ(typed->status, 400);
  EXPECT_EQ(testing::body_of(typed)["error"]["param"], "encoding_format") << typed->body;
  // A decoder's endpoints say what this model serves.
  auto no = c.Post("/v1/completions", json{{"prompt", {1, 2}}}.dump(), "application/json");
  EXPECT_EQ(no->status, 400);
  EXPECT_NE(no->body.find("does not generate"), std::string::npos);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// Qwen3-Next under continuous batching (the qwen3_next golden's weights,
// stories260K's tokenizer: both 512 ids): sequences arriving together each
// keep their own recurrent state in their slot, so each greedy reply is
// what generation gives alone.
TEST(Serve, RecurrentStateSequencesBatchedAreEachAsAlone) {
  const std::string dir = testing::shared_dir() + "/golden/qwen3_next";
  ARCH_REQUIRE_SHARED(dir);
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  auto loaded = load_model(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  std::shared_ptr<Model> model = *loaded;
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 53, 204, 462, 335, 205, 458, 20, 105, 57}, {1, 160, 106, 62}, {1, 243, 313, 145, 181, 205, 119, 224, 151, 199, 206, 209, 321, 170}};
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) {
    GenerateOptions g;
    g.max_new_tokens = 12;
    auto r = generate(*model, p, g);
    ASSERT_TRUE(r.ok()) << r.error().message;
    want.push_back(r->tokens);
  }
  RunningServer s(testing::options(3, 64), model, testing::stories_dir());
  std::vector<json> got(prompts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] {
      auto c = s.client();
      auto r = c.Post("/v1/completions",
                      json{{"prompt", prompts[i]}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}}.dump(),
                      "application/json");
      if (r) got[i] = testing::body_of(r);
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(got[i]["choices"][0]["tokens"].get<std::vector<int32_t>>(), want[i]) << "request " << i << ": " << got[i];
}

}  // namespace
}  // namespace arch

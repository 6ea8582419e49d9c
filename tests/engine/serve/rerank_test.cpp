// POST /v1/rerank over a tiny cross-encoder: documents in the order the
// classification head scores them (the same as archrun rerank's), top_n and
// return_documents honoured, other fields refused by name, and a model
// without a head refused.
#include "tests/engine/serve/serve_fixture.h"

#include "engine/runtime/text_encoder.h"
#include "tests/engine/runtime/cross_encoder.h"

namespace arch {
namespace {

using testing::RunningServer;
using json = nlohmann::json;

TEST(ServeRerank, DocumentsInTheOrderTheHeadScoresThem) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  testing::CrossEncoder ce;
  auto m = load_model(ce.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  RunningServer s(testing::options(), *m, ce.path());
  auto c = s.client();
  const std::string query = "what did the cat sit on";
  const std::vector<std::string> docs = {"the dog ran in the park", "the cat sat on a mat", "a bird sang in a tree",
                                         "it was red"};
  auto tok = load_tokenizer(ce.path());
  ASSERT_TRUE(tok.ok());
  auto want = rerank(**m, **tok, query, docs);
  ASSERT_TRUE(want.ok());
  json req = {{"query", query}, {"documents", {docs[0], {{"text", docs[1]}}, docs[2], docs[3]}}, {"top_n", 3},
              {"return_documents", true}};
  auto r = c.Post("/v1/rerank", req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = testing::body_of(r);
  ASSERT_EQ(j["results"].size(), 3u) << j.dump();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["results"][i]["index"], (*want)[i].index);
    EXPECT_NEAR(j["results"][i]["relevance_score"].get<double>(), (*want)[i].relevance_score, 1e-6);
    EXPECT_EQ(j["results"][i]["document"]["text"], docs[(*want)[i].index]);
  }
  size_t tokens = 0;
  for (const auto& w : *want) tokens += w.tokens;
  EXPECT_EQ(j["usage"]["total_tokens"], tokens);
  EXPECT_EQ(j["id"].get<std::string>().rfind("rerank-", 0), 0u);
  // Without return_documents: no documents.
  req.erase("return_documents");
  EXPECT_FALSE(testing::body_of(c.Post("/v1/rerank", req.dump(), "application/json"))["results"][0].contains("document"));
  // Fields it does not honour, and bad ones, are 400s naming them.
  auto unknown = c.Post("/v1/rerank", json{{"query", "a"}, {"documents", {"b"}}, {"max_chunks_per_doc", 2}}.dump(), "application/json");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_EQ(testing::body_of(unknown)["error"]["param"], "max_chunks_per_doc") << unknown->body;
  auto top = c.Post("/v1/rerank", json{{"query", "a"}, {"documents", {"b"}}, {"top_n", 0}}.dump(), "application/json");
  EXPECT_EQ(top->status, 400);
  EXPECT_EQ(testing::body_of(top)["error"]["param"], "top_n");
  auto nodocs = c.Post("/v1/rerank", json{{"query", "a"}, {"documents", json::array()}}.dump(), "application/json");
  EXPECT_EQ(nodocs->status, 400);
  EXPECT_EQ(testing::body_of(nodocs)["error"]["param"], "documents");
}

TEST(ServeRerank, AModelWithoutAHeadRefuses) {
  const std::string bert = testing::golden_dir("bert");
  ARCH_REQUIRE_SHARED(bert);
  auto m = load_model(bert);
  ASSERT_TRUE(m.ok());
  RunningServer s(testing::options(), *m, bert);
  auto c = s.client();
  auto r = c.Post("/v1/rerank", json{{"query", "a"}, {"documents", {"b"}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("has no sequence-classification head and no tokenizer: it serves embeddings"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace arch

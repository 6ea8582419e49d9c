// archrun embed's pooling (as --pooling or the model card says) and archrun
// rerank: passages in the order the classification head scores them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/runtime/model.h"
#include "engine/runtime/text_encoder.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/engine/runtime/cross_encoder.h"
#include "tests/golden/golden_case.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

using testing::run_tool;

std::string id_list(const std::string& dir) {
  std::string list;
  for (auto id : testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int64_t>>())
    list += (list.empty() ? "" : ",") + std::to_string(id);
  return list;
}

std::vector<float> first_token(const std::string& golden) {
  auto expected = read_safetensors(testing::golden_dir(golden) + "/expected.safetensors");
  EXPECT_TRUE(expected.ok());
  const Tensor& h = expected->tensors.at("last_hidden_state");
  return std::vector<float>(h.f32(), h.f32() + h.shape[1]);
}

TEST(ArchrunEmbed, PoolsAsTheModelCardSays) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("roberta"));
  const std::string ids = id_list(testing::golden_dir("roberta"));
  const std::vector<float> cls = first_token("roberta");
  // --pooling cls: the first token's state, as transformers gave it.
  auto r = run_tool(testing::archrun() + " embed " + testing::golden_dir("roberta") + " --ids " + ids + " --pooling cls --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pooling"], "cls");
  EXPECT_EQ(j["normalized"], false);
  auto v = j["embedding"].get<std::vector<float>>();
  ASSERT_EQ(v.size(), cls.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], cls[i], 2e-5) << i;
  // A sentence-transformers card saying CLS and Normalize: the same, unit length, unasked.
  testing::GoldenVariant card("roberta", "embed_card", nlohmann::json::object());
  std::ofstream(card.dir / "modules.json")
      << R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
             {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  std::filesystem::create_directories(card.dir / "1_Pooling");
  std::ofstream(card.dir / "1_Pooling" / "config.json") << R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false})";
  auto c = run_tool(testing::archrun() + " embed " + card.path() + " --ids " + ids + " --json");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  auto cj = nlohmann::json::parse(c.out);
  EXPECT_EQ(cj["pooling"], "cls");
  EXPECT_EQ(cj["normalized"], true);
  EXPECT_EQ(cj["pooling_from"], "1_Pooling/config.json");
  auto u = cj["embedding"].get<std::vector<float>>();
  double norm = 0;
  for (float x : cls) norm += double(x) * x;
  ASSERT_EQ(u.size(), cls.size());
  for (size_t i = 0; i < u.size(); ++i) EXPECT_NEAR(u[i], cls[i] / std::sqrt(norm), 1e-5) << i;
  auto bad = run_tool(testing::archrun() + " embed " + testing::golden_dir("roberta") + " --ids " + ids + " --pooling sum");
  EXPECT_NE(bad.exit_code, 0);
}

TEST(ArchrunRerank, OrdersPassagesAsTheHeadScoresThem) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  testing::CrossEncoder ce;
  const std::vector<std::string> passages = {"the dog ran in the park", "the cat sat on a mat", "a bird sang in a tree",
                                             "it was red", "the sky was blue"};
  const std::string file = (ce.variant.dir / "passages.txt").string();
  {
    std::ofstream out(file);
    for (const auto& p : passages) out << p << "\n\n";  // blank lines are not passages
  }
  const std::string query = "what did the cat sit on";
  auto r = run_tool(testing::archrun() + " rerank " + ce.path() + " -q '" + query + "' --passages " + file + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto results = nlohmann::json::parse(r.out)["results"];
  // The in-process ranking, each pair scored on its own (text_encoder_test checks that against the head).
  auto m = load_model(ce.path());
  ASSERT_TRUE(m.ok());
  auto tok = load_tokenizer(ce.path());
  ASSERT_TRUE(tok.ok());
  auto want = rerank(**m, **tok, query, passages);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(results.size(), passages.size());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i]["index"], (*want)[i].index) << i;
    EXPECT_NEAR(results[i]["relevance_score"].get<double>(), (*want)[i].relevance_score, 1e-6);
    EXPECT_EQ(results[i]["document"], passages[(*want)[i].index]);
    if (i > 0) EXPECT_GE(results[i - 1]["relevance_score"].get<double>(), results[i]["relevance_score"].get<double>());
  }
  auto top = run_tool(testing::archrun() + " rerank " + ce.path() + " -q '" + query + "' --passages " + file + " --top-n 2");
  ASSERT_EQ(top.exit_code, 0) << top.out;
  EXPECT_EQ(std::count(top.out.begin(), top.out.end(), '\n'), 2) << top.out;
  EXPECT_EQ(top.out.substr(0, 2), "1\t");
}

TEST(ArchrunRerank, ClearErrors) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  testing::CrossEncoder ce;
  const std::string empty = (ce.variant.dir / "empty.txt").string();
  std::ofstream(empty) << "\n  \n";
  auto none = run_tool(testing::archrun() + " rerank " + ce.path() + " -q what --passages " + empty);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.out.find(empty + ": no passages (one per line)"), std::string::npos) << none.out;
  const std::string one = (ce.variant.dir / "one.txt").string();
  std::ofstream(one) << "it was red\n";
  // The bert golden without a head, with the cross-encoder's tokenizer.
  testing::GoldenVariant headless("bert", "headless", nlohmann::json::object());
  std::filesystem::copy_file(ce.variant.dir / "tokenizer.json", headless.dir / "tokenizer.json");
  auto nohead = run_tool(testing::archrun() + " rerank " + headless.path() + " -q what --passages " + one);
  EXPECT_NE(nohead.exit_code, 0);
  EXPECT_NE(nohead.out.find("the model has no sequence-classification head"), std::string::npos) << nohead.out;
}

}  // namespace
}  // namespace arch

// A text encoder's embeddings and reranking: each pooling is what the
// xlm_roberta golden's token states give (transformers' own), and rerank orders
// passages as the classification head scores each pair on its own.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/runtime/forward.h"
#include "engine/runtime/text_encoder.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/engine/runtime/cross_encoder.h"

namespace arch {
namespace {

TEST(TextEncoder, EachPoolingIsTheGoldensTokenStatesPooled) {
  const std::string dir = testing::golden_dir("xlm_roberta");  // one segment, as embed_ids runs
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<int32_t> ids = nlohmann::json::parse(std::ifstream(dir + "/inputs.json"))["input_ids"];
  auto exp = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(exp.ok());
  const Tensor& h = exp->tensors.at("last_hidden_state");
  const int64_t n = h.shape[0], d = h.shape[1];
  auto check = [&](Pooling p, const std::function<double(int64_t)>& want) {
    auto v = embed_ids(**m, ids, p, false);
    ASSERT_TRUE(v.ok()) << v.error().message;
    ASSERT_EQ(int64_t(v->size()), d);
    for (int64_t j = 0; j < d; ++j) EXPECT_NEAR((*v)[size_t(j)], want(j), 2e-5) << pooling_name(p) << " " << j;
  };
  check(Pooling::Mean, [&](int64_t j) { return exp->tensors.at("mean_pooled").f32()[j]; });
  check(Pooling::Cls, [&](int64_t j) { return h.f32()[j]; });
  check(Pooling::LastToken, [&](int64_t j) { return h.f32()[(n - 1) * d + j]; });
  check(Pooling::Max, [&](int64_t j) {
    double most = -INFINITY;
    for (int64_t i = 0; i < n; ++i) most = std::max(most, double(h.f32()[i * d + j]));
    return most;
  });
  check(Pooling::Pooler, [&](int64_t j) { return exp->tensors.at("pooler_output").f32()[j]; });
  auto unit = embed_ids(**m, ids, Pooling::Cls, true);
  ASSERT_TRUE(unit.ok());
  double norm = 0;
  for (float x : *unit) norm += double(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  auto too_long = embed_ids(**m, std::vector<int32_t>(65, 5), Pooling::Mean, false);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().message, "an input of 65 tokens exceeds the model's 64 positions");
}

TEST(TextEncoder, RerankOrdersPassagesAsTheHeadScoresEachPair) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  testing::CrossEncoder ce;
  auto m = load_model(ce.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(has_classifier(**m));
  auto tok = load_tokenizer(ce.path());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const std::string query = "what did the cat sit on";
  const std::vector<std::string> passages = {"the dog ran in the park", "the cat sat on a mat", "a bird sang in a tree",
                                             "it was red", "the sky was blue"};
  auto ranked = rerank(**m, **tok, query, passages);
  ASSERT_TRUE(ranked.ok()) << ranked.error().message;
  ASSERT_EQ(ranked->size(), passages.size());
  std::vector<bool> seen(passages.size(), false);
  for (size_t r = 0; r < ranked->size(); ++r) {
    const RankedPassage& p = (*ranked)[r];
    seen[p.index] = true;
    // The head on this pair alone: [CLS] query [SEP] passage [SEP], the passage's segment 1.
    auto pair = (*tok)->encode_pair(query, passages[p.index], 64);
    ASSERT_TRUE(pair.ok());
    EXPECT_EQ(pair->type_ids.back(), 1);
    Tensor ids = Tensor::zeros(DType::I32, {int64_t(pair->ids.size())}), types = ids;
    types = Tensor::zeros(DType::I32, {int64_t(pair->ids.size())});
    std::copy(pair->ids.begin(), pair->ids.end(), ids.i32());
    std::copy(pair->type_ids.begin(), pair->type_ids.end(), types.i32());
    auto out = forward(**m, {{"input_ids", ids}, {"token_type_ids", types}}, {"logits"});
    ASSERT_TRUE(out.ok()) << out.error().message;
    const float logit = out->at("logits").f32()[0];
    ASSERT_EQ(p.logits.size(), 1u);
    EXPECT_FLOAT_EQ(p.logits[0], logit);
    EXPECT_NEAR(p.relevance_score, 1.0 / (1.0 + std::exp(-double(logit))), 1e-6);
    EXPECT_EQ(p.tokens, pair->ids.size());
    if (r > 0) EXPECT_GE((*ranked)[r - 1].relevance_score, p.relevance_score);
  }
  for (bool s : seen) EXPECT_TRUE(s);
  EXPECT_GT(ranked->front().relevance_score - ranked->back().relevance_score, 1e-4);  // the scores differ
}

TEST(TextEncoder, RerankNeedsAClassificationHead) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  testing::CrossEncoder ce;
  auto m = load_model(testing::golden_dir("bert"));
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(has_classifier(**m));
  auto tok = load_tokenizer(ce.path());
  ASSERT_TRUE(tok.ok());
  auto r = rerank(**m, **tok, "what", {"it"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "the model has no sequence-classification head (an encoder's logits, one per label): it cannot score passages");
  EXPECT_NEAR(relevance(std::vector<float>{0.0f, std::log(3.0f)}), 0.75, 1e-6);  // two labels: the last one's share
}

TEST(TextEncoder, RerankRefusesNanScores) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  testing::GoldenVariant nan_head("bert", "nan_head", {{"id2label", {{"0", "LABEL_0"}}}},
                                  {{"classifier.weight", testing::seeded({1, 64}, 21)}, {"classifier.bias", testing::filled({1}, NAN)}});
  testing::CrossEncoder ce;  // its tokenizer
  std::filesystem::copy_file(ce.variant.dir / "tokenizer.json", nan_head.dir / "tokenizer.json");
  auto m = load_model(nan_head.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto tok = load_tokenizer(nan_head.path());
  ASSERT_TRUE(tok.ok());
  auto r = rerank(**m, **tok, "what", {"it was red", "a dog"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "passage 0: the head's logits are not all numbers (NaN or Inf): its weights may hold NaN or Inf");
}

}  // namespace
}  // namespace arch

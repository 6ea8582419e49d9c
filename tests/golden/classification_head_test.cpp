// Sequence-classification heads (a cross-encoder reranker's scores): an
// encoder golden given a head of random weights, its logits checked against
// the head computed here, in double, from what transformers gave for the
// encoder (its last_hidden_state or pooler_output). So the head reads the
// right token through the right layers, in each family's own way: BERT's on
// the pooler, RoBERTa's dense-tanh-out_proj, ModernBERT's prediction head,
// DeBERTa's context pooler.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "engine/runtime/forward.h"
#include "engine/runtime/model.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/engine/runtime/cross_encoder.h"
#include "tests/golden/golden_case.h"
#include "tools/toolkit/compare.h"

namespace arch {
namespace {

using Vec = std::vector<double>;

// y = W x + b, W [out, in] as a Linear stores it.
Vec linear(const Tensor& W, const Tensor* b, const Vec& x) {
  const int64_t out = W.shape[0], in = W.shape[1];
  Vec y(size_t(out), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) y[size_t(o)] += double(W.f32()[o * in + i]) * x[size_t(i)];
    if (b) y[size_t(o)] += b->f32()[o];
  }
  return y;
}

Vec each(Vec x, double (*f)(double)) {
  for (double& v : x) v = f(v);
  return x;
}
double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

Vec layer_norm(const Vec& x, const Tensor& w, double eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v / double(x.size());
  for (double v : x) var += (v - mean) * (v - mean) / double(x.size());
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w.f32()[i];
  return y;
}

// Row `row` of a golden's expected tensor.
Vec expected_row(const std::string& golden, const std::string& name, int64_t row) {
  auto exp = read_safetensors(testing::golden_dir(golden) + "/expected.safetensors");
  EXPECT_TRUE(exp.ok()) << exp.error().message;
  if (!exp.ok()) return {};
  const Tensor& t = exp->tensors.at(name);
  const int64_t n = t.shape.back();
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = t.f32()[row * n + i];
  return v;
}

// The golden with `head` added (and three labels), run on its own inputs:
// its logits against `want`.
void expect_logits(const std::string& golden, const std::map<std::string, Tensor>& head, const Vec& want) {
  const nlohmann::json labels = {{"0", "no"}, {"1", "maybe"}, {"2", "yes"}};
  testing::GoldenVariant variant(golden, golden + "_classifier", {{"id2label", labels}}, head);
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    LoadOptions lo;
    lo.backend = backend;
    auto model = load_model(variant.path(), lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto inputs = golden_inputs(testing::golden_dir(golden));
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto out = forward(**model, *inputs, {"logits"});
    ASSERT_TRUE(out.ok()) << out.error().message;
    const Tensor& logits = out->at("logits");
    ASSERT_EQ(logits.shape, (Dims{3}));
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(logits.f32()[i], want[i], 2e-5) << i;
  }
}

TEST(ClassificationHead, BertsReadsThePooler) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("bert"));
  const Tensor W = testing::seeded({3, 64}, 1), b = testing::seeded({3}, 2);
  expect_logits("bert", {{"classifier.weight", W}, {"classifier.bias", b}},
                linear(W, &b, expected_row("bert", "pooler_output", 0)));
}

TEST(ClassificationHead, XlmRobertasIsDenseTanhOutProjOnTheFirstToken) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("xlm_roberta"));
  const Tensor D = testing::seeded({80, 80}, 3), d = testing::seeded({80}, 4), O = testing::seeded({3, 80}, 5),
               o = testing::seeded({3}, 6);
  const Vec first = expected_row("xlm_roberta", "last_hidden_state", 0);
  expect_logits("xlm_roberta",
                {{"classifier.dense.weight", D}, {"classifier.dense.bias", d}, {"classifier.out_proj.weight", O},
                 {"classifier.out_proj.bias", o}},
                linear(O, &o, each(linear(D, &d, first), [](double x) { return std::tanh(x); })));
}

TEST(ClassificationHead, ModernBertsPredictionHeadOnTheFirstToken) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("modernbert"));
  // classifier_bias false, norm_bias false: a bias-free dense and norm.
  const Tensor D = testing::seeded({64, 64}, 7), N = testing::seeded({64}, 8), C = testing::seeded({3, 64}, 9),
               c = testing::seeded({3}, 10);
  const Vec first = expected_row("modernbert", "last_hidden_state", 0);
  expect_logits("modernbert",
                {{"head.dense.weight", D}, {"head.norm.weight", N}, {"classifier.weight", C}, {"classifier.bias", c}},
                linear(C, &c, layer_norm(each(linear(D, nullptr, first), gelu), N, 1e-5)));
}

TEST(ClassificationHead, DebertasContextPoolerOnTheFirstToken) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("deberta_v2"));
  const Tensor D = testing::seeded({64, 64}, 11), d = testing::seeded({64}, 12), C = testing::seeded({3, 64}, 13),
               c = testing::seeded({3}, 14);
  const Vec first = expected_row("deberta_v2", "last_hidden_state", 0);
  expect_logits("deberta_v2",
                {{"pooler.dense.weight", D}, {"pooler.dense.bias", d}, {"classifier.weight", C}, {"classifier.bias", c}},
                linear(C, &c, each(linear(D, &d, first), gelu)));
}

// Image classification: DINOv2's head reads CLS beside the mean of the
// patch tokens (after the registers, which it skips).
TEST(ClassificationHead, Dinov2sReadsClsBesideThePatchesMean) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("dinov2_registers"));
  const Tensor C = testing::seeded({3, 128}, 15), c = testing::seeded({3}, 16);
  auto exp = read_safetensors(testing::golden_dir("dinov2_registers") + "/expected.safetensors");
  ASSERT_TRUE(exp.ok());
  const Tensor& h = exp->tensors.at("last_hidden_state");  // [CLS, 4 registers, 30 patches] x 64
  const int64_t n = h.shape[0], d = h.shape[1];
  Vec in(size_t(2 * d), 0.0);
  for (int64_t j = 0; j < d; ++j) {
    in[size_t(j)] = h.f32()[j];
    for (int64_t i = 5; i < n; ++i) in[size_t(d + j)] += h.f32()[i * d + j] / double(n - 5);
  }
  expect_logits("dinov2_registers", {{"classifier.weight", C}, {"classifier.bias", c}}, linear(C, &c, in));
}

}  // namespace
}  // namespace arch

// GGUF files against llama.cpp and the exact reference (../shared/golden/gguf):
//  - the real stories260K.gguf's tensors are its Hugging Face twin's, bit for
//    bit, once the Q/K rows are put back (its greedy text: stories260k_test);
//  - llama_rand at F32, Q8_0, Q4_0, Q4_K_M, Q5_K_M and Q6_K, teacher-forced on
//    llama.cpp's greedy path: on the reference kernels (exact dequantization,
//    float32) within 1e-4 of the float64 numpy forward of the same weights;
//    on the fast kernels within the README's fair tolerance of llama.cpp
//    (2 x exact-vs-llama.cpp + 0.05 nats; 1e-4 for F32), and greedy tokens
//    equal llama.cpp's up to its first margin under that tolerance;
//  - the GGUF tokenizer gives llama.cpp's prompt ids and text.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::read_json;

std::string gguf_dir() { return testing::golden_dir("gguf"); }
std::string stories_dir() { return testing::shared_dir() + "/models/stories260K"; }

// Every tensor of the GGUF equals the Hugging Face file's of the same name.
void expect_same_tensors(const std::string& gguf, const std::string& safetensors) {
  auto g = load_checkpoint(gguf);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto hf = read_safetensors(safetensors);
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  for (const auto& [name, want] : hf->tensors) {
    const Tensor* got = g->find(name);
    ASSERT_NE(got, nullptr) << name;
    ASSERT_EQ(got->shape, want.shape) << name;
    ASSERT_EQ(got->dtype, DType::F32) << name;
    EXPECT_EQ(std::memcmp(got->data, want.data, want.nbytes()), 0) << name << " differs";
  }
  // Beside them only a stored copy of tied embeddings (llama.cpp's
  // converter writes output.weight even when the model ties it).
  for (const auto& [name, t] : g->tensors) {
    if (hf->tensors.count(name)) continue;
    ASSERT_EQ(name, "lm_head.weight");
    const Tensor& embed = hf->tensors.at("model.embed_tokens.weight");
    EXPECT_EQ(std::memcmp(t.data, embed.data, embed.nbytes()), 0);
  }
}

TEST(GgufGolden, Stories260KTensorsAreItsHuggingFaceTwins) {
  ARCH_REQUIRE_SHARED(stories_dir() + "/stories260K.gguf");
  expect_same_tensors(stories_dir() + "/stories260K.gguf", stories_dir() + "/model.safetensors");
}

TEST(GgufGolden, LlamaRandF32TensorsAreItsHuggingFaceTwins) {
  ARCH_REQUIRE_SHARED(gguf_dir() + "/llama_rand.F32.gguf");
  expect_same_tensors(gguf_dir() + "/llama_rand.F32.gguf", gguf_dir() + "/llama_rand/model.safetensors");
}

TEST(GgufGolden, ConfigFromMetadataIsTheHuggingFaceOne) {
  ARCH_REQUIRE_SHARED(gguf_dir() + "/llama_rand.F32.gguf");
  auto g = load_checkpoint(gguf_dir() + "/llama_rand.F32.gguf");
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto hf = read_json(gguf_dir() + "/llama_rand/config.json");
  for (const char* field : {"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                            "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
                            "tie_word_embeddings", "bos_token_id", "eos_token_id"})
    EXPECT_EQ(g->config[field], hf[field]) << field;
  EXPECT_FLOAT_EQ(g->config["rms_norm_eps"].get<float>(), hf["rms_norm_eps"].get<float>());
  EXPECT_FLOAT_EQ(g->config["rope_theta"].get<float>(), hf["rope_theta"].get<float>());
}

TEST(GgufGolden, Stories260KTokenizerIsLlamaCpps) {
  const std::string path = stories_dir() + "/stories260K.gguf";
  ARCH_REQUIRE_SHARED(path);
  auto run = read_json(gguf_dir() + "/stories260K.llama_cpp.json")["runs"]["f32kv"];
  auto tok = load_model_tokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ((*tok)->encode("Once upon a time"), run["prompt_token_ids"].get<std::vector<int32_t>>());
  auto ids = run["generated_token_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ((*tok)->decode(ids), run["generated_text"].get<std::string>());
  // The same tokenizer as the Hugging Face twin's, on other text too.
  auto hf = load_tokenizer(stories_dir());
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  for (const char* text : {"Lily and Tom went to the park.  It was sunny!", " leading space", "ünïcödé 123 \n x"})
    EXPECT_EQ((*tok)->encode(text), (*hf)->encode(text)) << text;
}

// --- llama_rand: teacher-forced logprobs ------------------------------------

struct Forced {
  std::vector<int32_t> prompt, path;  // llama.cpp's prompt ids and greedy tokens
  std::vector<std::vector<float>> logprobs;  // per generated position, over the vocabulary
};

Forced teacher_forced(const std::string& gguf, const std::string& backend) {
  Forced f;
  auto run = read_json(gguf + ".llama_cpp.json")["runs"]["f32kv"];
  f.prompt = run["prompt_token_ids"].get<std::vector<int32_t>>();
  f.path = run["generated_token_ids"].get<std::vector<int32_t>>();
  LoadOptions load;
  load.backend = backend;
  auto model = load_model(gguf + ".gguf", load);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return f;
  std::vector<int32_t> ids = f.prompt;
  ids.insert(ids.end(), f.path.begin(), f.path.end() - 1);
  Session s(**model, int64_t(ids.size()));
  auto outs = s.step(ids);
  EXPECT_TRUE(outs.ok()) << (outs.ok() ? "" : outs.error().message);
  if (!outs.ok()) return f;
  const Tensor& logits = outs->at("logits");
  const int64_t vocab = logits.dim(-1);
  for (size_t p = 0; p < f.path.size(); ++p) {
    const float* row = logits.f32() + (f.prompt.size() - 1 + p) * vocab;
    double mx = -INFINITY, sum = 0;
    for (int64_t v = 0; v < vocab; ++v) mx = std::max(mx, double(row[v]));
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - mx);
    std::vector<float> lp(static_cast<size_t>(vocab));
    for (int64_t v = 0; v < vocab; ++v) lp[size_t(v)] = float(double(row[v]) - mx - std::log(sum));
    f.logprobs.push_back(std::move(lp));
  }
  return f;
}

class LlamaRandGguf : public ::testing::TestWithParam<std::string> {};

// Exact dequantization and float32 arithmetic against the float64 forward of
// the same weights: only float32 rounding apart.
TEST_P(LlamaRandGguf, ReferenceKernelsMatchTheExactForward) {
  const std::string base = gguf_dir() + "/llama_rand." + GetParam();
  ARCH_REQUIRE_SHARED(base + ".gguf");
  Forced f = teacher_forced(base, "reference");
  ASSERT_EQ(f.logprobs.size(), f.path.size());
  auto ref = read_json(gguf_dir() + "/llama_rand.numpy_ref.json")["files"]["llama_rand." + GetParam() + ".gguf"];
  double worst = 0;
  for (const auto& step : ref["steps"]) {
    const size_t p = step["position"].get<size_t>();
    for (const auto& e : step["top10"]) {
      const double d = std::abs(f.logprobs[p][e[0].get<size_t>()] - e[1].get<double>());
      worst = std::max(worst, d);
      EXPECT_LE(d, 1e-4) << "position " << p << ", token " << e[0];
    }
  }
  std::printf("[ gguf ] %s reference kernels vs the exact forward: max |dlogprob| %.2e over 32 positions\n",
              GetParam().c_str(), worst);
}

// The fast kernels round activations as llama.cpp does (or not at all):
// within twice what that rounding moved llama.cpp from the exact forward,
// plus 0.05 nats (the README's fair tolerance); F32 within 1e-4.
TEST_P(LlamaRandGguf, FastKernelsMatchLlamaCpp) {
  const std::string base = gguf_dir() + "/llama_rand." + GetParam();
  ARCH_REQUIRE_SHARED(base + ".gguf");
  Forced f = teacher_forced(base, "cpu");
  ASSERT_EQ(f.logprobs.size(), f.path.size());
  auto run = read_json(base + ".llama_cpp.json")["runs"]["f32kv"];
  auto exact = read_json(gguf_dir() + "/llama_rand.numpy_ref.json")["files"]["llama_rand." + GetParam() + ".gguf"]
                   ["vs_llama_cpp"]["f32kv"]["per_position_max_abs_diff_exact"];
  const bool f32 = GetParam() == "F32";
  double worst = 0;
  size_t same = 0;  // greedy tokens equal to llama.cpp's before the first difference
  for (size_t p = 0; p < f.path.size(); ++p) {
    const auto& step = run["steps"][p];
    const double tol = f32 ? 1e-4 : 2 * exact[p].get<double>() + 0.05;
    for (const auto& e : step["top10"]) {
      const double d = std::abs(f.logprobs[p][e["id"].get<size_t>()] - e["logprob"].get<double>());
      worst = std::max(worst, d);
      EXPECT_LE(d, tol) << "position " << p << ", token " << e["id"];
    }
    if (same < p) continue;
    const auto& lp = f.logprobs[p];
    if (int32_t(std::max_element(lp.begin(), lp.end()) - lp.begin()) == step["token_id"].get<int32_t>()) {
      ++same;
      continue;
    }
    // Parting from llama.cpp is allowed only where its own top two are
    // nearer than the tolerance.
    EXPECT_LE(step["margin_top1_top2_logprob"].get<double>(), tol) << "greedy parts from llama.cpp at position " << p;
  }
  if (f32) {
    EXPECT_EQ(same, f.path.size());
  }
  // llama.cpp's margins stay >= 0.3 nats up to position 12 or later in
  // every file (the README's table): the first dozen must agree.
  EXPECT_GE(same, 12u);
  std::printf("[ gguf ] %s fast kernels vs llama.cpp: max |dlogprob| %.3g; greedy equal for the first %zu of %zu\n",
              GetParam().c_str(), worst, same, f.path.size());
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaRandGguf, ::testing::Values("F32", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"));

}  // namespace
}  // namespace arch

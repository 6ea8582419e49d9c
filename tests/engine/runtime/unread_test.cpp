// Checkpoint tensors no graph reads: a checkpoint its tensors alone matched
// to a family is refused naming them (--force-family runs it anyway); any
// other warns naming a few and a count, and strict refuses; a template's
// `unread` declaration (or a wrapper's registry note) explains them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/runtime/unread.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/engine/runtime/golden_variant.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::filled;
using testing::GoldenVariant;

// Two tensors LlamaStyle has no use for: OLMo-2's norm after each MLP.
std::map<std::string, Tensor> olmo_norms() {
  return {{"model.layers.0.post_feedforward_layernorm.weight", filled({64}, 1.0f)},
          {"model.layers.1.post_feedforward_layernorm.weight", filled({64}, 1.0f)}};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The golden's first logits row, as transformers computed it, against the model's.
void expect_golden_logits(const Model& m) {
  const std::string dir = testing::golden_dir("llama");
  auto ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  Session s(m, int64_t(ids.size()));
  auto out = s.step(ids);
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  const Tensor& ref = expected->tensors.at("logits");
  auto c = testing::compare_f32(out->at("logits").f32(), ref.f32(), ref.numel());
  EXPECT_TRUE(c.ok()) << "logits differ by " << c.max_abs << " (allowed " << c.bound << ")";
}

TEST(UnreadTensors, SummaryFoldsLayersAndCounts) {
  std::vector<std::string> names;
  for (int i = 0; i < 24; ++i) names.push_back("model.layers." + std::to_string(i) + ".self_attn.q_proj.bias");
  names.push_back("extra.weight");
  for (int i = 0; i < 3; ++i) names.push_back("model.layers." + std::to_string(i) + ".mlp.sinks");
  EXPECT_EQ(summarize_tensors(names),
            "model.layers.*.self_attn.q_proj.bias (24), extra.weight, model.layers.*.mlp.sinks (3)");
  EXPECT_EQ(summarize_tensors(names, 1), "model.layers.*.self_attn.q_proj.bias (24) and 4 more");
  // Thousands of distinct names stay one short line.
  std::vector<std::string> many;
  for (int i = 0; i < 5000; ++i) many.push_back("w" + std::to_string(i) + "x.weight");
  EXPECT_EQ(summarize_tensors(many), "w0x.weight, w1x.weight, w2x.weight, w3x.weight and 4996 more");
  EXPECT_EQ(summarize_tensors({}), "");
}

TEST(UnreadTensors, RegistryNotesMatchAsTemplateDeclarations) {
  dsl::UnreadDecl tower = unread_decl({"model.vision_tower", "the image tower"});
  EXPECT_EQ(tower.reason, "the image tower");
  EXPECT_TRUE(dsl::unread_matches(tower, "model.vision_tower.blocks.0.attn.weight"));
  EXPECT_FALSE(dsl::unread_matches(tower, "model.vision_towers.x"));
  EXPECT_FALSE(dsl::unread_matches(tower, "model.language_model.x"));
  dsl::UnreadDecl layer = unread_decl({"layers.{i}.*.inv_freq", "a buffer"});
  EXPECT_TRUE(dsl::unread_matches(layer, "layers.3.rotary.inv_freq"));
  EXPECT_FALSE(dsl::unread_matches(layer, "layers.x.rotary.inv_freq"));
  EXPECT_FALSE(dsl::unread_matches(layer, "layers.3.rotary.scale"));
  EXPECT_EQ(unexplained_tensors({"model.vision_tower.a", "lm_head.bias", "layers.0.r.inv_freq"}, {tower, layer}),
            std::vector<std::string>{"lm_head.bias"});
}

// An OLMo-2-like checkpoint: an unlisted model_type whose tensor names fit
// LlamaStyle's signature, with norms LlamaStyle would never apply.
TEST(UnreadTensors, SignatureChoiceRefusesTensorsTheFamilyLeavesUnread) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llama"));
  GoldenVariant v("llama", "olmo_like", {{"model_type", "olmo_like"}}, olmo_norms());
  auto m = load_model(v.path());
  ASSERT_FALSE(m.ok()) << "an unlisted model_type with tensors LlamaStyle leaves unread loaded";
  const std::string& msg = m.error().message;
  EXPECT_TRUE(has(msg, "model_type 'olmo_like' is not listed")) << msg;
  EXPECT_TRUE(has(msg, "leaves 2 checkpoint tensors unread: model.layers.*.post_feedforward_layernorm.weight (2)."))
      << msg;
  EXPECT_TRUE(has(msg, "--force-family LlamaStyle runs it anyway")) << msg;

  // Forced, it runs, and says what it leaves out; the golden's own tensors
  // give transformers' logits.
  LoadOptions forced;
  forced.force_family = "LlamaStyle";
  auto f = load_model(v.path(), forced);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ((*f)->warnings.size(), 2u);
  EXPECT_TRUE(has((*f)->warnings[0], "--force-family LlamaStyle")) << (*f)->warnings[0];
  EXPECT_TRUE(has((*f)->warnings[1], "2 checkpoint tensors are read by no graph of ")) << (*f)->warnings[1];
  EXPECT_TRUE(has((*f)->warnings[1], "model.layers.*.post_feedforward_layernorm.weight (2)")) << (*f)->warnings[1];
  expect_golden_logits(**f);

  // The same tensors without the extra ones run by signature, silently.
  GoldenVariant plain("llama", "alien_llama", {{"model_type", "alien_llama"}});
  auto p = load_model(plain.path());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_NE((*p)->reason.find("signature"), std::string::npos) << (*p)->reason;
  EXPECT_TRUE((*p)->unused_tensors.empty());
  EXPECT_TRUE((*p)->warnings.empty());
}

// A listed model_type runs with what its template leaves unread, saying so
// in a warning; strict refuses it.
TEST(UnreadTensors, ListedTypeWarnsAndStrictRefuses) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llama"));
  std::map<std::string, Tensor> extra = olmo_norms();
  extra["model.layers.0.self_attn.sinks"] = filled({4}, 0.0f);
  GoldenVariant v("llama", "llama_unread", nlohmann::json::object(), extra);
  auto m = load_model(v.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::vector<std::string> unread = {"model.layers.0.post_feedforward_layernorm.weight",
                                           "model.layers.0.self_attn.sinks",
                                           "model.layers.1.post_feedforward_layernorm.weight"};
  EXPECT_EQ((*m)->unused_tensors, unread);
  EXPECT_EQ((*m)->unexplained_tensors, unread);
  ASSERT_EQ((*m)->warnings.size(), 1u);
  const std::string& w = (*m)->warnings[0];
  EXPECT_EQ(w, "3 checkpoint tensors are read by no graph of " + std::string(ARCHETYPE_FAMILIES_DIR) +
                   "/llama.arch: model.layers.*.post_feedforward_layernorm.weight (2), "
                   "model.layers.0.self_attn.sinks; a template that leaves a tensor out may compute something "
                   "else (--strict refuses)");
  expect_golden_logits(**m);

  LoadOptions strict;
  strict.strict = true;
  auto s = load_model(v.path(), strict);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, v.path() + ": 3 checkpoint tensors are read by no graph of " +
                                   std::string(ARCHETYPE_FAMILIES_DIR) +
                                   "/llama.arch: model.layers.*.post_feedforward_layernorm.weight (2), "
                                   "model.layers.0.self_attn.sinks (--strict: a template must read every "
                                   "tensor but those its `unread` declarations explain)");

  // The golden as it is: read whole, strict or not.
  auto golden = load_model(testing::golden_dir("llama"), strict);
  ASSERT_TRUE(golden.ok()) << golden.error().message;
  EXPECT_TRUE((*golden)->unused_tensors.empty());
  EXPECT_TRUE((*golden)->warnings.empty());
}

// A template that says why it leaves tensors unread is neither refused
// when its tensors alone chose it, nor warned of, nor refused by strict;
// what it says is kept.
TEST(UnreadTensors, UnreadDeclarationsExplainThem) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llama"));
  GoldenVariant v("llama", "olmo_declared", {{"model_type", "olmo_like"}}, olmo_norms());
  const fs::path families = v.dir / "families";
  fs::create_directories(families);
  std::ofstream(families / "declared.arch")
      << "family Declared\nimport \"" ARCHETYPE_FAMILIES_DIR "/llama.arch\"\n"
      << "weights {\n  unread model.layers.{i}.post_feedforward_layernorm: \"a test leaves them\"\n}\n";
  std::ofstream(families / "registry.toml")
      << "generic_config_fields = [\"architectures\", \"attention_dropout\", \"bos_token_id\", \"dtype\", "
      << "\"eos_token_id\", \"initializer_range\", \"model_type\", \"pretraining_tp\", "
      << "\"transformers_version\", \"use_cache\"]\n"
      << "[[family]]\nname = \"Declared\"\ntemplate = \"declared.arch\"\n"
      << "signature = [\"model.embed_tokens.weight\", \"model.layers.0.mlp.gate_proj.weight\"]\n";
  LoadOptions opt;
  opt.families = families.string();
  opt.strict = true;
  auto m = load_model(v.path(), opt);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->family, "Declared");
  EXPECT_NE((*m)->reason.find("signature"), std::string::npos) << (*m)->reason;
  EXPECT_EQ((*m)->unused_tensors, (std::vector<std::string>{"model.layers.0.post_feedforward_layernorm.weight",
                                                            "model.layers.1.post_feedforward_layernorm.weight"}));
  EXPECT_TRUE((*m)->unexplained_tensors.empty());
  EXPECT_TRUE((*m)->warnings.empty());
  ASSERT_FALSE((*m)->unread_declared.empty());  // the importing file's first, then llama.arch's
  EXPECT_EQ((*m)->unread_declared[0].reason, "a test leaves them");
  expect_golden_logits(**m);
}

}  // namespace
}  // namespace arch

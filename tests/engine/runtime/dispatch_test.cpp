// Dispatch follows seeds/004: model_type, then tensor presence, then a
// refusal that names the candidates; ambiguity is an error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/runtime/dispatch.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

struct Families {
  fs::path dir = fs::temp_directory_path() / ("dispatch_test_" + std::to_string(getpid()));
  explicit Families(const std::string& toml) {
    fs::create_directories(dir);
    std::ofstream(dir / "registry.toml") << toml;
  }
  ~Families() { fs::remove_all(dir); }
};

const char* kTwo = R"(
[[family]]
name = "LlamaStyle"
template = "llama.arch"
model_types = ["llama", "qwen2"]
signature = ["model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.gate_proj.weight"]

[[family]]
name = "BertStyle"
template = "bert.arch"
model_types = ["bert"]
signature = ["embeddings.word_embeddings.weight"]
)";

auto has(std::set<std::string> names) {
  return [names](const std::string& n) { return names.count(n) > 0; };
}

TEST(Dispatch, ModelTypeFirst) {
  Families f(kTwo);
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  auto d = dispatch(*reg, {{"model_type", "qwen2"}}, has({"embeddings.word_embeddings.weight"}));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->family->name, "LlamaStyle");  // model_type wins over the tensors
  EXPECT_NE(d->reason.find("model_type 'qwen2'"), std::string::npos);
  EXPECT_EQ(d->family->template_path, (f.dir / "llama.arch").string());
}

TEST(Dispatch, TensorPresenceWhenTheTypeIsUnlisted) {
  Families f(kTwo);
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok());
  auto d = dispatch(*reg, {{"model_type", "my_llama"}},
                    has({"model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.gate_proj.weight"}));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->family->name, "LlamaStyle");
  EXPECT_NE(d->reason.find("signature"), std::string::npos);
}

TEST(Dispatch, AmbiguousIsAnErrorNamingBoth) {
  Families f(kTwo);
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok());
  auto d = dispatch(*reg, {{"model_type", "hybrid"}},
                    has({"model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.gate_proj.weight",
                         "embeddings.word_embeddings.weight"}));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("ambiguous"), std::string::npos);
  EXPECT_NE(d.error().message.find("LlamaStyle, BertStyle"), std::string::npos) << d.error().message;
}

TEST(Dispatch, UnknownIsRefusedWithCandidates) {
  Families f(kTwo);
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok());
  auto d = dispatch(*reg, {{"model_type", "alien"}}, has({}));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("no family for model_type 'alien'"), std::string::npos);
  EXPECT_NE(d.error().message.find("candidates: LlamaStyle (llama.arch), BertStyle (bert.arch)"), std::string::npos)
      << d.error().message;
}

// A family with two templates is a candidate once, naming both.
TEST(Dispatch, CandidatesNameEachFamilyOnceWithItsTemplates) {
  Families f(std::string(kTwo) + R"(
[[family]]
name = "LlamaStyle"
template = "llama_variant.arch"
model_types = ["variant"]
)");
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  auto d = dispatch(*reg, {{"model_type", "alien"}}, has({}));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("candidates: LlamaStyle (llama.arch, llama_variant.arch), BertStyle (bert.arch))"),
            std::string::npos)
      << d.error().message;
}

TEST(Dispatch, RegistryErrors) {
  {
    Families f("[[family]]\nname = \"A\"\ntemplate = \"a.arch\"\nmodel_types = [\"x\"]\n"
               "[[family]]\nname = \"B\"\ntemplate = \"b.arch\"\nmodel_types = [\"x\"]\n");
    auto reg = load_registry(f.dir.string());
    ASSERT_FALSE(reg.ok());
    EXPECT_NE(reg.error().message.find("'x' is listed by both A and B"), std::string::npos);
  }
  {
    Families f("[[family]\nname = 3\n");
    auto reg = load_registry(f.dir.string());
    ASSERT_FALSE(reg.ok());
    EXPECT_NE(reg.error().message.find("registry.toml:1:"), std::string::npos) << reg.error().message;
  }
}

TEST(Dispatch, TheProjectRegistryListsTheLlamaStyleTypes) {
  auto reg = load_registry(ARCHETYPE_FAMILIES_DIR);
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  for (const char* mt : {"llama", "mistral", "qwen2", "qwen3"}) {
    auto d = dispatch(*reg, {{"model_type", mt}}, has({}));
    ASSERT_TRUE(d.ok()) << mt;
    EXPECT_EQ(d->family->name, "LlamaStyle") << mt;
    EXPECT_TRUE(fs::exists(d->family->template_path));
  }
}

// A "!name" signature entry must be absent: a checkpoint with every
// tensor of LlamaStyle's signature and Gemma's sandwich norm too is not
// LlamaStyle, so it is Gemma's alone rather than ambiguous.
TEST(Dispatch, AbsentSignatureTensorsRuleAFamilyOut) {
  Families f(R"(
[[family]]
name = "LlamaStyle"
template = "llama.arch"
model_types = ["llama"]
signature = ["model.layers.0.self_attn.q_proj.weight", "!model.layers.0.pre_feedforward_layernorm.weight"]

[[family]]
name = "LlamaStylePlus"
template = "gemma.arch"
model_types = ["gemma"]
signature = ["model.layers.0.self_attn.q_proj.weight", "model.layers.0.pre_feedforward_layernorm.weight"]
)");
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok()) << reg.error().message;
  ASSERT_EQ(reg->families[0].absent, std::vector<std::string>{"model.layers.0.pre_feedforward_layernorm.weight"});
  auto gemma_like = dispatch(*reg, {{"model_type", "sandwich"}},
                             has({"model.layers.0.self_attn.q_proj.weight",
                                  "model.layers.0.pre_feedforward_layernorm.weight"}));
  ASSERT_TRUE(gemma_like.ok()) << gemma_like.error().message;
  EXPECT_EQ(gemma_like->family->name, "LlamaStylePlus");
  EXPECT_TRUE(gemma_like->by_signature);
  auto llama_like = dispatch(*reg, {{"model_type", "plain"}}, has({"model.layers.0.self_attn.q_proj.weight"}));
  ASSERT_TRUE(llama_like.ok());
  EXPECT_EQ(llama_like->family->name, "LlamaStyle");
  EXPECT_NE(llama_like->reason.find("those it rules out absent"), std::string::npos) << llama_like->reason;
  auto listed = dispatch(*reg, {{"model_type", "llama"}}, has({}));
  ASSERT_TRUE(listed.ok());
  EXPECT_FALSE(listed->by_signature);
}

// A model_type of the wrong JSON type is no model_type, not a crash.
TEST(Dispatch, AModelTypeThatIsNoStringIsNone) {
  Families f(kTwo);
  auto reg = load_registry(f.dir.string());
  ASSERT_TRUE(reg.ok());
  auto d = dispatch(*reg, {{"model_type", 7}}, has({"embeddings.word_embeddings.weight"}));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->family->name, "BertStyle");
  EXPECT_EQ(model_type_of(nlohmann::json::array()), "");
}

}  // namespace
}  // namespace arch

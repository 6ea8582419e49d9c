// A real trained model: stories260K (llama2.c's TinyStories model in
// Hugging Face layout). Greedy decoding from BOS must give exactly the 256
// tokens llama2.c's run.c gives, from the checkpoint as stored and re-saved
// the ways tied weights are: only lm_head.weight kept, with save_model's
// __metadata__ alias for the embeddings, or with none (tie_word_embeddings);
// and from llama.cpp's GGUF of it, the copy archrun ships as its default too.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"

namespace arch {
namespace {

void expect_run_c_greedy(const std::string& dir) {
  auto ref = testing::read_json(testing::shared_dir() + "/models/stories260K/reference_greedy.json");
  auto want = ref["greedy_ids_incl_bos"].get<std::vector<int32_t>>();
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  GenerateOptions opt;
  opt.max_new_tokens = int(want.size()) - 1;
  auto r = generate(**model, {want[0]}, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<int32_t> got = {want[0]};
  got.insert(got.end(), r->tokens.begin(), r->tokens.end());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "first difference at position " << i;
}

TEST(Stories260K, GreedyFromBosMatchesLlama2c) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  expect_run_c_greedy(dir);
}

TEST(Stories260K, GgufGreedyFromBosMatchesLlama2c) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  expect_run_c_greedy(dir + "/stories260K.gguf");
  expect_run_c_greedy(std::string(ARCHETYPE_FAMILIES_DIR) + "/default/stories260K.gguf");  // archrun's default
}

// The tied pair stored as lm_head.weight: with the alias save_model writes,
// and without one.
TEST(Stories260K, TiedWeightsStoredAsTheLmHead) {
  std::string src = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(src);
  auto f = read_safetensors(src + "/model.safetensors");
  ASSERT_TRUE(f.ok()) << f.error().message;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, t] : f->tensors) tensors.emplace_back(name == "model.embed_tokens.weight" ? "lm_head.weight" : name, t);
  for (bool with_alias : {true, false}) {
    SCOPED_TRACE(with_alias ? "with the __metadata__ alias" : "without an alias");
    testing::TempDir dir;
    std::filesystem::copy_file(src + "/config.json", dir / "config.json");
    std::map<std::string, std::string> metadata = {{"format", "pt"}};
    if (with_alias) metadata["model.embed_tokens.weight"] = "lm_head.weight";
    ASSERT_TRUE(write_safetensors(dir / "model.safetensors", tensors, metadata).ok());
    expect_run_c_greedy(dir.path());
  }
}

}  // namespace
}  // namespace arch

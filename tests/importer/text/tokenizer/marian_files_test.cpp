// Marian's slow files: the llama2 SentencePiece model as both source.spm
// and target.spm under a vocab.json that numbers its pieces differently
// (id 7k mod 32000): the ids come from vocab.json, not from the model,
// then </s>; a >>xx<< code opening the text is one token; decoding reads
// the pieces back through the target model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/text/tokenizer/tokenizer.h"
#include "tests/importer/text/tokenizer/tokenizer_test_util.h"
#include "tests/test_files.h"

namespace arch {
namespace {

TEST(MarianFiles, IdsComeFromVocabJson) {
  const std::string spm = testing::tokenizer_dir("llama2") + "/tokenizer.model";
  ARCH_REQUIRE_SHARED(spm);
  auto plain = load_tokenizer(spm);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const int32_t n = int32_t((*plain)->vocab_size());
  ASSERT_EQ(n, 32000);
  testing::TempDir dir;
  std::filesystem::copy_file(spm, dir / "source.spm");
  std::filesystem::copy_file(spm, dir / "target.spm");
  auto remap = [n](int32_t id) { return int32_t((int64_t(id) * 7) % n); };
  nlohmann::json vocab = nlohmann::json::object();
  for (int32_t id = 0; id < n; ++id) vocab[(*plain)->id_to_token(id)] = remap(id);  // <unk>, <s>, </s> among them
  vocab[">>fra<<"] = n;
  std::ofstream(dir / "vocab.json") << vocab.dump();
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const std::string text = "Hello world, a translation!";
  std::vector<int32_t> want;
  for (int32_t id : (*plain)->encode(text, false)) want.push_back(remap(id));
  const int32_t eos = remap(*(*plain)->token_to_id("</s>"));
  std::vector<int32_t> with_eos = want;
  with_eos.push_back(eos);
  EXPECT_EQ((*tok)->encode(text, true), with_eos);
  EXPECT_EQ((*tok)->encode(text, false), want);
  // A language code first: its own token, then the rest as the source model
  // reads it (the space after the code included, as MarianTokenizer leaves it).
  auto coded = (*tok)->encode(">>fra<< Hello world, a translation!", true);
  std::vector<int32_t> rest;
  for (int32_t id : (*plain)->encode(" Hello world, a translation!", false)) rest.push_back(remap(id));
  rest.push_back(eos);
  ASSERT_FALSE(coded.empty());
  EXPECT_EQ(coded.front(), n);
  EXPECT_EQ(std::vector<int32_t>(coded.begin() + 1, coded.end()), rest);
  // Back to text through the target model, </s> skipped.
  EXPECT_EQ((*tok)->decode(with_eos, true), text);
  EXPECT_EQ((*tok)->token_to_id("</s>"), eos);
  EXPECT_EQ((*tok)->eos_id(), eos);
}

TEST(MarianFiles, AVocabWithoutUnkIsRefused) {
  const std::string spm = testing::tokenizer_dir("llama2") + "/tokenizer.model";
  ARCH_REQUIRE_SHARED(spm);
  testing::TempDir dir;
  std::filesystem::copy_file(spm, dir / "source.spm");
  std::filesystem::copy_file(spm, dir / "target.spm");
  std::ofstream(dir / "vocab.json") << R"({"a": 0, "b": 1})";
  auto tok = load_tokenizer(dir.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error().message, (dir / "vocab.json") + ": no '<unk>' entry, which MarianTokenizer needs");
  std::ofstream(dir / "vocab.json") << R"({"<unk>": 0, "b": 0})";
  auto twice = load_tokenizer(dir.path());
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, (dir / "vocab.json") + ": vocab entries '<unk>' and 'b' both have id 0");
}

}  // namespace
}  // namespace arch

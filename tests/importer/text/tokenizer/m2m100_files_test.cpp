// M2M-100's slow files: the llama2 SentencePiece model as
// sentencepiece.bpe.model under a vocab.json that numbers its pieces
// differently: the ids from vocab.json, __en__ first and </s> last, the
// language tokens numbered after vocab.json's entries in fairseq's order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/text/tokenizer/tokenizer.h"
#include "tests/importer/text/tokenizer/tokenizer_test_util.h"
#include "tests/test_files.h"

namespace arch {
namespace {

TEST(M2M100Files, IdsFromVocabJsonAndTheLanguageTokensAfterIt) {
  const std::string spm = testing::tokenizer_dir("llama2") + "/tokenizer.model";
  ARCH_REQUIRE_SHARED(spm);
  auto plain = load_tokenizer(spm);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const int32_t n = int32_t((*plain)->vocab_size());
  testing::TempDir dir;
  std::filesystem::copy_file(spm, dir / "sentencepiece.bpe.model");
  auto remap = [n](int32_t id) { return int32_t((int64_t(id) * 11) % n); };
  nlohmann::json vocab = nlohmann::json::object();
  for (int32_t id = 0; id < n; ++id) vocab[(*plain)->id_to_token(id)] = remap(id);
  std::ofstream(dir / "vocab.json") << vocab.dump();
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  // fairseq's order: en is the 19th code, fr the 25th.
  EXPECT_EQ((*tok)->token_to_id("__en__"), n + 18);
  EXPECT_EQ((*tok)->token_to_id("__fr__"), n + 24);
  EXPECT_EQ((*tok)->token_to_id("__zu__"), n + 99);
  const std::string text = "A sentence to translate.";
  std::vector<int32_t> want = {n + 18};
  for (int32_t id : (*plain)->encode(text, false)) want.push_back(remap(id));
  const int32_t eos = remap(*(*plain)->token_to_id("</s>"));
  want.push_back(eos);
  EXPECT_EQ((*tok)->encode(text, true), want);
  EXPECT_EQ((*tok)->decode(want, true), text);  // the language token and </s> skipped
  EXPECT_EQ((*tok)->eos_id(), eos);
}

}  // namespace
}  // namespace arch

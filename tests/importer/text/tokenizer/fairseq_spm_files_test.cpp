// fairseq-numbered SentencePiece tokenizers from a lone
// sentencepiece.bpe.model (the llama2 model standing in): every piece at
// its SentencePiece id + 1 behind <s> <pad> </s> <unk>, and the layout
// tokenizer_config.json's class gives: XLM-R's <s> ... </s>, mBART's
// ... </s> en_XX, mBART-50's en_XX ... </s>, the language codes numbered
// after the pieces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "importer/text/tokenizer/tokenizer.h"
#include "tests/importer/text/tokenizer/tokenizer_test_util.h"
#include "tests/test_files.h"

namespace arch {
namespace {

std::shared_ptr<const Tokenizer> with_class(const testing::TempDir& dir, const std::string& spm, const std::string& cls) {
  std::filesystem::copy_file(spm, dir / "sentencepiece.bpe.model", std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << R"({"tokenizer_class": ")" + cls + R"("})";
  auto tok = load_tokenizer(dir.path());
  EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().message);
  return tok.ok() ? *tok : nullptr;
}

TEST(FairseqSpmFiles, EachClassLaysTheTextOutItsWay) {
  const std::string spm = testing::tokenizer_dir("llama2") + "/tokenizer.model";
  ARCH_REQUIRE_SHARED(spm);
  auto plain = load_tokenizer(spm);
  ASSERT_TRUE(plain.ok());
  const std::string text = "A sentence, in pieces.";
  std::vector<int32_t> pieces;
  for (int32_t id : (*plain)->encode(text, false)) pieces.push_back(id + 1);  // fairseq's offset
  const int32_t n = int32_t((*plain)->vocab_size());
  testing::TempDir dir;
  auto xlmr = with_class(dir, spm, "XLMRobertaTokenizer");
  ASSERT_TRUE(xlmr);
  std::vector<int32_t> want = {0};
  want.insert(want.end(), pieces.begin(), pieces.end());
  want.push_back(2);
  EXPECT_EQ(xlmr->encode(text, true), want);
  EXPECT_EQ(xlmr->token_to_id("<mask>"), n + 1);
  EXPECT_EQ(xlmr->decode(want, true), text);
  auto mbart = with_class(dir, spm, "MBartTokenizer");
  ASSERT_TRUE(mbart);
  const int32_t en = n + 1 + 3;  // en_XX is the 4th code
  want = pieces;
  want.push_back(2), want.push_back(en);
  EXPECT_EQ(mbart->encode(text, true), want);
  EXPECT_EQ(mbart->token_to_id("zh_CN"), n + 1 + 24);
  EXPECT_EQ(mbart->token_to_id("<mask>"), n + 1 + 25);
  EXPECT_FALSE(mbart->token_to_id("sl_SI"));  // mBART-50's only
  auto mbart50 = with_class(dir, spm, "MBart50Tokenizer");
  ASSERT_TRUE(mbart50);
  want = {en};
  want.insert(want.end(), pieces.begin(), pieces.end());
  want.push_back(2);
  EXPECT_EQ(mbart50->encode(text, true), want);
  EXPECT_EQ(mbart50->token_to_id("sl_SI"), n + 1 + 51);
  EXPECT_EQ(mbart50->decode(want, true), text);
}

}  // namespace
}  // namespace arch

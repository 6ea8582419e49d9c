// VitsTokenizer's files (MMS-TTS voices): characters lower-cased unless
// written in the vocabulary, unknown ones dropped, the ends stripped, the
// blank around and between; phonemizing voices refused with the --ids hint.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/test_files.h"
#include "importer/text/tokenizer/tokenizer.h"
#include "importer/text/tokenizer/vits_vocab.h"

namespace arch {
namespace {

using testing::TempDir;

void write_voice(const TempDir& dir, const std::string& config) {
  // "_" is MMS' blank at id 0; "K" is kept upper-case because the vocabulary has it.
  std::ofstream(dir / "vocab.json") << R"({"_": 0, "h": 1, "i": 2, " ": 3, "K": 4, "k": 5, "!": 6})";
  std::ofstream(dir / "tokenizer_config.json") << config;
}

TEST(VitsVocab, BlanksAroundEveryKeptCharacter) {
  TempDir dir;
  write_voice(dir, R"({"tokenizer_class": "VitsTokenizer", "add_blank": true, "normalize": true, "phonemize": false})");
  ASSERT_TRUE(has_vits_files(dir.path()));
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  // " Hi, Kk? " -> lower-case but K kept -> "hi Kk" after dropping , and ?
  // and stripping the ends.
  EXPECT_EQ((*tok)->encode(" Hi, Kk? ", false), (std::vector<int32_t>{0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0}));
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{0, 1, 0, 2, 0}, false), "hi");
  // Nothing in the vocabulary: only the blank remains.
  EXPECT_EQ((*tok)->encode("???", false), (std::vector<int32_t>{0}));
}

TEST(VitsVocab, WithoutBlankOrNormalize) {
  TempDir dir;
  write_voice(dir, R"({"tokenizer_class": "VitsTokenizer", "add_blank": false, "normalize": false})");
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  // Not lower-cased: "H" is unknown and dropped; "K" kept.
  EXPECT_EQ((*tok)->encode("HiK!", false), (std::vector<int32_t>{2, 4, 6}));
}

TEST(VitsVocab, PhonemizingVoiceIsRefused) {
  TempDir dir;
  write_voice(dir, R"({"tokenizer_class": "VitsTokenizer", "phonemize": true})");
  auto tok = load_tokenizer(dir.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("--ids"), std::string::npos) << tok.error().message;
  EXPECT_NE(tok.error().message.find("tokenizer_config.json"), std::string::npos) << tok.error().message;
}

}  // namespace
}  // namespace arch

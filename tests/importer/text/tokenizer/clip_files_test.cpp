// CLIP's slow tokenizer files (vocab.json + merges.txt, a Stable Diffusion
// pipeline's tokenizer/): lower-cased, split by CLIP's pattern, each word
// closed by "</w>" before its merges, <|startoftext|> and <|endoftext|> around.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/test_files.h"
#include "importer/text/tokenizer/clip_files.h"

namespace arch {
namespace {

using testing::TempDir;

TEST(ClipFiles, WordsClosedByEndOfWordAndMerged) {
  TempDir dir;
  std::ofstream(dir / "vocab.json") << R"({"c": 0, "a": 1, "t": 2, "c</w>": 3, "a</w>": 4, "t</w>": 5, "at</w>": 6,
    "cat</w>": 7, "<|startoftext|>": 8, "<|endoftext|>": 9, "s</w>": 10, "!</w>": 11})";
  std::ofstream(dir / "merges.txt") << "#version: 0.2\na t</w>\nc at</w>\n";
  ASSERT_TRUE(has_clip_files(dir.path()));
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  // "A  Cat!": one space, lower case; "cat" merges to one token, "!" its own word.
  EXPECT_EQ((*tok)->encode("A  Cat!", true), (std::vector<int32_t>{8, 4, 7, 11, 9}));
  EXPECT_EQ((*tok)->encode("cats", false), (std::vector<int32_t>{0, 1, 2, 10}));
}

TEST(ClipFiles, NotClipsVocabularyIsNamed) {
  TempDir dir;
  std::ofstream(dir / "vocab.json") << R"({"a": 0})";
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
  auto tok = load_tokenizer(dir.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("not CLIP's vocabulary"), std::string::npos) << tok.error().message;
}

}  // namespace
}  // namespace arch

// Streaming detokenisation: pieces never split a UTF-8 character, and they
// concatenate to the decode of the whole sequence.
#include <gtest/gtest.h>

#include "importer/text/text_stream.h"
#include "importer/text/tokenizer/tokenizer.h"
#include "tests/shared_data.h"

namespace arch {
namespace {

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

void check_stream(const std::string& dir, const std::string& text) {
  auto tok = load_tokenizer(dir);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  auto ids = (*tok)->encode(text, false);
  TextStream stream(*tok);
  std::string streamed;
  for (int32_t id : ids) {
    std::string piece = stream.push(id);
    EXPECT_TRUE(valid_utf8(piece)) << "a piece splits a character: " << piece;
    streamed += piece;
  }
  streamed += stream.finish();
  EXPECT_EQ(streamed, (*tok)->decode(ids)) << dir;
}

TEST(TextStream, ByteFallbackTokensNeverSplitACharacter) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  // Emoji and CJK are not in this 512-token vocabulary: they arrive as
  // single-byte tokens, three or four per character.
  check_stream(dir, "Once upon a time 🙂 a cat said 你好 and ½ went away.");
}

TEST(TextStream, ByteLevelBpe) {
  std::string dir = testing::shared_dir() + "/tokenizers/gpt2";
  ARCH_REQUIRE_SHARED(dir);
  check_stream(dir, "Héllo wörld, naïve café — 日本語 🎉 done.\n  indented");
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(TextStream, SentencePieceStyleWithAPrependedSpace) {
  std::string dir = testing::shared_dir() + "/tokenizers/mistral";
  ARCH_REQUIRE_SHARED(dir);
  check_stream(dir, "  Two leading spaces, then ▁ literal, 🙂 and ß; end.\nNew line.");
}

}  // namespace
}  // namespace arch

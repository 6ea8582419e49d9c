// Every reference case in ../shared/tokenizers/*/cases.jsonl (and chat.jsonl):
// encode(text, add_special_tokens) must give `ids` exactly, and decode(ids)
// (special tokens kept) must give `decoded`.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/importer/text/tokenizer/tokenizer_test_util.h"

namespace arch {
namespace {

using testing::ids_str;
using testing::read_jsonl;
using testing::shared_tokenizer;
using testing::tokenizer_dir;

class TokenizerCases : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerCases, EncodeAndDecodeMatchReference) {
  const std::string name = GetParam();
  const std::string cases = tokenizer_dir(name) + "/cases.jsonl";
  ARCH_REQUIRE_SHARED(cases);
  std::string err;
  auto tok = shared_tokenizer(name, &err);
  ASSERT_TRUE(tok) << err;

  size_t n = 0, enc_ok = 0, dec_n = 0, dec_ok = 0;
  for (const auto& row : read_jsonl(cases)) {
    ++n;
    const std::string tag = row["tag"].get<std::string>();
    const std::string text = row["text"].get<std::string>();
    const bool special = row["add_special_tokens"].get<bool>();
    const auto expected = row["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(text, special);
    if (got == expected) ++enc_ok;
    else
      ADD_FAILURE() << name << " " << tag << " (add_special_tokens=" << special << "): encode\n  got      "
                    << ids_str(got) << "\n  expected " << ids_str(expected);
    if (row.contains("decoded") && row["decoded"].is_string()) {
      ++dec_n;
      const std::string decoded = tok->decode(expected);
      if (decoded == row["decoded"].get<std::string>()) ++dec_ok;
      else
        ADD_FAILURE() << name << " " << tag << ": decode\n  got      " << nlohmann::json(decoded).dump()
                      << "\n  expected " << row["decoded"].dump();
    }
  }
  std::printf("[ TOKENIZER ] %-18s encode %zu/%zu  decode %zu/%zu\n", name.c_str(), enc_ok, n, dec_ok, dec_n);
  EXPECT_GT(n, 0u);
}

// chat.jsonl: the rendered chat templates, encoded without special tokens.
class TokenizerChats : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerChats, RenderedTemplatesEncode) {
  const std::string name = GetParam();
  const std::string chats = tokenizer_dir(name) + "/chat.jsonl";
  ARCH_REQUIRE_SHARED(chats);
  std::string err;
  auto tok = shared_tokenizer(name, &err);
  ASSERT_TRUE(tok) << err;
  size_t n = 0, ok = 0;
  for (const auto& row : read_jsonl(chats)) {
    ++n;
    const auto expected = row["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(row["rendered"].get<std::string>(), false);
    if (got == expected) ++ok;
    else
      ADD_FAILURE() << name << " chat " << row["tag"].get<std::string>() << "\n  got      " << ids_str(got)
                    << "\n  expected " << ids_str(expected);
  }
  std::printf("[ TOKENIZER ] %-18s chat   %zu/%zu\n", name.c_str(), ok, n);
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Shared, TokenizerCases,
                         ::testing::Values("llama3", "qwen3", "gemma3", "mistral", "llama2", "bert-base-uncased",
                                           "gpt2", "stories260K"),
                         param_name);

INSTANTIATE_TEST_SUITE_P(Shared, TokenizerChats, ::testing::Values("llama3", "qwen3", "gemma3"), param_name);

TEST(TokenizerShared, VocabSizesAndSpecialTokens) {
  struct Want {
    const char* name;
    size_t vocab;
    const char* kind;
  };
  for (Want w : {Want{"llama3", 128256, "BPE"}, Want{"qwen3", 151669, "BPE"}, Want{"gemma3", 262145, "BPE"},
                 Want{"mistral", 32000, "BPE"}, Want{"llama2", 32000, "SentencePiece"},
                 Want{"bert-base-uncased", 30522, "WordPiece"}, Want{"gpt2", 50257, "BPE"},
                 Want{"stories260K", 512, "BPE"}}) {
    ARCH_REQUIRE_SHARED(tokenizer_dir(w.name));
    std::string err;
    auto tok = shared_tokenizer(w.name, &err);
    ASSERT_TRUE(tok) << err;
    EXPECT_EQ(tok->vocab_size(), w.vocab) << w.name;
    EXPECT_EQ(tok->kind(), w.kind) << w.name;
  }
  auto llama3 = shared_tokenizer("llama3");
  ASSERT_TRUE(llama3);
  EXPECT_EQ(llama3->token_to_id("<|begin_of_text|>"), 128000);
  EXPECT_EQ(llama3->id_to_token(128000), "<|begin_of_text|>");
  EXPECT_EQ(llama3->bos_id(), 128000);
  EXPECT_EQ(llama3->eos_id(), llama3->token_to_id("<|eot_id|>"));
  EXPECT_EQ(llama3->special_ids().size(), 256u);
  EXPECT_EQ(llama3->id_to_token(-1), "");
  EXPECT_EQ(llama3->id_to_token(1 << 30), "");
  EXPECT_FALSE(llama3->token_to_id("no such token, surely"));

  // skip_special_tokens drops them; ids past the vocabulary are skipped.
  std::vector<int32_t> ids = llama3->encode("Hello world");
  ASSERT_EQ(ids.front(), 128000);
  EXPECT_EQ(llama3->decode(ids, true), "Hello world");
  ids.push_back(1 << 30);
  EXPECT_EQ(llama3->decode(ids), "<|begin_of_text|>Hello world");

  auto llama2 = shared_tokenizer("llama2");
  ASSERT_TRUE(llama2);
  EXPECT_EQ(llama2->bos_id(), 1);
  EXPECT_EQ(llama2->eos_id(), 2);
  EXPECT_EQ(llama2->token_to_id("▁Hello"), llama2->encode("Hello", false).at(0));
  EXPECT_FALSE(llama2->token_to_id("no such piece"));
  EXPECT_EQ(llama2->id_to_token(1), "<s>");
}

TEST(TokenizerShared, InvalidUtf8IsReadAsReplacementCharacters) {
  ARCH_REQUIRE_SHARED(tokenizer_dir("gpt2"));
  auto gpt2 = shared_tokenizer("gpt2");
  ASSERT_TRUE(gpt2);
  // \xff and a truncated 3-byte sequence each become one U+FFFD.
  EXPECT_EQ(gpt2->encode("a\xff" "b\xe2\x82", false), gpt2->encode("a\xEF\xBF\xBD" "b\xEF\xBF\xBD", false));
}

}  // namespace
}  // namespace arch

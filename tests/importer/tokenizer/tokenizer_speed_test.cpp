// A throughput figure, not an assertion: encode ~5 MB of mixed text (every
// reference case text, repeated) and print MB/s. The real benchmark belongs
// in the bench suite.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "tests/importer/tokenizer/tokenizer_test_util.h"

namespace arch {
namespace {

using testing::read_jsonl;
using testing::shared_tokenizer;
using testing::tokenizer_dir;

std::string big_text(size_t bytes) {
  std::set<std::string> texts;
  for (const char* name : {"llama3", "qwen3", "gpt2", "bert-base-uncased", "mistral"})
    for (const auto& row : read_jsonl(tokenizer_dir(name) + "/cases.jsonl")) texts.insert(row["text"].get<std::string>());
  std::string one;
  for (const std::string& t : texts) one += t + "\n";
  std::string all;
  while (all.size() < bytes) all += one;
  return all;
}

class TokenizerSpeed : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerSpeed, EncodeThroughput) {
  const std::string name = GetParam();
  ARCH_REQUIRE_SHARED(tokenizer_dir(name));
  std::string err;
  auto tok = shared_tokenizer(name, &err);
  ASSERT_TRUE(tok) << err;
  static const std::string text = big_text(5 << 20);
  using clock = std::chrono::steady_clock;
  tok->encode(text.substr(0, 1 << 16));  // warm the word cache a little, as a running server would
  auto t0 = clock::now();
  auto ids = tok->encode(text, false);
  double secs = std::chrono::duration<double>(clock::now() - t0).count();
  auto t1 = clock::now();
  std::string back = tok->decode(ids);
  double dsecs = std::chrono::duration<double>(clock::now() - t1).count();
  double mb = double(text.size()) / 1e6;
  std::printf("[ TOKENIZER ] %-18s encode %.1f MB in %.2f s = %.1f MB/s (%zu ids); decode %.1f MB/s\n", name.c_str(), mb,
              secs, mb / secs, ids.size(), mb / dsecs);
  EXPECT_FALSE(ids.empty());
  // Byte-level BPE without a normalizer round-trips exactly (no EXPECT_EQ: a
  // diff of two 5 MB strings would not fit in memory).
  if (name == "llama3" || name == "gpt2") {
    EXPECT_TRUE(back == text) << "decode(encode(text)) != text";
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, TokenizerSpeed, ::testing::Values("llama3", "gpt2", "qwen3", "bert-base-uncased"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace arch

// transformers' generation constraints on hand-made sequences: which ids
// each bans, and the fields read from a generation config.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/generation_rules.h"

namespace arch {
namespace {

std::vector<int32_t> banned(const GenerationRules& r, const std::vector<int32_t>& seq, int vocab = 8) {
  std::vector<float> s(size_t(vocab), 0.0f);
  r.apply(s, seq);
  std::vector<int32_t> out;
  for (int i = 0; i < vocab; ++i)
    if (std::isinf(s[size_t(i)])) out.push_back(i);
  return out;
}

TEST(GenerationRules, NoRepeatedNgram) {
  GenerationRules r;
  r.no_repeat_ngram_size = 3;
  // [0 1 2 3 1 2]: the tail (1, 2) was followed by 3 before.
  EXPECT_EQ(banned(r, {0, 1, 2, 3, 1, 2}), (std::vector<int32_t>{3}));
  EXPECT_EQ(banned(r, {0, 1}), (std::vector<int32_t>{}));  // too short for a 3-gram
  r.no_repeat_ngram_size = 1;
  EXPECT_EQ(banned(r, {0, 4, 5}), (std::vector<int32_t>{0, 4, 5}));
}

TEST(GenerationRules, BadWordsMinLengthAndForcedTokens) {
  GenerationRules r;
  r.bad_words_ids = {{7}, {2, 3}};
  EXPECT_EQ(banned(r, {0, 1}), (std::vector<int32_t>{7}));
  EXPECT_EQ(banned(r, {0, 2}), (std::vector<int32_t>{3, 7}));  // 3 would complete [2, 3]
  GenerationRules m;
  m.eos = {1};
  m.min_length = 3;
  EXPECT_EQ(banned(m, {0, 5}), (std::vector<int32_t>{1}));
  EXPECT_EQ(banned(m, {0, 5, 6}), (std::vector<int32_t>{}));
  GenerationRules f;
  f.forced_bos_token_id = 4;
  f.forced_eos_token_id = 1;
  f.max_length = 5;
  EXPECT_EQ(banned(f, {0}), (std::vector<int32_t>{0, 1, 2, 3, 5, 6, 7}));       // the target language first
  EXPECT_EQ(banned(f, {0, 4, 5, 6}), (std::vector<int32_t>{0, 2, 3, 4, 5, 6, 7}));  // the end at the last position
  EXPECT_EQ(banned(f, {0, 4, 5}), (std::vector<int32_t>{}));
}

TEST(GenerationRules, ReadFromTheGenerationConfigFirst) {
  auto r = generation_rules({{"no_repeat_ngram_size", 3}, {"bad_words_ids", {{58100}}}, {"forced_bos_token_id", 250004}},
                            {{"no_repeat_ngram_size", 2}, {"max_length", 200}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->no_repeat_ngram_size, 3);
  EXPECT_EQ(r->bad_words_ids, (std::vector<std::vector<int32_t>>{{58100}}));
  EXPECT_EQ(r->forced_bos_token_id, 250004);
  EXPECT_EQ(r->max_length, 200);
  auto bad = generation_rules({{"bad_words_ids", {1, 2}}}, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "generation config: 'bad_words_ids' must be a list of non-empty lists of token ids, got [1,2]");
}

}  // namespace
}  // namespace arch

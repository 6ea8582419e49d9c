// A sentence-transformers model card's pooling: modules.json's Pooling
// module and its mode, a Normalize module, and the cards it refuses (two
// modes at once, a weighted mean, a module path leaving the checkpoint).
#include <filesystem>

#include <gtest/gtest.h>

#include "importer/text/pooling_card.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;
using testing::write_file;

const char* kModules = R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";

std::string pooling_config(bool cls, bool mean, bool weighted = false) {
  return std::string(R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": )") + (cls ? "true" : "false") +
         R"(, "pooling_mode_mean_tokens": )" + (mean ? "true" : "false") +
         R"(, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false, "pooling_mode_weightedmean_tokens": )" +
         (weighted ? "true" : "false") + R"(, "pooling_mode_lasttoken": false})";
}

TEST(PoolingCard, TheModulesPoolingModeAndNormalize) {
  TempDir dir;
  write_file(dir / "modules.json", kModules);
  std::filesystem::create_directories(dir / "1_Pooling");
  write_file(dir / "1_Pooling/config.json", pooling_config(true, false));
  auto card = read_pooling_card(side_files_in(dir.path()));
  ASSERT_TRUE(card.ok()) << card.error().message;
  EXPECT_EQ(card->pooling, Pooling::Cls);
  EXPECT_TRUE(card->normalize);
  EXPECT_EQ(card->source, "1_Pooling/config.json");
}

TEST(PoolingCard, NoCardIsTheMeanUnnormalised) {
  TempDir dir;
  auto card = read_pooling_card(side_files_in(dir.path()));
  ASSERT_TRUE(card.ok());
  EXPECT_EQ(card->pooling, Pooling::Mean);
  EXPECT_FALSE(card->normalize);
  EXPECT_EQ(card->source, "");
}

TEST(PoolingCard, CardsItRefuse) {
  TempDir dir;
  write_file(dir / "modules.json", kModules);
  std::filesystem::create_directories(dir / "1_Pooling");
  write_file(dir / "1_Pooling/config.json", pooling_config(true, true));
  auto both = read_pooling_card(side_files_in(dir.path()));
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().message,
            "1_Pooling/config.json: several pooling modes at once (their concatenation) are not supported; one of "
            "pooling_mode_cls_token, _mean_tokens, _max_tokens, _lasttoken");
  write_file(dir / "1_Pooling/config.json", pooling_config(false, false, true));
  auto weighted = read_pooling_card(side_files_in(dir.path()));
  ASSERT_FALSE(weighted.ok());
  EXPECT_EQ(weighted.error().message, "1_Pooling/config.json: pooling_mode_weightedmean_tokens is not a pooling this runtime has (cls, mean, max, lasttoken)");
  write_file(dir / "modules.json", R"([{"path": "../outside", "type": "sentence_transformers.models.Pooling"}])");
  auto outside = read_pooling_card(side_files_in(dir.path()));
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().message, "modules.json: the Pooling module's path '../outside' is not a folder in the checkpoint");
  EXPECT_EQ(parse_pooling("last").value(), Pooling::LastToken);
  EXPECT_FALSE(parse_pooling("sum").ok());
}

}  // namespace
}  // namespace arch

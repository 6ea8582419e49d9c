// T5's text path from the command line: a small SentencePiece Unigram
// model trained here in T5's conventions (pad 0, </s> 1, <unk> 2, no BOS)
// beside the t5 golden's weights; `generate -p TEXT` encodes the prompt
// with </s> appended, decodes from decoder_start_token_id and gives the
// same tokens as --ids with those ids, its text the tokenizer's decoding.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/golden/golden_case.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

TEST(ArchrunT5Text, PromptTextInTextOut) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("t5"));
  fs::path dir = fs::temp_directory_path() / ("archrun_t5_text_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    fs::create_symlink(testing::golden_dir("t5") + "/" + f, dir / f);
  {
    std::ofstream corpus(dir / "corpus.txt");
    const char* lines[] = {"translate English to German: The house is wonderful.",
                           "summarize: studies have shown that owning a dog is good for you",
                           "translate English to French: The weather is nice today.",
                           "The quick brown fox jumps over the lazy dog.",
                           "Archetype runs every model family from a template."};
    for (int rep = 0; rep < 20; ++rep)
      for (const char* l : lines) corpus << l << "\n";
  }
  auto st = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + (dir / "corpus.txt").string() + " --model_prefix=" + (dir / "spiece").string() +
      " --vocab_size=64 --model_type=unigram --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1 --minloglevel=2");
  ASSERT_TRUE(st.ok()) << st.ToString();
  fs::remove(dir / "spiece.vocab");
  fs::remove(dir / "corpus.txt");

  auto r = run_tool(testing::archrun() + " generate " + dir.string() +
                    " -p \"translate English to German: The house is wonderful.\" -n 8 --greedy --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  auto prompt = j["prompt_tokens"].get<std::vector<int32_t>>();
  ASSERT_GE(prompt.size(), 3u);
  EXPECT_EQ(prompt.back(), 1);  // </s> appended, as T5Tokenizer does
  for (int32_t id : prompt) EXPECT_LT(id, 64);
  std::string list;
  for (int32_t id : prompt) list += (list.empty() ? "" : ",") + std::to_string(id);
  auto by_ids = run_tool(testing::archrun() + " generate " + dir.string() + " --ids " + list + " -n 8 --greedy --json");
  ASSERT_EQ(by_ids.exit_code, 0) << by_ids.out;
  EXPECT_EQ(nlohmann::json::parse(by_ids.out)["tokens"], j["tokens"]);
  // The text is the tokenizer's decoding of the tokens (skipping specials).
  std::string ids;
  for (int32_t id : j["tokens"].get<std::vector<int32_t>>()) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  auto dt = run_tool(testing::archrun() + " detokenize " + dir.string() + " --ids " + ids + " --skip-special --json");
  ASSERT_EQ(dt.exit_code, 0) << dt.out;
  EXPECT_EQ(nlohmann::json::parse(dt.out)["text"], j["text"]);
  // Streamed, without --json: the text on stdout, the summary on stderr.
  auto plain = run_tool(testing::archrun() + " generate " + dir.string() + " -p \"summarize: a dog\" -n 4 --greedy");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.out.find("T5Style"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("encoded in"), std::string::npos) << plain.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace arch

// archrun generate's beam search on the translation goldens (beam.json's
// best hypothesis for each setting, from the command line), and archrun
// translate: one line out per line of stdin (decoded several at a time, as
// each is alone), the target language's token forced first.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/engine/runtime/golden_variant.h"
#include "tests/golden/golden_case.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

using testing::run_tool;

std::string ids_of(const std::string& golden) {
  std::string list;
  for (auto id : testing::read_json(testing::golden_dir(golden) + "/inputs.json")["input_ids"].get<std::vector<int64_t>>())
    list += (list.empty() ? "" : ",") + std::to_string(id);
  return list;
}

class ArchrunBeam : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchrunBeam, EachSettingsBestHypothesis) {
  const std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  const nlohmann::json beam = testing::read_json(dir + "/beam.json");
  for (const auto& s : beam["settings"]) {
    const std::string cmd = testing::archrun() + " generate " + dir + " --ids " + ids_of(GetParam()) + " -n 16 --beam-size 4" +
                            " --length-penalty " + s["length_penalty"].dump() + " --no-repeat-ngram-size " +
                            s["no_repeat_ngram_size"].dump() + " --json";
    auto r = run_tool(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto j = nlohmann::json::parse(testing::last_line(r.out));
    EXPECT_EQ(j["tokens"], s["new_token_ids"][0]) << cmd;
    EXPECT_EQ(j["beams"], 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ArchrunBeam, ::testing::Values("bart", "marian", "m2m_100"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Options the search cannot honour are refused by name: --check with a
// search option, more new tokens or input tokens than the positions.
TEST(ArchrunBeam, SettingsItCannotHonourAreRefused) {
  const std::string dir = testing::golden_dir("bart");
  ARCH_REQUIRE_SHARED(dir);
  auto check = run_tool(testing::archrun() + " generate " + dir + " --ids 1,2 --beam-size 2 --check");
  EXPECT_NE(check.exit_code, 0);
  EXPECT_NE(check.out.find("--check compares the steps of one greedy decode"), std::string::npos) << check.out;
  auto many = run_tool(testing::archrun() + " generate " + dir + " --ids 1,2 -n 64");  // 64 learned positions
  EXPECT_NE(many.exit_code, 0);
  EXPECT_NE(many.out.find("the new-token limit 64 and the start token exceed the decoder's 64 positions"), std::string::npos) << many.out;
  std::string long_input = "1";
  for (int i = 0; i < 64; ++i) long_input += ",2";
  auto input = run_tool(testing::archrun() + " generate " + dir + " --ids " + long_input + " -n 4");
  EXPECT_NE(input.exit_code, 0);
  EXPECT_NE(input.out.find("an input of 65 tokens exceeds the encoder's 64 positions"), std::string::npos) << input.out;
}

TEST(ArchrunBeam, ADecoderRefusesTheSearchOptions) {
  const std::string dir = testing::golden_dir("llama");
  ARCH_REQUIRE_SHARED(dir);
  auto r = run_tool(testing::archrun() + " generate " + dir + " --ids 1,2,3 --beam-size 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("steer an encoder-decoder's search"), std::string::npos) << r.out;
}

// The marian golden with a word-level tokenizer over its ids (</s> 0, <pad>
// 511, __fr__ 7 a language token) and one generation setting of its own.
struct TinyTranslator {
  testing::GoldenVariant v{"marian", "translator", nlohmann::json::object()};
  TinyTranslator() {
    nlohmann::json vocab = {{"</s>", 0}, {"<unk>", 1}, {"__fr__", 7}, {"<pad>", 511}};
    const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "dog", "ran"};
    for (int i = 0; i < 8; ++i) vocab[words[i]] = 20 + i;
    for (int i = 30; i < 511; ++i) vocab["w" + std::to_string(i)] = i;
    nlohmann::json tok = {
        {"version", "1.0"},
        {"added_tokens", {{{"id", 0}, {"content", "</s>"}, {"special", true}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}},
                          {{"id", 7}, {"content", "__fr__"}, {"special", true}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}},
                          {{"id", 511}, {"content", "<pad>"}, {"special", true}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", false}}}},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
        {"post_processor", {{"type", "TemplateProcessing"}, {"single", "$A </s>"}, {"pair", "$A $B </s>"},
                            {"special_tokens", {{"</s>", {{"id", "</s>"}, {"ids", {0}}, {"tokens", {"</s>"}}}}}}}},
        {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", false}}},
        {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
    std::ofstream(v.dir / "tokenizer.json") << tok.dump();
    std::ofstream(v.dir / "generation_config.json") << R"({"decoder_start_token_id": 511, "eos_token_id": 0, "pad_token_id": 511,
        "num_beams": 2, "max_length": 9, "bad_words_ids": [[511]]})";
  }
  std::string path() const { return v.path(); }
};

TEST(ArchrunTranslate, OneLineOutPerLineIn) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("marian"));
  TinyTranslator t;
  const std::string in = (t.v.dir / "in.txt").string();
  std::ofstream(in) << "the cat sat on a mat\n\na dog ran\n";
  auto r = run_tool(testing::archrun() + " translate " + t.path() + " --json < " + in);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> lines;
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << r.out;  // the blank line stays a blank line
  EXPECT_EQ(lines[1], "");
  // Each line is the -p run of that sentence, with the checkpoint's settings:
  // 2 beams, at most 8 new tokens (max_length 9), the pad never generated.
  for (auto [line, text] : {std::pair{0, "the cat sat on a mat"}, std::pair{2, "a dog ran"}}) {
    auto one = run_tool(testing::archrun() + " translate " + t.path() + " -p '" + text + "' --json");
    ASSERT_EQ(one.exit_code, 0) << one.out;
    // The same search; its steps' logits, in a batch, equal up to float rounding.
    auto batched = nlohmann::json::parse(lines[size_t(line)]), alone = nlohmann::json::parse(testing::last_line(one.out));
    for (const char* key : {"text", "tokens", "stop"}) EXPECT_EQ(batched[key], alone[key]) << key;
    EXPECT_NEAR(batched["score"].get<double>(), alone["score"].get<double>(), 1e-5);
    auto tokens = nlohmann::json::parse(one.out)["tokens"].get<std::vector<int32_t>>();
    EXPECT_LE(tokens.size(), 8u);
    for (int32_t id : tokens) EXPECT_NE(id, 511);
  }
  // Five sentences two at a time (one joining as another is done) and one
  // at a time: the same tokens, line for line.
  std::ofstream(in) << "the cat sat on a mat\n\na dog ran\nthe dog sat\ncat cat cat mat on the a dog\nw40 w50 w60 w70\n";
  auto tokens_by_line = [&](const std::string& batch) {
    auto run = run_tool(testing::archrun() + " translate " + t.path() + " --json --batch " + batch + " < " + in);
    EXPECT_EQ(run.exit_code, 0) << run.out;
    std::vector<std::string> got;
    std::stringstream out(run.out);
    for (std::string l; std::getline(out, l);)
      got.push_back(l.empty() ? "" : nlohmann::json::parse(l)["tokens"].dump());
    return got;
  };
  const auto paired = tokens_by_line("2"), alone = tokens_by_line("1");
  ASSERT_EQ(paired.size(), 6u);
  EXPECT_EQ(paired, alone);
  EXPECT_EQ(paired[1], "");
  // A line past 1 MiB is not a sentence: refused by name, not read on.
  std::ofstream(in) << "a dog ran\n" << std::string((1 << 20) + 10, 'x') << "\n";
  auto long_line = run_tool(testing::archrun() + " translate " + t.path() + " < " + in);
  EXPECT_NE(long_line.exit_code, 0);
  EXPECT_NE(long_line.out.find("a line of stdin runs past 1048576 bytes"), std::string::npos) << long_line.out.substr(0, 400);
  auto one_batch = run_tool(testing::archrun() + " translate " + t.path() + " -p 'a dog ran' --batch 4");
  EXPECT_NE(one_batch.exit_code, 0);
  EXPECT_NE(one_batch.out.find("--batch decodes lines of stdin together; -p is one sentence"), std::string::npos) << one_batch.out;
  // The target language's token first.
  auto fr = run_tool(testing::archrun() + " translate " + t.path() + " -p 'a dog ran' --target-lang fr --json");
  ASSERT_EQ(fr.exit_code, 0) << fr.out;
  EXPECT_EQ(nlohmann::json::parse(fr.out)["tokens"][0], 7);
  auto xx = run_tool(testing::archrun() + " translate " + t.path() + " -p 'a dog ran' --target-lang xx");
  EXPECT_NE(xx.exit_code, 0);
  EXPECT_NE(xx.out.find("language 'xx': the tokenizer has none of the tokens __xx__, >>xx<<, xx, xx_XX"), std::string::npos) << xx.out;
}

}  // namespace
}  // namespace arch


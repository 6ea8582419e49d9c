// The text commands from the command line: tokenize, detokenize, template
// over every shared chat conversation, generate -p with streaming text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/shared_data.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<nlohmann::json> jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(ArchrunText, TokenizeAndDetokenizeGiveTheReferenceIds) {
  std::string dir = testing::shared_dir() + "/tokenizers/llama3";
  ARCH_REQUIRE_SHARED(dir);
  int checked = 0;
  for (const auto& c : jsonl(dir + "/cases.jsonl")) {
    std::string text = c["text"];
    if (text.find('\0') != std::string::npos || text.empty() || text[0] == '-') continue;  // argv cannot carry these
    if (++checked > 12) break;  // the library tests cover every case; here, the CLI's plumbing
    auto r = run_tool(testing::archrun() + " tokenize " + dir + " " + quote(text) + " --json" +
                      (c["add_special_tokens"].get<bool>() ? "" : " --no-special"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], c["ids"]) << c["tag"];
  }
  EXPECT_GT(checked, 5);
  auto d = run_tool(testing::archrun() + " detokenize " + dir + " --ids 128000,9906,1917 --json");
  ASSERT_EQ(d.exit_code, 0) << d.out;
  EXPECT_EQ(nlohmann::json::parse(d.out)["text"], "<|begin_of_text|>Hello world");
}

TEST(ArchrunText, TemplateRendersEverySharedConversation) {
  std::string root = testing::shared_dir() + "/tokenizers";
  ARCH_REQUIRE_SHARED(root);
  fs::path tmp = fs::temp_directory_path() / ("archrun_template_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  int n = 0;
  for (const char* name : {"llama3", "qwen3", "gemma3"}) {
    for (const auto& c : jsonl(root + "/" + name + "/chat.jsonl")) {
      std::ofstream(tmp / "messages.json") << c["messages"].dump();
      auto r = run_tool(testing::archrun() + " template " + root + "/" + name + " --messages " +
                        (tmp / "messages.json").string() + " --json" +
                        (c["add_generation_prompt"].get<bool>() ? " --add-generation-prompt" : ""));
      ASSERT_EQ(r.exit_code, 0) << name << " " << c["tag"] << ": " << r.out;
      auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["rendered"], c["rendered"]) << name << " " << c["tag"];
      EXPECT_EQ(j["ids"], c["ids"]) << name << " " << c["tag"];
      ++n;
    }
  }
  EXPECT_EQ(n, 18);
  fs::remove_all(tmp);
}

TEST(ArchrunText, GenerateFromTextStreamsTheContinuation) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  auto j = run_tool(testing::archrun() + " generate " + dir + " -p 'Once upon a time' -n 24 --json");
  ASSERT_EQ(j.exit_code, 0) << j.out;
  auto r = nlohmann::json::parse(j.out);
  EXPECT_EQ(r["prompt_tokens"], nlohmann::json({1, 403, 407, 261, 378}));
  EXPECT_EQ(r["tokens"].size(), 24u);
  // The streamed text (stdout without --json) is the decode of those tokens.
  auto s = run_tool("(" + testing::archrun() + " generate " + dir + " -p 'Once upon a time' -n 24 2>/dev/null)");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  EXPECT_EQ(s.out, r["text"].get<std::string>() + "\n");
  EXPECT_EQ(r["text"].get<std::string>().rfind(", there was a little girl named Lily.", 0), 0u) << r["text"];
}

// A base model has no chat template: chat says so, and each line continues
// the text (the conversation so far, then the model's continuation).
TEST(ArchrunText, ChatWithoutATemplateContinuesTheTextAndSaysSo) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  auto r = run_tool("printf 'Once upon a time\\nThe dog said\\n' | " + testing::archrun() + " chat " + dir +
                    " -n 12 --temperature 0");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("has no chat template: each line you type continues the text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", there was a little girl named Lily."), std::string::npos) << r.out;
}

TEST(ArchrunText, ABrokenTokenizerFileIsAClearError) {
  fs::path tmp = fs::temp_directory_path() / ("archrun_badtok_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "tokenizer.json") << "{\"model\": {\"type\": \"Martian\"}}";
  auto r = run_tool(testing::archrun() + " tokenize " + tmp.string() + " hello");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// stories260K (`src`) in a scratch directory of its own, with `chat_template`
// added to its tokenizer_config.json (its own files have none).
fs::path with_chat_template(const std::string& src, const std::string& name, const std::string& chat_template) {
  fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"})
    fs::create_symlink(fs::path(src) / f, dir / f);
  auto cfg = nlohmann::json::parse(std::ifstream(src + "/tokenizer_config.json"));
  cfg["chat_template"] = chat_template;
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  return dir;
}

// A conversation through a pipe.
TEST(ArchrunText, ChatReadsTurnsFromAPipe) {
  std::string src = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(src);
  fs::path dir = with_chat_template(src, "archrun_chat",
                                    "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}");
  auto r = run_tool("(printf 'Once upon a time\\nThe cat\\n' | " + testing::archrun() + " chat " + dir.string() +
                    " -n 12 2>/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Two turns, two replies, each on its own line; the first continues the story.
  auto first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first.rfind(", there was a little girl", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  fs::remove_all(dir);
}

// A chat keeps its session between turns: the second turn prefills only
// what its rendering adds past what the session holds (--stats says so).
TEST(ArchrunText, ChatsSecondTurnPrefillsOnlyItsNewTokens) {
  std::string src = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(src);
  // The reply is rendered after "A:" where it was generated; decoding drops
  // its leading space, so it is tokenized anew and the first prompt is what
  // the session keeps.
  fs::path dir = with_chat_template(src, "archrun_chat_turns",
                                    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}"
                                    "Q: {{ m['content'] }}\nA:{% else %}{{ m['content'] }}\n{% endif %}{% endfor %}");
  auto r = run_tool("(printf 'Once upon a time\\nThe cat sat\\n' | " + testing::archrun() + " chat " + dir.string() +
                    " -n 8 --stats 2>&1 >/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  int turn[2][4] = {};
  const char* fmt = "turn %d: %d prompt tokens, %d prefilled, %d reused";
  size_t second = r.out.find("turn 2:");
  ASSERT_NE(second, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("turn 1:"), fmt, &turn[0][0], &turn[0][1], &turn[0][2], &turn[0][3]), 4)
      << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + second, fmt, &turn[1][0], &turn[1][1], &turn[1][2], &turn[1][3]), 4) << r.out;
  EXPECT_EQ(turn[0][3], 0);                         // nothing to reuse on the first turn
  EXPECT_EQ(turn[0][2], turn[0][1]);
  EXPECT_GE(turn[1][3], turn[0][1]);                // at least the whole first prompt is reused
  EXPECT_EQ(turn[1][2] + turn[1][3], turn[1][1]);   // the rest prefilled
  std::printf("[ chat      ] turn 1: %d prefilled; turn 2: %d of %d prefilled, %d reused\n", turn[0][2], turn[1][2],
              turn[1][1], turn[1][3]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// Qwen3-Next's recurrent state across chat turns (the qwen3_next golden's
// weights, stories260K's tokenizer: both 512 ids, bos 1, eos 2): the second
// turn reuses at least the first prompt (the session's mark; that going
// back there and on gives what recomputing gives is RecurrentState's
// BackToTheMarkThenOnEqualsRecomputing).
TEST(ArchrunText, ChatOnARecurrentStateReusesTheFirstPrompt) {
  std::string stories = testing::shared_dir() + "/models/stories260K";
  std::string golden = testing::shared_dir() + "/golden/qwen3_next";
  ARCH_REQUIRE_SHARED(stories);
  ARCH_REQUIRE_SHARED(golden);
  fs::path dir = fs::temp_directory_path() / ("archrun_chat_qwen3_next_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::create_symlink(fs::path(golden) / f, dir / f);
  fs::create_symlink(fs::path(stories) / "tokenizer.json", dir / "tokenizer.json");
  auto cfg = nlohmann::json::parse(std::ifstream(stories + "/tokenizer_config.json"));
  cfg["chat_template"] = "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}"
                         "Q: {{ m['content'] }}\nA:{% else %}{{ m['content'] }}\n{% endif %}{% endfor %}";
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  auto r = run_tool("(printf 'Once upon a time\\nThe cat sat\\n' | " + testing::archrun() + " chat " + dir.string() +
                    " -n 8 --stats 2>&1 >/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  int turn[2][4] = {};
  const char* fmt = "turn %d: %d prompt tokens, %d prefilled, %d reused";
  size_t first = r.out.find("turn 1:"), second = r.out.find("turn 2:");
  ASSERT_NE(second, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + first, fmt, &turn[0][0], &turn[0][1], &turn[0][2], &turn[0][3]), 4) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + second, fmt, &turn[1][0], &turn[1][1], &turn[1][2], &turn[1][3]), 4) << r.out;
  EXPECT_GE(turn[1][3], turn[0][1]) << r.out;  // the first prompt, at least
  EXPECT_EQ(turn[1][2] + turn[1][3], turn[1][1]) << r.out;
  std::printf("[ chat      ] recurrent state: turn 2: %d of %d prefilled, %d reused\n", turn[1][2], turn[1][1],
              turn[1][3]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace arch

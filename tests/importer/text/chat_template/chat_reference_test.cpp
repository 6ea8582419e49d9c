// Every conversation of every ../shared/tokenizers/*/chat.jsonl rendered with
// the checkpoint's own template must equal transformers' rendering byte for
// byte (the README there says how `rendered` was made and cross-checked).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "importer/text/chat_template/load.h"
#include "tests/test_files.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

std::string tokenizers_dir() { return testing::shared_dir() + "/tokenizers"; }

TEST(ChatTemplateReference, EveryConversationRendersByteIdentically) {
  ARCH_REQUIRE_SHARED(tokenizers_dir());
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(tokenizers_dir()))
    if (fs::exists(entry.path() / "chat.jsonl")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_FALSE(dirs.empty()) << "no chat.jsonl under " << tokenizers_dir();

  int total = 0, passed = 0;
  for (const auto& dir : dirs) {
    std::string name = dir.filename().string();
    auto info = load_chat_template(dir.string());
    ASSERT_TRUE(info.ok()) << name << ": " << info.error().message;
    std::ifstream in(dir / "chat.jsonl");
    std::string line;
    int n = 0, ok = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      auto rec = nlohmann::ordered_json::parse(line);
      ++n;
      auto ctx = info->context(rec["messages"], rec["add_generation_prompt"].get<bool>());
      auto out = info->chat_template.render(ctx);
      std::string tag = rec.value("tag", "?");
      if (!out.ok()) {
        ADD_FAILURE() << name << "/" << tag << ": " << out.error().message;
        continue;
      }
      std::string want = rec["rendered"].get<std::string>();
      EXPECT_EQ(*out, want) << name << "/" << tag;
      if (*out == want) ++ok;
    }
    EXPECT_GT(n, 0) << name;
    std::printf("[chat template] %-12s %d/%d conversations byte-identical\n", name.c_str(), ok, n);
    total += n;
    passed += ok;
  }
  std::printf("[chat template] all          %d/%d\n", passed, total);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace arch

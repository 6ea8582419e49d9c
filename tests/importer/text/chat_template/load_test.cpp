// Finding the chat template and special tokens of a checkpoint directory.
#include "importer/text/chat_template/load.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;
using testing::write_file;

TEST(LoadChatTemplate, StringTemplateAndAddedTokenObjects) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>",
    "pad_token": null,
    "unk_token": "<unk>",
    "additional_special_tokens": ["<a>", {"content": "<b>"}],
    "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}"
  })");
  auto info = load_chat_template(dir.path());
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->name, "default");
  EXPECT_EQ(info->path, dir / "tokenizer_config.json");
  EXPECT_EQ(info->bos_token, "<s>");
  EXPECT_EQ(info->eos_token, "</s>");
  EXPECT_EQ(info->special_tokens.dump(),
            R"({"bos_token":"<s>","eos_token":"</s>","unk_token":"<unk>","additional_special_tokens":["<a>","<b>"]})");
  auto ctx = info->context({{{"role", "user"}, {"content", "hi"}}}, true);
  EXPECT_TRUE(ctx["tools"].is_null());
  EXPECT_EQ(ctx["add_generation_prompt"], true);
  auto out = info->chat_template.render(ctx);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<s>[user]hi</s>");
}

TEST(LoadChatTemplate, NamedTemplatesUseDefault) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({"chat_template": [
    {"name": "tool_use", "template": "tools"}, {"name": "default", "template": "plain"}]})");
  auto info = load_chat_template(dir.path());
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->name, "default");
  EXPECT_EQ(info->source, "plain");
  EXPECT_EQ(info->named.size(), 2u);
  EXPECT_EQ(info->named.at("tool_use"), "tools");
  EXPECT_FALSE(info->bos_token.has_value());
}

TEST(LoadChatTemplate, NamedTemplatesWithoutDefaultAreAnError) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({"chat_template": [
    {"name": "a", "template": "x"}, {"name": "b", "template": "y"}]})");
  auto info = load_chat_template(dir.path());
  ASSERT_FALSE(info.ok());
  EXPECT_CONTAINS(info.error().message, "several chat templates (a, b) and none is called 'default'");
}

TEST(LoadChatTemplate, ChatTemplateJinjaOverridesTheConfig) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": "old"})");
  write_file(dir / "chat_template.jinja", "new {{ eos_token }}\n");
  auto info = load_chat_template(dir.path());
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->path, dir / "chat_template.jinja");
  auto out = info->chat_template.render(info->context(nlohmann::ordered_json::array(), false));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "new </s>");  // the file's trailing newline is dropped, as jinja2 does
}

TEST(LoadChatTemplate, ProcessorChatTemplateJson) {
  TempDir dir;
  write_file(dir / "chat_template.json", R"({"chat_template": "P{{ messages|length }}"})");
  auto info = load_chat_template(dir.path());
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->source, "P{{ messages|length }}");
}

TEST(LoadChatTemplate, Errors) {
  TempDir none;
  auto missing = load_chat_template(none.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_CONTAINS(missing.error().message, "no chat template");

  TempDir no_template;
  write_file(no_template / "tokenizer_config.json", R"({"eos_token": "</s>"})");
  auto absent = load_chat_template(no_template.path());
  ASSERT_FALSE(absent.ok());
  EXPECT_CONTAINS(absent.error().message, "tokenizer_config.json: no chat template ('chat_template' is absent");

  TempDir bad_json;
  write_file(bad_json / "tokenizer_config.json", "{\n  \"chat_template\": tru\n}");
  auto invalid = load_chat_template(bad_json.path());
  ASSERT_FALSE(invalid.ok());
  EXPECT_CONTAINS(invalid.error().message, "tokenizer_config.json:2:");

  TempDir wrong_type;
  write_file(wrong_type / "tokenizer_config.json", R"({"chat_template": 5})");
  auto typed = load_chat_template(wrong_type.path());
  ASSERT_FALSE(typed.ok());
  EXPECT_CONTAINS(typed.error().message, "'chat_template' must be a string or a list of {name, template}, not integer");

  TempDir bad_token;
  write_file(bad_token / "tokenizer_config.json", R"({"bos_token": 1, "chat_template": "x"})");
  auto token = load_chat_template(bad_token.path());
  ASSERT_FALSE(token.ok());
  EXPECT_CONTAINS(token.error().message, "'bos_token' must be a string or an object with a string 'content'");

  TempDir bad_syntax;
  write_file(bad_syntax / "tokenizer_config.json", R"({"chat_template": "{% for m in messages %}{{ m|nope }}{% endfor %}"})");
  auto syntax = load_chat_template(bad_syntax.path());
  ASSERT_FALSE(syntax.ok());
  EXPECT_CONTAINS(syntax.error().message, "tokenizer_config.json: chat_template:1:29: unknown filter 'nope'");
}

TEST(LoadChatTemplate, SharedTokenizersLoad) {
  std::string root = testing::shared_dir() + "/tokenizers";
  ARCH_REQUIRE_SHARED(root);
  for (const char* name : {"llama3", "qwen3", "gemma3"}) {
    auto info = load_chat_template(root + "/" + name);
    ASSERT_TRUE(info.ok()) << name << ": " << info.error().message;
    EXPECT_FALSE(info->source.empty()) << name;
  }
  auto qwen = load_chat_template(root + "/qwen3");
  ASSERT_TRUE(qwen.ok());
  EXPECT_FALSE(qwen->bos_token.has_value());  // "bos_token": null
  EXPECT_EQ(qwen->eos_token, "<|im_end|>");
  // mistral's base-model config has no template.
  auto mistral = load_chat_template(root + "/mistral");
  ASSERT_FALSE(mistral.ok());
  EXPECT_CONTAINS(mistral.error().message, "no chat template");
}

}  // namespace
}  // namespace arch

// The GGUF tokenizer (tokenizer.ggml.*) against the reference ids of real
// vocabularies (../shared/tokenizers/*/cases.jsonl): each vocabulary put in
// a GGUF the way llama.cpp's converter puts it there (SentencePiece's
// pieces, scores and types from llama2's tokenizer.model; byte-level BPE's
// tokens, merges and types from tokenizer.json, with the pre-tokenizer's
// name), read back as the model's tokenizer, must encode every case to the
// reference ids and decode them to its text.
#include <gtest/gtest.h>

#include <sentencepiece_processor.h>

#include <fstream>
#include <set>

#include "engine/runtime/model_text.h"
#include "tests/golden/golden_case.h"
#include "tests/gguf_writer.h"
#include "tests/test_files.h"

namespace arch {
namespace {

std::string tokenizers() { return testing::shared_dir() + "/tokenizers/"; }

std::vector<nlohmann::json> cases(const std::string& name) {
  std::vector<nlohmann::json> out;
  std::ifstream in(tokenizers() + name + "/cases.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// A GGUF holding only a vocabulary (and one tensor, so it is a model file).
std::string with_vocab(testing::GgufWriter& w, const testing::TempDir& dir) {
  const float one = 1;
  w.str("general.architecture", "llama");
  w.tensor("output_norm.weight", {1}, &one);
  const std::string path = dir / "vocab.gguf";
  testing::write_file(path, w.bytes());
  return path;
}

// `skip_special`: the reference decodes as SentencePiece does (control
// tokens drop out) rather than as tokenizer.json does (they are text).
// `text_specials`: tags whose reference reads control tokens written in
// the text as text (SentencePiece does; llama.cpp, parsing specials as
// chat templates need, and Hugging Face's fast tokenizer read them as the
// tokens, as this tokenizer does).
void expect_cases(const std::string& gguf, const std::string& name, bool skip_special = false,
                  const std::set<std::string>& text_specials = {}) {
  auto tok = load_model_tokenizer(gguf);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  size_t n = 0, ok = 0;
  for (const auto& row : cases(name)) {
    if (text_specials.count(row["tag"].get<std::string>())) continue;
    ++n;
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = (*tok)->encode(row["text"].get<std::string>(), row["add_special_tokens"].get<bool>());
    if (got == want) ++ok;
    else
      ADD_FAILURE() << name << " " << row["tag"].get<std::string>() << ": " << row["text"].dump() << "\n  got  "
                    << nlohmann::json(got).dump() << "\n  want " << nlohmann::json(want).dump();
    if (row.contains("decoded") && row["decoded"].is_string())
      EXPECT_EQ((*tok)->decode(want, skip_special), row["decoded"].get<std::string>()) << name << " " << row["tag"];
  }
  std::printf("[ gguf tokenizer ] %s: %zu of %zu cases\n", name.c_str(), ok, n);
  EXPECT_GT(n, 0u);
}

TEST(GgufTokenizer, SentencePieceVocabularyEncodesAsLlama2) {
  const std::string model = tokenizers() + "llama2/tokenizer.model";
  ARCH_REQUIRE_SHARED(model);
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(model).ok());
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int i = 0; i < sp.GetPieceSize(); ++i) {
    tokens.push_back(sp.IdToPiece(i));
    scores.push_back(sp.GetScore(i));
    types.push_back(sp.IsUnknown(i) ? 2 : sp.IsControl(i) ? 3 : sp.IsUnused(i) ? 5 : sp.IsByte(i) ? 6 : 1);
  }
  testing::GgufWriter w;
  w.str("tokenizer.ggml.model", "llama");
  w.strings("tokenizer.ggml.tokens", tokens);
  w.floats("tokenizer.ggml.scores", scores);
  w.ints("tokenizer.ggml.token_type", types);
  w.u32("tokenizer.ggml.bos_token_id", uint32_t(sp.bos_id()));
  w.u32("tokenizer.ggml.eos_token_id", uint32_t(sp.eos_id()));
  w.u32("tokenizer.ggml.unknown_token_id", uint32_t(sp.unk_id()));
  testing::TempDir dir;
  expect_cases(with_vocab(w, dir), "llama2", true, {"special_tokens_in_text", "special_tokens_adjacent"});
}

// tokenizer.json's byte-level BPE as llama.cpp's converter writes it: ids in
// order, added tokens typed control (special) or user-defined. `text`: only
// encode it (and decode it back), for a pre-tokenizer the cases are not of.
void byte_level_case(const std::string& name, const std::string& pre, bool add_bos, const char* text = nullptr) {
  const std::string file = tokenizers() + name + "/tokenizer.json";
  ARCH_REQUIRE_SHARED(file);
  auto tj = testing::read_json(file);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (const auto& [piece, id] : tj["model"]["vocab"].items()) {
    const size_t i = id.get<size_t>();
    if (tokens.size() <= i) tokens.resize(i + 1), types.resize(i + 1, 1);
    tokens[i] = piece;
  }
  for (const auto& a : tj["added_tokens"]) {
    const size_t i = a["id"].get<size_t>();
    if (tokens.size() <= i) tokens.resize(i + 1), types.resize(i + 1, 1);
    tokens[i] = a["content"].get<std::string>();
    types[i] = a["special"].get<bool>() ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const auto& m : tj["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
  testing::GgufWriter w;
  w.str("tokenizer.ggml.model", "gpt2");
  w.str("tokenizer.ggml.pre", pre);
  w.strings("tokenizer.ggml.tokens", tokens);
  w.ints("tokenizer.ggml.token_type", types);
  w.strings("tokenizer.ggml.merges", merges);
  auto config = testing::read_json(tokenizers() + name + "/tokenizer_config.json");
  if (config.contains("bos_token") && config["bos_token"].is_string())
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == config["bos_token"].get<std::string>()) w.u32("tokenizer.ggml.bos_token_id", uint32_t(i));
  w.boolean("tokenizer.ggml.add_bos_token", add_bos);
  testing::TempDir dir;
  if (!text) return expect_cases(with_vocab(w, dir), name);
  auto tok = load_model_tokenizer(with_vocab(w, dir));
  ASSERT_TRUE(tok.ok()) << pre << ": " << tok.error().message;
  const auto ids = (*tok)->encode(text, false);
  EXPECT_FALSE(ids.empty()) << pre;
  EXPECT_EQ((*tok)->decode(ids), text) << pre;
}

TEST(GgufTokenizer, ByteLevelVocabularyEncodesAsGpt2) { byte_level_case("gpt2", "gpt2", false); }
TEST(GgufTokenizer, ByteLevelVocabularyEncodesAsLlama3) { byte_level_case("llama3", "llama-bpe", true); }
TEST(GgufTokenizer, ByteLevelVocabularyEncodesAsQwen3) { byte_level_case("qwen3", "qwen2", false); }

// tokenizer.chat_template is the model's chat template, rendered with the
// vocabulary's special tokens.
TEST(GgufTokenizer, TheChatTemplateComesFromTheMetadata) {
  testing::GgufWriter w;
  w.str("tokenizer.ggml.model", "gpt2");
  w.strings("tokenizer.ggml.tokens", {"<|im_start|>", "<|im_end|>", "a", "b", "ab"});
  w.ints("tokenizer.ggml.token_type", {3, 3, 1, 1, 1});
  w.strings("tokenizer.ggml.merges", {"a b"});
  w.u32("tokenizer.ggml.eos_token_id", 1);
  w.str("tokenizer.chat_template",
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}{{ eos_token }}");
  testing::TempDir dir;
  const std::string path = with_vocab(w, dir);
  auto info = load_model_chat_template(path);
  ASSERT_TRUE(info.ok()) << info.error().message;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "ab"}}});
  auto text = info->chat_template.render(info->context(messages, true));
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>");
  auto tok = load_model_tokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ((*tok)->encode("<|im_start|>ab<|im_end|>", false), (std::vector<int32_t>{0, 4, 1}));
}

// Every pre-tokenizer families/gguf/pretokenizers.toml names compiles and
// splits text that decodes back to itself.
TEST(GgufTokenizer, EveryPreTokenizerTheTableNamesRuns) {
  for (const char* pre : {"default", "gpt2", "llama-bpe", "qwen2", "starcoder", "refact", "llama3", "llama-v3", "falcon3",
                          "pixtral", "dbrx", "smaug-bpe", "deepseek-r1-qwen", "stablelm2", "gpt-2", "phi-2", "mpt", "olmo",
                          "smollm", "command-r", "codeshell", "exaone", "gpt-4o", "llama4", "tekken", "deepseek-v3"})
    byte_level_case("gpt2", pre, false, "Hello World, it's 12345 o'clock!\n\tCaf\u00e9 \u4f60\u597d  ok");
}

}  // namespace
}  // namespace arch

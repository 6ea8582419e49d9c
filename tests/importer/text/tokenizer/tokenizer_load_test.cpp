// Broken, missing and unknown-kind tokenizer files give errors that name the
// file and the spot, never a crash.
#include <gtest/gtest.h>

#include <fstream>

#include "importer/text/tokenizer/tokenizer.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using nlohmann::json;
using testing::TempDir;

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

json minimal() {
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", {{"a", 0}, {"<unk>", 1}}}, {"unk_token", "<unk>"}}}};
}

// The error from loading a directory holding `tokenizer_json` as tokenizer.json.
std::string load_error(const TempDir& dir, const std::string& tokenizer_json) {
  write(dir / "tokenizer.json", tokenizer_json);
  auto r = load_tokenizer(dir.path());
  return r.ok() ? "(loaded)" : r.error().message;
}

TEST(TokenizerLoad, MinimalFileLoads) {
  TempDir dir;
  write(dir / "tokenizer.json", minimal().dump());
  auto r = load_tokenizer(dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->encode("a"), std::vector<int32_t>{0});
  EXPECT_EQ((*r)->encode("zzz"), std::vector<int32_t>{1});
  EXPECT_EQ((*r)->source(), dir / "tokenizer.json");
  // A path to the file itself works too.
  EXPECT_TRUE(load_tokenizer(dir / "tokenizer.json").ok());
}

TEST(TokenizerLoad, BrokenJsonNamesFileLineAndColumn) {
  TempDir dir;
  std::string msg = load_error(dir, "{\n  \"model\": {,\n}");
  EXPECT_NE(msg.find(dir / "tokenizer.json" + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
  EXPECT_NE(load_error(dir, "").find("tokenizer.json:1:1: invalid JSON"), std::string::npos);
  EXPECT_NE(load_error(dir, "[1, 2]").find("expected a tokenizer.json object"), std::string::npos);
  EXPECT_NE(load_error(dir, "{}").find("no 'model'"), std::string::npos);
  json v2 = minimal();
  v2["version"] = "2.0";
  EXPECT_NE(load_error(dir, v2.dump()).find("unknown tokenizer.json version \"2.0\""), std::string::npos);
}

TEST(TokenizerLoad, UnknownKindsAreNamed) {
  TempDir dir;
  json j = minimal();
  j["model"]["type"] = "Transducer";
  std::string msg = load_error(dir, j.dump());
  EXPECT_NE(msg.find(dir / "tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown model type 'Transducer'"), std::string::npos) << msg;

  j = minimal();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Klingon"}}}}};
  msg = load_error(dir, j.dump());
  EXPECT_NE(msg.find("normalizer.normalizers[1]: unknown normalizer type 'Klingon'"), std::string::npos) << msg;

  j = minimal();
  j["pre_tokenizer"] = {{"type", "UnicodeScripts"}};
  EXPECT_NE(load_error(dir, j.dump()).find("unknown pre-tokenizer type 'UnicodeScripts'"), std::string::npos);
  j = minimal();
  j["post_processor"] = {{"type", "Magic"}};
  EXPECT_NE(load_error(dir, j.dump()).find("unknown post-processor type 'Magic'"), std::string::npos);
  j = minimal();
  j["decoder"] = {{"type", "Magic"}};
  EXPECT_NE(load_error(dir, j.dump()).find("unknown decoder type 'Magic'"), std::string::npos);
  j = minimal();
  j["normalizer"] = {{"kind", "NFC"}};
  EXPECT_NE(load_error(dir, j.dump()).find("normalizer has no field 'type'"), std::string::npos);
}

TEST(TokenizerLoad, BadFieldsAreNamed) {
  TempDir dir;
  json j = minimal();
  j["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", {"a b"}}};
  EXPECT_NE(load_error(dir, j.dump()).find("merges[0]: the merged token 'ab' is not in the vocab"),
            std::string::npos);
  j["model"]["merges"] = {"a c"};
  EXPECT_NE(load_error(dir, j.dump()).find("merges[0]: 'c' is not in the vocab"), std::string::npos);
  j["model"]["merges"] = {"abc"};
  EXPECT_NE(load_error(dir, j.dump()).find("merges[0] is \"abc\", expected \"a b\""), std::string::npos);
  j["model"]["merges"] = json::array();
  j["model"]["unk_token"] = "<unk>";
  EXPECT_NE(load_error(dir, j.dump()).find("unk_token '<unk>' is not in the vocab"), std::string::npos);
  j["model"].erase("unk_token");
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(load_error(dir, j.dump()).find("dropout"), std::string::npos);
  j["model"]["dropout"] = nullptr;
  j["model"]["vocab"]["a"] = "zero";
  EXPECT_NE(load_error(dir, j.dump()).find("vocab entry 'a' has id \"zero\""), std::string::npos);

  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  std::string msg = load_error(dir, j.dump());
  EXPECT_NE(msg.find("regex '(unclosed' does not compile"), std::string::npos) << msg;
  j["pre_tokenizer"]["pattern"] = "x";
  EXPECT_NE(load_error(dir, j.dump()).find("is not {\"String\": ...} or {\"Regex\": ...}"), std::string::npos);
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}};
  EXPECT_NE(load_error(dir, j.dump()).find("unknown split behavior 'Sideways'"), std::string::npos);

  j = minimal();
  j["added_tokens"] = {{{"id", 5}, {"content", 7}}};
  EXPECT_NE(load_error(dir, j.dump()).find("added_tokens[0]: field 'content' is integer"), std::string::npos);
  j = minimal();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", json::object()}};
  EXPECT_NE(load_error(dir, j.dump()).find("template token '<s>' is not in special_tokens"), std::string::npos);
}

TEST(TokenizerLoad, MissingFilesAreNamed) {
  TempDir dir;
  auto r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, dir.path() + ": no tokenizer.json, tokenizer.model, spiece.model, vocab.json + merges.txt, source.spm + target.spm + vocab.json, sentencepiece.bpe.model (+ vocab.json), or a VitsTokenizer's vocab.json");
  r = load_tokenizer(dir / "nowhere");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nowhere: no such file or directory"), std::string::npos);
}

TEST(TokenizerLoad, BrokenSentencePieceModelIsNamed) {
  TempDir dir;
  write(dir / "tokenizer.model", "this is not a protobuf");
  auto r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(dir / "tokenizer.model"), std::string::npos) << r.error().message;
  write(dir / "tokenizer.model", "");
  r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(dir / "tokenizer.model"), std::string::npos) << r.error().message;
}

// A piece starting with a NUL byte: libsentencepiece's trie builder threw
// through Load and ended the process (fuzz_tokenizer_model).
TEST(TokenizerLoad, APieceTheTrieCannotTakeIsAnError) {
  // ModelProto { pieces { piece: P score: 0 type: T } ... }, by hand.
  auto piece = [](const std::string& text, int type) {
    std::string p = "\x0a" + std::string(1, char(text.size())) + text + std::string("\x15\0\0\0\0", 5);
    if (type) p += "\x18" + std::string(1, char(type));
    return "\x0a" + std::string(1, char(p.size())) + p;
  };
  TempDir dir;
  write(dir / "tokenizer.model", piece("<unk>", 2) + piece(std::string("\0x", 2), 0) + piece("a", 0));
  auto r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, dir / "tokenizer.model" + ": not a SentencePiece model: its pieces cannot be indexed "
                                                         "(failed to insert key: zero-length key)");
}

TEST(TokenizerLoad, BrokenConfigIsNamed) {
  TempDir dir;
  write(dir / "tokenizer.json", minimal().dump());
  write(dir / "tokenizer_config.json", "{\"add_bos_token\": tru}");
  auto r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(dir / "tokenizer_config.json" + ":1:"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace arch

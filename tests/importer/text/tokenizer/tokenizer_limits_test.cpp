// Hostile tokenizer files are refused while loading, by the limit
// tokenizer_entries (engine/core/limits.h) before their lists are reserved, or with
// a short message naming the file and the fault; never a crash or gigabytes.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/test_files.h"
#include "tests/importer/text/limit_for.h"
#include "tests/importer/text/tokenizer/tokenizer_test_util.h"
#include "tests/time_bound.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {
namespace {

using nlohmann::json;
using testing::LimitFor;
using testing::TempDir;
using testing::write_file;

const char* kFile = "hostile/tokenizer.json";
const std::string kRaise = "; if this is meant, raise it with --limit tokenizer_entries=N or "
                           "ARCHETYPE_LIMITS=tokenizer_entries=N";

json bpe(json vocab, json merges) {
  return {{"version", "1.0"},
          {"model", {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}}}};
}

// The error of loading `j` as a tokenizer.json named kFile, which must come
// at once (the bound leaves room for a loaded machine).
std::string load_error(const json& j) {
  auto start = std::chrono::steady_clock::now();
  auto r = tokenizer_from_json(j.dump(), kFile);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), testing::time_bound(5.0));
  return r.ok() ? "(loaded)" : r.error().message;
}

TEST(TokenizerLimits, IdsFarPastTheVocabularyAreRefused) {
  // Each id sizes the id -> token table: 2**31 - 1 would be 16 GiB of it.
  EXPECT_EQ(load_error(bpe({{"a", 0}, {"b", 1}, {"ab", 2147483647}}, {"a b"})),
            std::string(kFile) + ": model (BPE): the vocabulary size implied by the id 2147483647 of vocab entry 'ab' "
            "(2147483648) exceeds the limit 'tokenizer_entries' (16000000)" + kRaise);
  EXPECT_CONTAINS(load_error(bpe({{"a", 0}, {"b", 1}, {"ab", 4000000000u}}, {"a b"})),
                  "the vocabulary size implied by the id 4000000000 of vocab entry 'ab' (4000000001) exceeds the "
                  "limit 'tokenizer_entries'");
  EXPECT_CONTAINS(load_error(bpe({{"a", 0}, {"b", -1}}, json::array())),
                  "hostile/tokenizer.json: model (BPE): vocab entry 'b' has id -1, expected an integer >= 0");
  json wordpiece = {{"model", {{"type", "WordPiece"}, {"vocab", {{"[UNK]", 0}, {"x", 99999999}}}}}};
  EXPECT_CONTAINS(load_error(wordpiece), "model (WordPiece): the vocabulary size implied by the id 99999999 of vocab "
                                         "entry 'x' (100000000) exceeds the limit 'tokenizer_entries'");
  json wordlevel = {{"model", {{"type", "WordLevel"}, {"vocab", {{"<unk>", 20000000}}}, {"unk_token", "<unk>"}}}};
  EXPECT_CONTAINS(load_error(wordlevel), "model (WordLevel): the vocabulary size implied by the id 20000000");
}

// Two tokens under one id: the id could decode to only one of them, and
// which one `tokenizers` keeps depends on its hash map's order.
TEST(TokenizerLimits, DuplicateIdsInTheVocabularyAreRefused) {
  EXPECT_EQ(load_error(bpe({{"a", 0}, {"b", 1}, {"c", 1}}, json::array())),
            std::string(kFile) + ": model (BPE): vocab entries 'b' and 'c' both have id 1");
  json wordpiece = {{"model", {{"type", "WordPiece"}, {"vocab", {{"[UNK]", 0}, {"x", 1}, {"##x", 0}}}}}};
  EXPECT_EQ(load_error(wordpiece), std::string(kFile) + ": model (WordPiece): vocab entries '##x' and '[UNK]' both have id 0");
  json wordlevel = {{"model", {{"type", "WordLevel"}, {"vocab", {{"<unk>", 0}, {"y", 2}, {"z", 2}}}, {"unk_token", "<unk>"}}}};
  EXPECT_EQ(load_error(wordlevel), std::string(kFile) + ": model (WordLevel): vocab entries 'y' and 'z' both have id 2");
  // A vocab.json (CLIP's slow files) is read the same way.
  TempDir dir;
  write_file(dir / "vocab.json", R"({"<|startoftext|>": 0, "<|endoftext|>": 1, "a</w>": 1})");
  write_file(dir / "merges.txt", "#version: 0.2\n");
  auto clip = load_tokenizer(dir.path());
  ASSERT_FALSE(clip.ok());
  EXPECT_CONTAINS(clip.error().message, "vocab entries '<|endoftext|>' and 'a</w>' both have id 1");
}

// `tokenizers` numbers an added token itself (the model's id, else the next
// free one) and only logs a warning when the file's id differs, so the
// token would encode to an id the model was not trained with. An id that
// extends the vocabulary one after another is what real files hold; a gap
// or another token's id is refused, naming the token and the id.
json with_added(json added) {
  json j = bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {"a b"});
  j["added_tokens"] = std::move(added);
  return j;
}

json added(int64_t id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"special", true}, {"normalized", false}};
}

TEST(TokenizerLimits, AddedTokenIdsThatLeaveAGapOrCollideAreRefused) {
  auto fine = tokenizer_from_json(with_added({added(3, "<s>"), added(4, "</s>"), added(2, "ab")}).dump(), kFile);
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_EQ((*fine)->token_to_id("</s>"), 4);
  EXPECT_EQ((*fine)->encode("<s>ab</s>", false), (std::vector<int32_t>{3, 2, 4}));
  EXPECT_EQ((*fine)->vocab_size(), 5u);

  const std::string at = std::string(kFile) + ": added_tokens[";
  EXPECT_EQ(load_error(with_added({added(1000, "<x>")})),
            at + "0]: '<x>' has id 1000, but the next free id is 3 (the ids of added tokens past the vocabulary "
                 "follow it without a gap)");
  EXPECT_EQ(load_error(with_added({added(3, "<s>"), added(5, "</s>")})),
            at + "1]: '</s>' has id 5, but the next free id is 4 (the ids of added tokens past the vocabulary "
                 "follow it without a gap)");
  EXPECT_EQ(load_error(with_added({added(1, "<x>")})), at + "0]: '<x>' has id 1, which 'b' already has");
  EXPECT_EQ(load_error(with_added({added(3, "<s>"), added(3, "</s>")})),
            at + "1]: '</s>' has id 3, which '<s>' already has");
  EXPECT_EQ(load_error(with_added({added(3, "a")})), at + "0]: 'a' has id 3, but the vocabulary has it as id 0");
  EXPECT_EQ(load_error(with_added({added(3, "<s>"), added(4, "<s>")})),
            at + "1]: '<s>' has id 4, but an earlier entry of added_tokens gave it id 3");
  EXPECT_EQ(load_error(with_added({added(-1, "<x>")})), at + "0]: '<x>' has id -1, expected an integer >= 0");
  EXPECT_CONTAINS(load_error(with_added({added(4000000000, "<x>")})),
                  "added_tokens[0]: the vocabulary size implied by the id 4000000000 of '<x>' (4000000001) exceeds "
                  "the limit 'tokenizer_entries'");
}

TEST(TokenizerLimits, LongListsAreRefusedWhileTheFileIsParsed) {
  // A hundred million merges cannot be written here; the same check with the
  // limit lowered. The count stops at the first entry past the limit, before
  // the rest of the list is read into memory.
  LimitFor few("tokenizer_entries", 3);
  EXPECT_EQ(load_error(bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {"a b", "a b", "a b", "a b", "a b"})),
            std::string(kFile) + ": the entries of 'model.merges', counted so far (4) exceeds the limit "
            "'tokenizer_entries' (3)" + kRaise);
  EXPECT_CONTAINS(load_error(bpe({{"a", 0}, {"b", 1}, {"c", 2}, {"d", 3}}, json::array())),
                  "hostile/tokenizer.json: the entries of 'model.vocab', counted so far (4) exceeds the limit "
                  "'tokenizer_entries' (3)");
  json unigram = {{"model", {{"type", "Unigram"}, {"unk_id", 0},
                             {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"a", -1.0}),
                                                    json::array({"b", -2.0}), json::array({"c", -3.0})})}}}};
  EXPECT_CONTAINS(load_error(unigram), "the entries of 'model.vocab', counted so far (4) exceeds the limit");
  json added = bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {"a b"});
  added["added_tokens"] = json::array();
  for (const char* t : {"<s>", "</s>", "<pad>", "<unk>"}) added["added_tokens"].push_back({{"content", t}, {"special", true}});
  EXPECT_CONTAINS(load_error(added), "the entries of 'added_tokens', counted so far (4) exceeds the limit");
  // Any list or object, wherever it is.
  json junk = bpe({{"a", 0}}, json::array());
  junk["extra"] = {{"deep", {{"list", {1, 2, 3, 4}}}}};
  EXPECT_CONTAINS(load_error(junk), "the entries of 'extra.deep.list', counted so far (4) exceeds the limit");
  EXPECT_CONTAINS(load_error(json::array({1, 2, 3, 4})), "the entries of the top level, counted so far (4)");
  // An id as large as the limit allows is still refused past it.
  EXPECT_CONTAINS(load_error(bpe({{"a", 0}, {"b", 3}}, json::array())),
                  "model (BPE): the vocabulary size implied by the id 3 of vocab entry 'b' (4) exceeds the limit "
                  "'tokenizer_entries' (3)");
}

TEST(TokenizerLimits, DeepNestingIsRefusedWhileTheFileIsParsed) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = tokenizer_from_json(deep, kFile);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, std::string(kFile) + ": the nesting of its arrays and objects (513) exceeds the limit "
                               "'json_depth' (512); if this is meant, raise it with --limit json_depth=N or "
                               "ARCHETYPE_LIMITS=json_depth=N");
}

TEST(TokenizerLimits, RaisingTheLimitLetsTheFileLoad) {
  const json j = bpe({{"a", 0}, {"b", 1}, {"ab", 2}, {"c", 3}}, {"a b"});
  {
    LimitFor few("tokenizer_entries", 3);
    EXPECT_CONTAINS(load_error(j), "the entries of 'model.vocab', counted so far (4) exceeds the limit 'tokenizer_entries' (3)");
  }
  {
    LimitFor enough("tokenizer_entries", 4);
    auto r = tokenizer_from_json(j.dump(), kFile);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ((*r)->encode("abc", false), (std::vector<int32_t>{2, 3}));
  }
  EXPECT_EQ(load_error(j), "(loaded)");  // the default is back
}

TEST(TokenizerLimits, EnormousMergePartsGiveShortMessages) {
  const std::string huge(1000000, 'x');
  std::string msg = load_error(bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {huge + " b"}));
  EXPECT_CONTAINS(msg, "hostile/tokenizer.json: model (BPE): merges[0]: '" + std::string(60, 'x') +
                           "... (1000000 bytes)' is not in the vocab");
  EXPECT_LT(msg.size(), 300u);
  msg = load_error(bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {huge}));
  EXPECT_CONTAINS(msg, "merges[0] is \"" + std::string(60, 'x') + "... (1000000 bytes)\", expected \"a b\"");
  EXPECT_LT(msg.size(), 300u);
  // A merge whose parts exist but whose result does not.
  msg = load_error(bpe({{huge, 0}, {"b", 1}}, {huge + " b"}));
  EXPECT_CONTAINS(msg, "merges[0]: the merged token '" + std::string(60, 'x') + "... (1000001 bytes)' is not in the vocab");
  EXPECT_LT(msg.size(), 300u);
}

TEST(TokenizerLimits, AbsurdPaddingIsRefused) {
  json j = bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {"a b"});
  j["padding"] = {{"strategy", {{"Fixed", 1000000000000ull}}}};
  EXPECT_CONTAINS(load_error(j), std::string(kFile) + ": padding: the padded length (strategy Fixed) (1000000000000) "
                                                      "exceeds the limit 'tokenizer_entries'");
  j["padding"] = {{"strategy", "BatchLongest"}, {"pad_to_multiple_of", 1000000000000ll}};
  EXPECT_CONTAINS(load_error(j), "the padded length (pad_to_multiple_of) (1000000000000) exceeds the limit");
  j["padding"] = {{"strategy", {{"Fixed", 4}}}, {"pad_id", 1}};
  auto r = tokenizer_from_json(j.dump(), kFile);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->encode("ab", false), (std::vector<int32_t>{2, 1, 1, 1}));
}

TEST(TokenizerLimits, ClipFilesWithBadIdsOrTooManyMerges) {
  TempDir dir;
  write_file(dir / "vocab.json", R"({"a": 0, "<|startoftext|>": "one", "<|endoftext|>": 2})");
  write_file(dir / "merges.txt", "#version: 0.2\n");
  auto r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error().message, dir / "vocab.json" + ": '<|startoftext|>' has id \"one\", expected an integer >= 0");

  write_file(dir / "vocab.json", R"({"a": 0, "b": 1, "<|startoftext|>": 2, "<|endoftext|>": 3})");
  write_file(dir / "merges.txt", "#version: 0.2\na b\na b\na b\na b\n");
  LimitFor few("tokenizer_entries", 4);  // the four ids fit, the five lines do not
  r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error().message, dir / "merges.txt" + ": the merges (lines) (5) exceeds the limit 'tokenizer_entries' (4)");
}

TEST(TokenizerLimits, VitsVocabularyIdsAreBounded) {
  TempDir dir;
  write_file(dir / "tokenizer_config.json", R"({"tokenizer_class": "VitsTokenizer", "add_blank": true})");
  write_file(dir / "vocab.json", R"({"_": 0, "a": 2000000000})");
  auto r = load_tokenizer(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error().message, dir / "vocab.json" + ": the vocabulary size implied by the id 2000000000 of 'a' "
                                                          "(2000000001) exceeds the limit 'tokenizer_entries'");
}

TEST(TokenizerLimits, SentencePieceModelPiecesAreCounted) {
  ARCH_REQUIRE_SHARED(testing::tokenizer_dir("llama2") + "/tokenizer.model");
  const std::string path = testing::tokenizer_dir("llama2") + "/tokenizer.model";
  {
    LimitFor few("tokenizer_entries", 1000);
    auto r = load_tokenizer(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, path + ": the model's pieces (32000) exceeds the limit 'tokenizer_entries' (1000)" + kRaise);
  }
  EXPECT_TRUE(load_tokenizer(path).ok());
}

}  // namespace
}  // namespace arch

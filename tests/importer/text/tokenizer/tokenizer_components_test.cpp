// Pipeline stages the shared reference files do not exercise, on tiny
// tokenizer.json files built here. Expectations follow `tokenizers`' rules.
#include <gtest/gtest.h>

#include "importer/text/tokenizer/regex.h"
#include "importer/text/tokenizer/tokenizer.h"
#include "tests/importer/text/tokenizer/tokenizer_test_util.h"

namespace arch {
namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

// A WordLevel model over `words` (ids in order, "<unk>" last), so the ids
// show exactly which pieces the earlier stages cut.
json word_level(const std::vector<std::string>& words) {
  json vocab = json::object();
  for (size_t i = 0; i < words.size(); ++i) vocab[words[i]] = i;
  vocab["<unk>"] = words.size();
  return {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};
}

json tokenizer(json model, json normalizer = nullptr, json pre = nullptr, json post = nullptr,
               json decoder = nullptr, json added = json::array()) {
  return {{"added_tokens", added},   {"normalizer", normalizer}, {"pre_tokenizer", pre},
          {"post_processor", post}, {"decoder", decoder},       {"model", model}};
}

std::shared_ptr<const Tokenizer> make(const json& j, const json& config = nullptr) {
  auto r = tokenizer_from_json(j.dump(), "test.json", config);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : nullptr;
}

json added_token(int id, const std::string& content, bool special, json flags = json::object()) {
  json t = {{"id", id},         {"content", content}, {"single_word", false}, {"lstrip", false},
            {"rstrip", false},  {"normalized", !special}, {"special", special}};
  for (auto& [k, v] : flags.items()) t[k] = v;
  return t;
}

TEST(TokenizerComponents, SplitBehaviors) {
  const std::vector<std::string> words = {"a", "-", "b", "c", "a-", "b-", "-b", "-c", "--"};
  auto ids_for = [&](const char* behavior, bool invert = false) {
    json pre = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
    auto tok = make(tokenizer(word_level(words), nullptr, pre));
    return tok ? tok->encode("a-b--c") : Ids{};
  };
  EXPECT_EQ(ids_for("Removed"), (Ids{0, 2, 3}));
  EXPECT_EQ(ids_for("Isolated"), (Ids{0, 1, 2, 1, 1, 3}));
  EXPECT_EQ(ids_for("MergedWithPrevious"), (Ids{4, 5, 1, 3}));
  EXPECT_EQ(ids_for("MergedWithNext"), (Ids{0, 6, 1, 7}));
  EXPECT_EQ(ids_for("Contiguous"), (Ids{0, 1, 2, 8, 3}));
  EXPECT_EQ(ids_for("Removed", true), (Ids{1, 1, 1}));
}

TEST(TokenizerComponents, MetaspacePrependSchemes) {
  const std::vector<std::string> words = {"▁a", "▁b", "a", "<s>"};
  auto run = [&](const char* scheme, const std::string& text) {
    json pre = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", true}};
    auto tok = make(tokenizer(word_level(words), nullptr, pre, nullptr, nullptr, {added_token(3, "<s>", true)}));
    return tok ? tok->encode(text) : Ids{};
  };
  EXPECT_EQ(run("always", "a b"), (Ids{0, 1}));
  EXPECT_EQ(run("always", "<s>a b"), (Ids{3, 0, 1}));
  EXPECT_EQ(run("first", "a b"), (Ids{0, 1}));
  EXPECT_EQ(run("first", "<s>a b"), (Ids{3, 2, 1}));  // only the text's very start gets the ▁
  EXPECT_EQ(run("never", "a b"), (Ids{2, 1}));
  // Files from before prepend_scheme: add_prefix_space false means never.
  json legacy = {{"type", "Metaspace"}, {"replacement", "▁"}, {"add_prefix_space", false}};
  auto old = make(tokenizer(word_level(words), nullptr, legacy));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->encode("a b"), (Ids{2, 1}));
  legacy["prepend_scheme"] = "always";
  auto r = tokenizer_from_json(tokenizer(word_level(words), nullptr, legacy).dump(), "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("add_prefix_space false contradicts prepend_scheme 'always'"), std::string::npos);
}

TEST(TokenizerComponents, MetaspaceDecoder) {
  json dec = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
  auto tok = make(tokenizer(word_level({"▁Hey", "▁friend!"}), nullptr, nullptr, nullptr, dec));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->decode(Ids{0, 1}), "Hey friend!");
}

TEST(TokenizerComponents, AddedTokenFlags) {
  const std::vector<std::string> words = {"x", "x ", "y", " y", "xab ", " world"};
  // lstrip / rstrip take the spaces around the token with it.
  auto strip = make(tokenizer(word_level(words), nullptr, nullptr, nullptr, nullptr,
                              {added_token(7, "<m>", false, {{"lstrip", true}, {"rstrip", true}})}));
  auto plain = make(tokenizer(word_level(words), nullptr, nullptr, nullptr, nullptr, {added_token(7, "<m>", false)}));
  ASSERT_TRUE(strip && plain);
  EXPECT_EQ(strip->encode("x <m> y"), (Ids{0, 7, 2}));  // new ids start past the model's 7 entries
  EXPECT_EQ(plain->encode("x <m> y"), (Ids{1, 7, 3}));
  // single_word: no match inside a word.
  auto single = make(tokenizer(word_level(words), nullptr, nullptr, nullptr, nullptr,
                               {added_token(7, "ab", false, {{"single_word", true}})}));
  ASSERT_TRUE(single);
  EXPECT_EQ(single->encode("xab ab"), (Ids{4, 7}));
  // normalized=true tokens match the normalized text.
  auto lower = make(tokenizer(word_level(words), {{"type", "Lowercase"}}, nullptr, nullptr, nullptr,
                              {added_token(7, "hello", false)}));
  ASSERT_TRUE(lower);
  EXPECT_EQ(lower->encode("HELLO World"), (Ids{7, 5}));
  // The longest of the tokens starting at the leftmost match wins.
  auto longest = make(tokenizer(word_level(words), nullptr, nullptr, nullptr, nullptr,
                                {added_token(7, "<a>", true), added_token(8, "<a><b>", true)}));
  ASSERT_TRUE(longest);
  EXPECT_EQ(longest->encode("<a><b><a>"), (Ids{8, 7}));
  EXPECT_EQ(longest->special_ids(), (Ids{7, 8}));
  EXPECT_EQ(longest->decode(Ids{8, 0, 7}, true), "x");
}

TEST(TokenizerComponents, WordPiece) {
  json model = {{"type", "WordPiece"},
                {"vocab", {{"[UNK]", 0}, {"un", 1}, {"##aff", 2}, {"##able", 3}, {"a", 4}, {"[CLS]", 5}, {"[SEP]", 6}}},
                {"unk_token", "[UNK]"},
                {"continuing_subword_prefix", "##"},
                {"max_input_chars_per_word", 10}};
  json post = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 6}}, {"cls", {"[CLS]", 5}}};
  json dec = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  auto tok = make(tokenizer(model, nullptr, {{"type", "WhitespaceSplit"}}, post, dec));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("unaffable a"), (Ids{5, 1, 2, 3, 4, 6}));
  EXPECT_EQ(tok->encode("unaffx a", false), (Ids{0, 4}));        // an unmatchable rest: the word is [UNK]
  EXPECT_EQ(tok->encode("unaffableun", false), (Ids{0}));         // longer than 10 characters
  EXPECT_EQ(tok->decode(Ids{1, 2, 3, 4}), "unaffable a");
}

TEST(TokenizerComponents, Unigram) {
  json model = {{"type", "Unigram"},
                {"unk_id", 0},
                {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"a", -1.0}), json::array({"b", -1.0}),
                                     json::array({"ab", -1.5}), json::array({"c", -4.0}), json::array({"<0x7A>", -5.0})})},
                {"byte_fallback", false}};
  auto tok = make(tokenizer(model));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->kind(), "Unigram");
  EXPECT_EQ(tok->encode("ab"), (Ids{3}));        // -1.5 beats a + b = -2
  EXPECT_EQ(tok->encode("abc"), (Ids{3, 4}));
  EXPECT_EQ(tok->encode("xyab"), (Ids{0, 3}));   // unknown characters fuse into one unk
  model["byte_fallback"] = true;
  auto bytes = make(tokenizer(model));
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->encode("zab"), (Ids{5, 3}));  // an unknown piece falls back to its bytes
  EXPECT_EQ(bytes->encode("yab"), (Ids{0, 3}));  // unless a byte is missing
}

TEST(TokenizerComponents, BpeSubwordPrefixSuffixAndIgnoreMerges) {
  json model = {{"type", "BPE"},
                {"vocab", {{"a", 0}, {"##b", 1}, {"ab", 2}, {"##c", 3}, {"abc", 4}}},
                {"merges", json::array({json::array({"a", "##b"})})},
                {"continuing_subword_prefix", "##"}};
  auto tok = make(tokenizer(model));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("ab"), (Ids{2}));
  EXPECT_EQ(tok->encode("abc"), (Ids{2, 3}));
  model["ignore_merges"] = true;
  auto whole = make(tokenizer(model));
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->encode("abc"), (Ids{4}));  // a word in the vocab skips merging

  json suffix = {{"type", "BPE"},
                 {"vocab", {{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}, {"b", 3}}},
                 {"merges", {"a b</w>"}},
                 {"end_of_word_suffix", "</w>"}};
  auto sfx = make(tokenizer(suffix, nullptr, {{"type", "Whitespace"}}, nullptr, {{"type", "BPEDecoder"}, {"suffix", "</w>"}}));
  ASSERT_TRUE(sfx);
  EXPECT_EQ(sfx->encode("ab ab"), (Ids{2, 2}));
  EXPECT_EQ(sfx->decode(Ids{2, 2}), "ab ab");
}

TEST(TokenizerComponents, BpeByteFallbackAndUnk) {
  json model = {{"type", "BPE"},
                {"vocab", {{"<unk>", 0}, {"a", 1}, {"<0x62>", 2}}},
                {"merges", json::array()},
                {"unk_token", "<unk>"},
                {"byte_fallback", true},
                {"fuse_unk", true}};
  auto tok = make(tokenizer(model, nullptr, nullptr, nullptr,
                            {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}));
  ASSERT_TRUE(tok);
  // c has no byte token: unks, fused. As in `tokenizers`, a pending unk is only
  // written out before a vocabulary hit or at the end, not before byte tokens.
  EXPECT_EQ(tok->encode("abccb"), (Ids{1, 2, 2, 0}));
  EXPECT_EQ(tok->encode("acca"), (Ids{1, 0, 1}));
  EXPECT_EQ(tok->decode(Ids{1, 2}), "ab");
}

TEST(TokenizerComponents, DecoderStages) {
  json vocab_model = word_level({"<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "▁▁x▁", "a"});
  json dec = {{"type", "Sequence"},
              {"decoders",
               {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                {{"type", "ByteFallback"}},
                {{"type", "Fuse"}},
                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}}}}};
  auto tok = make(tokenizer(vocab_model, nullptr, nullptr, nullptr, dec));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->decode(Ids{4, 0, 1, 2}), " x €");    // one leading and one trailing space stripped
  EXPECT_EQ(tok->decode(Ids{5, 0, 1, 3, 5}), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "a");  // bad bytes: one U+FFFD each
  auto no_decoder = make(tokenizer(vocab_model));
  ASSERT_TRUE(no_decoder);
  EXPECT_EQ(no_decoder->decode(Ids{5, 5}), "a a");
}

TEST(TokenizerComponents, NormalizersAndPreTokenizers) {
  json words = word_level({"cafe", "e\xCC\x81", "\xC3\xA9", "1", "2", "12", "a", "b", ",", "x", "ﬁ", "fi"});
  auto nfd_strip = make(tokenizer(words, {{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}}));
  ASSERT_TRUE(nfd_strip);
  EXPECT_EQ(nfd_strip->encode("CAFÉ"), (Ids{0}));
  auto nfc = make(tokenizer(words, {{"type", "NFC"}}));
  ASSERT_TRUE(nfc);
  EXPECT_EQ(nfc->encode("e\xCC\x81"), (Ids{2}));
  auto nfkc = make(tokenizer(words, {{"type", "NFKC"}}));
  ASSERT_TRUE(nfkc);
  EXPECT_EQ(nfkc->encode("ﬁ"), (Ids{11}));
  auto strip = make(tokenizer(words, {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}));
  ASSERT_TRUE(strip);
  EXPECT_EQ(strip->encode(" \t a \n"), (Ids{6}));
  auto digits = make(tokenizer(words, nullptr, {{"type", "Digits"}, {"individual_digits", true}}));
  ASSERT_TRUE(digits);
  EXPECT_EQ(digits->encode("12"), (Ids{3, 4}));
  auto runs = make(tokenizer(words, nullptr, {{"type", "Digits"}, {"individual_digits", false}}));
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->encode("a12"), (Ids{6, 5}));
  auto punct = make(tokenizer(words, nullptr, {{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Punctuation"}}}}}));
  ASSERT_TRUE(punct);
  EXPECT_EQ(punct->encode("a, b"), (Ids{6, 8, 7}));
  auto ws = make(tokenizer(words, nullptr, {{"type", "Whitespace"}}));
  ASSERT_TRUE(ws);
  EXPECT_EQ(ws->encode("a,, b"), (Ids{6, 12, 7}));  // ",," is one piece, not in the vocab
  auto delim = make(tokenizer(words, nullptr, {{"type", "CharDelimiterSplit"}, {"delimiter", "x"}}));
  ASSERT_TRUE(delim);
  EXPECT_EQ(delim->encode("axb"), (Ids{6, 7}));
  auto replace = make(tokenizer(words, {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", ""}}));
  ASSERT_TRUE(replace);
  EXPECT_EQ(replace->encode("c a f\u3000e"), (Ids{0}));
  auto bert = make(tokenizer(words, {{"type", "BertNormalizer"}, {"lowercase", true}}, {{"type", "BertPreTokenizer"}}));
  ASSERT_TRUE(bert);
  EXPECT_EQ(bert->encode("CAF\xC3\x89,\x01 A"), (Ids{0, 8, 6}));
}

TEST(TokenizerComponents, TruncationPaddingAndTemplate) {
  json j = tokenizer(word_level({"a", "<s>", "</s>", "<pad>"}), nullptr, {{"type", "WhitespaceSplit"}},
                     {{"type", "TemplateProcessing"},
                      {"single", "<s> $A </s>"},
                      {"special_tokens",
                       {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}},
                        {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}});
  j["truncation"] = {{"max_length", 4}, {"direction", "Right"}, {"strategy", "LongestFirst"}, {"stride", 0}};
  j["padding"] = {{"strategy", {{"Fixed", 6}}}, {"direction", "Right"}, {"pad_id", 3}, {"pad_to_multiple_of", nullptr}};
  auto tok = make(j);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("a a a a"), (Ids{1, 0, 0, 2, 3, 3}));
  EXPECT_EQ(tok->encode("a a a a", false), (Ids{0, 0, 0, 0, 3, 3}));
}

TEST(TokenizerComponents, TransformersLlamaConfigRebuildsBosEos) {
  json j = tokenizer(word_level({"a", "<s>", "</s>"}), nullptr, nullptr,
                     {{"type", "TemplateProcessing"},
                      {"single", "<s> $A"},
                      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}});
  auto plain = make(j);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->encode("a"), (Ids{1, 0}));
  json config = {{"tokenizer_class", "LlamaTokenizerFast"}, {"add_bos_token", true}, {"add_eos_token", true},
                 {"bos_token", "<s>"}, {"eos_token", {{"content", "</s>"}, {"__type", "AddedToken"}}}};
  auto llama = make(j, config);
  ASSERT_TRUE(llama);
  EXPECT_EQ(llama->encode("a"), (Ids{1, 0, 2}));
  EXPECT_EQ(llama->bos_id(), 1);
  EXPECT_EQ(llama->eos_id(), 2);
}

TEST(TokenizerComponents, PrecompiledCharsmap) {
  // SentencePiece rules compiled by libsentencepiece (normalization_rule_tsv) from
  // fi-ligature -> "fi", U+1D53E -> "G", fullwidth e -> "e", U+0E33 -> U+0E4D U+0E32, U+200B -> " ".
  const char* kCharsmap =
      "AAQAAACEAwDg7AIAuNQCAOIUAgCzBQAACQAAgIAoAgCLPQAAAAAAgKwIAgCBBQAABgAAgIUFAAAEAACA76wCAJ0sAgCU8AIA8AwC"
      "AL4FAAACAACAFQAAABQAAAAXAAAAFgAAAL1EAgAYAAAAGwAAABoAAAAdAAAAHAAAAB8AAAAeAAAAIQAAACAAAAAjAAAAIgAAACUA"
      "AAAkAAAAJwAAACYAAAApAAAAKAAAACsAAAAqAAAALQAAACwAAAAvAAAALgAAADEAAAAwAAAAMwAAADIAAAA1AAAANAAAADcAAAA2"
      "AAAAOQAAADgAAAA7AAAAOgAAAD0AAAA8AAAAPwAAAD4AAABBAAAAQAAAAEMAAABCAAAARQAAAEQAAABHAAAARgAAAEkAAABIAAAA"
      "SwAAAEoAAABNAAAATAAAAE8AAABOAAAAUQAAAFAAAABTAAAAUgAAAFUAAABUAAAAVwAAAFYAAABZAAAAWAAAAFsAAABaAAAAXQAA"
      "AFwAAABfAAAAXgAAAGEAAABgAAAAYwAAAGIAAABlAAAAZAAAAGcAAABmAAAAaQAAAGgAAABrAAAAagAAAG0AAABsAAAAbwAAAG4A"
      "AABxAAAAcAAAAHMAAAByAAAAdQAAAHQAAAB3AAAAdgAAAHkAAAB4AAAAewAAAHoAAAB9AAAAfAAAAH8AAAB+AAAAgQAAAIAAAACD"
      "AAAAggAAAIUAAACEAAAAhwAAAIYAAACJAAAAiAAAAIsAAACKAAAAjQAAAIwAAACPAAAAjgAAAJEAAACQAAAAkwAAAJIAAACVAAAA"
      "lAAAAJcAAACWAAAAmQAAAJgAAACbAAAAmgAAAJ0AAACcAAAAnwAAAJ4AAAChAAAAoAAAAKMAAACiAAAApQAAAKQAAACnAAAApgAA"
      "AKkAAACoAAAAqwAAAKoAAACtAAAArAAAAK8AAACuAAAAsQAAALAAAACzAAAAsgAAALUAAAC0AAAAtwAAALYAAAC5AAAAuAAAALsA"
      "AAC6AAAAvQAAALwAAAC/AAAAvgAAAMEAAADAAAAAwwAAAMIAAADFAAAAxAAAAMcAAADGAAAAyQAAAMgAAADLAAAAygAAAM0AAADM"
      "AAAAzwAAAM4AAADRAAAA0AAAANMAAADSAAAA1QAAANQAAADXAAAA1gAAANkAAADYAAAA2wAAANoAAADdAAAA3AAAAN8AAADeAAAA"
      "4QAAAOAAAADjAAAA4gAAAOUAAADkAAAA5wAAAOYAAADpAAAA6AAAAOsAAADqAAAA7QAAAOwAAADvAAAA7gAAAPEAAADwAAAA8wAA"
      "APIAAAD1AAAA9AAAAPcAAAD2AAAA+QAAAPgAAAD7AAAA+gAAAP0AAAD8AAAA/wAAAP4AAAAgAEcAZQBmaQDguY3guLIA";
  json words = word_level({"fine G", "e", "\u0e04\u0e4d\u0e32", "a b", "plain"});
  auto tok = make(tokenizer(words, {{"type", "Precompiled"}, {"precompiled_charsmap", kCharsmap}}));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("\ufb01ne \U0001D53E"), (Ids{0}));
  // A cluster shorter than 6 bytes is replaced whole when a prefix of it has a
  // rule, so the accent goes with the fullwidth e (as in `tokenizers`).
  EXPECT_EQ(tok->encode("\uff45\u0301"), (Ids{1}));
  EXPECT_EQ(tok->encode("\u0e04\u0e33"), (Ids{2}));
  EXPECT_EQ(tok->encode("a\u200bb"), (Ids{3}));
  EXPECT_EQ(tok->encode("plain"), (Ids{4}));

  auto bad = [&](const char* b64) {
    auto r = tokenizer_from_json(tokenizer(words, {{"type", "Precompiled"}, {"precompiled_charsmap", b64}}).dump(), "t.json");
    return r.ok() ? std::string("(loaded)") : r.error().message;
  };
  EXPECT_NE(bad("not base64!").find("precompiled_charsmap is not base64"), std::string::npos);
  EXPECT_NE(bad("AAAAAA==").find("trie size of 0 bytes"), std::string::npos);
  EXPECT_NE(bad("/////wAA").find("does not fit"), std::string::npos);
}

TEST(TokenizerComponents, OnigurumaClassesOnPcre2) {
  using tok::onig_to_pcre2;
  EXPECT_EQ(onig_to_pcre2("a+"), "a+");
  // \s is Unicode White_Space (no U+180E), \w takes marks and connector punctuation.
  EXPECT_NE(onig_to_pcre2("\\s").find("\\x{3000}"), std::string::npos);
  EXPECT_EQ(onig_to_pcre2("[^\\s]").find("[^[") , std::string::npos);
  auto re = tok::Pattern::regex("\\s+", "test");
  ASSERT_TRUE(re.ok());
  std::vector<std::pair<size_t, size_t>> m;
  re->find_all("a\u180Eb\u3000c\uFEFFd", m);
  ASSERT_EQ(m.size(), 1u);  // only U+3000
  EXPECT_EQ(m[0], (std::pair<size_t, size_t>{5, 8}));
  auto word = tok::Pattern::regex("\\w+", "test");
  ASSERT_TRUE(word.ok());
  word->find_all("e\u0301\u203Fx\u00B2", m);  // mark and U+203F join the word; superscript two (No) does not
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].second, 7u);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// A whitespace word-level tokenizer (a 0, [CLS] 1, [SEP] 2, b 3) with this post-processor.
json testing_tokenizer(const json& post) {
  return tokenizer(word_level({"a", "[CLS]", "[SEP]", "b"}), nullptr, {{"type", "WhitespaceSplit"}}, post);
}

// Pairs (a cross-encoder's query and passage): the template's pair form
// with its type ids, BERT's and RoBERTa's layouts, the longer text cut first
// to fit, and a template with no pair form refused.
TEST(TokenizerPairs, TheTemplatesPairFormWithItsTypeIds) {
  auto specials = json{{"[CLS]", {{"id", "[CLS]"}, {"ids", {1}}, {"tokens", {"[CLS]"}}}},
                       {"[SEP]", {{"id", "[SEP]"}, {"ids", {2}}, {"tokens", {"[SEP]"}}}}};
  json j = testing_tokenizer(json{{"type", "TemplateProcessing"}, {"single", "[CLS] $A [SEP]"},
                                  {"pair", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1"}, {"special_tokens", specials}});
  auto tok = tokenizer_from_json(j.dump(), "pair.json");
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  auto p = (*tok)->encode_pair("a a", "b", 64);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->ids, (Ids{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(p->type_ids, (Ids{0, 0, 0, 0, 1, 1}));
  // 7 tokens into 6: the longer text loses its last token first.
  auto cut = (*tok)->encode_pair("a a a", "b b", 6);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->ids, (Ids{1, 0, 0, 2, 3, 2}));
  json single = testing_tokenizer(json{{"type", "TemplateProcessing"}, {"single", "[CLS] $A [SEP]"}, {"special_tokens", specials}});
  auto no_pair = tokenizer_from_json(single.dump(), "single.json");
  ASSERT_TRUE(no_pair.ok());
  auto refused = (*no_pair)->encode_pair("a", "b", 64);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "single.json: the post-processor's template has no pair form, so a pair of texts cannot be laid out");
}

// bert-base-uncased's tokenizer.json writes its pair form as a list.
TEST(TokenizerPairs, BertBaseUncasedsListForm) {
  ARCH_REQUIRE_SHARED(testing::tokenizer_dir("bert-base-uncased"));
  auto tok = testing::shared_tokenizer("bert-base-uncased");
  ASSERT_TRUE(tok);
  const Ids q = tok->encode("what is a tokenizer?", false), d = tok->encode("It splits text into pieces.", false);
  auto p = tok->encode_pair("what is a tokenizer?", "It splits text into pieces.", 512);
  ASSERT_TRUE(p.ok()) << p.error().message;
  Ids want = {101};
  want.insert(want.end(), q.begin(), q.end());
  want.push_back(102);
  want.insert(want.end(), d.begin(), d.end());
  want.push_back(102);
  EXPECT_EQ(p->ids, want);
  Ids types(q.size() + 2, 0);
  types.insert(types.end(), d.size() + 1, 1);
  EXPECT_EQ(p->type_ids, types);
}

TEST(TokenizerPairs, BertAndRobertaProcessing) {
  auto bert = tokenizer_from_json(
      testing_tokenizer(json{{"type", "BertProcessing"}, {"cls", {"[CLS]", 1}}, {"sep", {"[SEP]", 2}}}).dump(), "bert.json");
  ASSERT_TRUE(bert.ok()) << bert.error().message;
  auto b = (*bert)->encode_pair("a", "b b", 64);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ids, (Ids{1, 0, 2, 3, 3, 2}));
  EXPECT_EQ(b->type_ids, (Ids{0, 0, 0, 1, 1, 1}));
  auto roberta = tokenizer_from_json(
      testing_tokenizer(json{{"type", "RobertaProcessing"}, {"cls", {"[CLS]", 1}}, {"sep", {"[SEP]", 2}}}).dump(), "roberta.json");
  ASSERT_TRUE(roberta.ok());
  auto r = (*roberta)->encode_pair("a", "b", 64);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ids, (Ids{1, 0, 2, 2, 3, 2}));
  EXPECT_EQ(r->type_ids, (Ids{0, 0, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace arch

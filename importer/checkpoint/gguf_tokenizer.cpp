#include "importer/checkpoint/gguf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <toml++/toml.h>

namespace arch {

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

// tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int> types;      // kNormal where the file gives none
  std::vector<double> scores;  // empty where the file gives none
};

Result<Vocab> read_vocab(const GgufFile& file) {
  Vocab v;
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufType::ARRAY || tokens->element != GgufType::STRING)
    return error(file.path + ": tokenizer.ggml.tokens is missing or not an array of strings");
  for (const json& t : tokens->value) v.tokens.push_back(t.get<std::string>());
  const size_t n = v.tokens.size();
  v.types.assign(n, kNormal);
  if (const GgufValue* types = file.find("tokenizer.ggml.token_type")) {
    if (!types->value.is_array() || types->value.size() != n || !(types->element == GgufType::I32 || types->element == GgufType::U32))
      return error(file.path + ": tokenizer.ggml.token_type must be " + std::to_string(n) + " integers, one per token");
    for (size_t i = 0; i < n; ++i) v.types[i] = types->value[i].get<int>();
  }
  if (const GgufValue* scores = file.find("tokenizer.ggml.scores")) {
    if (!scores->value.is_array() || scores->value.size() != n || scores->element != GgufType::F32)
      return error(file.path + ": tokenizer.ggml.scores must be " + std::to_string(n) + " FLOAT32, one per token");
    for (const json& s : scores->value) v.scores.push_back(s.get<double>());
  }
  return v;
}

std::optional<uint64_t> id_key(const GgufFile& file, const std::string& key, size_t vocab) {
  const GgufValue* v = file.find(key);
  if (!v || !v->value.is_number_unsigned() || v->value.get<uint64_t>() >= vocab) return std::nullopt;
  return v->value.get<uint64_t>();
}

std::optional<bool> bool_key(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (!v || !v->value.is_boolean()) return std::nullopt;
  return v->value.get<bool>();
}

std::string model_of(const GgufFile& file) {
  const GgufValue* m = file.find("tokenizer.ggml.model");
  return m && m->value.is_string() ? m->value.get<std::string>() : "";
}

// Control and unknown tokens are special: written in text, they are one id.
// User-defined ones are matched in text too, but decode as text.
ordered added_tokens(const Vocab& v) {
  ordered out = ordered::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const int t = v.types[i];
    if (t != kControl && t != kUnknown && t != kUserDefined) continue;
    out.push_back({{"id", i}, {"content", v.tokens[i]}, {"single_word", false}, {"lstrip", false},
                   {"rstrip", false}, {"normalized", false}, {"special", t != kUserDefined}});
  }
  return out;
}

// BOS (and EOS) around the text, as add_bos_token / add_eos_token say.
ordered post_processor(const Vocab& v, std::optional<uint64_t> bos, std::optional<uint64_t> eos, bool add_bos,
                       bool add_eos) {
  ordered single = ordered::array(), special = ordered::object();
  auto add = [&](uint64_t id) {
    const std::string& tok = v.tokens[id];
    single.push_back({{"SpecialToken", {{"id", tok}, {"type_id", 0}}}});
    special[tok] = {{"id", tok}, {"ids", {id}}, {"tokens", {tok}}};
  };
  if (add_bos && bos) add(*bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (add_eos && eos) add(*eos);
  ordered pair = single;
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", special}};
}

size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// SentencePiece's BPE merges the adjacent pair whose union has the best
// score; as ranked merges: every split of a normal piece into two normal
// pieces, best score first (ties: the piece's id, then the halves' ids).
std::vector<std::string> merges_from_scores(const Vocab& v) {
  std::unordered_map<std::string, size_t> id;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.types[i] == kNormal) id.emplace(v.tokens[i], i);
  std::vector<std::tuple<double, size_t, size_t, size_t, std::string>> ranked;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] != kNormal) continue;
    const std::string& t = v.tokens[i];
    for (size_t at = utf8_length(t[0]); at < t.size(); at += utf8_length(t[at])) {
      auto a = id.find(t.substr(0, at)), b = id.find(t.substr(at));
      if (a != id.end() && b != id.end())
        ranked.emplace_back(-v.scores[i], i, a->second, b->second, a->first + " " + b->first);
    }
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> merges;
  merges.reserve(ranked.size());
  for (auto& r : ranked) merges.push_back(std::move(std::get<4>(r)));
  return merges;
}

ordered bpe_model(const Vocab& v, std::vector<std::string> merges, const std::optional<uint64_t>& unk, bool byte_fallback) {
  // A sorted object (an ordered one looks keys up one by one: quadratic
  // over 150k tokens); the first id of a piece listed twice wins.
  json vocab = json::object();
  auto& entries = vocab.get_ref<json::object_t&>();
  for (size_t i = 0; i < v.tokens.size(); ++i) entries.emplace(v.tokens[i], i);
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", unk ? ordered(v.tokens[*unk]) : ordered(nullptr)},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", byte_fallback},
          {"byte_fallback", byte_fallback},
          {"ignore_merges", false},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

Result<ordered> sentencepiece_bpe(const GgufFile& file, const Vocab& v) {
  if (v.scores.size() != v.tokens.size())
    return error(file.path + ": a \"llama\" tokenizer needs tokenizer.ggml.scores (one per token)");
  const size_t n = v.tokens.size();
  const bool space_prefix = bool_key(file, "tokenizer.ggml.add_space_prefix").value_or(true);
  ordered replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  ordered normalizer = space_prefix ? ordered{{"type", "Sequence"},
                                              {"normalizers", {{{"type", "Prepend"}, {"prepend", "\u2581"}}, replace}}}
                                    : replace;
  ordered decoders = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}}};
  if (space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  ordered tok = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added_tokens(v)},
                 {"normalizer", normalizer}, {"pre_tokenizer", nullptr}};
  tok["post_processor"] = post_processor(v, id_key(file, "tokenizer.ggml.bos_token_id", n),
                                         id_key(file, "tokenizer.ggml.eos_token_id", n),
                                         bool_key(file, "tokenizer.ggml.add_bos_token").value_or(true),
                                         bool_key(file, "tokenizer.ggml.add_eos_token").value_or(false));
  tok["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  tok["model"] = bpe_model(v, merges_from_scores(v), id_key(file, "tokenizer.ggml.unknown_token_id", n), true);
  return tok;
}

struct PreTokenizer {
  std::vector<std::string> splits;
  bool ignore_merges = false;
  std::string normalizer;  // "NFC": the tokenizer.json's normalizer, which GGUF does not record
};

// tokenizer.ggml.pre's splitting regexes, from pretokenizers.toml.
Result<PreTokenizer> pre_tokenizer(const GgufFile& file, const std::string& maps_dir) {
  const GgufValue* pre = file.find("tokenizer.ggml.pre");
  const std::string name = pre && pre->value.is_string() ? pre->value.get<std::string>() : "default";
  const std::string path = (std::filesystem::path(maps_dir) / "pretokenizers.toml").string();
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return error(path + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  // A name llama.cpp gives a tokenizer whose rule another entry already holds.
  std::string entry = name;
  if (auto alias = t[name]["same_as"].value<std::string>()) entry = *alias;
  const toml::array* splits = t[entry]["splits"].as_array();
  if (!splits) {
    std::string known;
    for (const auto& [k, _] : t) known += (known.empty() ? "" : ", ") + std::string(k.str());
    return error(file.path + ": tokenizer.ggml.pre '" + name + "' names a pre-tokenizer " + path +
                 " does not list (it lists: " + known + ")");
  }
  PreTokenizer out;
  for (const auto& s : *splits)
    if (auto r = s.value<std::string>()) out.splits.push_back(*r);
  out.ignore_merges = t[name]["ignore_merges"].value_or(t[entry]["ignore_merges"].value_or(false));
  out.normalizer = t[entry]["normalizer"].value_or(std::string());
  return out;
}

Result<ordered> byte_level_bpe(const GgufFile& file, const Vocab& v, const std::string& maps_dir) {
  const GgufValue* merges = file.find("tokenizer.ggml.merges");
  if (!merges || merges->type != GgufType::ARRAY || merges->element != GgufType::STRING)
    return error(file.path + ": a \"gpt2\" tokenizer needs tokenizer.ggml.merges (an array of strings)");
  std::vector<std::string> m;
  for (const json& s : merges->value) m.push_back(s.get<std::string>());
  ARCH_TRY(PreTokenizer split, pre_tokenizer(file, maps_dir));
  ordered pre = ordered::array();
  for (const std::string& r : split.splits)
    pre.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
  pre.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
  const size_t n = v.tokens.size();
  ordered tok = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added_tokens(v)},
                 {"normalizer", split.normalizer.empty() ? ordered(nullptr) : ordered{{"type", split.normalizer}}},
                 {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", pre}}}};
  tok["post_processor"] = post_processor(v, id_key(file, "tokenizer.ggml.bos_token_id", n),
                                         id_key(file, "tokenizer.ggml.eos_token_id", n),
                                         bool_key(file, "tokenizer.ggml.add_bos_token").value_or(false),
                                         bool_key(file, "tokenizer.ggml.add_eos_token").value_or(false));
  tok["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  tok["model"] = bpe_model(v, std::move(m), std::nullopt, false);
  tok["model"]["ignore_merges"] = split.ignore_merges;
  return tok;
}

}  // namespace

Result<std::string> gguf_tokenizer_json(const GgufFile& file, const std::string& maps_dir) {
  const std::string model = model_of(file);
  if (model.empty()) return error(file.path + ": the metadata has no tokenizer.ggml.model: the file holds no tokenizer");
  ARCH_TRY(Vocab v, read_vocab(file));
  if (model == "llama") {
    ARCH_TRY(ordered tok, sentencepiece_bpe(file, v));
    return tok.dump();
  }
  if (model == "gpt2") {
    ARCH_TRY(ordered tok, byte_level_bpe(file, v, maps_dir));
    return tok.dump();
  }
  return error(file.path + ": tokenizer.ggml.model '" + model +
               "' is not read (the \"llama\" SentencePiece and \"gpt2\" byte-level BPE vocabularies are)");
}

Result<json> gguf_tokenizer_config(const GgufFile& file) {
  ARCH_TRY(Vocab v, read_vocab(file));
  const size_t n = v.tokens.size();
  const bool spm = model_of(file) == "llama";
  json config = json::object();
  for (auto [key, field] : {std::pair{"bos", "bos_token"}, std::pair{"eos", "eos_token"}, std::pair{"unknown", "unk_token"},
                            std::pair{"padding", "pad_token"}})
    if (auto id = id_key(file, std::string("tokenizer.ggml.") + key + "_token_id", n)) config[field] = v.tokens[*id];
  config["add_bos_token"] = bool_key(file, "tokenizer.ggml.add_bos_token").value_or(spm);
  config["add_eos_token"] = bool_key(file, "tokenizer.ggml.add_eos_token").value_or(false);
  config["clean_up_tokenization_spaces"] = false;
  if (const GgufValue* t = file.find("tokenizer.chat_template"); t && t->value.is_string())
    config["chat_template"] = t->value;
  return config;
}

}  // namespace arch

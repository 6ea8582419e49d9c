#include "importer/text/tokenizer/vits_vocab.h"

#include <filesystem>
#include <map>
#include <vector>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

class VitsBackend : public tok::Backend {
 public:
  std::vector<std::pair<std::string, int32_t>> vocab;  // in the file's order: normalize tries them so
  std::map<std::string, int32_t> ids;
  std::map<int32_t, std::string> tokens;
  bool add_blank = true, normalize = true;

  std::vector<int32_t> encode(std::string_view text, bool) const override {
    std::string s(text);
    if (!tok::is_valid_utf8(s)) s = tok::utf8_lossy(s);
    s = kept_characters(normalize ? lowered(s) : s);  // VitsTokenizer filters either way
    std::vector<int32_t> out;
    const int32_t blank = 0;
    if (add_blank) out.push_back(blank);
    for (size_t i = 0; i < s.size();) {
      const size_t start = i;
      tok::next_char(s, i);
      out.push_back(ids.at(s.substr(start, i - start)));  // kept_characters left only vocabulary ones
      if (add_blank) out.push_back(blank);
    }
    return out;
  }
  std::string decode(std::span<const int32_t> in, bool) const override {
    std::string out;
    for (int32_t id : in) {
      if (add_blank && id == 0) continue;
      if (auto it = tokens.find(id); it != tokens.end()) out += it->second;
    }
    return out;
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override {
    auto it = ids.find(std::string(t));
    return it == ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    auto it = tokens.find(id);
    return it == tokens.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  size_t vocab_size() const override { return tokens.empty() ? 0 : size_t(tokens.rbegin()->first) + 1; }
  std::vector<int32_t> special_ids() const override { return {}; }
  std::string kind() const override { return "VITS"; }

 private:
  // VitsTokenizer.normalize_text: at each position a vocabulary entry
  // written there (first in the file's order) is kept as it is, else the
  // character is lower-cased.
  std::string lowered(const std::string& s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      bool kept = false;
      for (const auto& [word, id] : vocab)
        if (!word.empty() && s.compare(i, word.size(), word) == 0) {
          out += word;
          i += word.size();
          kept = true;
          break;
        }
      if (!kept) tok::append_lowercase(out, tok::next_char(s, i));
    }
    return out;
  }
  // Characters outside the vocabulary dropped, then whitespace stripped
  // from both ends (Python's str.strip).
  std::string kept_characters(const std::string& s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      const size_t start = i;
      tok::next_char(s, i);
      std::string c = s.substr(start, i - start);
      if (ids.count(c)) out += c;
    }
    size_t b = 0, e = out.size();
    while (b < e) {
      size_t j = b;
      if (!tok::is_whitespace(tok::next_char(out, j))) break;
      b = j;
    }
    while (e > b) {
      size_t k = e - 1;
      while (k > b && (static_cast<unsigned char>(out[k]) & 0xC0) == 0x80) --k;
      size_t j = k;
      if (!tok::is_whitespace(tok::next_char(out, j))) break;
      e = k;
    }
    return out.substr(b, e - b);
  }
};

Result<nlohmann::json> read_json(const fs::path& path) {
  ARCH_TRY(auto file, MappedFile::open(path.string()));
  return parse_json(file->text(), path.string());
}

}  // namespace

bool has_vits_files(const std::string& dir) {
  std::error_code ec;
  const fs::path d(dir);
  if (fs::exists(d / "tokenizer.json", ec) || !fs::exists(d / "vocab.json", ec)) return false;
  auto config = read_json(d / "tokenizer_config.json");
  return config.ok() && config->is_object() && config->value("tokenizer_class", "") == "VitsTokenizer";
}

Result<std::shared_ptr<const Tokenizer>> load_vits_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  const std::string vocab_path = (d / "vocab.json").string(), config_path = (d / "tokenizer_config.json").string();
  ARCH_TRY(nlohmann::json config, read_json(d / "tokenizer_config.json"));
  if (config.value("phonemize", false))
    return error(config_path + ": phonemize is true: this voice reads espeak phonemes, which Archetype does not make; "
                 "give its phoneme ids with --ids");
  ARCH_TRY(auto file, MappedFile::open(vocab_path));
  // Ordered as written: normalize_text tries the entries in that order.
  auto vocab = nlohmann::ordered_json::parse(file->text(), nullptr, /*allow_exceptions=*/false);
  if (vocab.is_discarded()) {
    ARCH_TRY(nlohmann::json checked, parse_json(file->text(), vocab_path));
    (void)checked;
  }
  if (!vocab.is_object() || vocab.empty()) return error(vocab_path + ": not an object of character -> id");
  ARCH_TRY_STATUS(tok::check_entries(vocab.size(), vocab_path, "the vocabulary's entries"));
  auto b = std::make_unique<VitsBackend>();
  for (auto& [token, id] : vocab.items()) {
    ARCH_TRY(const int32_t v, tok::token_id(nlohmann::json(id), vocab_path, "'" + tok::shown(token) + "'"));
    b->vocab.emplace_back(token, v);
    b->ids[token] = v;
    b->tokens[v] = token;
  }
  b->add_blank = config.value("add_blank", true);
  b->normalize = config.value("normalize", true);
  if (b->add_blank && !b->tokens.count(0)) return error(vocab_path + ": add_blank needs a token with id 0 (the blank)");
  b->source = vocab_path;
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(b)));
}

}  // namespace arch

#include "importer/text/tokenizer/marian_files.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <algorithm>
#include <map>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

class MarianBackend : public tok::Backend {
 public:
  sentencepiece::SentencePieceProcessor source_spm, target_spm;
  std::map<std::string, int32_t, std::less<>> ids;
  std::vector<std::string> tokens;  // by id ("" where none)
  int32_t unk = -1, pad = -1;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::string repaired;
    if (!tok::is_valid_utf8(text)) {
      repaired = tok::utf8_lossy(text);
      text = repaired;
    }
    std::vector<int32_t> out;
    // A language code opening the text (">>fra<< ...") is one token.
    if (text.rfind(">>", 0) == 0) {
      const size_t close = text.find("<<");
      if (close != std::string_view::npos) {
        if (auto it = ids.find(text.substr(0, close + 2)); it != ids.end()) {
          out.push_back(it->second);
          text.remove_prefix(close + 2);
        }
      }
    }
    std::vector<std::string> pieces;
    if (!source_spm.Encode(text, &pieces).ok()) pieces.clear();
    for (const std::string& p : pieces) {
      auto it = ids.find(p);
      out.push_back(it != ids.end() ? it->second : unk);
    }
    if (add_special_tokens && eos_id) out.push_back(*eos_id);
    return out;
  }

  std::string decode(std::span<const int32_t> in, bool skip_special_tokens) const override {
    std::vector<std::string> pieces;
    for (int32_t id : in) {
      if (id < 0 || size_t(id) >= tokens.size() || tokens[size_t(id)].empty()) continue;
      if (skip_special_tokens && (id == unk || id == pad || (eos_id && id == *eos_id))) continue;
      pieces.push_back(tokens[size_t(id)]);
    }
    std::string out;
    if (!target_spm.Decode(pieces, &out).ok()) return "";
    return out;
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    auto it = ids.find(token);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || size_t(id) >= tokens.size() || tokens[size_t(id)].empty()) return std::nullopt;
    return tokens[size_t(id)];
  }
  size_t vocab_size() const override { return tokens.size(); }
  std::vector<int32_t> special_ids() const override {
    std::vector<int32_t> s;
    for (int32_t id : {unk, pad, eos_id.value_or(-1)})
      if (id >= 0) s.push_back(id);
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
  }
  std::string kind() const override { return "SentencePiece"; }
};

Status load_spm(sentencepiece::SentencePieceProcessor& sp, const fs::path& path) {
  sentencepiece::util::Status status;
  try {
    status = sp.Load(path.string());
  } catch (const std::exception& e) {
    return error(path.string() + ": not a SentencePiece model (" + e.what() + ")");
  }
  if (!status.ok()) return error(path.string() + ": not a SentencePiece model (" + status.ToString() + ")");
  return {};
}

}  // namespace

bool has_marian_files(const std::string& dir) {
  std::error_code ec;
  const fs::path p(dir);
  return fs::is_regular_file(p / "source.spm", ec) && fs::is_regular_file(p / "target.spm", ec) &&
         fs::is_regular_file(p / "vocab.json", ec) && !fs::exists(p / "tokenizer.json", ec);
}

Result<std::shared_ptr<const Tokenizer>> load_marian_tokenizer(const std::string& dir) {
  const fs::path p(dir);
  auto b = std::make_unique<MarianBackend>();
  b->source = (p / "vocab.json").string();
  ARCH_TRY_STATUS(load_spm(b->source_spm, p / "source.spm"));
  ARCH_TRY_STATUS(load_spm(b->target_spm, p / "target.spm"));
  ARCH_TRY(auto file, MappedFile::open(b->source));
  ARCH_TRY(nlohmann::json vocab, parse_json(file->text(), b->source));
  if (!vocab.is_object()) return error(b->source + ": expected an object {piece: id}");
  ARCH_TRY_STATUS(tok::check_entries(vocab.size(), b->source, "the vocabulary (entries)"));
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    ARCH_TRY(int32_t id, tok::token_id(it.value(), b->source, "vocab entry '" + it.key() + "'"));
    if (size_t(id) >= b->tokens.size()) b->tokens.resize(size_t(id) + 1);
    if (!b->tokens[size_t(id)].empty())
      return error(b->source + ": id " + std::to_string(id) + " is both '" + b->tokens[size_t(id)] + "' and '" + it.key() + "'");
    b->tokens[size_t(id)] = it.key();
    b->ids.emplace(it.key(), id);
  }
  auto find = [&](const char* t) { auto it = b->ids.find(t); return it != b->ids.end() ? it->second : -1; };
  b->unk = find("<unk>"), b->pad = find("<pad>");
  if (find("</s>") >= 0) b->eos_id = find("</s>");
  if (b->unk < 0) return error(b->source + ": no '<unk>' entry, which MarianTokenizer needs");
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(b)));
}

}  // namespace arch

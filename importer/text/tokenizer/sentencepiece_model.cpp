// A lone tokenizer.model, run by libsentencepiece: SentencePiece's own
// normalization and segmentation, as HF's slow LlamaTokenizer (legacy) gets
// from it. add_special_tokens adds BOS / EOS as tokenizer_config.json's
// add_bos_token / add_eos_token say; by default LlamaTokenizer's (BOS
// only), or T5Tokenizer's (EOS only) for a model with no BOS piece (T5's
// spiece.model has none).
// Special tokens written in the text are text here, as in SentencePiece.
#include <sentencepiece_processor.h>

#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/spm_vocab.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

namespace {

class SpBackend : public Backend {
 public:
  sentencepiece::SentencePieceProcessor sp;
  bool add_bos = true, add_eos = false;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::string repaired;
    if (!is_valid_utf8(text)) {
      repaired = utf8_lossy(text);
      text = repaired;
    }
    std::vector<int> pieces;
    if (!sp.Encode(text, &pieces).ok()) pieces.clear();  // only fails on an unloaded model
    std::vector<int32_t> ids;
    ids.reserve(pieces.size() + 2);
    if (add_special_tokens && add_bos && sp.bos_id() >= 0) ids.push_back(sp.bos_id());
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    if (add_special_tokens && add_eos && sp.eos_id() >= 0) ids.push_back(sp.eos_id());
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::vector<int> kept;
    for (int32_t id : ids) {
      if (id < 0 || id >= sp.GetPieceSize()) continue;
      if (skip_special_tokens && (sp.IsControl(id) || sp.IsUnknown(id))) continue;
      kept.push_back(id);
    }
    std::string out;
    if (!sp.Decode(kept, &out).ok()) return "";
    return out;
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    int id = sp.PieceToId(token);
    if (id < 0 || id >= sp.GetPieceSize() || sp.IdToPiece(id) != token) return std::nullopt;  // unk stands for "absent"
    return id;
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || id >= sp.GetPieceSize()) return std::nullopt;
    return sp.IdToPiece(id);
  }
  size_t vocab_size() const override { return size_t(sp.GetPieceSize()); }
  std::vector<int32_t> special_ids() const override {
    std::vector<int32_t> ids;
    for (int id = 0; id < sp.GetPieceSize(); ++id)
      if (sp.IsControl(id) || sp.IsUnknown(id)) ids.push_back(id);
    return ids;
  }
  std::string kind() const override { return "SentencePiece"; }
};

}  // namespace

Result<std::unique_ptr<Backend>> sentencepiece_backend(const std::string& path, const nlohmann::json& config,
                                                       const std::string& config_source) {
  auto b = std::make_unique<SpBackend>();
  b->source = path;
  ARCH_TRY_STATUS(load_spm(b->sp, path));
  if (b->sp.bos_id() < 0) b->add_bos = false, b->add_eos = true;  // T5Tokenizer's
  if (config.is_object()) {
    for (auto [key, dst] : {std::pair{"add_bos_token", &b->add_bos}, std::pair{"add_eos_token", &b->add_eos}}) {
      auto it = config.find(key);
      if (it == config.end() || it->is_null()) continue;
      if (!it->is_boolean()) return error(config_source + ": '" + key + "' is not true or false");
      *dst = it->get<bool>();
    }
  }
  if (b->sp.bos_id() >= 0) b->bos_id = b->sp.bos_id();
  if (b->sp.eos_id() >= 0) b->eos_id = b->sp.eos_id();
  if (auto bos = config_token(config, "bos_token")) b->bos_id = b->token_to_id(*bos);
  if (auto eos = config_token(config, "eos_token")) b->eos_id = b->token_to_id(*eos);
  return std::unique_ptr<Backend>(std::move(b));
}

}  // namespace arch::tok

#include "importer/text/tokenizer/fairseq_spm_files.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "importer/text/tokenizer/spm_vocab.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

// fairseq's mBART language codes: mBART's 25, then mBART-50's 27 more.
constexpr const char* kCodes[] = {
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN", "hi_IN", "it_IT", "ja_XX", "kk_KZ",
    "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP", "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN", "af_ZA",
    "az_AZ", "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH", "mk_MK", "ml_IN", "mn_MN", "mr_IN", "pl_PL",
    "ps_AF", "pt_XX", "sv_SE", "sw_KE", "ta_IN", "te_IN", "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI"};

enum class Layout { XlmRoberta, MBart, MBart50 };

std::optional<Layout> layout_of(const nlohmann::json& config) {
  const std::string cls = config.is_object() ? config.value("tokenizer_class", "") : "";
  if (cls == "XLMRobertaTokenizer" || cls == "XLMRobertaTokenizerFast") return Layout::XlmRoberta;
  if (cls == "MBartTokenizer" || cls == "MBartTokenizerFast") return Layout::MBart;
  if (cls == "MBart50Tokenizer" || cls == "MBart50TokenizerFast") return Layout::MBart50;
  return std::nullopt;
}

class FairseqBackend : public tok::PieceVocabBackend {
 public:
  sentencepiece::SentencePieceProcessor spm;
  Layout layout = Layout::XlmRoberta;
  int32_t english = -1, first_code = 0;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::vector<int32_t> out;
    if (add_special_tokens && layout == Layout::XlmRoberta) out.push_back(*bos_id);
    if (add_special_tokens && layout == Layout::MBart50) out.push_back(english);
    append_ids(spm, text, out);
    if (add_special_tokens) out.push_back(*eos_id);
    if (add_special_tokens && layout == Layout::MBart) out.push_back(english);
    return out;
  }
  std::string decode(std::span<const int32_t> in, bool skip_special_tokens) const override {
    return decode_through(spm, in, skip_special_tokens);
  }

 protected:
  bool is_special(int32_t id) const override {
    return PieceVocabBackend::is_special(id) || (id >= first_code && id <= vocab.max_id());
  }
};

}  // namespace

bool has_fairseq_spm_files(const std::string& dir, const nlohmann::json& config) {
  std::error_code ec;
  const fs::path p(dir);
  return fs::is_regular_file(p / "sentencepiece.bpe.model", ec) && !fs::exists(p / "vocab.json", ec) &&
         !fs::exists(p / "tokenizer.json", ec) && layout_of(config).has_value();
}

Result<std::shared_ptr<const Tokenizer>> load_fairseq_spm_tokenizer(const std::string& dir, const nlohmann::json& config) {
  const fs::path p(dir);
  auto b = std::make_unique<FairseqBackend>();
  b->source = (p / "sentencepiece.bpe.model").string();
  ARCH_TRY_STATUS(tok::load_spm(b->spm, b->source));
  const auto layout = layout_of(config);
  if (!layout) return error(b->source + ": tokenizer_config.json names no fairseq SentencePiece tokenizer class");
  b->layout = *layout;
  // fairseq's four, then every piece but SentencePiece's own <unk>, <s>, </s> at its id + 1.
  auto put = [&](const std::string& t, int32_t id) {
    if (!b->vocab.find(t)) b->vocab.add(t, id);  // a piece spelled as a fairseq token keeps fairseq's id
  };
  put("<s>", 0), put("<pad>", 1), put("</s>", 2), put("<unk>", 3);
  const int32_t n = b->spm.GetPieceSize();
  for (int32_t id = 0; id < n; ++id)
    if (!b->spm.IsUnknown(id) && !b->spm.IsControl(id)) put(b->spm.IdToPiece(id), id + 1);
  int32_t next = n + 1;
  b->first_code = next;
  const size_t codes = b->layout == Layout::MBart ? 25 : b->layout == Layout::MBart50 ? std::size(kCodes) : 0;
  for (size_t i = 0; i < codes; ++i) put(kCodes[i], next++);
  put("<mask>", next);
  b->bos_id = 0, b->pad = 1, b->eos_id = 2, b->unk = 3;
  b->english = b->id_of("en_XX");
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(b)));
}

}  // namespace arch

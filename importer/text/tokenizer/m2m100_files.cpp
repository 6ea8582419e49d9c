#include "importer/text/tokenizer/m2m100_files.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <filesystem>

#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/spm_vocab.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

// fairseq's language codes of M2M-100, in the order their tokens are numbered.
constexpr const char* kLanguages[] = {
    "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs", "cy", "da", "de",
    "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr",
    "ht", "hu", "hy", "id", "ig", "ilo", "is", "it", "ja", "jv", "ka", "kk", "km", "kn", "ko", "lb", "lg",
    "ln", "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl", "no", "ns", "oc", "or",
    "pa", "pl", "ps", "pt", "ro", "ru", "sd", "si", "sk", "sl", "so", "sq", "sr", "ss", "su", "sv", "sw",
    "ta", "th", "tl", "tn", "tr", "uk", "ur", "uz", "vi", "wo", "xh", "yi", "yo", "zh", "zu"};

class M2M100Backend : public tok::PieceVocabBackend {
 public:
  sentencepiece::SentencePieceProcessor spm;
  int32_t english = -1;
  int32_t first_language = 0;                          // the language tokens' first id

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::vector<int32_t> out;
    if (add_special_tokens) out.push_back(english);
    append_ids(spm, text, out);
    if (add_special_tokens && eos_id) out.push_back(*eos_id);
    return out;
  }

  std::string decode(std::span<const int32_t> in, bool skip_special_tokens) const override {
    return decode_through(spm, in, skip_special_tokens);
  }

 protected:
  bool is_special(int32_t id) const override { return PieceVocabBackend::is_special(id) || id >= first_language; }
};

}  // namespace

bool has_m2m100_files(const std::string& dir) {
  std::error_code ec;
  const fs::path p(dir);
  return fs::is_regular_file(p / "sentencepiece.bpe.model", ec) && fs::is_regular_file(p / "vocab.json", ec) &&
         !fs::exists(p / "tokenizer.json", ec);
}

Result<std::shared_ptr<const Tokenizer>> load_m2m100_tokenizer(const std::string& dir) {
  const fs::path p(dir);
  auto b = std::make_unique<M2M100Backend>();
  b->source = (p / "vocab.json").string();
  ARCH_TRY_STATUS(tok::load_spm(b->spm, (p / "sentencepiece.bpe.model").string()));
  ARCH_TRY_STATUS(tok::read_vocab_file(b->source, b->vocab));
  // The language tokens follow vocab.json's entries (their count, as M2M100Tokenizer numbers them).
  const size_t first = b->vocab.size();
  b->first_language = int32_t(first);
  for (size_t i = 0; i < std::size(kLanguages); ++i) b->vocab.add(std::string("__") + kLanguages[i] + "__", int32_t(first + i));
  b->unk = b->id_of("<unk>"), b->pad = b->id_of("<pad>"), b->english = b->id_of("__en__");
  b->eos_id = b->vocab.find("</s>");
  b->bos_id = b->vocab.find("<s>");
  if (b->unk < 0) return error(b->source + ": no '<unk>' entry, which M2M100Tokenizer needs");
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(b)));
}

}  // namespace arch

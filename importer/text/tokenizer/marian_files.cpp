#include "importer/text/tokenizer/marian_files.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/spm_vocab.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

class MarianBackend : public tok::PieceVocabBackend {
 public:
  sentencepiece::SentencePieceProcessor source_spm, target_spm;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::vector<int32_t> out;
    // A language code opening the text (">>fra<< ...") is one token.
    if (text.rfind(">>", 0) == 0) {
      const size_t close = text.find("<<");
      if (close != std::string_view::npos) {
        if (auto id = vocab.find(text.substr(0, close + 2))) {
          out.push_back(*id);
          text.remove_prefix(close + 2);
        }
      }
    }
    append_ids(source_spm, text, out);
    if (add_special_tokens && eos_id) out.push_back(*eos_id);
    return out;
  }

  std::string decode(std::span<const int32_t> in, bool skip_special_tokens) const override {
    return decode_through(target_spm, in, skip_special_tokens);
  }
};

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
  ARCH_TRY_STATUS(tok::load_spm(b->source_spm, (p / "source.spm").string()));
  ARCH_TRY_STATUS(tok::load_spm(b->target_spm, (p / "target.spm").string()));
  ARCH_TRY_STATUS(tok::read_vocab_file(b->source, b->vocab));
  b->unk = b->id_of("<unk>"), b->pad = b->id_of("<pad>");
  b->eos_id = b->vocab.find("</s>");
  if (b->unk < 0) return error(b->source + ": no '<unk>' entry, which MarianTokenizer needs");
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(b)));
}

}  // namespace arch

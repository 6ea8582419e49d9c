// Finding and reading a checkpoint's tokenizer files.
#include <filesystem>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/clip_files.h"
#include "importer/text/tokenizer/fairseq_spm_files.h"
#include "importer/text/tokenizer/m2m100_files.h"
#include "importer/text/tokenizer/marian_files.h"
#include "importer/text/tokenizer/vits_vocab.h"

namespace arch {

namespace {

namespace fs = std::filesystem;

Result<nlohmann::json> read_config(const fs::path& path) {
  if (!fs::exists(path)) return nlohmann::json();
  ARCH_TRY(auto file, MappedFile::open(path.string()));
  ARCH_TRY(nlohmann::json config, parse_json(file->text(), path.string()));
  if (!config.is_object()) return error(path.string() + ": holds " + json_type_name(config) + ", expected an object");
  return config;
}

Result<std::shared_ptr<const Tokenizer>> from_backend(Result<std::unique_ptr<tok::Backend>> backend) {
  if (!backend.ok()) return backend.error();
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(backend).value()));
}

Result<std::shared_ptr<const Tokenizer>> load_json(const fs::path& path, const nlohmann::json& config) {
  ARCH_TRY(auto file, MappedFile::open(path.string()));
  return from_backend(tok::hf_backend(file->text(), path.string(), config));
}

}  // namespace

Result<std::shared_ptr<const Tokenizer>> load_tokenizer(const std::string& dir) {
  fs::path p(dir);
  std::error_code ec;
  if (!fs::exists(p, ec)) return error(dir + ": no such file or directory");
  fs::path folder = fs::is_directory(p, ec) ? p : p.parent_path();
  fs::path config_path = folder / "tokenizer_config.json";
  ARCH_TRY(nlohmann::json config, read_config(config_path));
  if (!fs::is_directory(p, ec)) {
    if (p.extension() == ".model") return from_backend(tok::sentencepiece_backend(p.string(), config, config_path.string()));
    return load_json(p, config);
  }
  if (fs::exists(p / "tokenizer.json")) return load_json(p / "tokenizer.json", config);
  if (has_clip_files(p.string())) return load_clip_tokenizer(p.string());  // CLIP's slow files (a pipeline's tokenizer/)
  if (has_marian_files(p.string())) return load_marian_tokenizer(p.string());  // opus-mt's source.spm, target.spm, vocab.json
  if (has_m2m100_files(p.string())) return load_m2m100_tokenizer(p.string());  // M2M-100's sentencepiece.bpe.model, vocab.json
  if (has_fairseq_spm_files(p.string(), config)) return load_fairseq_spm_tokenizer(p.string(), config);  // XLM-R's, mBART's
  if (has_vits_files(p.string())) return load_vits_tokenizer(p.string());  // a VITS voice's characters
  for (const char* name : {"tokenizer.model", "spiece.model"})  // spiece.model: T5's
    if (fs::exists(p / name))
      return from_backend(tok::sentencepiece_backend((p / name).string(), config, config_path.string()));
  return error(dir + ": no tokenizer.json, tokenizer.model, spiece.model, vocab.json + merges.txt, source.spm + target.spm + vocab.json, sentencepiece.bpe.model (+ vocab.json), or a VitsTokenizer's vocab.json");
}

Result<std::shared_ptr<const Tokenizer>> load_tokenizer_from(const ReadSideFile& read, const std::string& label) {
  ARCH_TRY(auto json_text, read("tokenizer.json"));
  ARCH_TRY(auto config_text, read("tokenizer_config.json"));
  if (!json_text) return error(label + ": this canonical model carries no tokenizer.json");
  nlohmann::json config;
  if (config_text) {
    ARCH_TRY(config, parse_json(*config_text, label + " (metadata file:tokenizer_config.json)"));
  }
  return tokenizer_from_json(*json_text, label + " (metadata file:tokenizer.json)", config);
}

Result<std::shared_ptr<const Tokenizer>> tokenizer_from_json(std::string_view text, const std::string& source,
                                                            const nlohmann::json& config) {
  return from_backend(tok::hf_backend(text, source, config));
}

}  // namespace arch

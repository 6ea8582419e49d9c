#include "importer/text/tokenizer/clip_files.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch {

namespace fs = std::filesystem;

bool has_clip_files(const std::string& dir) {
  std::error_code ec;
  const fs::path d(dir);
  return !fs::exists(d / "tokenizer.json", ec) && fs::exists(d / "vocab.json", ec) && fs::exists(d / "merges.txt", ec);
}

Result<std::shared_ptr<const Tokenizer>> load_clip_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  ARCH_TRY(auto vocab_file, MappedFile::open((d / "vocab.json").string()));
  ARCH_TRY(nlohmann::json vocab, parse_json(vocab_file->text(), (d / "vocab.json").string()));
  if (!vocab.is_object()) return error((d / "vocab.json").string() + ": not an object of token -> id");
  const char* bos = "<|startoftext|>";
  const char* eos = "<|endoftext|>";
  if (!vocab.contains(bos) || !vocab.contains(eos))
    return error((d / "vocab.json").string() + ": no " + bos + " or " + eos + " (not CLIP's vocabulary)");
  ARCH_TRY(const int32_t bos_id, tok::token_id(vocab[bos], (d / "vocab.json").string(), std::string("'") + bos + "'"));
  ARCH_TRY(const int32_t eos_id, tok::token_id(vocab[eos], (d / "vocab.json").string(), std::string("'") + eos + "'"));
  ARCH_TRY(auto merges_file, MappedFile::open((d / "merges.txt").string()));
  // Counted before they are copied into the tokenizer.json this builds.
  const std::string_view merges_text = merges_file->text();
  ARCH_TRY_STATUS(tok::check_entries(size_t(std::count(merges_text.begin(), merges_text.end(), '\n')),
                                     (d / "merges.txt").string(), "the merges (lines)"));
  nlohmann::json merges = nlohmann::json::array();
  std::istringstream lines{std::string(merges_file->text())};
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.rfind("#version", 0) == 0)) continue;
    if (line.find(' ') == std::string::npos)
      return error((d / "merges.txt").string() + ":" + std::to_string(n) + ": a merge is two tokens, got '" +
                   tok::shown(line) + "'");
    merges.push_back(line);
  }
  nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array({
                           {{"id", bos_id}, {"content", bos}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", true}, {"special", true}},
                           {{"id", eos_id}, {"content", eos}, {"single_word", false}, {"lstrip", false}, {"rstrip", false}, {"normalized", true}, {"special", true}},
                       })},
      {"normalizer", {{"type", "Sequence"},
                      {"normalizers", nlohmann::json::array({{{"type", "NFC"}},
                                                             {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
                                                             {{"type", "Lowercase"}}})}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         nlohmann::json::array(
             {{{"type", "Split"},
               {"pattern", {{"Regex", "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+"}}},
               {"behavior", "Removed"},
               {"invert", true}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}})}}},
      {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {eos, eos_id}}, {"cls", {bos, bos_id}},
                          {"trim_offsets", false}, {"add_prefix_space", false}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", eos}, {"continuing_subword_prefix", ""},
                 {"end_of_word_suffix", "</w>"}, {"fuse_unk", false}, {"byte_fallback", false},
                 {"vocab", vocab}, {"merges", merges}}}};
  nlohmann::json config = nullptr;
  std::error_code ec;
  if (fs::exists(d / "tokenizer_config.json", ec)) {
    ARCH_TRY(auto cf, MappedFile::open((d / "tokenizer_config.json").string()));
    ARCH_TRY(config, parse_json(cf->text(), (d / "tokenizer_config.json").string()));
  }
  return tokenizer_from_json(j.dump(), (d / "vocab.json").string() + " + merges.txt (CLIP)", config);
}

}  // namespace arch

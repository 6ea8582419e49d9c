// archrun translate: text through a translation or summarisation
// encoder-decoder (engine/runtime/seq2seq.h): -p TEXT, or each line of
// stdin as a sentence, one line out per line in.
#include <cctype>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "engine/runtime/seq2seq.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

Result<int32_t> language_token(const Tokenizer& tok, const std::string& lang) {
  // M2M-100's __fr__, Marian's >>fra<<, mBART-50's fr_XX, or the name itself.
  const std::vector<std::string> names = {"__" + lang + "__", ">>" + lang + "<<", lang, lang + "_XX"};
  for (const std::string& n : names)
    if (auto id = tok.token_to_id(n)) return *id;
  std::string tried;
  for (const std::string& n : names) tried += (tried.empty() ? "" : ", ") + n;
  return error("language '" + lang + "': the tokenizer has none of the tokens " + tried);
}

int run_translate(const TranslateArgs& a) {
  auto tok = open_tokenizer(a.common.model);
  if (!tok.ok()) return fail(tok.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  Seq2SeqOptions o = a.search;
  // The target language: Marian's multilingual models read >>xx<< before the
  // text; the others generate its token first.
  std::optional<int32_t> target_prefix;
  if (!a.target_lang.empty()) {
    auto id = language_token(**tok, a.target_lang);
    if (!id.ok()) return fail(id.error());
    if ((**tok).id_to_token(*id).rfind(">>", 0) == 0) target_prefix = *id;
    else o.forced_bos_token_id = *id;
  }
  std::optional<int32_t> source_prefix;
  if (!a.source_lang.empty()) {
    auto id = language_token(**tok, a.source_lang);
    if (!id.ok()) return fail(id.error());
    source_prefix = *id;
  }
  auto plan = seq2seq_plan(**m, o);
  if (!plan.ok()) return fail(plan.error());
  // A tokenizer that marks every text with its default source language
  // (M2M-100's __en__ and mBART-50's en_XX first, mBART's en_XX last) has
  // that token replaced; others get the language first.
  auto is_language = [&](int32_t id) {
    const std::string t = (**tok).id_to_token(id);
    const bool fairseq = t.size() > 4 && t.rfind("__", 0) == 0 && t.compare(t.size() - 2, 2, "__") == 0;
    const bool mbart = t.size() == 5 && t[2] == '_' && std::islower((unsigned char)t[0]) && std::islower((unsigned char)t[1]) &&
                       std::isupper((unsigned char)t[3]) && std::isupper((unsigned char)t[4]);
    return fairseq || mbart;
  };
  auto one = [&](const std::string& text) -> int {
    std::vector<int32_t> ids = (**tok).encode(text, true);
    if (target_prefix) ids.insert(ids.begin(), *target_prefix);
    if (source_prefix && !ids.empty() && is_language(ids.front())) ids.front() = *source_prefix;
    else if (source_prefix && !ids.empty() && is_language(ids.back())) ids.back() = *source_prefix;
    else if (source_prefix) ids.insert(ids.begin(), *source_prefix);
    auto r = seq2seq_generate(**m, ids, *plan);
    if (!r.ok()) return fail(r.error());
    const std::string out = (**tok).decode(r->tokens, /*skip_special_tokens=*/true);
    if (a.json)
      std::printf("%s\n", nlohmann::json{{"text", out}, {"tokens", r->tokens}, {"score", r->score}, {"stop", r->stop_reason}}.dump().c_str());
    else
      std::printf("%s\n", out.c_str());
    std::fflush(stdout);
    return 0;
  };
  if (!a.prompt.empty()) return one(a.prompt);
  // One sentence per line of stdin, answered line by line (a pipe sees each as it is done).
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      std::printf("\n");
      continue;
    }
    if (int rc = one(line)) return rc;
  }
  return 0;
}

}  // namespace arch::cli

// archrun translate: text through a translation or summarisation
// encoder-decoder (engine/runtime/seq2seq.h): -p TEXT, or each line of
// stdin as a sentence, decoded --batch at a time (engine/runtime/
// seq2seq_batch.h), one line out per line in.
#include <cctype>
#include <cstdio>
#include <deque>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "engine/runtime/seq2seq.h"
#include "engine/runtime/seq2seq_batch.h"
#include "tools/archrun/commands.h"
#include "tools/archrun/stdin_lines.h"

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
  auto input_ids = [&](const std::string& text) {
    std::vector<int32_t> ids = (**tok).encode(text, true);
    if (target_prefix) ids.insert(ids.begin(), *target_prefix);
    if (source_prefix && !ids.empty() && is_language(ids.front())) ids.front() = *source_prefix;
    else if (source_prefix && !ids.empty() && is_language(ids.back())) ids.back() = *source_prefix;
    else if (source_prefix) ids.insert(ids.begin(), *source_prefix);
    return ids;
  };
  auto line_of = [&](const Seq2SeqResult& r) {
    const std::string out = (**tok).decode(r.tokens, /*skip_special_tokens=*/true);
    if (!a.json) return out;
    return nlohmann::json{{"text", out}, {"tokens", r.tokens}, {"score", r.score}, {"stop", r.stop_reason}}.dump();
  };
  auto one = [&](const std::string& text) -> int {
    auto r = seq2seq_generate(**m, input_ids(text), *plan);
    if (!r.ok()) return fail(r.error());
    std::printf("%s\n", line_of(*r).c_str());
    std::fflush(stdout);
    return 0;
  };
  if (!a.prompt.empty()) {
    if (a.batch_given) return fail(error("--batch decodes lines of stdin together; -p is one sentence"));
    return one(a.prompt);
  }
  // One sentence per line of stdin, up to --batch of them decoded together;
  // the lines out in the order of the lines in, each as soon as those
  // before it are out (a pipe sees each as it is done). Only the lines not
  // yet out are kept.
  StdinLines lines;
  std::deque<std::optional<std::string>> waiting;   // the lines out from line `printed` on, once done
  std::unordered_map<size_t, size_t> line_of_input;  // an input in flight: its line
  size_t printed = 0, read = 0, given = 0;
  auto flush = [&] {
    for (; !waiting.empty() && waiting.front(); ++printed) {
      std::printf("%s\n", waiting.front()->c_str());
      waiting.pop_front();
    }
    std::fflush(stdout);
  };
  auto blank = [](const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; };
  if (a.batch > 1) {
    bool asked = false;
    auto next = [&](bool idle) -> Result<std::optional<std::vector<int32_t>>> {
      asked = true;
      while (true) {
        flush();
        auto line = lines.next(idle);
        if (!line) return std::optional<std::vector<int32_t>>{};
        const size_t at = read++;
        if (blank(*line)) {  // a blank line stays blank
          waiting.emplace_back("");
          continue;
        }
        waiting.emplace_back();
        line_of_input[given++] = at;
        return std::optional<std::vector<int32_t>>{input_ids(*line)};
      }
    };
    auto done = [&](size_t k, Seq2SeqResult r) -> Status {
      const auto it = line_of_input.find(k);
      if (it == line_of_input.end()) return error("input " + std::to_string(k) + " was never given");
      waiting[it->second - printed] = line_of(r);
      line_of_input.erase(it);
      flush();
      return {};
    };
    Status batched = seq2seq_generate_batch(**m, *plan, a.batch, next, done);
    if (batched.ok()) {
      flush();
      return lines.fault().empty() ? 0 : fail(error(lines.fault()));
    }
    if (asked) return fail(batched.error());
    // A model whose decoder cannot run several sequences in one call: one
    // sentence after another, said once on stderr.
    std::fprintf(stderr, "note: one sentence at a time: %s\n", batched.error().message.c_str());
  }
  while (auto line = lines.next(true)) {
    if (blank(*line)) {
      std::printf("\n");
      continue;
    }
    if (int rc = one(*line)) return rc;
  }
  return lines.fault().empty() ? 0 : fail(error(lines.fault()));
}

}  // namespace arch::cli

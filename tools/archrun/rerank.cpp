// archrun rerank: passages ordered by a cross-encoder's relevance to a
// query (engine/runtime/text_encoder.h).
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "engine/runtime/text_encoder.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// One passage per non-blank line of `path` ("-": stdin).
Result<std::vector<std::string>> read_passages(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return error(path + ": cannot be read");
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<std::string> passages;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) passages.push_back(line);
  }
  if (passages.empty()) return error(path + ": no passages (one per line)");
  return passages;
}

}  // namespace

int run_rerank(const RerankArgs& a) {
  auto passages = read_passages(a.passages);
  if (!passages.ok()) return fail(passages.error());
  auto tok = open_tokenizer(a.common.model);
  if (!tok.ok()) return fail(tok.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  auto ranked = rerank(**m, **tok, a.query, *passages);
  if (!ranked.ok()) return fail(ranked.error());
  const size_t n = a.top_n > 0 ? std::min(ranked->size(), size_t(a.top_n)) : ranked->size();
  if (a.json) {
    nlohmann::json results = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i) {
      const RankedPassage& r = (*ranked)[i];
      results.push_back({{"index", r.index}, {"relevance_score", r.relevance_score}, {"logits", r.logits},
                         {"document", (*passages)[r.index]}});
    }
    std::printf("%s\n", nlohmann::json{{"query", a.query}, {"results", results}}.dump().c_str());
    return 0;
  }
  for (size_t i = 0; i < n; ++i) {
    const RankedPassage& r = (*ranked)[i];
    std::string text = (*passages)[r.index];
    if (text.size() > 100) {  // cut at a character's start
      size_t cut = 97;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
      text = text.substr(0, cut) + "...";
    }
    std::printf("%zu\t%.6f\t#%zu\t%s\n", i + 1, double(r.relevance_score), r.index, text.c_str());
  }
  return 0;
}

}  // namespace arch::cli

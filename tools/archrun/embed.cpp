// archrun embed: a sentence embedding, the encoder's token states pooled as
// the model card says (engine/runtime/text_encoder.h), or as --pooling says.
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/runtime/text_encoder.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

// The model card's pooling, where the model is a checkpoint folder.
Result<PoolingCard> model_card_pooling(const std::string& model) {
  std::error_code ec;
  if (!std::filesystem::is_directory(model, ec)) return PoolingCard{};
  auto card = read_pooling_card(side_files_in(model));
  if (!card.ok()) return error(model + "/" + card.error().message);
  return card;
}

int run_embed(const EmbedArgs& a) {
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the text as -p TEXT or as --ids 101,2023,102 (one of them)"));
  auto card = model_card_pooling(a.common.model);
  if (!card.ok()) return fail(card.error());
  Pooling pooling = card->pooling;
  if (!a.pooling.empty()) {
    auto p = parse_pooling(a.pooling);
    if (!p.ok()) return fail(p.error());
    pooling = *p;
  }
  const bool normalize = a.normalize || card->normalize;
  Result<std::vector<int32_t>> ids = std::vector<int32_t>{};
  if (!a.prompt.empty()) {
    auto tok = open_tokenizer(a.common.model);
    if (!tok.ok()) return fail(tok.error());
    ids = (*tok)->encode(a.prompt, true);  // [CLS] ... [SEP], as the encoder was trained
  } else {
    ids = parse_ids(a.ids);
  }
  if (!ids.ok()) return fail(ids.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  auto vec = embed_ids(**m, *ids, pooling, normalize);
  if (!vec.ok()) return fail(vec.error());
  if (a.json) {
    nlohmann::json j;
    j["embedding"] = *vec;
    j["dim"] = vec->size();
    j["pooling"] = pooling_name(pooling);
    j["normalized"] = normalize;
    if (a.pooling.empty() && !card->source.empty()) j["pooling_from"] = card->source;
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (size_t i = 0; i < vec->size(); ++i) std::printf("%s%.7g", i ? " " : "", (*vec)[i]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace arch::cli

// A checkpoint whose text model sits inside a wrapper (Gemma 3's
// Gemma3ForConditionalGeneration: config.text_config, tensors under
// language_model.model.* or model.language_model.*): seen as the text model
// alone, so the text family's template runs it unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "importer/checkpoint/checkpoint.h"

namespace arch {

struct Unwrap {
  std::string config_key;  // "text_config": becomes the config (other top-level keys fill gaps)
  std::vector<std::pair<std::string, std::string>> prefixes;  // tensor name prefix → replacement
  // The inner config class's defaults: transformers writes a nested config
  // sparsely (only what differs from its class's defaults).
  nlohmann::json defaults = nlohmann::json::object();
};

// Rewrites `ckpt` in place: the config from `config_key`, tensors renamed by
// the first matching prefix (tensors matching none, e.g. a vision tower's,
// keep their names and stay unused). Two tensors mapped onto one name is an
// error.
Status unwrap(Checkpoint& ckpt, const Unwrap& u);

}  // namespace arch

// Dispatch: which family template a checkpoint runs on, and why.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "importer/wrapped_model.h"

namespace arch {

struct FamilyEntry {
  std::string name;                      // LlamaStyle
  std::string template_path;             // absolute: <families>/llama.arch
  std::vector<std::string> model_types;
  std::vector<std::string> signature;    // tensors whose presence identifies it
  // Wrapper model types whose inner text model is this family
  // ([[family.wrapper]] model_type, config, tensor_prefixes).
  std::map<std::string, Unwrap> wrappers;
  // Tensor name prefixes every checkpoint of the family is read through
  // (BertForMaskedLM's "bert." and BertModel's bare names alike).
  Unwrap tensor_names;
};

struct Registry {
  std::string path;
  std::vector<FamilyEntry> families;
};

// Reads <families_dir>/registry.toml.
Result<Registry> load_registry(const std::string& families_dir);

struct DispatchResult {
  const FamilyEntry* family = nullptr;
  std::string reason;            // one line: how it was chosen
  const Unwrap* unwrap = nullptr;  // set when the checkpoint wraps the family's model
};

// seeds/004's priority: model_type, then tensor presence, then refusal.
Result<DispatchResult> dispatch(const Registry& reg, const nlohmann::json& config,
                                const std::function<bool(const std::string&)>& has_tensor);

// The checkpoint rewritten to the view its family reads: a wrapper's inner
// model (its nested config and tensor prefixes), then the family's own
// tensor prefixes.
Status apply_views(Checkpoint& ckpt, const DispatchResult& d);

// --families, else $ARCHETYPE_FAMILIES, else the source tree's families/.
std::string families_dir(const std::string& override_dir = "");

}  // namespace arch

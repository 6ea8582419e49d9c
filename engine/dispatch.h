// Dispatch: which family template a checkpoint runs on, and why.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace arch {

struct FamilyEntry {
  std::string name;                      // LlamaStyle
  std::string template_path;             // absolute: <families>/llama.arch
  std::vector<std::string> model_types;
  std::vector<std::string> signature;    // tensors whose presence identifies it
};

struct Registry {
  std::string path;
  std::vector<FamilyEntry> families;
};

// Reads <families_dir>/registry.toml.
Result<Registry> load_registry(const std::string& families_dir);

struct DispatchResult {
  const FamilyEntry* family = nullptr;
  std::string reason;  // one line: how it was chosen
};

// seeds/004's priority: model_type, then tensor presence, then refusal.
Result<DispatchResult> dispatch(const Registry& reg, const nlohmann::json& config,
                                const std::function<bool(const std::string&)>& has_tensor);

// --families, else $ARCHETYPE_FAMILIES, else the source tree's families/.
std::string families_dir(const std::string& override_dir = "");

}  // namespace arch

// Dispatch: which family template a checkpoint runs on, and why.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/checkpoint/wrapped_model.h"

namespace arch {

// Checkpoint tensors no graph of the family reads, and why: a wrapper's
// (`unread = [["vision_tower", "why"]]` under [[family.wrapper]]), written
// as a template's `unread` declarations are (segments a prefix of the
// tensor's; `*` and `{i}` match any one).
struct UnreadNote {
  std::string pattern;
  std::string reason;
};

// A [[family.wrapper]]: how its checkpoints are read as the family's, and
// what it holds beside the family's model (its image tower).
struct Wrapper {
  Unwrap unwrap;
  std::vector<UnreadNote> unread;
};

struct FamilyEntry {
  std::string name;                      // LlamaStyle
  std::string template_path;             // absolute: <families>/llama.arch
  std::vector<std::string> model_types;
  // config.json's architectures[0] values it runs whatever the model_type
  // says (T5EncoderModel: a "t5" without its decoder).
  std::vector<std::string> architectures;
  std::vector<std::string> signature;    // tensors whose presence identifies it
  std::vector<std::string> absent;       // tensors whose presence rules it out ("!name" in the signature)
  // Wrapper model types whose inner text model is this family
  // ([[family.wrapper]] model_type, config, tensor_prefixes, unread).
  std::map<std::string, Wrapper> wrappers;
  // Tensor name prefixes every checkpoint of the family is read through
  // (BertForMaskedLM's "bert." and BertModel's bare names alike).
  Unwrap tensor_names;
};

struct Registry {
  std::string path;
  std::vector<FamilyEntry> families;
  // Config fields of every Hugging Face config (generation defaults,
  // dropouts, ids, bookkeeping) that change nothing a template computes:
  // not a tell of another architecture when a template leaves them unread.
  std::vector<std::string> generic_config_fields;
};

// Reads <families_dir>/registry.toml.
Result<Registry> load_registry(const std::string& families_dir);

struct DispatchResult {
  const FamilyEntry* family = nullptr;
  std::string reason;            // one line: how it was chosen
  const Unwrap* unwrap = nullptr;  // set when the checkpoint wraps the family's model
  bool by_signature = false;       // its model_type is not listed: only its tensors chose
  std::vector<UnreadNote> unread = {};  // the wrapper's tensors the family leaves unread (the registry's)
};

// seeds/004's priority: model_type, then tensor presence, then refusal.
Result<DispatchResult> dispatch(const Registry& reg, const nlohmann::json& config,
                                const std::function<bool(const std::string&)>& has_tensor);

// The config's model_type ("" where it is absent or not a string).
std::string model_type_of(const nlohmann::json& config);

// The family `name` names (a family's name, or the file name of one of its
// templates where a family has several), as --force-family asks.
Result<DispatchResult> dispatch_forced(const Registry& reg, const std::string& name);

// The config fields a template leaves unread: those of `config` (top level)
// that are neither among `read` nor generic (the registry's list).
std::vector<std::string> unread_config_fields(const nlohmann::json& config, const std::vector<std::string>& read,
                                              const Registry* reg);

// The checkpoint rewritten to the view its family reads: a wrapper's inner
// model (its nested config and tensor prefixes), then the family's own
// tensor prefixes.
Status apply_views(Checkpoint& ckpt, const DispatchResult& d);

// --families, else $ARCHETYPE_FAMILIES, else the source tree's families/.
std::string families_dir(const std::string& override_dir = "");
// The source tree's families/, whatever the environment says.
std::string built_in_families_dir();

}  // namespace arch

// How a GGUF architecture's metadata and tensor names read as a Hugging
// Face checkpoint's: one data file per architecture in families/gguf/
// (llama.toml, qwen2.toml, ...), never code per family.
//
//   ARCH_TRY(GgufNameMap map, load_gguf_name_map(dir, "llama"));
//   map.hf_name("blk.3.attn_q.weight")  // "model.layers.3.self_attn.q_proj.weight"
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/checkpoint/gguf.h"

namespace arch {

// How one config field is read: a metadata key's value, less another's
// (`minus`), times a number (`times`) or another key's value (`times_key`),
// over another key's value (`over_key`), or looked up in `values` (an enum's
// numbers as the strings transformers uses). `values` may be keyed by
// several metadata keys' values joined with "," (an absent key: empty; "*":
// any value present).
struct GgufConfigField {
  std::string field;  // "a.b": nested
  std::vector<std::string> keys;  // one, or several for `values`
  std::string minus, times_key, over_key;  // less, times, over another key's value
  double times = 1;
  std::map<std::string, nlohmann::json> values;
};

struct GgufNameMap {
  std::string path;  // the .toml it was read from
  std::string architecture, model_type;
  std::vector<std::string> architectures;
  // Another model type where a metadata key is present (a "llama" file with
  // experts is Mixtral): the first variant whose key the file has.
  struct Variant {
    std::string if_key, model_type;
    std::vector<std::string> architectures;
  };
  std::vector<Variant> variants;
  std::vector<GgufConfigField> config;
  std::map<std::string, nlohmann::json> none;               // field -> the value that means "absent"
  std::vector<std::pair<std::string, std::string>> tensors;  // GGUF name -> HF name ({i}: a number)
  // HF name -> its rows joined, per head, from GGUF tensors (written with a
  // trailing "^T" in the map: each head's matrix stored transposed), the
  // heads counted by a config field: DeepSeek's kv_b_proj from llama.cpp's
  // k_b and v_b.
  struct Part {
    std::string name;  // GGUF pattern, "{i}" the block
    bool transposed = false;
  };
  struct Joined {
    std::string name, heads;
    std::vector<Part> parts;
  };
  std::vector<Joined> joined;
  struct PartOf {
    size_t entry, index;
    std::string block;  // the number "{i}" matched
  };
  // Which joined entry's part a GGUF tensor is, and of which block.
  std::optional<PartOf> joined_part(const std::string& gguf_name) const;
  std::vector<std::pair<std::string, std::string>> rows_interleaved;  // GGUF name -> config field of heads
  std::vector<std::pair<std::string, double>> shifted;  // GGUF name -> what the converter added to each value
  std::vector<std::string> transposed;                  // GGUF names stored [in, out] where Hugging Face has [out, in]
  std::string rope_freqs;  // a tensor of RoPE frequency divisors standing for llama3 rope_scaling
  std::vector<std::pair<std::string, std::string>> config_tensors;  // config field -> a tensor whose values it lists
  std::vector<std::pair<std::string, std::string>> requires_field;  // an object field -> the field it is nothing without
  // Whether the GGUF tensor is read into the config rather than the checkpoint.
  bool read_into_config(const std::string& gguf_name) const;
  // Config fields no GGUF key holds (llama.cpp's fixed values); a nested
  // one only where its object is there.
  nlohmann::json defaults = nlohmann::json::object();
  std::vector<std::pair<std::string, std::string>> same_as;  // field -> the field it equals where the file is silent

  // The Hugging Face name of a GGUF tensor, or nullopt where no entry names it.
  std::optional<std::string> hf_name(const std::string& gguf_name) const;
  // The config field counting the heads whose rows llama.cpp interleaved in
  // this GGUF tensor, or nullopt where it did not.
  std::optional<std::string> interleaved_heads(const std::string& gguf_name) const;
  // What llama.cpp's converter added to this tensor's values (Gemma's
  // norms: 1), or 0.
  double shift(const std::string& gguf_name) const;
  bool is_transposed(const std::string& gguf_name) const;
};

// `pattern` with each "{i}" (a block's number) or "{e}" (an expert's) filled in.
std::string fill_block(const std::string& pattern, const std::string& block);
std::string fill_expert(const std::string& pattern, int64_t expert);

// families/gguf (ARCHETYPE_FAMILIES/gguf where that is set): where the maps are.
std::string default_gguf_maps_dir();

// <dir>/<architecture>.toml; an architecture with no map is refused naming
// those there are.
Result<GgufNameMap> load_gguf_name_map(const std::string& dir, const std::string& architecture);

// config.json as the map reads it from the file's metadata: model_type,
// architectures, every mapped key present, and what any GGUF says alike
// (bos/eos ids from tokenizer.ggml.*, the vocabulary's size where the
// architecture key is absent, tied embeddings where output.weight is),
// then the map's defaults for fields still unset.
// The map's rope_freqs tensor (Llama 3.1's divisors) becomes rope_scaling
// (gguf_rope_freqs.h); divisors no rope_scaling reproduces are an error.
Result<nlohmann::json> gguf_config(const GgufNameMap& map, const GgufFile& file);

}  // namespace arch

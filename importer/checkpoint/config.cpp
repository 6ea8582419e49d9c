#include "importer/checkpoint/config.h"

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"

namespace arch {

namespace {

using json = nlohmann::json;

bool absent(const json& config, const char* key) {
  return !config.contains(key) || config[key].is_null();
}

}  // namespace

void normalize_config(json& config) {
  if (!config.is_object()) return;
  // transformers 4.56 renamed torch_dtype to dtype; older files have only the former.
  if (absent(config, "dtype") && !absent(config, "torch_dtype")) config["dtype"] = config["torch_dtype"];

  // transformers 5.x folds rope_theta, rope_scaling and partial_rotary_factor
  // into rope_parameters.
  // A per-layer-type form ({"full_attention": {...}, ...}, Gemma 4) has no
  // top-level rope_theta and is left for its template to read.
  auto rope = config.find("rope_parameters");
  if (rope == config.end() || !rope->is_object()) return;
  json params = *rope;  // a copy: inserting below may move the element
  for (const char* key : {"rope_theta", "partial_rotary_factor"})
    if (absent(config, key) && params.contains(key) && !params[key].is_null()) config[key] = params[key];
  auto type = params.find("rope_type");
  if (type != params.end() && type->is_string() && *type != "default" && absent(config, "rope_scaling"))
    config["rope_scaling"] = params;
}

Result<json> read_config(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  ARCH_TRY(json config, parse_json(file->text(), path));
  if (!config.is_object())
    return error(path + ": expected a JSON object at the top level, found " + json_type_name(config));
  normalize_config(config);
  return config;
}

}  // namespace arch

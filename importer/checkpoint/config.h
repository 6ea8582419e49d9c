// A checkpoint's config.json, read as is and then normalised so that the
// spellings of different transformers versions read alike:
//   torch_dtype (<= 4.5x)          -> also "dtype"
//   rope_parameters (5.x)          -> also "rope_theta", and "rope_scaling"
//                                     when the rope type is not "default"
// Everything else is left untouched; null values stay null (the template
// layer treats null as absent).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch {

// Errors name the path: missing file, invalid JSON (with line and column),
// a top level that is not an object.
Result<nlohmann::json> read_config(const std::string& path);

// The normalisation read_config applies; adds keys, never overwrites a
// non-null one.
void normalize_config(nlohmann::json& config);

}  // namespace arch

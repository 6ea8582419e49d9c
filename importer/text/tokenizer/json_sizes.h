// Reading tokenizer.json within the limits, while it is parsed: no array or
// object in it may hold more than tokenizer_entries entries (a merges list
// of a hundred million is refused as it is read, not once gigabytes of it
// are in memory) and nesting stays within json_depth (engine/core/limits.h).
#pragma once

#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "importer/text/tokenizer/components.h"

namespace arch::tok {

// A repeated key keeps its last value, as `tokenizers` (serde) reads it.
// Text that is not JSON gives a discarded value: the caller explains it with
// core's checked parser.
Result<json> parse_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace arch::tok

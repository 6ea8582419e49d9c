// How a text encoder's token states become one embedding, as its model card
// says: a sentence-transformers checkpoint's modules.json names a Pooling
// module (whose folder's config.json sets pooling_mode_*) and perhaps a
// Normalize module. Without one: the mean, not normalised.
#pragma once

#include <string>

#include "engine/core/error.h"
#include "importer/text/side_files.h"

namespace arch {

enum class Pooling { Mean, Cls, Max, LastToken, Pooler };

struct PoolingCard {
  Pooling pooling = Pooling::Mean;
  bool normalize = false;
  std::string source;  // the file that said so; empty: nothing did
};

// Errors name the file and the field (a mode this runtime does not pool by,
// several modes at once, a module path outside the checkpoint).
Result<PoolingCard> read_pooling_card(const ReadSideFile& read);

// "mean", "cls", "max", "last", "pooler" (the model's own pooler output).
Result<Pooling> parse_pooling(const std::string& name);
const char* pooling_name(Pooling p);

}  // namespace arch

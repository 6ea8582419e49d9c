// Reading a model's vocabulary within the limit tokenizer_entries
// (engine/core/limits.h). The size of every list in tokenizer.json is held to it as
// the file is parsed (json_sizes.h); here every id is too, since an id sizes
// the id -> token table (Vocab keeps one slot per id up to the largest).
// Messages name the file, the spot and the entry, with long strings cut
// short.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/vocab.h"

namespace arch::tok {

// tokenizer_entries: a list of `n` entries is about to be read (files not
// parsed by parse_tokenizer_json); `what` names it ("the merges (lines)").
Status check_entries(size_t n, const std::string& where, const std::string& what);

// An id read from the file: an integer >= 0 whose table (id + 1 slots)
// stays within tokenizer_entries. `what` names its owner ("vocab entry 'x'").
Result<int32_t> token_id(const json& id, const std::string& where, const std::string& what);

// The model's "vocab": an object {token: id}; two tokens with one id are an
// error naming both.
Status read_vocab_map(const json& model, const std::string& where, Vocab& vocab);
// The same for the object itself (a slow tokenizer's vocab.json).
Status read_vocab_object(const json& object, const std::string& where, Vocab& vocab);

// A token or line for a message: at most 60 bytes of it (a hostile file's
// strings can be megabytes long).
std::string shown(std::string_view s);

}  // namespace arch::tok

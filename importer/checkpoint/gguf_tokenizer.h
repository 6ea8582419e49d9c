// A GGUF file's tokenizer (tokenizer.ggml.*) written as the Hugging Face
// files that say the same: tokenizer.json and tokenizer_config.json, so one
// tokenizer implementation reads every format.
//   "llama" (SentencePiece BPE with scores): a byte-fallback BPE whose merges
//           are every split of a piece into two pieces, ranked by the
//           merged piece's score (what SentencePiece's BPE applies), with
//           "▁" for spaces and a leading one (add_space_prefix);
//   "gpt2"  (byte-level BPE with merges): the pieces and merges as given,
//           and the pre-tokenizer the file's tokenizer.ggml.pre names
//           (families/gguf/pretokenizers.toml).
// Other models (bert's WordPiece, rwkv, t5's Unigram) are refused by name.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/checkpoint/gguf.h"

namespace arch {

// `maps_dir`: families/gguf, where pretokenizers.toml is.
Result<std::string> gguf_tokenizer_json(const GgufFile& file, const std::string& maps_dir);
// bos/eos/unk tokens, add_bos_token / add_eos_token, chat_template.
Result<nlohmann::json> gguf_tokenizer_config(const GgufFile& file);

}  // namespace arch

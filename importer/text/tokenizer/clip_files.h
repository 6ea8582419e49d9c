// CLIP's tokenizer as its slow files hold it (vocab.json + merges.txt, as
// a Stable Diffusion pipeline's tokenizer/ folder keeps them): the
// tokenizer.json transformers' CLIPTokenizerFast conversion makes of them
// (NFC, whitespace runs to one space, lower-casing; CLIP's split pattern;
// byte-level BPE with "</w>" closing each word; <|startoftext|> and
// <|endoftext|> around), read by the same loader as any tokenizer.json.
#pragma once

#include <memory>
#include <string>

#include "engine/core/error.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

// Whether `dir` holds CLIP's slow files and no tokenizer.json.
bool has_clip_files(const std::string& dir);
Result<std::shared_ptr<const Tokenizer>> load_clip_tokenizer(const std::string& dir);

}  // namespace arch

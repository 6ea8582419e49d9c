// VITS' character tokenizer (transformers' VitsTokenizer, as MMS-TTS voices
// ship it: vocab.json of characters, tokenizer_config.json with add_blank,
// normalize, phonemize): the text lower-cased where a character is not in
// the vocabulary as written, every character outside it dropped, the ends
// stripped of whitespace, one id per character, and with add_blank the
// blank (id 0's token) around and between them.
#pragma once

#include <memory>
#include <string>

#include "engine/core/error.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

// Whether `dir` holds a VitsTokenizer's files (vocab.json, and a
// tokenizer_config.json naming VitsTokenizer) and no tokenizer.json.
bool has_vits_files(const std::string& dir);
// A voice whose config says phonemize (espeak phonemes) is refused: its
// ids come from a phonemizer this project does not carry (--ids takes them).
Result<std::shared_ptr<const Tokenizer>> load_vits_tokenizer(const std::string& dir);

}  // namespace arch

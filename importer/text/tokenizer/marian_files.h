// Marian's tokenizer as its checkpoints keep it (opus-mt): two
// SentencePiece models, source.spm for the text in and target.spm for the
// text out, and one vocab.json mapping their pieces to the model's ids, as
// transformers' MarianTokenizer reads them: the source model's pieces, each
// looked up in vocab.json (<unk> where absent), then </s>; a ">>xx<<"
// language code opening the text is its own token; decoding maps ids back
// to pieces and joins them with the target model.
#pragma once

#include <memory>
#include <string>

#include "engine/core/error.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

// Whether `dir` holds source.spm, target.spm and vocab.json.
bool has_marian_files(const std::string& dir);
Result<std::shared_ptr<const Tokenizer>> load_marian_tokenizer(const std::string& dir);

}  // namespace arch

// M2M-100's tokenizer as its checkpoints keep it: sentencepiece.bpe.model
// and vocab.json, as transformers' M2M100Tokenizer reads them: the model's
// pieces looked up in vocab.json (<unk> where absent), the 100 language
// tokens __xx__ numbered after vocab.json's entries in fairseq's order, and
// a text as [__en__] + pieces + [</s>] (the source language English until
// a command names another).
#pragma once

#include <memory>
#include <string>

#include "engine/core/error.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

// Whether `dir` holds sentencepiece.bpe.model and vocab.json (and no tokenizer.json).
bool has_m2m100_files(const std::string& dir);
Result<std::shared_ptr<const Tokenizer>> load_m2m100_tokenizer(const std::string& dir);

}  // namespace arch

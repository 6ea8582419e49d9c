// The fairseq-numbered SentencePiece tokenizers, as their checkpoints keep
// them when there is no tokenizer.json: a lone sentencepiece.bpe.model
// whose ids are fairseq's (<s> 0, <pad> 1, </s> 2, <unk> 3, then each piece
// at its SentencePiece id + 1), as tokenizer_config.json's tokenizer_class
// lays a text out:
//   XLMRobertaTokenizer: <s> pieces </s>, <mask> after the pieces;
//   MBartTokenizer: pieces </s> en_XX, the 25 language codes after the
//     pieces, then <mask>;
//   MBart50Tokenizer: en_XX pieces </s>, the 52 codes, then <mask>
// (the source language English until a command names another).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

// Whether `dir` holds sentencepiece.bpe.model and neither tokenizer.json
// nor vocab.json (M2M-100's), and `config` (tokenizer_config.json) names
// one of the classes above.
bool has_fairseq_spm_files(const std::string& dir, const nlohmann::json& config);
Result<std::shared_ptr<const Tokenizer>> load_fairseq_spm_tokenizer(const std::string& dir, const nlohmann::json& config);

}  // namespace arch

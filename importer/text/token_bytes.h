// What each token adds to the decoded text, as bytes (a grammar follows
// generated text byte by byte): a token decoded after a fixed one, less
// what that one decodes to alone (so SentencePiece's leading space and a
// decoder's joins come out as in running text); a byte token (<0xE2>) its
// byte; a byte-level BPE token that is part of a UTF-8 character its
// bytes through the byte-level alphabet. Special tokens and tokens that add
// nothing: "".
#pragma once

#include <string>
#include <vector>

#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

std::vector<std::string> token_bytes(const Tokenizer& tok);

}  // namespace arch

// UTF-8 and Unicode character facts the tokenizer pipeline needs, defined the
// way Hugging Face `tokenizers` (Rust) defines them: Rust's char methods and
// the regex crate's classes, not the C locale. Character data comes from
// utf8proc. Every function here expects valid UTF-8 unless it says otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arch::tok {

// The code point starting at s[i]; advances i past it.
char32_t next_char(std::string_view s, size_t& i);
// Bytes in the UTF-8 sequence that starts with `lead` (1 for a stray byte).
inline size_t utf8_len(unsigned char lead) {
  return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
}
void append_utf8(std::string& out, char32_t c);
size_t char_count(std::string_view s);

// Any bytes -> valid UTF-8, each maximal invalid subsequence replaced by one
// U+FFFD (Rust's String::from_utf8_lossy).
bool is_valid_utf8(std::string_view s);
std::string utf8_lossy(std::string_view bytes);

// Unicode White_Space (Rust char::is_whitespace, regex `\s`).
bool is_whitespace(char32_t c);
// General category groups.
bool is_other(char32_t c);            // Cc Cf Cs Co Cn
bool is_control_cc(char32_t c);       // Cc
bool is_punctuation(char32_t c);      // P*
bool is_numeric(char32_t c);          // Nd Nl No (Rust char::is_numeric)
bool is_mark_nonspacing(char32_t c);  // Mn
bool is_mark(char32_t c);             // Mn Mc Me
// Rust regex `\w`: Alphabetic, marks, decimal digits, connector punctuation,
// join controls.
bool is_word_char(char32_t c);
// BERT's punctuation: ASCII punctuation or any P* character.
bool is_bert_punctuation(char32_t c);

// Rust char::to_lowercase, appended (full mapping: U+0130 gives two chars).
void append_lowercase(std::string& out, char32_t c);
std::string lowercase(std::string_view s);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize_form(std::string_view s, NormalForm form);

}  // namespace arch::tok

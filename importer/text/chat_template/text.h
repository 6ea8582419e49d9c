// Python's str semantics over UTF-8 bytes, for the chat-template interpreter.
//
// Jinja2 runs on Python strings: lengths, indexes and slices count code
// points, str.strip() and the `trim` filter strip Unicode whitespace, repr()
// picks its quotes and escapes the way Python does, floats print as Python's
// shortest round-trip repr. These helpers reproduce that on std::string.
//
// Invalid UTF-8 never fails: each invalid byte counts as one character of its
// own and is written back unchanged.
//
// Case mapping covers ASCII, Latin-1, Latin Extended-A and Additional, Greek,
// Cyrillic, Armenian and the fullwidth forms (with Python's full mappings
// for ß, İ, ŉ, ΐ, ΰ, և and final sigma); other scripts are left unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arch::jinja {

struct Utf8Char {
  uint32_t cp;  // code point (the byte value itself when invalid)
  size_t len;   // bytes
};
Utf8Char decode_utf8(std::string_view s, size_t i);
void append_utf8(std::string& out, uint32_t cp);

// Byte offset of every character, plus s.size() as the last entry (eight
// bytes a character: for short strings; long ones are walked).
std::vector<size_t> char_offsets(std::string_view s);
size_t char_count(std::string_view s);
// The byte offset `chars` characters after byte `from` (s.size() at most).
size_t byte_offset(std::string_view s, size_t chars, size_t from = 0);

bool py_isspace(uint32_t cp);       // str.isspace(), regex \s, str.strip()
bool py_isalnum(uint32_t cp);       // approximate outside ASCII: letters of all scripts
bool py_isalpha(uint32_t cp);
bool py_isdigit(uint32_t cp);
bool py_iscased(uint32_t cp);       // has an upper or lower case form
bool py_isupper_cp(uint32_t cp);
bool py_islower_cp(uint32_t cp);
bool py_isprintable(uint32_t cp);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_title(std::string_view s);       // str.title()
std::string py_swapcase(std::string_view s);
bool py_islower(std::string_view s);            // str.islower()
bool py_isupper(std::string_view s);            // str.isupper()

// str.strip / lstrip / rstrip; chars = nullopt strips whitespace.
enum StripSide { kStripLeft = 1, kStripRight = 2, kStripBoth = 3 };
std::string py_strip(std::string_view s, int sides, const std::optional<std::string>& chars);

// str.split / rsplit: sep = nullopt splits on runs of whitespace.
// maxsplit < 0: no limit. An empty sep is the caller's error to report.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
// f(line) for each line splitlines would give, without building the list.
void py_each_line(std::string_view s, bool keepends, const std::function<void(std::string_view)>& f);
// How many pieces splitlines / split / rsplit (same count) would give: their
// lists are sized before they are built.
size_t py_line_count(std::string_view s);
size_t py_split_count(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// The bytes py_replace would give.
uint64_t py_replace_size(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count);
// Number of non-overlapping occurrences (Python counts an empty needle
// len(s) + 1 times).
int64_t py_count(std::string_view s, std::string_view needle);
// Code-point index of the first / last occurrence, or -1.
int64_t py_find(std::string_view s, std::string_view needle);
int64_t py_rfind(std::string_view s, std::string_view needle);
std::string py_center(std::string_view s, int64_t width, std::string_view fill = " ");
// How many fill characters center / ljust / rjust / zfill add to reach `width`.
uint64_t padding(std::string_view s, int64_t width);

// repr() of a str: quotes and escapes as CPython picks them.
std::string py_repr_string(std::string_view s);
// repr() / str() of a float: "1.0", "0.1", "1e+16", "1e-05", "inf", "nan".
std::string py_float_repr(double d);

}  // namespace arch::jinja

#include "importer/text/text_stream.h"

namespace arch {

namespace {

// Does `s` end inside a character, or with the replacement character a
// decoder writes for an incomplete byte sequence?
bool ends_unfinished(const std::string& s) {
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0) return true;
  // A lead byte whose continuation bytes have not all arrived.
  for (size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back;
  }
  return false;
}

}  // namespace

std::string TextStream::window(size_t from, size_t to) const {
  return tok_->decode(std::span<const int32_t>(ids_.data() + from, to - from), skip_special_);
}

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  // Decoding a short window, not the whole sequence, keeps each token's cost
  // constant; the piece is what the new tokens add to the window's text.
  std::string before = window(prefix_, read_);
  std::string now = window(prefix_, ids_.size());
  if (ends_unfinished(now) || now.size() < before.size() || now.compare(0, before.size(), before) != 0) return "";
  prefix_ = read_;
  read_ = ids_.size();
  return now.substr(before.size());
}

std::string TextStream::finish() {
  std::string before = window(prefix_, read_);
  std::string now = window(prefix_, ids_.size());
  prefix_ = read_ = ids_.size();
  if (now.size() < before.size() || now.compare(0, before.size(), before) != 0) return "";
  return now.substr(before.size());
}

}  // namespace arch

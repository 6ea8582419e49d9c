#include "importer/text_stream.h"

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

std::string TextStream::push(int32_t id) {
  ids_.push_back(id);
  // Decoding the whole sequence each time keeps the pieces equal to the
  // whole decode, whatever the decoder does with spaces or byte tokens.
  std::string all = tok_->decode(ids_, skip_special_);
  if (ends_unfinished(all) || all.size() < sent_.size() || all.compare(0, sent_.size(), sent_) != 0) return "";
  std::string piece = all.substr(sent_.size());
  sent_ = std::move(all);
  return piece;
}

std::string TextStream::finish() {
  std::string all = tok_->decode(ids_, skip_special_);
  if (all.size() < sent_.size() || all.compare(0, sent_.size(), sent_) != 0) return "";
  std::string piece = all.substr(sent_.size());
  sent_ = std::move(all);
  return piece;
}

}  // namespace arch

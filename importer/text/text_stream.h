// Streaming detokenisation: text handed out as tokens arrive, never splitting
// a UTF-8 character, and whose pieces concatenate to exactly what decoding the
// whole sequence gives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

class TextStream {
 public:
  explicit TextStream(std::shared_ptr<const Tokenizer> tok, bool skip_special_tokens = false)
      : tok_(std::move(tok)), skip_special_(skip_special_tokens) {}

  // The text this token completes (often "", when it ends mid-character or
  // the decoder would still change what came before).
  std::string push(int32_t id);
  // Whatever is still held back, at the end of the sequence.
  std::string finish();

  const std::vector<int32_t>& ids() const { return ids_; }

 private:
  std::shared_ptr<const Tokenizer> tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  // Each push decodes only a window: ids_[prefix_, read_) is text already
  // handed out, decoded again so the decoder sees the same context (a
  // leading space, a byte sequence) as it does in the whole sequence.
  size_t prefix_ = 0, read_ = 0;
  std::string window(size_t from, size_t to) const;
};

}  // namespace arch

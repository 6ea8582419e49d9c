// One completion on its way through the batcher: the worker thread puts its
// text in as tokens come (detokenized, stop strings applied), the HTTP
// thread takes it out as it streams, or waits for the end; a client that
// goes away abandons it, and the sequence ends at its next token.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/batcher.h"
#include "engine/serve/stop_text.h"
#include "importer/text/text_stream.h"

namespace arch::serve {

class TextJob : public std::enable_shared_from_this<TextJob> {
 public:
  // `tok` null: a model without a tokenizer, whose replies are token ids.
  TextJob(std::shared_ptr<const Tokenizer> tok, std::vector<std::string> stops);

  // The batcher's request for `prompt`, its callbacks bound to this job;
  // top_logprobs >= 0: each token's logprobs are kept beside its id.
  BatchRequest request(std::vector<int32_t> prompt, int max_new_tokens, SamplingOptions sampling,
                       std::vector<int32_t> stop_ids, int top_logprobs = -1);

  struct Taken {
    std::string text;               // since the last take
    std::vector<int32_t> ids;       // likewise
    // Where each id's text ends in `text` (a token may release none yet,
    // or text held back by a token before it); text past the last end
    // came when the completion ended.
    std::vector<size_t> text_ends;
    std::vector<TokenLogprobs> logprobs;  // one per id, where the request asked for them
    bool done = false;              // the completion is over: outcome() holds how
  };
  // What has come since the last take, waiting up to `wait` for something.
  Taken take(std::chrono::milliseconds wait);
  // The whole completion, once it is over.
  Taken wait_all();
  void abandon();
  // Once done: its finish reason ("stop", "length"; "error" with what),
  // token counts.
  const BatchOutcome& outcome() const { return outcome_; }

 private:
  void on_token(int32_t id);
  void on_done(const BatchOutcome& o);

  std::shared_ptr<const Tokenizer> tok_;
  std::optional<TextStream> stream_;
  StopText stop_;
  std::mutex mu_;
  std::condition_variable cv_;
  Taken pending_;
  BatchOutcome outcome_;
  bool abandoned_ = false, stopped_by_text_ = false;
};

}  // namespace arch::serve

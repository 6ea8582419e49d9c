// Continuous batching: requests decode together, up to one per slot of a
// BatchedSession, each step of every running sequence in one pass over the
// weights. A request joins between steps (its prompt run on its own slot,
// then its steps batched with the others'), leaves when it ends, and frees
// its slot for the next; past the slots it waits in a bounded queue, and past
// the queue it is refused (the server's 503). One worker thread runs the
// model; callers submit from any thread.
//
//   auto b = Batcher::make(model, {.slots = 16, .context = 2048});
//   b->submit({.prompt = ids, .max_new_tokens = 64,
//              .on_token = [](int32_t t) { ...; return true; },
//              .on_done = [](const BatchOutcome& o) { ... }});
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <span>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/thread_governor.h"

namespace arch {

struct BatchOutcome {
  std::string finish_reason;  // "stop" (an end token, or on_token said so), "length", "error"
  std::string error;          // what went wrong, for "error"
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double queued_seconds = 0;  // submitted to the start of its prompt
};

struct BatchRequest {
  std::vector<int32_t> prompt;
  // State inputs the sequence runs with (a vision-language model's image
  // features, by the token graph's input name); empty: none.
  NamedTensors state;
  int max_new_tokens = 16;
  SamplingOptions sampling;
  std::vector<int32_t> stop_ids;  // end after drawing one (it is not passed on)
  // Each new token, on the worker thread; false ends the sequence there (a
  // stop string completed, a client gone), finish reason "stop".
  std::function<bool(int32_t)> on_token;
  // top_logprobs >= 0: before each on_token, the token's log-probability
  // and that many likeliest alternatives (the OpenAI API's logprobs).
  int top_logprobs = -1;
  std::function<void(const TokenLogprobs&)> on_logprobs;
  std::function<void(const BatchOutcome&)> on_done;  // once, at the end
  // A logits processor (GenerateOptions::process_logits): each step's row
  // of this sequence, a copy of its own, with the tokens drawn so far;
  // logprobs still report the model's own row. Runs on a worker thread,
  // beside other sequences' (a constrained reply's grammar).
  std::function<void(std::span<float> row, const std::vector<int32_t>& so_far)> process_logits;
  // Asked when it would join: true ends it there, its prompt never run (a
  // client gone while it waited), finish reason "stop".
  std::function<bool()> cancelled;
};

// Where the worker's time went (archrun bench-serve --profile): every kernel
// call of the prompts and of the decode steps, and the steps' token draws.
struct BatchProfile {
  OpProfile prompts, steps;
  int64_t decode_steps = 0, step_rows = 0;  // the steps timed, and their rows summed
};

struct BatcherOptions {
  int slots = 4;             // sequences decoding together
  int64_t context = 2048;    // positions each holds: prompt and new tokens
  int queue = 64;            // requests waiting for a slot, at most
  // Decode steps' threads governed up to this many (0: the count is left
  // as set; engine/runtime/thread_governor.h).
  int adaptive_threads = 0;
  // Set: the worker times its runs into it. Written by the worker alone, as
  // it runs; read it where no request is running (between rounds of a
  // benchmark: a request's last token is drawn before its end is sent).
  BatchProfile* profile = nullptr;
};

class Batcher {
 public:
  static Result<std::unique_ptr<Batcher>> make(const Model& m, BatcherOptions opt);
  // Ends every request still queued or running ("error": the server is
  // stopping) and joins the worker.
  ~Batcher();

  // Queues r. An error where it can never run (no prompt, or its prompt and
  // max_new_tokens exceed a slot's context); false where the queue is full.
  Result<bool> submit(BatchRequest r);

  struct Load {
    int running = 0, waiting = 0;
    int64_t steps = 0;        // batched decode steps so far
    int64_t step_rows = 0;    // their rows, summed (the mean batch: step_rows / steps)
  };
  Load load() const;
  const BatcherOptions& options() const { return opt_; }
  // The KV caches' bytes for every slot, resident from the first request.
  int64_t cache_bytes() const { return session_->cache_bytes(); }

 private:
  struct Running;
  Batcher(std::unique_ptr<BatchedSession> s, BatcherOptions opt);
  void work();
  // The next token of r from its row of logits, with its logprobs where
  // r asks for them.
  int32_t draw(Running& r, std::span<const float> row, TokenLogprobs& lp);
  // The sequence's new token: passed on, or its end. False: it has ended
  // (and r, if it held a slot, is gone).
  bool take(Running& r, int32_t tok, const TokenLogprobs& lp);
  // The end: its slot freed, then on_done; r, if it held a slot, is gone.
  void finish(Running& r, std::string reason, std::string error = "");

  std::unique_ptr<BatchedSession> session_;
  BatcherOptions opt_;
  std::unique_ptr<ThreadGovernor> governor_;  // on the worker thread; null: not governed
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<BatchRequest, double>> queue_;  // with the time it was submitted
  std::vector<std::unique_ptr<Running>> running_;      // by slot (null: free)
  bool stopping_ = false;
  int64_t steps_ = 0, step_rows_ = 0;
  std::thread worker_;
};

}  // namespace arch

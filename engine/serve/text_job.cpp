#include "engine/serve/text_job.h"

namespace arch::serve {

TextJob::TextJob(std::shared_ptr<const Tokenizer> tok, std::vector<std::string> stops)
    : tok_(std::move(tok)), stop_(std::move(stops)) {
  if (tok_) stream_.emplace(tok_, /*skip_special_tokens=*/true);
}

BatchRequest TextJob::request(std::vector<int32_t> prompt, int max_new_tokens, SamplingOptions sampling,
                              std::vector<int32_t> stop_ids, int top_logprobs) {
  BatchRequest r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = max_new_tokens;
  r.sampling = sampling;
  r.stop_ids = std::move(stop_ids);
  // The job lives until the batcher is done with it, whoever lets go first.
  auto self = shared_from_this();
  r.on_token = [self](int32_t id) {
    self->on_token(id);
    std::lock_guard<std::mutex> lock(self->mu_);
    return !self->abandoned_ && !self->stopped_by_text_;
  };
  r.top_logprobs = top_logprobs;
  // Before its token's on_token, so kept exactly where the id is.
  r.on_logprobs = [self](const TokenLogprobs& lp) {
    std::lock_guard<std::mutex> lock(self->mu_);
    if (!self->stopped_by_text_) self->pending_.logprobs.push_back(lp);
  };
  r.on_done = [self](const BatchOutcome& o) { self->on_done(o); };
  r.cancelled = [self] {
    std::lock_guard<std::mutex> lock(self->mu_);
    return self->abandoned_;
  };
  return r;
}

void TextJob::on_token(int32_t id) {
  std::string text = stream_ ? stop_.push(stream_->push(id)) : "";
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_by_text_) return;
  pending_.ids.push_back(id);
  pending_.text += text;
  pending_.text_ends.push_back(pending_.text.size());
  stopped_by_text_ = stop_.stopped();
  cv_.notify_all();
}

void TextJob::on_done(const BatchOutcome& o) {
  std::string rest;
  if (stream_ && !stop_.stopped()) rest = stop_.push(stream_->finish()) + stop_.finish();
  std::lock_guard<std::mutex> lock(mu_);
  pending_.text += rest;
  outcome_ = o;
  pending_.done = true;
  cv_.notify_all();
}

TextJob::Taken TextJob::take(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, wait, [&] { return pending_.done || !pending_.text.empty() || !pending_.ids.empty(); });
  Taken out = std::move(pending_);
  pending_ = Taken{};
  pending_.done = out.done;
  return out;
}

TextJob::Taken TextJob::wait_all() {
  Taken all;
  for (;;) {
    Taken t = take(std::chrono::milliseconds(1000));
    for (size_t end : t.text_ends) all.text_ends.push_back(all.text.size() + end);
    all.text += t.text;
    all.ids.insert(all.ids.end(), t.ids.begin(), t.ids.end());
    all.logprobs.insert(all.logprobs.end(), t.logprobs.begin(), t.logprobs.end());
    if (t.done) {
      all.done = true;
      return all;
    }
  }
}

void TextJob::abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_ = true;
}

}  // namespace arch::serve

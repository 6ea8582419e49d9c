#include "engine/runtime/batcher.h"

#include <algorithm>
#include <chrono>

#include <omp.h>

namespace arch {

namespace {

// Prompt tokens run between two decode steps of the sequences running.
constexpr int64_t kPrefillBudget = 256;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Batcher::Running {
  BatchRequest req;
  Sampler sampler;
  BatchOutcome outcome;
  int32_t last = 0;  // the token its next step feeds
  int slot = 0;
  bool decoding = false;  // its prompt has run
  std::vector<int32_t> drawn;  // with a logits processor: its tokens so far
  std::vector<float> row;      // and the row it processes
  Running(BatchRequest r, int s) : req(std::move(r)), sampler(req.sampling), slot(s) {}
};

Result<std::unique_ptr<Batcher>> Batcher::make(const Model& m, BatcherOptions opt) {
  if (opt.queue < 0) return error("the queue's bound must be >= 0, got " + std::to_string(opt.queue));
  ARCH_TRY(auto s, BatchedSession::make(m, opt.slots, opt.context));
  return std::unique_ptr<Batcher>(new Batcher(std::move(s), opt));
}

Batcher::Batcher(std::unique_ptr<BatchedSession> s, BatcherOptions opt)
    : session_(std::move(s)), opt_(opt), running_(size_t(opt.slots)) {
  // OpenMP's thread count is each thread's own: the worker takes its
  // creator's (--threads), not the default of one per core.
  worker_ = std::thread([this, threads = omp_get_max_threads()] {
    omp_set_num_threads(threads);
    // As a session's: a team that waits at every barrier for a thread
    // whose core another process holds decodes slower than a smaller one.
    if (opt_.adaptive_threads > 1) governor_ = std::make_unique<ThreadGovernor>(opt_.adaptive_threads);
    work();
  });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
  for (auto& [req, at] : queue_) {
    Running r(std::move(req), -1);
    r.outcome.prompt_tokens = int64_t(r.req.prompt.size());
    finish(r, "error", "the server is stopping");
  }
}

Result<bool> Batcher::submit(BatchRequest r) {
  if (r.prompt.empty()) return error("the prompt is empty: give at least one token");
  if (r.max_new_tokens < 1) return error("max_new_tokens must be at least 1");
  if (int64_t(r.prompt.size()) + r.max_new_tokens > opt_.context)
    return error("the prompt's " + std::to_string(r.prompt.size()) + " tokens and " + std::to_string(r.max_new_tokens) +
                 " new ones exceed the context of " + std::to_string(opt_.context) + " positions");
  {
    std::lock_guard<std::mutex> lock(mu_);
    int running = int(std::count_if(running_.begin(), running_.end(), [](auto& p) { return p != nullptr; }));
    if (int(queue_.size()) >= opt_.queue + (opt_.slots - running)) return false;
    queue_.emplace_back(std::move(r), now_seconds());
  }
  wake_.notify_all();
  return true;
}

Batcher::Load Batcher::load() const {
  std::lock_guard<std::mutex> lock(mu_);
  Load l;
  l.running = int(std::count_if(running_.begin(), running_.end(), [](auto& p) { return p != nullptr; }));
  l.waiting = int(queue_.size());
  l.steps = steps_;
  l.step_rows = step_rows_;
  return l;
}

void Batcher::finish(Running& r, std::string reason, std::string err) {
  r.outcome.finish_reason = std::move(reason);
  r.outcome.error = std::move(err);
  // The slot is freed before the caller hears of the end, so that load()
  // no longer counts it; the sequence itself goes when this returns.
  std::unique_ptr<Running> owned;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (r.slot >= 0 && size_t(r.slot) < running_.size() && running_[size_t(r.slot)].get() == &r)
      owned = std::move(running_[size_t(r.slot)]);
  }
  auto done = std::move(r.req.on_done);
  r.req.on_done = nullptr;
  if (done) done(r.outcome);
}

int32_t Batcher::draw(Running& r, std::span<const float> row, TokenLogprobs& lp) {
  int32_t tok = 0;
  if (r.req.process_logits) {
    r.row.assign(row.begin(), row.end());
    r.req.process_logits(r.row, r.drawn);
    tok = r.sampler.next(r.row);
    r.drawn.push_back(tok);
  } else {
    tok = r.sampler.next(row);
  }
  if (r.req.top_logprobs >= 0) lp = token_logprobs(row, tok, r.req.top_logprobs);
  return tok;
}

bool Batcher::take(Running& r, int32_t tok, const TokenLogprobs& lp) {
  const auto& stops = r.req.stop_ids;
  if (std::find(stops.begin(), stops.end(), tok) != stops.end()) {
    finish(r, "stop");
    return false;
  }
  ++r.outcome.completion_tokens;
  if (r.req.top_logprobs >= 0 && r.req.on_logprobs) r.req.on_logprobs(lp);
  if (r.req.on_token && !r.req.on_token(tok)) {
    finish(r, "stop");
    return false;
  }
  if (r.outcome.completion_tokens >= r.req.max_new_tokens) {
    finish(r, "length");
    return false;
  }
  r.last = tok;
  return true;
}

void Batcher::work() {
  std::vector<BatchedSession::Piece> pieces;
  std::vector<int> slots;
  std::vector<int32_t> drawn;  // each running sequence's next token, by its place in `slots`
  std::vector<TokenLogprobs> logprobs;  // and its logprobs, where it asks for them
  std::deque<int> joining;  // slots whose prompts are still to run, in order of arrival
  for (;;) {
    // Who joins: as many queued requests as there are free slots.
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto busy = [&] { return std::any_of(running_.begin(), running_.end(), [](auto& p) { return p != nullptr; }); };
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || busy(); });
      if (stopping_) break;
      for (size_t s = 0; s < running_.size() && !queue_.empty(); ++s) {
        if (running_[s]) continue;
        auto [req, at] = std::move(queue_.front());
        queue_.pop_front();
        auto r = std::make_unique<Running>(std::move(req), int(s));
        r->outcome.prompt_tokens = int64_t(r->req.prompt.size());
        r->outcome.queued_seconds = now_seconds() - at;
        running_[s] = std::move(r);
        joining.push_back(int(s));
      }
    }
    // Joining prompts, each on its own slot (a prompt's rows are many; its
    // last row's logits are all it needs), its first token drawn; up to
    // kPrefillBudget prompt tokens between two steps of the others, so a
    // crowd arriving stalls those running for a bounded time.
    for (int64_t budget = kPrefillBudget; !joining.empty() && budget > 0;) {
      Running& r = *running_[size_t(joining.front())];
      joining.pop_front();
      if (r.req.cancelled && r.req.cancelled()) {
        finish(r, "stop");
        continue;
      }
      budget -= int64_t(r.req.prompt.size());
      session_->release(r.slot);
      if (!r.req.state.empty())
        if (auto held = session_->hold(r.slot, r.req.state); !held.ok()) {
          finish(r, "error", held.error().message);
          continue;
        }
      BatchedSession::Piece p{r.slot, r.req.prompt};
      if (governor_) governor_->begin_prompt();
      if (opt_.profile) session_->profile_with(&opt_.profile->prompts);
      auto logits = session_->run(std::span(&p, 1));
      TokenLogprobs lp;
      if (!logits.ok()) finish(r, "error", logits.error().message);
      else if (take(r, draw(r, std::span<const float>(logits->f32(), size_t(logits->dim(-1))), lp), lp))
        r.decoding = true;  // (an ended one is gone, its slot free)
    }
    // One step of every running sequence, together.
    pieces.clear();
    slots.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& r : running_)
        if (r && r->decoding) pieces.push_back({r->slot, std::span<const int32_t>(&r->last, 1)}), slots.push_back(r->slot);
    }
    if (pieces.empty()) continue;
    if (governor_) governor_->begin_decode();
    if (opt_.profile) session_->profile_with(&opt_.profile->steps);
    auto logits = session_->run(pieces);
    if (governor_) governor_->end_decode();
    if (!logits.ok()) {  // every sequence of the step ends with it
      std::vector<std::unique_ptr<Running>> ended;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (int s : slots) ended.push_back(std::move(running_[size_t(s)]));
      }
      for (auto& r : ended) finish(*r, "error", logits.error().message);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++steps_;
      step_rows_ += int64_t(pieces.size());
    }
    // Each sequence draws from its own row with its own sampler: side by
    // side on the team (16 sequences' draws over a 152k vocabulary are
    // 0.6 ms greedy, ~16 at a temperature); then passed on in order.
    const int64_t vocab = logits->dim(-1), n = int64_t(slots.size());
    drawn.resize(slots.size());
    logprobs.resize(slots.size());
    const auto drawing = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (int64_t k = 0; k < n; ++k) {
      std::span<const float> row(logits->f32() + k * vocab, size_t(vocab));
      drawn[size_t(k)] = draw(*running_[size_t(slots[size_t(k)])], row, logprobs[size_t(k)]);
    }
    if (BatchProfile* p = opt_.profile) {  // before any token is passed on (see BatcherOptions::profile)
      auto& e = p->steps.by_op["(drawing tokens)"];
      e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - drawing).count();
      ++e.calls;
      ++p->decode_steps;
      p->step_rows += n;
    }
    for (size_t k = 0; k < slots.size(); ++k)
      take(*running_[size_t(slots[k])], drawn[k], logprobs[k]);  // an ended one is gone, its slot free
  }
  // Stopping: every running sequence ends here.
  for (auto& r : running_)
    if (r) finish(*r, "error", "the server is stopping");
}

}  // namespace arch

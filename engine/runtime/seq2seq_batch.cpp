#include "engine/runtime/seq2seq_batch.h"

#include <chrono>
#include <cmath>
#include <list>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/sampler.h"

namespace arch {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One input in flight: its slots, its search, and the pieces its next call
// runs (each slot's tokens, the last row's logits wanted).
struct Input {
  size_t index = 0;
  std::vector<int> slots;       // one per hypothesis, each holding the encoder's output
  std::optional<BeamSet> beams; // none: greedy
  std::vector<int32_t> tokens;  // greedy's
  double logprob_sum = 0;
  std::vector<std::pair<int, int32_t>> next;  // the next call's: (slot, token) per hypothesis
  int64_t first_row = 0;                      // their first row of the call's logits
  Seq2SeqResult result;
  Clock::time_point started;
};

// The encoder's output for `ids`, as the token graph holds it (the
// tensors keep their buffers from the session's pool while held).
Result<NamedTensors> encode(Session& enc, const Model& m, const std::vector<int32_t>& ids) {
  ARCH_TRY(Tensor t, encoder_input(m, ids));
  ARCH_TRY(NamedTensors made, enc.encode({{"input_ids", t}}));
  NamedTensors state;
  const Graph& g = m.token_graph()->graph;
  for (int v : g.held_inputs) {
    const std::string& name = g.values[size_t(v)].name;
    auto it = made.find(name);
    if (it == made.end()) return error("the encoder made no '" + name + "', which the decoder takes");
    state[name] = it->second;
  }
  return state;
}


}  // namespace

Status seq2seq_generate_batch(const Model& m, const Seq2SeqPlan& p, int batch, const NextInput& next_input,
                              const InputDone& done) {
  if (batch < 1 || batch > 256) return error("the batch must be 1..256 inputs, not " + std::to_string(batch));
  const int width = p.beams;
  ARCH_TRY(auto session, BatchedSession::make(m, batch * width, int64_t(p.max_new_tokens) + 1));
  Session enc(m, int64_t(p.max_new_tokens) + 1);
  const int32_t start = p.start;
  const LogitsProcessor rules = plan_rules(p);
  const BeamOptions opt = plan_beams(p);
  SamplingOptions greedy;
  greedy.greedy = true;
  Sampler argmax(greedy);

  std::vector<int> free_slots;
  for (int s = batch * width - 1; s >= 0; --s) free_slots.push_back(s);
  std::list<Input> flight;
  size_t count = 0;
  bool more = true;
  // Ends input `in`: its answer out, its slots free.
  auto finish = [&](Input& in) -> Status {
    if (in.beams) {
      ARCH_TRY(auto best, in.beams->results());
      in.result.tokens = best.front().tokens;
      in.result.score = best.front().score;
      in.result.stop_reason = !in.result.tokens.empty() && in.result.tokens.back() == opt.eot ? "eos" : "length";
    } else {
      in.result.tokens = in.tokens;
      in.result.score = in.logprob_sum / std::pow(double(std::max<size_t>(1, in.tokens.size())), p.length_penalty);
    }
    in.result.decode_seconds = since(in.started);
    for (int s : in.slots) {
      session->release(s);
      free_slots.push_back(s);
    }
    return done(in.index, std::move(in.result));
  };
  while (true) {
    // New inputs into the free slots; waiting for one only with none in flight.
    while (more && int(free_slots.size()) >= width) {
      ARCH_TRY(auto ids, next_input(flight.empty()));
      if (!ids) {
        more = !flight.empty();
        break;
      }
      Input in;
      in.index = count++;
      const auto t0 = Clock::now();
      ARCH_TRY(NamedTensors state, encode(enc, m, *ids));
      in.result.encode_seconds = since(t0);
      in.started = Clock::now();
      // Every slot of the input holds its encoder output from the start
      // (one region, shared): a beam's slot taking over another's history
      // then changes no slot's held rows.
      for (int k = 0; k < width; ++k) {
        in.slots.push_back(free_slots.back());
        free_slots.pop_back();
        ARCH_TRY_STATUS(session->hold(in.slots.back(), state));
      }
      if (width > 1) in.beams.emplace(opt);
      in.next = {{in.slots[0], start}};
      flight.push_back(std::move(in));
    }
    if (flight.empty()) return {};
    // One call for every input's pieces.
    std::vector<int32_t> tokens;
    std::vector<BatchedSession::Piece> call;
    for (const Input& in : flight)
      for (const auto& [slot, tok] : in.next) tokens.push_back(tok);
    for (Input& in : flight) {
      in.first_row = int64_t(call.size());
      for (const auto& [slot, tok] : in.next) call.push_back({slot, std::span(&tokens[call.size()], 1)});
    }
    ARCH_TRY(Tensor logits, session->run(call));
    const int64_t vocab = logits.dim(-1);
    auto row = [&](const Input& in, size_t k) { return std::span(logits.f32() + (in.first_row + int64_t(k)) * vocab, size_t(vocab)); };
    // Each input's next tokens.
    for (auto it = flight.begin(); it != flight.end();) {
      Input& in = *it;
      bool over = false;
      if (!in.beams) {
        const std::span<float> l = row(in, 0);  // the call's own, until the next
        ARCH_TRY_STATUS(check_logits_finite(l, int64_t(in.tokens.size())));
        rules(l, in.tokens);
        const int32_t tok = argmax.next(l);
        in.logprob_sum += token_logprobs(l, tok, 0).logprob;
        in.tokens.push_back(tok);
        const bool eos = std::find(p.rules.eos.begin(), p.rules.eos.end(), tok) != p.rules.eos.end();
        in.result.stop_reason = eos ? "eos" : "length";
        over = eos || int(in.tokens.size()) >= p.max_new_tokens;
        in.next = {{in.slots[0], tok}};
      } else {
        auto& live = in.beams->live();
        for (size_t h = 0; h < live.size(); ++h) {
          const std::span<float> l = row(in, h);
          live[h].logits.assign(l.begin(), l.end());
          ARCH_TRY_STATUS(check_logits_finite(live[h].logits, int64_t(live[h].seq.size())));
        }
        over = !in.beams->advance();
        in.next.clear();
        for (const auto& h : live) {
          // A hypothesis taking over its parent's history has the parent's
          // rows copied into its slot, before the next call writes any.
          if (h.from >= 0)
            ARCH_TRY_STATUS(session->copy(in.slots[size_t(h.from)], in.slots[size_t(h.runner)], int64_t(h.seq.size())));
          in.next.push_back({in.slots[size_t(h.runner)], h.seq.back()});
        }
      }
      if (over) {
        ARCH_TRY_STATUS(finish(in));
        it = flight.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace arch

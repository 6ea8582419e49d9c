#include "engine/runtime/seq2seq_batch.h"

#include <chrono>
#include <cmath>
#include <cstring>
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
  NamedTensors state;           // the encoder's output, held by each of its slots
  std::vector<int> slots;
  std::vector<char> used;       // by slot of `slots`: holds the state
  std::vector<std::vector<int32_t>> fed;  // by slot of `slots`: the tokens past the start it holds
  std::optional<BeamSet> beams;           // none: greedy
  std::vector<int32_t> tokens;            // greedy's
  double logprob_sum = 0;
  std::vector<std::pair<int, std::vector<int32_t>>> pieces;  // (slot, tokens) of the next call
  std::vector<std::vector<float>> logits;                    // by piece, after the call
  Seq2SeqResult result;
  Clock::time_point started;
};

// The encoder's output for `ids`, as the token graph holds it, copied out
// of the session that made it (whose buffers the next input reuses).
Result<NamedTensors> encode(Session& enc, const Model& m, const std::vector<int32_t>& ids) {
  ARCH_TRY(Tensor t, encoder_input(m, ids));
  ARCH_TRY(NamedTensors made, enc.encode({{"input_ids", t}}));
  NamedTensors state;
  const Graph& g = m.token_graph()->graph;
  for (int v : g.held_inputs) {
    const std::string& name = g.values[size_t(v)].name;
    auto it = made.find(name);
    if (it == made.end()) return error("the encoder made no '" + name + "', which the decoder takes");
    Tensor copy = Tensor::zeros(it->second.dtype, it->second.shape);
    std::memcpy(copy.data, it->second.data, it->second.nbytes());
    state[name] = std::move(copy);
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
      ARCH_TRY(in.state, encode(enc, m, *ids));
      in.result.encode_seconds = since(t0);
      in.started = Clock::now();
      for (int k = 0; k < width; ++k) {
        in.slots.push_back(free_slots.back());
        free_slots.pop_back();
      }
      in.used.assign(size_t(width), 0);
      in.fed.assign(size_t(width), {});
      ARCH_TRY_STATUS(session->hold(in.slots[0], in.state));
      in.used[0] = 1;
      if (width > 1) {
        in.beams.emplace(opt);
        in.beams->live()[0].runner = 0;
      }
      in.pieces.push_back({in.slots[0], {start}});
      flight.push_back(std::move(in));
    }
    if (flight.empty()) return {};
    // One call for every input's pieces.
    std::vector<BatchedSession::Piece> call;
    for (Input& in : flight)
      for (auto& [slot, tokens] : in.pieces) call.push_back({slot, tokens});
    ARCH_TRY(Tensor logits, session->run(call));
    const int64_t vocab = logits.dim(-1);
    size_t row = 0;
    for (Input& in : flight) {
      in.logits.clear();
      for (size_t k = 0; k < in.pieces.size(); ++k, ++row)
        in.logits.emplace_back(logits.f32() + int64_t(row) * vocab, logits.f32() + int64_t(row + 1) * vocab);
    }
    // Each input's next tokens.
    for (auto it = flight.begin(); it != flight.end();) {
      Input& in = *it;
      bool over = false;
      if (!in.beams) {
        std::vector<float>& l = in.logits.front();
        ARCH_TRY_STATUS(check_logits_finite(l, int64_t(in.tokens.size())));
        rules(l, in.tokens);
        const int32_t tok = Sampler(greedy).next(l);
        in.logprob_sum += token_logprobs(l, tok, 0).logprob;
        in.tokens.push_back(tok);
        const bool eos = std::find(p.rules.eos.begin(), p.rules.eos.end(), tok) != p.rules.eos.end();
        in.result.stop_reason = eos ? "eos" : "length";
        over = eos || int(in.tokens.size()) >= p.max_new_tokens;
        in.pieces = {{in.slots[0], {tok}}};
      } else {
        auto& live = in.beams->live();
        for (size_t h = 0; h < live.size(); ++h) {
          live[h].logits = std::move(in.logits[h]);
          ARCH_TRY_STATUS(check_logits_finite(live[h].logits, int64_t(live[h].seq.size())));
        }
        std::vector<int> runner_of;
        std::vector<std::vector<int32_t>> parent_seq;
        for (const auto& h : live) runner_of.push_back(h.runner), parent_seq.push_back(h.seq);
        over = !in.beams->advance();
        in.pieces.clear();
        if (!over) {
          // A parent's slot goes to its first child, which feeds its new
          // token; the others take a slot no child claimed, with their
          // parent's rows copied into it (before this step's call writes
          // any), or where they cannot be copied, gone back to what it
          // shares with their parent and the rest fed again.
          std::vector<char> claimed(size_t(width), 0), parent_used(runner_of.size(), 0);
          for (auto& h : live) {
            if (parent_used[size_t(h.parent)]++) continue;
            h.runner = runner_of[size_t(h.parent)];
            claimed[size_t(h.runner)] = 1;
          }
          for (auto& h : live) {
            std::vector<int32_t> piece;
            if (h.runner < 0) {
              int r = 0;
              while (claimed[size_t(r)]) ++r;
              claimed[size_t(r)] = 1;
              h.runner = r;
              const std::vector<int32_t>& want = parent_seq[size_t(h.parent)];
              const int parent_slot = in.slots[size_t(runner_of[size_t(h.parent)])];
              if (session->copy(parent_slot, in.slots[size_t(r)], 1 + int64_t(want.size())).ok()) {
                in.used[size_t(r)] = 1;
              } else {
                std::vector<int32_t>& have = in.fed[size_t(r)];
                size_t common = 0;
                if (!in.used[size_t(r)]) {
                  ARCH_TRY_STATUS(session->hold(in.slots[size_t(r)], in.state));
                  in.used[size_t(r)] = 1;
                  piece.push_back(start);
                } else {
                  while (common < want.size() && common < have.size() && want[common] == have[common]) ++common;
                  ARCH_TRY_STATUS(session->rewind(in.slots[size_t(r)], 1 + int64_t(common)));
                }
                piece.insert(piece.end(), want.begin() + long(common), want.end());
              }
            }
            piece.push_back(h.seq.back());
            in.fed[size_t(h.runner)] = h.seq;
            in.pieces.push_back({in.slots[size_t(h.runner)], std::move(piece)});
          }
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

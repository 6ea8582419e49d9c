// Beam search over a decoder's token graph: `width` hypotheses, each in a
// session of its own holding the same encoder state; each step the
// hypotheses' candidates are ranked by their summed log-probabilities, the
// best `width` that do not end go on, and one ending with `eot` is
// finished; a hypothesis that takes over another's history rewinds its
// session to what they share and replays the rest. Finished hypotheses
// rank by their sum over (generated tokens, the end included) ** length
// penalty. Two flavours by their options:
//   Whisper's (the defaults): each hypothesis's best width + 1 tokens, the
//     first `width` finished end the search, the raw logits processed
//     before the log-softmax;
//   transformers' generate (BeamOptions::transformers): the best 2 x width
//     (beam, token) pairs, an end ranked past width dropped, the finished
//     kept to the best width, processors applied to the log-probabilities
//     (no renormalisation), stopping early or by transformers' heuristic,
//     and the running beams joining the finished at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/runtime/session.h"

namespace arch {

struct BeamResult {
  std::vector<int32_t> tokens;   // after the prompt, the end token included where reached
  double sum_logprob = 0;
  double score = 0;              // sum_logprob / tokens ** length_penalty
};

using LogitsProcessor = std::function<void(std::span<float> logits, const std::vector<int32_t>& seq)>;

struct BeamOptions {
  int width = 1;
  int max_new = 16;
  int32_t eot = -1;
  LogitsProcessor process;          // on the raw logits, before the log-softmax
  LogitsProcessor process_scores;   // on the log-probabilities, after it
  double length_penalty = 1.0;
  bool transformers = false;        // transformers' candidates, capacity and stopping (above)
  bool early_stopping = false;      // transformers: stop once `width` are finished
  int num_return = 1;               // hypotheses returned, best first
};

// One input's search, whatever runs its hypotheses (sessions of their own,
// or slots of a batched session): the live hypotheses, each step's
// candidates ranked from their logits, the finished kept, as the flavour
// of `opt` has it.
class BeamSet {
 public:
  struct Hyp {
    std::vector<int32_t> seq;   // generated so far
    double score = 0;           // its summed log-probabilities
    std::vector<float> logits;  // its next step's (opt.process applied), set by the runner
    int parent = -1;            // its index in the live set before the last advance
    int runner = 0;             // which of `width` sessions or slots runs it
    int from = -1;              // the runner whose history it takes over (its parent's) before its next
                                // token; -1: its own runner holds that history already
  };
  explicit BeamSet(const BeamOptions& opt);
  std::vector<Hyp>& live() { return live_; }
  // Ranks the candidates of every live hypothesis (logits set) and makes the
  // next live set, each naming its parent and its runner: a parent's runner
  // goes on with its first child, and the others take a runner no child
  // kept (`from` naming the parent's); false: the search is over.
  bool advance();
  // The finished hypotheses, the still running joined, best first.
  Result<std::vector<BeamResult>> results();

 private:
  struct Done {
    double score, sum;
    std::vector<int32_t> seq;
  };
  double normalised(double sum, size_t len) const;
  void finish(double sum, std::vector<int32_t> seq);
  bool done(const std::vector<double>& running_sums, size_t generated) const;
  BeamOptions opt_;
  std::vector<Hyp> live_;
  std::vector<Done> finished_;
  int generated_ = 0;
};

// `sessions`: at least `width`, reset here; `state`: what each session's
// first step takes (Session::begin). The best hypotheses first.
Result<std::vector<BeamResult>> beam_search(std::vector<std::unique_ptr<Session>>& sessions, const NamedTensors& state,
                                            const std::vector<int32_t>& prompt, const BeamOptions& opt);

// Whisper's: the best finished hypothesis by average log-probability.
Result<BeamResult> beam_search(std::vector<std::unique_ptr<Session>>& sessions, const NamedTensors& state,
                               const std::vector<int32_t>& prompt, int width, int max_new, int32_t eot,
                               const LogitsProcessor& process);

}  // namespace arch

// Several inputs of an encoder-decoder decoded together
// (engine/runtime/seq2seq_batch.h): each input's tokens are those it has
// decoded alone, greedy and with beams, however many run beside it and
// whichever slots it takes as others finish; and beam.json's best
// hypothesis for every setting comes out with other inputs in the batch.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/seq2seq_batch.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

struct Batch {
  std::vector<Seq2SeqResult> results;
  std::vector<int> idle_asks;  // the inputs in flight when each was asked for without waiting
};

// `inputs` through seq2seq_generate_batch, given one by one as it asks.
Result<Batch> run_batch(const Model& m, const Seq2SeqPlan& plan, int batch, const std::vector<std::vector<int32_t>>& inputs) {
  Batch b;
  b.results.resize(inputs.size());
  size_t given = 0, finished = 0;
  auto next = [&](bool idle) -> Result<std::optional<std::vector<int32_t>>> {
    if (!idle) b.idle_asks.push_back(int(given - finished));
    if (given == inputs.size()) return std::optional<std::vector<int32_t>>{};
    return std::optional<std::vector<int32_t>>{inputs[given++]};
  };
  auto done = [&](size_t k, Seq2SeqResult r) -> Status {
    if (k >= inputs.size()) return error("input " + std::to_string(k) + " was never given");
    b.results[k] = std::move(r);
    ++finished;
    return {};
  };
  ARCH_TRY_STATUS(seq2seq_generate_batch(m, plan, batch, next, done));
  if (finished != inputs.size()) return error(std::to_string(finished) + " of " + std::to_string(inputs.size()) + " finished");
  return b;
}

// The golden's input and others made from it: shorter, reversed, repeated.
std::vector<std::vector<int32_t>> inputs_of(const std::string& dir) {
  const std::vector<int32_t> ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  std::vector<std::vector<int32_t>> out{ids};
  out.emplace_back(ids.begin(), ids.begin() + long(ids.size() / 2));
  out.back().push_back(ids.back());
  out.emplace_back(ids.rbegin(), ids.rend());
  out.push_back({ids.front(), ids.back()});
  std::vector<int32_t> twice = ids;
  twice.insert(twice.end(), ids.begin(), ids.end() - 1);
  out.push_back(twice);
  return out;
}

class Seq2SeqBatchGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(Seq2SeqBatchGolden, EachInputDecodesAsItDoesAlone) {
  const std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto inputs = inputs_of(dir);
  for (int beams : {1, 3}) {
    Seq2SeqOptions o;
    o.beams = beams;
    o.max_new_tokens = 12;
    auto plan = seq2seq_plan(**m, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    std::vector<Seq2SeqResult> alone;
    for (const auto& in : inputs) {
      auto r = seq2seq_generate(**m, in, *plan);
      ASSERT_TRUE(r.ok()) << r.error().message;
      alone.push_back(*r);
    }
    // Two at a time (each later input taking a finished one's slots), and all at once.
    for (int batch : {2, 8}) {
      SCOPED_TRACE(std::to_string(beams) + " beams, batch " + std::to_string(batch));
      auto got = run_batch(**m, *plan, batch, inputs);
      ASSERT_TRUE(got.ok()) << got.error().message;
      for (size_t k = 0; k < inputs.size(); ++k) {
        EXPECT_EQ(got->results[k].tokens, alone[k].tokens) << "input " << k;
        EXPECT_NEAR(got->results[k].score, alone[k].score, 1e-5 * std::max(1.0, std::abs(alone[k].score))) << "input " << k;
        EXPECT_EQ(got->results[k].stop_reason, alone[k].stop_reason) << "input " << k;
      }
      // It asked for more without waiting only while inputs were in flight, never past the batch.
      for (int in_flight : got->idle_asks) {
        EXPECT_GE(in_flight, 1);
        EXPECT_LT(in_flight, batch);
      }
    }
  }
}

// beam.json's settings (4 beams; length penalty 1 and 2; n-gram blocking 0
// and 3): the golden's input, batched with three others, gets transformers'
// best hypothesis.
TEST_P(Seq2SeqBatchGolden, BeamJsonBestHypothesisInABatch) {
  const std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const nlohmann::json beam = testing::read_json(dir + "/beam.json");
  auto inputs = inputs_of(dir);
  std::swap(inputs[0], inputs[2]);  // the golden's input third, beside others begun before it
  inputs.resize(4);
  for (const auto& s : beam["settings"]) {
    SCOPED_TRACE("length_penalty " + s["length_penalty"].dump() + ", no_repeat_ngram_size " + s["no_repeat_ngram_size"].dump());
    Seq2SeqOptions o;
    o.beams = beam["generation"]["num_beams"].get<int>();
    o.max_new_tokens = beam["generation"]["max_new_tokens"].get<int>();
    o.length_penalty = s["length_penalty"].get<double>();
    o.no_repeat_ngram_size = s["no_repeat_ngram_size"].get<int>();
    auto plan = seq2seq_plan(**m, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    plan->early_stopping = beam["generation"].value("early_stopping", false);
    // transformers ran no other processor (no forced ends from config.json).
    GenerationRules rules;
    rules.no_repeat_ngram_size = s["no_repeat_ngram_size"].get<int>();
    rules.eos = plan->rules.eos;
    plan->rules = rules;
    auto got = run_batch(**m, *plan, 3, inputs);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->results[2].tokens, s["new_token_ids"][0].get<std::vector<int32_t>>());
    const double drift = s["checks"]["float64_max_abs_score_diff"];
    EXPECT_NEAR(got->results[2].score, s["sequences_scores"][0].get<double>(), std::max(3 * drift, 1e-5));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Seq2SeqBatchGolden, ::testing::Values("bart", "mbart", "marian", "m2m_100"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// A slot holds its input's encoder output; one that holds none, or a graph
// that takes none, is refused by name; a recurrent state cannot go back;
// T5's relative position bias (made over every slot's positions at once)
// is refused, so its inputs are decoded one after another.
TEST(BatchedSessionHeld, RefusesWhatItCannotRun) {
  const std::string bart = testing::golden_dir("bart"), llama = testing::golden_dir("llama"),
                    qwen3_next = testing::golden_dir("qwen3_next"), mt5 = testing::golden_dir("mt5");
  ARCH_REQUIRE_SHARED(bart);
  auto t5 = load_model(mt5);
  ASSERT_TRUE(t5.ok()) << t5.error().message;
  auto refused = BatchedSession::make(**t5, 2, 8);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("adds a bias to its scores"), std::string::npos) << refused.error().message;
  auto m = load_model(bart);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto b = BatchedSession::make(**m, 2, 8);
  ASSERT_TRUE(b.ok()) << b.error().message;
  std::vector<int32_t> start{2};
  BatchedSession::Piece piece{1, start};
  auto r = (*b)->run(std::span(&piece, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("slot 1 holds no state inputs"), std::string::npos) << r.error().message;
  auto missing = (*b)->hold(0, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("takes state input 'encoder_last_hidden_state', which was not given"), std::string::npos)
      << missing.error().message;
  auto dm = load_model(llama);
  ASSERT_TRUE(dm.ok()) << dm.error().message;
  auto d = BatchedSession::make(**dm, 1, 8);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_FALSE((*d)->hold(0, {}).ok());
  auto qm = load_model(qwen3_next);
  ASSERT_TRUE(qm.ok()) << qm.error().message;
  auto q = BatchedSession::make(**qm, 1, 8);
  ASSERT_TRUE(q.ok()) << q.error().message;
  std::vector<int32_t> two{1, 2};
  BatchedSession::Piece p2{0, two};
  ASSERT_TRUE((*q)->run(std::span(&p2, 1)).ok());
  auto back = (*q)->rewind(0, 1);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("keeps recurrent states, which cannot go back"), std::string::npos) << back.error().message;
}

}  // namespace
}  // namespace arch

// Beam search as transformers' generate runs it (4 beams, length penalty 1
// and 2, n-gram blocking 0 and 3), against each encoder-decoder golden's
// beam.json: the best hypothesis's tokens exactly, its score
// (sum of log-probabilities / tokens ** length_penalty) within 3x
// transformers' own float32-vs-float64 drift,
// and the others where transformers' own scores keep them apart.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/beam_search.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/generation_rules.h"
#include "engine/runtime/model.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

class BeamGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(BeamGolden, EverySettingsBestHypothesisIsTransformers) {
  const std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const nlohmann::json beam = testing::read_json(dir + "/beam.json");
  const nlohmann::json in = testing::read_json(dir + "/inputs.json");
  std::vector<int32_t> ids = in["input_ids"].get<std::vector<int32_t>>();
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.i32());
  const int width = beam["generation"]["num_beams"], max_new = beam["generation"]["max_new_tokens"];
  const int32_t eos = beam["generation"]["eos_token_id"];
  auto start = decoder_start_token(**m);
  ASSERT_TRUE(start.ok());
  std::vector<std::unique_ptr<Session>> sessions;
  for (int b = 0; b < width; ++b) sessions.push_back(std::make_unique<Session>(**m, int64_t(max_new + 2)));
  auto state = sessions[0]->encode({{"input_ids", t}});
  ASSERT_TRUE(state.ok()) << state.error().message;
  for (const auto& setting : beam["settings"]) {
    SCOPED_TRACE("length_penalty " + setting["length_penalty"].dump() + ", no_repeat_ngram_size " +
                 setting["no_repeat_ngram_size"].dump());
    GenerationRules rules;
    rules.no_repeat_ngram_size = setting["no_repeat_ngram_size"];
    BeamOptions opt;
    opt.width = width, opt.max_new = max_new, opt.eot = eos, opt.transformers = true, opt.num_return = width;
    opt.length_penalty = setting["length_penalty"];
    const int32_t first = *start;
    opt.process_scores = [&](std::span<float> scores, const std::vector<int32_t>& generated) {
      std::vector<int32_t> seq{first};
      seq.insert(seq.end(), generated.begin(), generated.end());
      rules.apply(scores, seq);
    };
    auto got = beam_search(sessions, *state, {first}, opt);
    ASSERT_TRUE(got.ok()) << got.error().message;
    const auto want = setting["new_token_ids"].get<std::vector<std::vector<int32_t>>>();
    const auto scores = setting["sequences_scores"].get<std::vector<double>>();
    ASSERT_EQ(got->size(), want.size());
    EXPECT_EQ((*got)[0].tokens, want[0]);
    // 3x transformers' own float32-vs-float64 drift of the scores (the README's rule's derivation).
    const double drift = setting["checks"]["float64_max_abs_score_diff"];
    EXPECT_NEAR((*got)[0].score, scores[0], std::max(3 * drift, 1e-5));
    for (size_t i = 1; i < want.size(); ++i)
      if (scores[i - 1] - scores[i] > 1e-3 * std::abs(scores[i]) && (i + 1 == want.size() || scores[i] - scores[i + 1] > 1e-3 * std::abs(scores[i])))
        EXPECT_EQ((*got)[i].tokens, want[i]) << "hypothesis " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BeamGolden, ::testing::Values("mt5", "bart", "mbart", "marian", "m2m_100"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace arch

#include "engine/runtime/seq2seq.h"
#include "tests/engine/runtime/golden_variant.h"

namespace arch {
namespace {

// NaN logits (here from a NaN in final_logits_bias) stop the search with
// the fault named, as greedy decoding stops, rather than ranking noise.
TEST(BeamSearch, NanLogitsStopItWithTheFaultNamed) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("marian"));
  Tensor bias = testing::filled({1, 512}, 0.0f);
  bias.f32()[7] = NAN;
  testing::GoldenVariant v("marian", "beam_nan", nlohmann::json::object(), {{"final_logits_bias", bias}});
  auto m = load_model(v.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  Seq2SeqOptions o;
  o.beams = 2;
  o.max_new_tokens = 4;
  auto plan = seq2seq_plan(**m, o);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto r = seq2seq_generate(**m, {13, 6, 35, 0}, *plan);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the model's logits are not all numbers (NaN or Inf) at step 0"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace arch

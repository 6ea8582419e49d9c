// The cpu gated_delta_rule (gated_delta_rule_cpu.cpp) against the reference
// recurrence, within the op's tolerance: prompts by chunks (a partial last
// chunk), decode steps after them, grouped key heads and Dk != Dv, batched
// sequences, and the state handed between the backends mid-session.
#include "tests/kernels/cpu_test_util.h"

#include <cmath>
#include <string>
#include <vector>

#include "kernels/reference/recurrent_state.h"

namespace arch::test {
namespace {

struct DeltaShape {
  int64_t KH, H, Dk, Dv;
};

// Inputs for `rows` positions as Qwen3-Next gives them: q, k l2-normed per
// head, g in [g_min, 0], beta in (0, 1).
struct DeltaInputs {
  DeltaShape s;
  int64_t rows;
  std::vector<float> q, k, v, g, beta;

  DeltaInputs(DeltaShape shape, int64_t n, uint64_t seed, float g_min = -1.5f) : s(shape), rows(n) {
    q = random_values(size_t(n * s.KH * s.Dk), seed);
    k = random_values(size_t(n * s.KH * s.Dk), seed + 1);
    v = random_values(size_t(n * s.H * s.Dv), seed + 2);
    g = random_values(size_t(n * s.H), seed + 3);
    beta = random_values(size_t(n * s.H), seed + 4);
    for (std::vector<float>* x : {&q, &k})
      for (int64_t r = 0; r < n * s.KH; ++r) {
        float* p = x->data() + r * s.Dk;
        double norm = 0;
        for (int64_t i = 0; i < s.Dk; ++i) norm += double(p[i]) * p[i];
        for (int64_t i = 0; i < s.Dk; ++i) p[i] = float(p[i] / std::sqrt(norm + 1e-6));
      }
    for (float& x : g) x = (x + 1.0f) * 0.5f * g_min;               // [g_min, 0]
    for (float& x : beta) x = 0.01f + (x + 1.0f) * 0.5f * 0.98f;     // (0, 1)
  }

  // Rows [from, from + n) as the op's inputs.
  std::vector<Tensor> slice(int64_t from, int64_t n) const {
    auto part = [&](const std::vector<float>& x, int64_t per_row) {
      return std::vector<float>(x.begin() + from * per_row, x.begin() + (from + n) * per_row);
    };
    return {f32({n, s.KH, s.Dk}, part(q, s.KH * s.Dk)), f32({n, s.KH, s.Dk}, part(k, s.KH * s.Dk)),
            f32({n, s.H, s.Dv}, part(v, s.H * s.Dv)), f32({n, s.H}, part(g, s.H)), f32({n, s.H}, part(beta, s.H))};
  }
  std::vector<Tensor> all() const { return slice(0, rows); }
};

// The calls of `sizes` rows in turn on a runner of `backend` (whole output
// rows concatenated) and the state after the last.
struct Calls {
  std::vector<float> o, state;
};
Calls run_in_calls(const std::string& backend, const DeltaInputs& in, const std::vector<int64_t>& sizes) {
  Runner r;
  r.backend = backend;
  Calls out;
  int64_t at = 0;
  for (int64_t n : sizes) {
    auto res = r.run("gated_delta_rule", in.slice(at, n));
    EXPECT_TRUE(res.ok()) << backend << ": " << (res.ok() ? "" : res.error().message);
    if (!res.ok()) return out;
    const std::vector<float> o = values(res->at(0));
    out.o.insert(out.o.end(), o.begin(), o.end());
    out.state = values(res->at(1));
    at += n;
  }
  return out;
}

TEST(CpuGatedDeltaRule, OneCallByChunksMatchesTheRecurrence) {
  // 150 rows: whole chunks and a partial last one; 16 and 17 about the
  // least the chunks take.
  const DeltaShape shapes[] = {{2, 4, 32, 32}, {1, 2, 128, 128}, {2, 4, 16, 24}};
  uint64_t seed = 10;
  for (const DeltaShape& s : shapes)
    for (int64_t rows : {150, 16, 17}) {
      DeltaInputs in(s, rows, seed += 10);
      const std::string what = "KH " + std::to_string(s.KH) + " H " + std::to_string(s.H) + " Dk " +
                               std::to_string(s.Dk) + " Dv " + std::to_string(s.Dv) + ", " + std::to_string(rows) +
                               " rows";
      EXPECT_GT(expect_cpu_matches_reference("gated_delta_rule", in.all(), Attrs::object(), what), 0.05);
    }
}

TEST(CpuGatedDeltaRule, StrongAndNoDecay) {
  // Cumulative gates far below exp's range within a chunk, and none at all.
  for (float g_min : {-30.0f, 0.0f}) {
    DeltaInputs in({2, 4, 32, 32}, 100, 77, g_min);
    EXPECT_GT(expect_cpu_matches_reference("gated_delta_rule", in.all(), Attrs::object(),
                                           "g in [" + std::to_string(g_min) + ", 0]"),
              0.05);
  }
}

TEST(CpuGatedDeltaRule, ShortPiecesByTheRecurrence) {
  for (int64_t rows : {1, 2, 5, 15}) {
    DeltaInputs in({2, 4, 32, 40}, rows, 200 + uint64_t(rows));
    const std::string what = std::to_string(rows) + " rows";
    EXPECT_GT(expect_cpu_matches_reference("gated_delta_rule", in.all(), Attrs::object(), what), 0.01);
  }
}

// A prompt, then decode steps: the same on both backends, and the same as
// the reference taking all the rows in one call.
TEST(CpuGatedDeltaRule, DecodeAfterAPromptEqualsRecomputing) {
  const DeltaShape shapes[] = {{2, 4, 32, 32}, {2, 4, 16, 24}, {1, 1, 128, 128}};
  const std::vector<std::vector<int64_t>> schedules = {{70, 1, 1, 1, 1, 1}, {40, 7, 33, 1, 64, 2}};
  uint64_t seed = 300;
  for (const DeltaShape& s : shapes)
    for (const std::vector<int64_t>& sizes : schedules) {
      int64_t total = 0;
      for (int64_t n : sizes) total += n;
      DeltaInputs in(s, total, seed += 10);
      const std::string what = "Dk " + std::to_string(s.Dk) + " Dv " + std::to_string(s.Dv) + ", " +
                               std::to_string(sizes.size()) + " calls";
      Calls cpu = run_in_calls("cpu", in, sizes);
      Calls ref = run_in_calls("reference", in, sizes);
      Calls whole = run_in_calls("reference", in, {total});
      ASSERT_EQ(cpu.o.size(), whole.o.size()) << what;
      ASSERT_EQ(ref.o.size(), whole.o.size()) << what;
      EXPECT_GT(expect_within_op_tolerance("gated_delta_rule", cpu.o.data(), ref.o.data(), int64_t(ref.o.size()), what + ": o, in calls"),
                0.05);
      expect_within_op_tolerance("gated_delta_rule", cpu.o.data(), whole.o.data(), int64_t(whole.o.size()), what + ": o, against one call");
      expect_within_op_tolerance("gated_delta_rule", cpu.state.data(), whole.state.data(), int64_t(whole.state.size()), what + ": state");
      expect_within_op_tolerance("gated_delta_rule", ref.state.data(), whole.state.data(), int64_t(whole.state.size()),
                              what + ": reference state in calls");
    }
}

// The state is the reference's: a session may run its prompt on one
// backend and decode on the other.
TEST(CpuGatedDeltaRule, StatePassesBetweenBackends) {
  DeltaInputs in({2, 4, 16, 24}, 73, 400);
  Calls whole = run_in_calls("reference", in, {73});
  for (const char* first : {"cpu", "reference"}) {
    Runner r;
    r.backend = first;
    auto prompt = r.run("gated_delta_rule", in.slice(0, 70));
    ASSERT_TRUE(prompt.ok()) << prompt.error().message;
    std::vector<float> o = values(prompt->at(0));
    std::vector<float> state;
    for (int64_t t = 70; t < 73; ++t) {
      r.backend = r.backend == "cpu" ? "reference" : "cpu";
      auto step = r.run("gated_delta_rule", in.slice(t, 1));
      ASSERT_TRUE(step.ok()) << step.error().message;
      const std::vector<float> ot = values(step->at(0));
      o.insert(o.end(), ot.begin(), ot.end());
      state = values(step->at(1));
    }
    expect_within_op_tolerance("gated_delta_rule", o.data(), whole.o.data(), int64_t(o.size()), std::string(first) + " first: o");
    expect_within_op_tolerance("gated_delta_rule", state.data(), whole.state.data(), int64_t(state.size()),
                            std::string(first) + " first: state");
  }
}

// One batched call of three sequences (slots 0..2): one starting over, two
// continuing (one of them by chunks), each as it would run alone.
TEST(CpuGatedDeltaRule, BatchedSequencesRunAsAlone) {
  const DeltaShape s{2, 4, 16, 24};
  const int64_t per_row_o = s.H * s.Dv;
  // Sequence i: `before` rows taken in an earlier batched call, then `now` rows.
  const int64_t before[3] = {10, 40, 3}, now[3] = {5, 1, 70};
  std::vector<DeltaInputs> seqs;
  for (int i = 0; i < 3; ++i) seqs.emplace_back(s, before[i] + now[i], 500 + uint64_t(i) * 10);
  // Slot 0 starts a new sequence in the second call: its first rows are
  // another sequence's, dropped.
  DeltaInputs dropped(s, before[0], 590);

  auto batch = [&](bool second, SequenceRows& rows) {
    std::vector<std::vector<float>> parts(5);
    int64_t at = 0;
    rows.slot_capacity = 256;
    rows.pieces.clear();
    for (int i = 0; i < 3; ++i) {
      const DeltaInputs& in = !second && i == 0 ? dropped : seqs[size_t(i)];
      const int64_t from = second && i > 0 ? before[i] : 0, n = second ? now[i] : before[i];
      const std::vector<Tensor> t = in.slice(from, n);
      for (size_t j = 0; j < 5; ++j) parts[j].insert(parts[j].end(), t[j].f32(), t[j].f32() + t[j].numel());
      rows.pieces.push_back({i, second && i > 0 ? before[i] : 0, at, n});
      at += n;
    }
    return std::vector<Tensor>{f32({at, s.KH, s.Dk}, parts[0]), f32({at, s.KH, s.Dk}, parts[1]),
                               f32({at, s.H, s.Dv}, parts[2]), f32({at, s.H}, parts[3]), f32({at, s.H}, parts[4])};
  };
  SequenceRows first_rows, second_rows;
  const std::vector<Tensor> first = batch(false, first_rows), second = batch(true, second_rows);

  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    Runner r;
    r.backend = backend;
    r.max_context = 3 * 256;
    r.sequences = &first_rows;
    ASSERT_TRUE(r.run("gated_delta_rule", first).ok());
    r.sequences = &second_rows;
    auto out = r.run("gated_delta_rule", second);
    ASSERT_TRUE(out.ok()) << out.error().message;
    auto* state = dynamic_cast<RecurrentState*>(r.state.get());
    ASSERT_NE(state, nullptr);
    int64_t at = 0;
    for (int i = 0; i < 3; ++i) {
      const std::string what = "sequence " + std::to_string(i);
      // Alone: sequence 0 from its start; the others in the same two calls.
      Calls alone = i == 0 ? run_in_calls("reference", seqs[0], {now[0]})
                         : run_in_calls("reference", seqs[size_t(i)], {before[i], now[i]});
      const float* want = alone.o.data() + (i == 0 ? 0 : before[i] * per_row_o);
      EXPECT_GT(expect_within_op_tolerance("gated_delta_rule", out->at(0).f32() + at * per_row_o, want, now[i] * per_row_o, what + ": o"),
                0.05);
      expect_within_op_tolerance("gated_delta_rule", state->slot(i), alone.state.data(), int64_t(alone.state.size()), what + ": state");
      at += now[i];
    }
    // Output 1: the last piece's state.
    EXPECT_EQ(out->at(1).f32(), state->slot(2));
    // Two pieces of one sequence in a call would continue one state from
    // the same position: refused, on either backend.
    SequenceRows twice = second_rows;
    twice.pieces[2].slot = 1;
    r.sequences = &twice;
    auto refused = r.run("gated_delta_rule", second);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("sequence slot 1 appears twice in one call"), std::string::npos)
        << refused.error().message;
  }
}

}  // namespace
}  // namespace arch::test

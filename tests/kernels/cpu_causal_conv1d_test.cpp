// The cpu causal_conv1d (causal_conv1d_cpu.cpp) against the reference
// kernel, within the op's tolerance: the channel path (decode, short
// pieces; K = 4 deinterleaved, other K one channel at a time) and the row
// path (prompts), a prompt then decode steps, prompts shorter than K, and
// batched sequences.
#include "tests/kernels/cpu_test_util.h"

#include <cmath>
#include <string>
#include <vector>

#include "kernels/reference/recurrent_state.h"

namespace arch::test {
namespace {

struct Calls {
  std::vector<float> y, window;
};

// x [rows, C] in calls of `sizes` rows on `backend`: the outputs in order
// and the window after the last.
Calls run_in_calls(const std::string& backend, const std::vector<float>& x, int64_t C, const Tensor& w,
                 const std::vector<int64_t>& sizes) {
  Runner r;
  r.backend = backend;
  Calls out;
  int64_t at = 0;
  for (int64_t n : sizes) {
    Tensor xt = f32({n, C}, std::vector<float>(x.begin() + at * C, x.begin() + (at + n) * C));
    auto res = r.run("causal_conv1d", {xt, w});
    EXPECT_TRUE(res.ok()) << backend << ": " << (res.ok() ? "" : res.error().message);
    if (!res.ok()) return out;
    const std::vector<float> y = values(res->at(0));
    out.y.insert(out.y.end(), y.begin(), y.end());
    out.window = values(res->at(1));
    at += n;
  }
  return out;
}

TEST(CpuCausalConv1d, OneCallMatchesTheReference) {
  // Channels not a multiple of the vector length; rows either side of the
  // row path's threshold; K = 4 (deinterleaved) and others.
  uint64_t seed = 1;
  for (int64_t K : {4, 3, 1, 5})
    for (int64_t C : {40, 8192})
      for (int64_t S : {1, 3, 15, 16, 50}) {
        if (C == 8192 && S > 16) continue;
        Tensor x = f32({S, C}, random_values(size_t(S * C), seed++));
        Tensor w = f32({C, K}, random_values(size_t(C * K), seed++));
        EXPECT_GT(expect_cpu_matches_reference("causal_conv1d", {x, w}, Attrs::object(),
                                               "K " + std::to_string(K) + " C " + std::to_string(C) + " S " +
                                                   std::to_string(S)),
                  0.1);
      }
}

// A prompt, then decode steps (and prompts shorter than K): as the
// reference takes the same calls, and as it takes all rows at once.
TEST(CpuCausalConv1d, PromptThenDecodeEqualsOneCall) {
  const std::vector<std::vector<int64_t>> schedules = {
      {20, 1, 1, 1, 1, 1}, {2, 1, 1, 1}, {1, 30, 1}, {3, 2, 17, 1, 40}, {1, 1, 1, 1, 1, 1}};
  uint64_t seed = 100;
  for (int64_t K : {4, 3})
    for (const std::vector<int64_t>& sizes : schedules) {
      const int64_t C = 37;
      int64_t total = 0;
      for (int64_t n : sizes) total += n;
      const std::vector<float> x = random_values(size_t(total * C), seed++);
      Tensor w = f32({C, K}, random_values(size_t(C * K), seed++));
      const std::string what = "K " + std::to_string(K) + ", first call " + std::to_string(sizes[0]) + " rows";
      Calls cpu = run_in_calls("cpu", x, C, w, sizes);
      Calls ref = run_in_calls("reference", x, C, w, sizes);
      Calls whole = run_in_calls("reference", x, C, w, {total});
      ASSERT_EQ(cpu.y.size(), whole.y.size()) << what;
      EXPECT_GT(expect_within_op_tolerance("causal_conv1d", cpu.y.data(), ref.y.data(), int64_t(ref.y.size()), what + ": y in calls"), 0.1);
      expect_within_op_tolerance("causal_conv1d", cpu.y.data(), whole.y.data(), int64_t(whole.y.size()), what + ": y against one call");
      // The window holds inputs: copied, not computed.
      EXPECT_EQ(cpu.window, whole.window) << what;
      EXPECT_EQ(ref.window, whole.window) << what;
    }
}

// One batched call of three sequences: one starting over, one continuing
// by a decode step, one by a prompt: each as it would run alone.
TEST(CpuCausalConv1d, BatchedSequencesRunAsAlone) {
  const int64_t C = 48, K = 4;
  Tensor w = f32({C, K}, random_values(size_t(C * K), 7));
  const int64_t before[3] = {10, 2, 5}, now[3] = {3, 1, 40};
  std::vector<std::vector<float>> seqs;
  for (int i = 0; i < 3; ++i) seqs.push_back(random_values(size_t((before[i] + now[i]) * C), 20 + uint64_t(i)));
  const std::vector<float> dropped = random_values(size_t(before[0] * C), 30);
  auto batch = [&](bool second, SequenceRows& rows) {
    std::vector<float> x;
    int64_t at = 0;
    rows.slot_capacity = 128;
    rows.pieces.clear();
    for (int i = 0; i < 3; ++i) {
      const std::vector<float>& src = !second && i == 0 ? dropped : seqs[size_t(i)];
      const int64_t from = second && i > 0 ? before[i] : 0, n = second ? now[i] : before[i];
      x.insert(x.end(), src.begin() + from * C, src.begin() + (from + n) * C);
      rows.pieces.push_back({i, from, at, n});
      at += n;
    }
    return f32({at, C}, x);
  };
  SequenceRows first_rows, second_rows;
  const Tensor first = batch(false, first_rows), second = batch(true, second_rows);
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    Runner r;
    r.backend = backend;
    r.max_context = 3 * 128;
    r.sequences = &first_rows;
    ASSERT_TRUE(r.run("causal_conv1d", {first, w}).ok());
    r.sequences = &second_rows;
    auto out = r.run("causal_conv1d", {second, w});
    ASSERT_TRUE(out.ok()) << out.error().message;
    auto* state = dynamic_cast<RecurrentState*>(r.state.get());
    ASSERT_NE(state, nullptr);
    int64_t at = 0;
    for (int i = 0; i < 3; ++i) {
      const std::string what = "sequence " + std::to_string(i);
      Calls alone = i == 0 ? run_in_calls("reference", seqs[0], C, w, {now[0]})
                         : run_in_calls("reference", seqs[size_t(i)], C, w, {before[i], now[i]});
      const float* want = alone.y.data() + (i == 0 ? 0 : before[i] * C);
      EXPECT_GT(expect_within_op_tolerance("causal_conv1d", out->at(0).f32() + at * C, want, now[i] * C, what + ": y"), 0.1);
      EXPECT_EQ(std::vector<float>(state->slot(i), state->slot(i) + C * K), alone.window) << what;
      at += now[i];
    }
  }
}

}  // namespace
}  // namespace arch::test

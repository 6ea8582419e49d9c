// The thread governor: its decisions from the threads' CPU shares, and
// what it rests on: decode steps and prompts compute the same logits on
// any number of threads, so changing the count between steps changes
// nothing but the speed.
#include "engine/runtime/thread_governor.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/session.h"
#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/engine/runtime/toy_model.h"

namespace arch {
namespace {

constexpr double kQuiet = 0.99, kBusy = 0.5;

TEST(ThreadPolicy, TakesAThreadOutAfterTwoBusyWindowsInARow) {
  ThreadPolicy p(2);
  EXPECT_EQ(p.after_window(kQuiet), 2);
  EXPECT_EQ(p.after_window(kBusy), 2);  // one busy window: a passing job
  EXPECT_EQ(p.after_window(kBusy), 1);
  EXPECT_EQ(p.after_window(kBusy), 1);  // never under one
}

TEST(ThreadPolicy, AQuietWindowClearsTheStrikes) {
  ThreadPolicy p(2);
  EXPECT_EQ(p.after_window(kBusy), 2);
  EXPECT_EQ(p.after_window(kQuiet), 2);
  EXPECT_EQ(p.after_window(kBusy), 2);
  EXPECT_EQ(p.after_window(kBusy), 1);
}

TEST(ThreadPolicy, TriesAThreadBackAndWaitsLongerEachTimeTheCoreIsStillTaken) {
  ThreadPolicy p(4);
  p.after_window(kBusy);
  ASSERT_EQ(p.after_window(kBusy), 3);
  for (int w = 1; w < ThreadPolicy::kRetryAfter; ++w) ASSERT_EQ(p.after_window(kQuiet), 3);
  EXPECT_EQ(p.after_window(kQuiet), 4);  // the try
  EXPECT_EQ(p.after_window(kBusy), 3);   // still taken: back at once
  for (int w = 1; w < 2 * ThreadPolicy::kRetryAfter; ++w) ASSERT_EQ(p.after_window(kQuiet), 3);
  EXPECT_EQ(p.after_window(kQuiet), 4);  // the next try, twice as late
  EXPECT_EQ(p.after_window(kQuiet), 4);  // free again: kept
}

TEST(ThreadPolicy, OneThreadHasNothingToGovern) {
  ThreadPolicy p(1);
  for (int w = 0; w < 3 * ThreadPolicy::kRetryAfter; ++w) EXPECT_EQ(p.after_window(w % 2 ? kBusy : kQuiet), 1);
}

// Greedy decode steps' logits on `threads` threads, past the depth where a
// step's attention splits its keys into shares.
std::vector<std::vector<float>> decode_logits(const Model& m, int threads, int steps) {
  omp_set_num_threads(threads);
  Session s(m, steps + 8);
  std::vector<std::vector<float>> all;
  EXPECT_TRUE(s.step(std::vector<int32_t>{1, 2, 3}).ok());
  int32_t next = 4;
  for (int k = 0; k < steps; ++k) {
    auto out = s.step(std::vector<int32_t>{next});
    EXPECT_TRUE(out.ok()) << out.error().message;
    if (!out.ok()) break;
    const Tensor& l = out->at("logits");
    all.emplace_back(l.f32(), l.f32() + l.numel());
    next = int32_t((next * 7 + k) % l.dim(-1));
  }
  return all;
}

// A prompt's logits (every position) on `threads` threads.
std::vector<float> prompt_logits(const Model& m, int threads, int n) {
  omp_set_num_threads(threads);
  Session s(m, n + 8);
  std::vector<int32_t> ids;
  for (int k = 0; k < n; ++k) ids.push_back((k * 37 + 5) % 1000);
  auto out = s.step(ids);
  EXPECT_TRUE(out.ok()) << out.error().message;
  if (!out.ok()) return {};
  const Tensor& l = out->at("logits");
  return std::vector<float>(l.f32(), l.f32() + l.numel());
}

void expect_same_on_one_and_two_threads(const Model& m) {
  const int before = omp_get_max_threads();
  const auto one = decode_logits(m, 1, 300), two = decode_logits(m, 2, 300);
  ASSERT_EQ(one.size(), two.size());
  for (size_t k = 0; k < one.size(); ++k) ASSERT_EQ(one[k], two[k]) << "decode step " << k;
  // Prompts too, through oneDNN (F32, BF16) and the integer tiles (Q8_0,
  // Q4_0), one after the other in one process as a governed session
  // meets them.
  for (int n : {3, 40, 300}) EXPECT_EQ(prompt_logits(m, 1, n), prompt_logits(m, 2, n)) << "prompt of " << n;
  omp_set_num_threads(before);
}

// Wide enough that the matmuls split their rows between threads, stored
// as F32 and imported as Q4, Q8 and BF16 (the integer kernels on tiles and
// the BF16 ones).
TEST(ThreadGovernor, StepsComputeTheSameOnAnyNumberOfThreads) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("governor_model_" + std::to_string(getpid()));
  LlamaShape shape;
  shape.hidden_size = 256, shape.head_dim = 64, shape.intermediate_size = 512, shape.vocab_size = 1024;
  shape.max_position_embeddings = 512;
  ASSERT_TRUE(write_random_checkpoint(dir.string(), shape, 3).ok());
  for (auto [name, type] : {std::pair{"f32", ImportType::AsStored}, std::pair{"q4", ImportType::Q4},
                            std::pair{"q8", ImportType::Q8}, std::pair{"bf16", ImportType::BF16}}) {
    SCOPED_TRACE(name);
    const fs::path out = dir / (std::string(name) + ".safetensors");
    ASSERT_TRUE(import_checkpoint(dir.string(), out.string(), type).ok());
    LoadOptions lo;
    lo.backend = "cpu";
    auto m = load_model(out.string(), lo);
    ASSERT_TRUE(m.ok()) << m.error().message;
    expect_same_on_one_and_two_threads(**m);
  }
  fs::remove_all(dir);
}

TEST(ThreadGovernor, AWindowEndsAfterItsStepsOrItsTime) {
  EXPECT_FALSE(ThreadGovernor::window_ends(1, 0.008));
  EXPECT_FALSE(ThreadGovernor::window_ends(ThreadGovernor::kWindow - 1, 0.2));
  EXPECT_TRUE(ThreadGovernor::window_ends(ThreadGovernor::kWindow, 0.1));
  EXPECT_TRUE(ThreadGovernor::window_ends(1, 1.0));  // one step slowed a hundredfold is a window
}

TEST(ThreadGovernor, SessionsGovernOnlyWhenAsked) {
  auto m = testing::load_toy(3);
  ASSERT_TRUE(m);
  EXPECT_EQ(Session(*m, 8).governor(), nullptr);
  const int before = omp_get_max_threads();
  Session s(*m, SessionOptions{.max_context = 64, .adaptive_threads = 2});
  ASSERT_NE(s.governor(), nullptr);
  ASSERT_TRUE(s.step(std::vector<int32_t>{1, 2}).ok());  // a prompt: not a decode step
  for (int32_t t = 0; t < 40; ++t) ASSERT_TRUE(s.step(std::vector<int32_t>{t}).ok());
  EXPECT_EQ(s.governor()->decode_steps(), 40);  // the prompt chunk is not counted
  // The last decode step ran on the governor's count (40 steps end no
  // window of 16, so it has not changed since).
  EXPECT_EQ(omp_get_max_threads(), s.governor()->threads());
  omp_set_num_threads(before);
}

}  // namespace
}  // namespace arch

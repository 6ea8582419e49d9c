// Continuous batching: a greedy request's tokens are the same alone and
// among 63 others that join and leave around it; a sequence that ends early
// frees its slot for a waiting one; past the queue a request is refused.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include <omp.h>

#include "engine/runtime/batcher.h"
#include "tests/engine/runtime/toy_model.h"

namespace arch {
namespace {

std::shared_ptr<Model> toy_model() {
  static std::shared_ptr<Model> m = testing::load_toy(5);
  return m;
}

struct Collected {
  std::vector<int32_t> tokens;
  BatchOutcome outcome;
};

// r submitted; its tokens and outcome once it is done.
std::future<Collected> submit(Batcher& b, BatchRequest r) {
  auto c = std::make_shared<Collected>();
  auto done = std::make_shared<std::promise<Collected>>();
  auto f = done->get_future();
  auto on_token = r.on_token;
  r.on_token = [c, on_token](int32_t t) {
    c->tokens.push_back(t);
    return on_token ? on_token(t) : true;
  };
  r.on_done = [c, done](const BatchOutcome& o) {
    c->outcome = o;
    done->set_value(*c);
  };
  auto ok = b.submit(std::move(r));
  EXPECT_TRUE(ok.ok() && *ok) << (ok.ok() ? "queue full" : ok.error().message);
  return f;
}

BatchRequest greedy(std::vector<int32_t> prompt, int n) {
  BatchRequest r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = n;
  return r;
}

TEST(Batcher, AGreedyRequestGivesTheSameTokensAloneAndAmong63Others) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  const std::vector<int32_t> prompt = {1, 17, 200, 45, 9};
  std::vector<int32_t> alone;
  {
    auto b = Batcher::make(*m, {.slots = 64, .context = 64, .queue = 8});
    ASSERT_TRUE(b.ok()) << b.error().message;
    auto got = submit(**b, greedy(prompt, 24)).get();
    EXPECT_EQ(got.outcome.finish_reason, "length");
    EXPECT_EQ(got.outcome.prompt_tokens, 5);
    EXPECT_EQ(got.outcome.completion_tokens, 24);
    alone = got.tokens;
  }
  ASSERT_EQ(alone.size(), 24u);
  auto b = Batcher::make(*m, {.slots = 64, .context = 64, .queue = 8});
  ASSERT_TRUE(b.ok());
  // 63 others of other lengths, sampled or greedy, some ending early, all
  // submitted before it and around it.
  std::vector<std::future<Collected>> others;
  for (int k = 0; k < 63; ++k) {
    BatchRequest r = greedy({int32_t(1 + k), int32_t(200 - k), 7}, 4 + k % 29);
    if (k % 2) r.sampling = {.greedy = false, .temperature = 0.9f, .top_p = 0.9f, .seed = uint64_t(k)};
    if (k == 40) r.prompt.resize(20, 11);
    others.push_back(submit(**b, std::move(r)));
    if (k == 31) others.push_back(submit(**b, greedy(prompt, 24)));
  }
  auto among = others[32].get();
  EXPECT_EQ(among.tokens, alone);
  EXPECT_EQ(among.outcome.finish_reason, "length");
  for (auto& f : others)
    if (f.valid()) {
      auto o = f.get();
      EXPECT_NE(o.outcome.finish_reason, "error") << o.outcome.error;
    }
  auto load = (*b)->load();
  EXPECT_GT(load.steps, 0);
  EXPECT_GT(double(load.step_rows) / double(load.steps), 8.0) << "the sequences decoded together";
}

TEST(Batcher, ASequenceEndedEarlyFreesItsSlot) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto b = Batcher::make(*m, {.slots = 1, .context = 64, .queue = 4});
  ASSERT_TRUE(b.ok());
  BatchRequest gone = greedy({1, 2, 3}, 50);
  int seen = 0;
  gone.on_token = [&seen](int32_t) { return ++seen < 3; };  // the client goes after 3 tokens
  auto first = submit(**b, std::move(gone));
  auto second = submit(**b, greedy({4, 5}, 5));
  auto a = first.get();
  EXPECT_EQ(a.tokens.size(), 3u);
  EXPECT_EQ(a.outcome.finish_reason, "stop");
  auto c = second.get();
  EXPECT_EQ(c.tokens.size(), 5u);
  EXPECT_EQ(c.outcome.finish_reason, "length");
  EXPECT_EQ((*b)->load().running, 0);
}

TEST(Batcher, ARequestCancelledWhileWaitingNeverRuns) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto b = Batcher::make(*m, {.slots = 1, .context = 64, .queue = 4});
  ASSERT_TRUE(b.ok());
  BatchRequest gone = greedy({1, 2, 3}, 8);
  gone.cancelled = [] { return true; };
  auto got = submit(**b, std::move(gone)).get();
  EXPECT_TRUE(got.tokens.empty());
  EXPECT_EQ(got.outcome.finish_reason, "stop");
  EXPECT_EQ(got.outcome.completion_tokens, 0);
  EXPECT_EQ(submit(**b, greedy({4, 5}, 3)).get().tokens.size(), 3u);
}

TEST(Batcher, AStopTokenEndsWithoutBeingPassedOn) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto b = Batcher::make(*m, {.slots = 2, .context = 64, .queue = 4});
  ASSERT_TRUE(b.ok());
  auto free_run = submit(**b, greedy({1, 2, 3}, 8)).get();
  ASSERT_GE(free_run.tokens.size(), 3u);
  BatchRequest r = greedy({1, 2, 3}, 8);
  r.stop_ids = {free_run.tokens[2]};
  auto stopped = submit(**b, std::move(r)).get();
  EXPECT_EQ(stopped.outcome.finish_reason, "stop");
  const auto& want = free_run.tokens;
  size_t first_stop = std::find(want.begin(), want.end(), want[2]) - want.begin();
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(want.begin(), want.begin() + first_stop));
}

// --threads N: OpenMP's count is per thread, and the worker's must be
// its creator's, not one per core.
TEST(Batcher, TheWorkerRunsOnItsCreatorsThreadCount) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  auto b = Batcher::make(*m, {.slots = 1, .context = 16, .queue = 1});
  omp_set_num_threads(before);
  ASSERT_TRUE(b.ok());
  int seen = 0;
  BatchRequest r = greedy({1, 2}, 2);
  r.on_token = [&seen](int32_t) {  // on the worker
    seen = omp_get_max_threads();
    return true;
  };
  submit(**b, std::move(r)).get();
  EXPECT_EQ(seen, 1);
}

// With a profile, the worker times each prompt's and each step's kernels
// and each step's draws: two requests of 3 new tokens are two prompts (each
// drawing its first token) and 4 rows of decode steps (2 to 4 steps, as
// they happen to share them).
TEST(Batcher, TimesItsPromptsAndStepsIntoAProfile) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  BatchProfile profile;
  auto b = Batcher::make(*m, {.slots = 2, .context = 16, .queue = 2, .profile = &profile});
  ASSERT_TRUE(b.ok());
  auto f1 = submit(**b, greedy({1, 2, 3}, 3));
  auto f2 = submit(**b, greedy({4, 5}, 3));
  EXPECT_EQ(f1.get().tokens.size(), 3u);
  EXPECT_EQ(f2.get().tokens.size(), 3u);
  EXPECT_EQ(profile.step_rows, 4);
  EXPECT_GE(profile.decode_steps, 2);
  EXPECT_LE(profile.decode_steps, 4);
  ASSERT_TRUE(profile.steps.by_op.count("matmul"));
  EXPECT_GT(profile.steps.by_op["matmul"].seconds, 0.0);
  EXPECT_EQ(profile.steps.by_op["(drawing tokens)"].calls, profile.decode_steps);
  EXPECT_EQ(profile.steps.by_op["(between kernels)"].calls, profile.decode_steps);  // one walk a step
  ASSERT_TRUE(profile.prompts.by_op.count("matmul"));
  EXPECT_EQ(profile.prompts.by_op.count("(drawing tokens)"), 0u);
  EXPECT_EQ(profile.prompts.by_op["(between kernels)"].calls, 2);  // one walk a prompt
}

TEST(Batcher, RefusesPastTheQueueAndWhatCanNeverFit) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto b = Batcher::make(*m, {.slots = 1, .context = 16, .queue = 1});
  ASSERT_TRUE(b.ok());
  auto too_long = (*b)->submit(greedy(std::vector<int32_t>(10, 1), 10));
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("exceed the context of 16"), std::string::npos);
  EXPECT_FALSE((*b)->submit(greedy({}, 4)).ok());
  // One slot and one queue place: of many submitted at once, some are refused.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  BatchRequest held = greedy({1}, 8);
  held.on_token = [&](int32_t) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return true;
  };
  std::promise<void> done;
  held.on_done = [&](const BatchOutcome&) { done.set_value(); };
  auto admitted = (*b)->submit(std::move(held));
  ASSERT_TRUE(admitted.ok() && *admitted);
  int refused = 0;
  for (int k = 0; k < 4; ++k) {
    auto r = (*b)->submit(greedy({2}, 2));
    ASSERT_TRUE(r.ok());
    refused += !*r;
  }
  EXPECT_GE(refused, 2);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  done.get_future().get();
}

}  // namespace
}  // namespace arch

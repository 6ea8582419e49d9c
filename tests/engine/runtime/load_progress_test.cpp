// Load progress: the bytes of weights read as the load rewrites them
// (merged projections here), rising, ending at the checkpoint's total.
#include "engine/runtime/load_progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "engine/runtime/model.h"
#include "importer/checkpoint/toy_checkpoint.h"

namespace arch {
namespace {

TEST(LoadProgress, RisesAsWeightsAreRewrittenAndEndsAtTheTotal) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("load_progress_toy_" + std::to_string(getpid()));
  ASSERT_TRUE(write_toy_checkpoint(dir.string(), 1).ok());
  std::vector<std::pair<int64_t, int64_t>> calls;
  LoadOptions lo;
  lo.backend = "cpu";
  lo.progress = [&](int64_t read, int64_t total) { calls.emplace_back(read, total); };
  auto m = load_model(dir.string(), lo);
  fs::remove_all(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  int64_t total = 0;
  for (const auto& [name, t] : (*m)->checkpoint.tensors) total += int64_t(t.nbytes());
  ASSERT_GE(calls.size(), 3u);  // the start, the merged projections, the end
  EXPECT_EQ(calls.front().first, 0);
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].second, total);
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GE(calls[i].first, calls[i - 1].first);
  EXPECT_GT(calls[calls.size() - 2].first, 0);  // Q/K/V and gate/up were read to be merged
  EXPECT_EQ(calls.back().first, total);
}

TEST(LoadProgress, NothingIsReportedOutsideALoad) {
  weights_read(100);  // no scope: a no-op, not a crash
  int64_t seen = -1;
  {
    LoadProgress p = [&](int64_t read, int64_t) { seen = read; };
    LoadProgressScope scope(p, 1000);
    weights_read(300);
    EXPECT_EQ(seen, 300);
    weights_read(5000);
    EXPECT_EQ(seen, 1000);  // never past the total
  }
  weights_read(7);
  EXPECT_EQ(seen, 1000);
}

}  // namespace
}  // namespace arch

// share_out (kernels/cpu/share_out.h): every unit run once, each thread's
// start before any unit, and a held-back thread's units taken by the others.
#include "kernels/cpu/share_out.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace arch {
namespace {

// The team's size for one test, put back after.
struct Threads {
  explicit Threads(int n) : before(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(before); }
  int before;
};

TEST(ShareOut, RunsEveryUnitOnceAfterEveryThreadsStart) {
  for (int threads : {1, 2, 3, 5})
    for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
      Threads team(threads);
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::atomic<int> started{0}, team_size{0}, early{0};
      share_out(
          n,
          [&](int64_t u) {
            if (started.load() != team_size.load()) early.fetch_add(1);
            runs[size_t(u)].fetch_add(1);
          },
          [&](int, int size) {
            team_size.store(size);
            started.fetch_add(1);
          });
      for (int64_t u = 0; u < n; ++u) EXPECT_EQ(runs[size_t(u)].load(), 1) << "unit " << u << " of " << n;
      EXPECT_EQ(early.load(), 0) << "a unit ran before every thread had started";
      EXPECT_GE(started.load(), 1);
    }
}

// Thread 0 stops in its first unit until another thread has run one of
// its share's units (taken from the back), or 10 s pass.
TEST(ShareOut, OthersTakeAHeldBackThreadsUnits) {
  Threads team(2);
  const int64_t n = 64;  // thread 0's share: [0, 32)
  std::vector<std::atomic<int>> by(static_cast<size_t>(n));
  std::atomic<bool> taken{false};
  int team_size = 0;
  share_out(
      n,
      [&](int64_t u) {
        const int t = omp_get_thread_num();
        by[size_t(u)].store(t);
        if (t != 0 && u < n / 2) taken.store(true);
        if (t == 0 && u == 0) {
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!taken.load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      },
      [&](int t, int size) {
        if (t == 0) team_size = size;
      });
  if (team_size < 2) GTEST_SKIP() << "OpenMP gave a team of one";
  EXPECT_TRUE(taken.load()) << "no unit of the held-back thread's share was taken by the other";
  // Taken from the back: the other thread's units of share 0 are its last ones.
  int64_t first_taken = n / 2;
  for (int64_t u = 1; u < n / 2; ++u)
    if (by[size_t(u)].load() != 0) first_taken = std::min(first_taken, u);
  for (int64_t u = first_taken; u < n / 2; ++u) EXPECT_NE(by[size_t(u)].load(), 0) << "unit " << u;
}

}  // namespace
}  // namespace arch

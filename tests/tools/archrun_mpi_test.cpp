// archrun under mpirun (OpenMPI, several ranks on this one machine,
// oversubscribed): --split tensor equals one process on the decoder
// goldens; a refusal or a lost rank ends every process, never a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/shared_data.h"
#include "tests/time_bound.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

using testing::archrun;
using testing::golden_dir;
using testing::run_tool;

// OpenMPI refuses root unless told; two cores hold up to 4 ranks only
// oversubscribed, and unbound.
const char* const kMpirun = "mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 ";

bool have_mpirun() {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return run_tool("command -v mpirun").exit_code == 0;
}

#define ARCH_REQUIRE_MPI()                                                                     \
  do {                                                                                         \
    if (!have_mpirun()) {                                                                      \
      if (std::getenv("ARCHETYPE_REQUIRE_SHARED")) FAIL() << "mpirun (openmpi-bin) is absent"; \
      GTEST_SKIP() << "!!! SKIPPED: mpirun (openmpi-bin) is absent; this test did NOT run !!!"; \
    }                                                                                          \
  } while (0)

// The JSON line of a tool's output: mpirun forwards the ranks' stderr and
// stdout apart, so the split's summary may come after it.
std::string json_line(const std::string& out) {
  std::string last;
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    if (out[at] == '{') last = out.substr(at, end - at);
    at = end + 1;
  }
  return last;
}

std::string mpirun(int np, const std::string& args) {
  return std::string(kMpirun) + "-np " + std::to_string(np) + " " + archrun() + " " + args;
}

// np ranks under --split `split` generate one process's greedy tokens.
void expect_tokens_of_one_process(const std::string& dir, int np, const std::string& split) {
  const std::string gen = "generate " + dir + " --ids 1,438,309,258,92 -n 12 --greedy --json";
  auto one = run_tool(archrun() + " " + gen);
  auto got = run_tool(mpirun(np, gen + " --split " + split));
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(got.exit_code, 0) << got.out;
  EXPECT_EQ(json_line(got.out), json_line(one.out));
  EXPECT_NE(got.out.find("split " + split + " over " + std::to_string(np) + " processes"), std::string::npos) << got.out;
}

class MpiGolden : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(MpiGolden, TensorSplitEqualsOneProcess) {
  ARCH_REQUIRE_MPI();
  const auto& [golden, np] = GetParam();
  const std::string dir = golden_dir(golden);
  ARCH_REQUIRE_SHARED(dir);
  // Every output of the golden within its tolerance, greedy tokens equal.
  auto cmp = run_tool(mpirun(np, "compare " + dir + " " + dir + " --split tensor"));
  EXPECT_EQ(cmp.exit_code, 0) << cmp.out;
  EXPECT_NE(cmp.out.find("matches the golden"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("split tensor over " + std::to_string(np) + " processes"), std::string::npos) << cmp.out;
  // And the tokens one process generates.
  expect_tokens_of_one_process(dir, np, "tensor");
}

INSTANTIATE_TEST_SUITE_P(Decoders, MpiGolden,
                         ::testing::Combine(::testing::Values("llama", "qwen3", "gemma3_text", "mixtral",
                                                              "deepseek_v3", "deepseek_v2_lite", "phi3", "qwen3_next"),
                                            ::testing::Values(2, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_np" + std::to_string(std::get<1>(info.param));
                         });

// By layers: the tokens one process generates (the logits, made on rank 0
// from the last stage's hidden state, are checked in tests/engine/distributed).
TEST_P(MpiGolden, PipelineSplitEqualsOneProcess) {
  ARCH_REQUIRE_MPI();
  const auto& [golden, np] = GetParam();
  const std::string dir = golden_dir(golden);
  ARCH_REQUIRE_SHARED(dir);
  expect_tokens_of_one_process(dir, np, "pipeline");
}

// A family whose MLP puts a softmax between its matmuls (every column a
// process would hold is mixed): the llama golden under it cannot be split.
TEST(Mpi, ARefusalIsSaidOnceAndEndsEveryRank) {
  ARCH_REQUIRE_MPI();
  const std::string dir = golden_dir("llama");
  ARCH_REQUIRE_SHARED(dir);
  const std::string families = ::testing::TempDir() + "/mpi_mixed_mlp";
  std::filesystem::create_directories(families);
  std::ofstream(families + "/mixed.arch")
      << "family MixedMlp\nimport \"" ARCHETYPE_FAMILIES_DIR "/llama.arch\"\n"
      << "block mlp(x, L, i) {\n  M = L.mlp\n"
      << "  return softmax(silu(x @ M.gate_proj.weight^T) * (x @ M.up_proj.weight^T)) @ M.down_proj.weight^T\n}\n";
  std::ofstream(families + "/registry.toml")
      << "[[family]]\nname = \"MixedMlp\"\ntemplate = \"mixed.arch\"\nmodel_types = [\"llama\"]\n"
      << "signature = [\"model.embed_tokens.weight\"]\n";
  const auto start = std::chrono::steady_clock::now();
  auto r = run_tool(mpirun(2, "generate " + dir + " --families " + families + " --ids 1,2,3 -n 4 --split tensor"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(seconds, testing::time_bound(60));
  EXPECT_NE(r.out.find("the graph cannot be split at model.layers.0.mlp."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("softmax"), std::string::npos) << r.out;
  size_t said = 0;
  for (size_t at = 0; (at = r.out.find("archrun: error:", at)) != std::string::npos; ++at) ++said;
  EXPECT_EQ(said, 1u) << r.out;
}

TEST(Mpi, SplitNeedsACheckpoint) {
  ARCH_REQUIRE_MPI();
  auto r = run_tool(mpirun(2, "generate toy --ids 1,2 -n 2 --split tensor"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--split: the toy is written per process"), std::string::npos) << r.out;
}

// The server on rank 0, its continuous batching across ranks: concurrent
// greedy completions each give what one process generates.
class MpiServe : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiServe, BatchesAcrossRanks) {
  ARCH_REQUIRE_MPI();
  const int port = 20000 + int(getpid() % 20000) + (GetParam() == "pipeline" ? 1 : 0);
  const pid_t job = fork();
  ASSERT_GE(job, 0);
  if (job == 0) {
    const std::string cmd = std::string("exec ") + kMpirun + "-np 2 " + archrun() +
                            " serve --split " + GetParam() + " --parallel 4 --port " + std::to_string(port) +
                            " > /dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    _exit(98);
  }
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  bool up = false;
  for (int i = 0; i < 600 && !up; ++i) {
    auto r = c.Get("/health");
    up = r && r->status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<std::string> texts(4);
  if (up) {
    std::vector<std::thread> clients;
    for (size_t i = 0; i < texts.size(); ++i)
      clients.emplace_back([&, i] {
        httplib::Client ci("127.0.0.1", port);
        ci.set_read_timeout(60, 0);
        const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0})";
        auto r = ci.Post("/v1/completions", body, "application/json");
        if (r && r->status == 200) texts[i] = nlohmann::json::parse(r->body)["choices"][0]["text"];
      });
    for (auto& t : clients) t.join();
  }
  kill(job, SIGTERM);
  int status = 0;
  waitpid(job, &status, 0);
  ASSERT_TRUE(up) << "the split server never answered /health";
  auto one = run_tool(archrun() + " generate -p \"Once upon a time\" -n 24 --greedy 2>/dev/null");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  for (const auto& t : texts) {
    EXPECT_FALSE(t.empty());
    EXPECT_EQ(one.out.rfind(t, 0), 0u) << "server: '" << t << "'\none process: '" << one.out << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Splits, MpiServe, ::testing::Values("tensor", "pipeline"));

// A rank killed while the job runs (rank 0 in a chat, waiting for the next
// line) ends the whole job within seconds, saying which rank died.
TEST(Mpi, ALostRankEndsTheJob) {
  ARCH_REQUIRE_MPI();
  const std::string err_path = ::testing::TempDir() + "/mpi_lost_rank." + std::to_string(getpid()) + ".err";
  std::remove(err_path.c_str());  // no pids of another run's
  int to_chat[2];
  ASSERT_EQ(pipe(to_chat), 0);
  const pid_t job = fork();
  ASSERT_GE(job, 0);
  if (job == 0) {
    dup2(to_chat[0], 0);
    close(to_chat[1]);
    if (!freopen(err_path.c_str(), "w", stderr)) _exit(97);
    dup2(2, 1);
    const std::string cmd = std::string("exec ") + kMpirun + "-np 2 " + archrun() + " chat --split tensor -n 8";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    _exit(98);
  }
  close(to_chat[0]);
  auto read_err = [&] {
    std::ifstream f(err_path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  // The pids rank 0 names, once every rank has its share.
  std::smatch m;
  std::string err;
  const std::regex pids("rank 0: pid [0-9]+, 1: pid ([0-9]+)");
  for (int i = 0; i < 600 && !std::regex_search(err = read_err(), m, pids); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(std::regex_search(err, m, pids)) << err;
  const pid_t rank1 = pid_t(std::stol(m[1]));
  ASSERT_EQ(write(to_chat[1], "Once upon a time\n", 17), 17);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the turn runs on both ranks
  ASSERT_EQ(kill(rank1, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(job, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - killed < std::chrono::duration<double>(testing::time_bound(20)))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  if (done == 0) {
    kill(job, SIGKILL);
    waitpid(job, &status, 0);
  }
  close(to_chat[1]);
  err = read_err();
  std::remove(err_path.c_str());
  ASSERT_EQ(done, job) << "the job still ran " << seconds << " s after rank 1 was killed:\n" << err;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << err;
  EXPECT_LT(seconds, 10) << err;
  EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("signal 9"), std::string::npos) << err;
}

}  // namespace
}  // namespace arch

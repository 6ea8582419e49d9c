// archrun import end to end, as a user runs it: a checkpoint directory (the
// embedded default's shape, with a real tokenizer beside it) becomes one
// canonical .safetensors file at each weight type, and that single file
// is then a model every command takes: info, generate with a text prompt
// (tokenizer and chat files read from its metadata), bench.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/golden/golden_case.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

struct Scratch {
  fs::path path = fs::temp_directory_path() / ("archrun_import_test_" + std::to_string(getpid()));
  Scratch() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(ArchrunImport, CanonicalModelsRunWithTheirTokenizerInside) {
  std::string tokenizer = testing::shared_dir() + "/tokenizers/stories260K";
  ARCH_REQUIRE_SHARED(tokenizer);
  Scratch s;
  fs::path ckpt = s.path / "ckpt";
  LlamaShape shape = *llama_shape("toy");
  shape.vocab_size = 512;  // the stories260K tokenizer's
  ASSERT_TRUE(write_random_checkpoint(ckpt.string(), shape, 3).ok());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    if (fs::exists(fs::path(tokenizer) / f)) fs::copy_file(fs::path(tokenizer) / f, ckpt / f);
  ASSERT_TRUE(fs::exists(ckpt / "tokenizer.json"));

  auto reference = run_tool(testing::archrun() + " generate " + ckpt.string() + " --prompt 'Once upon a time' -n 8 --json");
  ASSERT_EQ(reference.exit_code, 0) << reference.out;

  for (const char* dtype : {"stored", "bf16", "q8", "q4"}) {
    SCOPED_TRACE(dtype);
    std::string out = (s.path / (std::string(dtype) + ".safetensors")).string();
    auto imp = run_tool(testing::archrun() + " import " + ckpt.string() + " -o " + out + " --dtype " + dtype + " --json");
    ASSERT_EQ(imp.exit_code, 0) << imp.out;
    auto summary = nlohmann::json::parse(testing::last_line(imp.out));
    EXPECT_EQ(summary["path"], out);
    EXPECT_GT(summary["tensors"].get<int>(), 0);
    if (std::string(dtype) == "q8" || std::string(dtype) == "q4") {
      EXPECT_GT(summary["quantized"].get<int>(), 0);
      EXPECT_LT(summary["bytes_out"].get<double>(), 0.6 * summary["bytes_in"].get<double>());
    }
    ASSERT_FALSE(fs::exists(s.path / "config.json"));  // nothing but the one file

    auto info = run_tool(testing::archrun() + " info " + out + " --json");
    ASSERT_EQ(info.exit_code, 0) << info.out;
    EXPECT_NE(info.out.find("LlamaStyle"), std::string::npos) << info.out;

    auto gen = run_tool(testing::archrun() + " generate " + out + " --prompt 'Once upon a time' -n 8 --json");
    ASSERT_EQ(gen.exit_code, 0) << gen.out;
    auto got = nlohmann::json::parse(gen.out.substr(gen.out.rfind("\n{") + 1));
    auto want = nlohmann::json::parse(reference.out.substr(reference.out.rfind("\n{") + 1));
    EXPECT_EQ(got["prompt_tokens"], want["prompt_tokens"]);  // the tokenizer came along
    if (std::string(dtype) == "stored") {
      EXPECT_EQ(got["tokens"], want["tokens"]);
    }
    EXPECT_GE(got["tokens"].size(), 1u);

    // --check: every fast step against the reference kernel, within the
    // tolerance the quantized kernels are held to.
    auto check = run_tool(testing::archrun() + " generate " + out + " --ids 1,2,3 -n 4 --check");
    EXPECT_EQ(check.exit_code, 0) << check.out;
    EXPECT_NE(check.out.find("; 0 failed"), std::string::npos) << check.out;

    auto bench = run_tool(testing::archrun() + " bench " + out + " -p 8 -n 4 --json");
    ASSERT_EQ(bench.exit_code, 0) << bench.out;
    auto b = nlohmann::json::parse(testing::last_line(bench.out));
    for (const char* key : {"prompt_tok_s", "decode_tok_s", "ttft_ms", "load_ms", "peak_rss_mb"})
      EXPECT_GT(b[key].get<double>(), 0) << key;
  }
}

TEST(ArchrunImport, RefusesWhatItCannotRead) {
  Scratch s;
  auto bad_type = run_tool(testing::archrun() + " import " + s.path.string() + " -o x.safetensors --dtype q3");
  EXPECT_NE(bad_type.exit_code, 0);
  auto missing = run_tool(testing::archrun() + " import " + (s.path / "nope").string() + " -o " +
                          (s.path / "x.safetensors").string());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// An import killed at any moment (SIGKILL: nothing of ours runs) leaves the
// output path as it was, an earlier good file there untouched, or the whole
// new file: never a truncated one, and nothing else in the folder.
TEST(ArchrunImport, AKillMidWriteLeavesTheEarlierFileWhole) {
  Scratch s;
  fs::path ckpt = s.path / "ckpt";
  LlamaShape shape = *llama_shape("toy");
  shape.vocab_size = 32000, shape.hidden_size = 512, shape.intermediate_size = 1024, shape.num_hidden_layers = 4;
  shape.head_dim = 128;
  ASSERT_TRUE(write_random_checkpoint(ckpt.string(), shape, 5).ok());
  fs::path outdir = s.path / "out";
  fs::create_directories(outdir);
  const fs::path out = outdir / "model.safetensors";
  auto first = run_tool(testing::archrun() + " import " + ckpt.string() + " -o " + out.string() + " --dtype q8");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string earlier = file_bytes(out);
  ASSERT_GT(earlier.size(), 10u << 20);
  const fs::path whole_path = s.path / "whole.safetensors";  // what a finished run writes
  auto whole_run = run_tool(testing::archrun() + " import " + ckpt.string() + " -o " + whole_path.string() + " --dtype stored");
  ASSERT_EQ(whole_run.exit_code, 0) << whole_run.out;
  const std::string whole = file_bytes(whole_path);

  int killed = 0;
  for (int delay_ms : {5, 20, 40, 60, 80, 100, 150, 200, 300, 500, 800}) {
    SCOPED_TRACE(delay_ms);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const std::string archrun = testing::archrun();
      execl(archrun.c_str(), archrun.c_str(), "import", ckpt.c_str(), "-o", out.c_str(), "--dtype", "stored",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    const std::string now = file_bytes(out);
    // Killed or not, the path holds one whole file: the earlier one, or
    // (once the new one was complete and renamed into place) the new one.
    EXPECT_TRUE(now == earlier || now == whole) << "after " << delay_ms << " ms: " << now.size() << " bytes";
    if (WIFSIGNALED(status) && now == earlier) ++killed;
    int entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(outdir)) ++entries;
    EXPECT_EQ(entries, 1) << "a partial file was left beside the output";
    if (now == whole) break;  // later kills would find the new file in place
  }
  EXPECT_GT(killed, 0) << "no kill landed while the import ran";
  std::printf("import killed %d times mid-run: the earlier output stayed whole each time\n", killed);
}

}  // namespace
}  // namespace arch

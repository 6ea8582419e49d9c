// archrun import end to end, as a user runs it: a checkpoint directory (the
// embedded default's shape, with a real tokenizer beside it) becomes one
// canonical .safetensors file at each weight type, and that single file
// is then a model every command takes: info, generate with a text prompt
// (tokenizer and chat files read from its metadata), bench.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "importer/toy_checkpoint.h"
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

}  // namespace
}  // namespace arch

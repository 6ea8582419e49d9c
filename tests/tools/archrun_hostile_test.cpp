// What a hostile or mistaken user hands archrun at the command line, each a
// clear error and a non-zero exit (docs/malformed-inputs.md lists them).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

struct Toy {
  fs::path dir = fs::temp_directory_path() / ("archrun_hostile_" + std::to_string(getpid()));
  Toy() {
    fs::remove_all(dir);
    EXPECT_TRUE(write_toy_checkpoint(dir.string(), 0).ok());
  }
  ~Toy() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path() const { return dir.string(); }
};

void expect_refused(const std::string& command, const std::string& message) {
  auto r = run_tool(command);
  EXPECT_NE(r.exit_code, 0) << command;
  EXPECT_NE(r.out.find(message), std::string::npos) << command << "\n" << r.out;
  EXPECT_EQ(r.out.find("Segmentation"), std::string::npos) << r.out;
}

TEST(ArchrunHostile, EnvironmentAndNumbers) {
  expect_refused("OMP_NUM_THREADS=100000 " + testing::archrun() + " generate toy --ids 1 -n 2",
                 "OMP_NUM_THREADS=100000: expected a thread count from 1 to 1024");
  expect_refused("ARCHETYPE_LIMITS=loop_iterations=lots " + testing::archrun() + " info toy",
                 "ARCHETYPE_LIMITS: limit 'loop_iterations': 'lots' is not a whole number >= 1");
  expect_refused(testing::archrun() + " generate toy --ids 1 -n 2 --temperature nan", "'nan' is not a finite number");
  expect_refused(testing::archrun() + " generate toy --ids 1 -n 2 --top-p nan", "'nan' is not a finite number");
  expect_refused(testing::archrun() + " info toy --limit no_such=3", "unknown limit 'no_such'");
}

void edit_config(const fs::path& dir, const std::string& key, const nlohmann::json& value) {
  std::ifstream in(dir / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  c[key] = value;
  std::ofstream(dir / "config.json") << c.dump();
}

TEST(ArchrunHostile, ConfigCountsOutOfBounds) {
  Toy toy;
  edit_config(toy.dir, "num_hidden_layers", 1000000000);
  expect_refused(testing::archrun() + " info " + toy.path(), "exceeds the limit 'loop_iterations' (65536)");
  // Raised, the same config passes the loop and fails where it should: no
  // such layers in the checkpoint.
  edit_config(toy.dir, "num_hidden_layers", 3);
  expect_refused(testing::archrun() + " info " + toy.path() + " --limit loop_iterations=2",
                 "exceeds the limit 'loop_iterations' (2)");
  edit_config(toy.dir, "num_hidden_layers", -2);
  expect_refused(testing::archrun() + " info " + toy.path(), "the loop range 0 .. -2 runs backwards");
  edit_config(toy.dir, "num_hidden_layers", 1e30);
  expect_refused(testing::archrun() + " info " + toy.path(),
                 "config.json gives 'num_hidden_layers' as float 1e+30, the template declares int");
}

TEST(ArchrunHostile, PastTheTrainedPositions) {
  Toy toy;
  edit_config(toy.dir, "max_position_embeddings", 8);
  expect_refused(testing::archrun() + " generate " + toy.path() + " --ids 1,2,3 -n 10",
                 "the model was trained for 8 positions (max_position_embeddings); 3 prompt tokens + 10 new ones go "
                 "past them: ask for at most 6 new tokens");
  auto ok = run_tool(testing::archrun() + " generate " + toy.path() + " --ids 1,2,3 -n 6");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

// A NaN in one weight: import says so, archc --check --model names the
// tensor, and generation refuses to turn NaN logits into tokens.
TEST(ArchrunHostile, NanWeightsAreSaid) {
  Toy toy;
  const fs::path file = toy.dir / "model.safetensors";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  const size_t at = 8 + n + header["model.layers.0.mlp.down_proj.weight"]["data_offsets"][0].get<size_t>();
  const float nan = NAN;
  std::memcpy(bytes.data() + at, &nan, 4);
  std::ofstream(file, std::ios::binary) << bytes;

  expect_refused(testing::archrun() + " generate " + toy.path() + " --ids 1,2 -n 2",
                 "the model's logits are not all numbers (NaN or Inf) at step 0");
  expect_refused(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/llama.arch --model " + toy.path(),
                 "model.layers.0.mlp.down_proj.weight holds 1 NaN or Inf values of");
  const std::string out = (toy.dir / "q8.safetensors").string();
  auto imp = run_tool(testing::archrun() + " import " + toy.path() + " -o " + out + " --dtype q8");
  EXPECT_EQ(imp.exit_code, 0) << imp.out;
  EXPECT_NE(imp.out.find("warning: " + toy.path() + ": tensor model.layers.0.mlp.down_proj.weight: 1 of 8192 values are NaN or Inf"),
            std::string::npos)
      << imp.out;
}

}  // namespace
}  // namespace arch

// The cost estimate: a unit's time is the larger of its compute and its
// DRAM traffic, plus the device's cost per command; fusions are priced by
// the commands and traffic they save.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/npu2/estimate.h"

namespace arch::npu2 {
namespace {

Device device() {
  Device d;
  d.name = "test";
  d.tiles = 1;
  d.clock_ghz = 1;
  d.macs_per_cycle = {{"bf16", 1000}};
  d.vector_ops_per_cycle = 1000;
  d.bandwidth_gb_s = 1;   // 1e9 bytes/s: a MB is a millisecond
  d.command_us = 10;
  return d;
}

Program qkv_program() {
  Program p;
  p.max_context = 8;
  p.numerics = {{"weights", "bf16"}, {"activations", "bf16"}};
  p.buffers = {{"normed", "bf16", 1000}, {"qkv", "bf16", 3000}};
  Unit u = unit("matvec", "layers.0.attention");
  u.reads = {{"normed"}};
  u.writes = {{"qkv", 0, 1000}, {"qkv", 1000, 2000}, {"qkv", 2000, 3000}};
  u.constants = {Constant{"weight", {{"q", 0, 1000}, {"k", 0, 1000}, {"v", 0, 1000}}, {3000, 1000}, "bf16"}};
  u.attrs = {{"role", "qkv"}};
  u.ops = {"q = matmul", "k = matmul", "v = matmul"};
  p.units = {u};
  return p;
}

TEST(Npu2Estimate, AMatvecIsPricedByItsTrafficAndItsCommand) {
  const Estimate e = estimate(qkv_program(), device(), 4);
  ASSERT_EQ(e.units.size(), 1u);
  // 3000 x 1000 bf16 weights (6 MB) + 2 KB in + 6 KB out at 1 GB/s, against
  // 3e6 MACs at 1e12 per second: the traffic, 6.008 ms, plus 10 us.
  EXPECT_NEAR(e.seconds, 6.008e-3 + 10e-6, 1e-9);
  EXPECT_TRUE(e.units[0].bound_by_memory);
  EXPECT_EQ(e.commands, 1);
  // Unfused: three commands, and q, k and v each read the 2 KB input.
  EXPECT_EQ(e.unfused_commands, 3);
  EXPECT_NEAR(e.unfused_seconds - e.seconds, 20e-6 + 4000 / 1e9, 1e-9);
  EXPECT_NEAR(e.by_kind.at("matvec qkv"), e.seconds, 1e-12);
}

// A delta rule's step reads and writes its whole state at any position; an
// attention reads its cache up to the position; an expert matvec the
// chosen experts' rows only.
TEST(Npu2Estimate, StatesCachesAndExpertsArePricedByWhatAStepReads) {
  Program p;
  p.max_context = 4096;
  p.numerics = {{"weights", "bf16"}, {"activations", "bf16"}};
  p.buffers = {{"conv", "bf16", 1000}, {"gates", "f32", 8}, {"delta", "bf16", 1024}, {"q", "bf16", 1024},
               {"attn", "bf16", 1024}, {"normed", "bf16", 1000}, {"route_id", "i32", 2}, {"expert_out", "bf16", 2000}};
  p.states = {State{0, "recurrent", {4, 128, 128}, "f32"}};
  p.caches = {Cache{0, 2, 128, 4096, "bf16", 0}};
  Unit d = unit("delta_rule", "layers.0.delta_net");
  d.reads = {{"conv", 0, 512}, {"conv", 512, 1000}, {"gates", 0, 4}, {"gates", 4, 8}};
  d.writes = {{"delta"}};
  d.attrs = {{"state", 0}};
  Unit a = unit("attention", "layers.1.attention");
  a.reads = {{"q"}, {"cache"}};
  a.writes = {{"attn"}};
  a.attrs = {{"layer", 0}, {"heads", 8}, {"kv_heads", 2}, {"head_dim", 128}};
  Unit x = unit("expert_matvec", "layers.1.ffn");
  x.reads = {{"normed"}, {"route_id"}};
  x.writes = {{"expert_out"}};
  x.constants = {Constant{"weight", {{"w", 0, 64000}}, {64000, 1000}, "bf16"}};
  x.attrs = {{"experts", 64}, {"k", 2}};
  p.units = {d, a, x};
  for (int64_t at : {int64_t(100), int64_t(4000)}) {
    const Estimate e = estimate(p, device(), at);
    EXPECT_DOUBLE_EQ(e.state_bytes, 2.0 * 4 * 128 * 128 * 4);            // the same at any position
    EXPECT_DOUBLE_EQ(e.cache_bytes, 2.0 * 2 * 128 * double(at + 1) * 2);  // k and v up to the position
    EXPECT_NEAR(e.units[2].macs, 2.0 * 1000 * 1000, 1e-6);                // 2 of 64 experts' 1000 rows
  }
}

TEST(Npu2Estimate, DeviceFileErrorsNameTheField) {
  auto path = std::filesystem::temp_directory_path() / "npu2_device_bad.yaml";
  std::ofstream(path) << "tiles: 32\nclock_ghz: -1\n";
  auto d = read_device(path.string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("'clock_ghz' must be positive"), std::string::npos) << d.error().message;
  auto shipped = read_device(std::string(ARCHETYPE_FAMILIES_DIR) + "/devices/npu2.yaml");
  ASSERT_TRUE(shipped.ok()) << shipped.error().message;
  EXPECT_EQ(shipped->tiles, 32);
}

}  // namespace
}  // namespace arch::npu2

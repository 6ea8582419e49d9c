// The cpu backend's rope (rope_hwy.cpp) against the reference kernel, within
// the op's tolerance: every layout, partial rope_dim and scaling type, and
// positions in and out of its cos / sin cache.
#include <tuple>

#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

std::vector<int32_t> positions_from(int32_t start, int64_t n, int32_t step = 1) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = start + int32_t(i) * step;
  return p;
}

struct Shape3 {
  int64_t S, H, D;
};

TEST(CpuRope, LayoutsAndPartialRotation) {
  const Shape3 shapes[] = {{1, 1, 2}, {1, 14, 64}, {5, 3, 6}, {7, 2, 34}, {64, 14, 64}, {3, 4, 128}, {9, 5, 80}, {130, 16, 128}};
  uint64_t seed = 1;
  for (const Shape3& s : shapes)
    for (bool interleaved : {false, true})
      for (int64_t rope_dim : {int64_t(0), s.D / 2 / 2 * 2, int64_t(2)}) {
        if (rope_dim != 0 && (rope_dim <= 0 || rope_dim > s.D)) continue;
        Tensor x = f32({s.S, s.H, s.D}, scaled_values(size_t(s.S * s.H * s.D), seed++, 2.0f));
        Tensor pos = i32({s.S}, positions_from(int32_t(seed % 50), s.S));
        Attrs attrs = {{"theta", 10000.0}, {"rope_dim", rope_dim}, {"interleaved", interleaved}};
        std::string what = "S=" + std::to_string(s.S) + " H=" + std::to_string(s.H) + " D=" + std::to_string(s.D) +
                           " rope_dim=" + std::to_string(rope_dim) + (interleaved ? " interleaved" : "");
        EXPECT_GT(expect_cpu_matches_reference("rope", {x, pos}, attrs, what), 0.1);
      }
}

TEST(CpuRope, ScalingTypes) {
  const std::pair<Attrs, int64_t> scalings[] = {  // scaling object, max_position_embeddings
      {nullptr, 0},
      {{{"rope_type", "linear"}, {"factor", 4.0}}, 0},
      {{{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
        {"original_max_position_embeddings", 64}},
       0},
      {{{"rope_type", "dynamic"}, {"factor", 2.0}}, 32},  // positions past 32 grow the base
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32}}, 128},
      {{{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}}, 0},
  };
  uint64_t seed = 100;
  for (const auto& [scaling, max_pos] : scalings)
    for (int32_t start : {0, 20, 60}) {
      const int64_t S = 13, H = 3, D = 32;
      Tensor x = f32({S, H, D}, scaled_values(size_t(S * H * D), seed++, 1.0f));
      Tensor pos = i32({S}, positions_from(start, S));
      Attrs attrs = {{"theta", 10000.0}, {"scaling", scaling}, {"max_position_embeddings", max_pos}};
      EXPECT_GT(expect_cpu_matches_reference("rope", {x, pos}, attrs, scaling.dump() + " from " + std::to_string(start)),
                0.1);
    }
}

// Positions out of order, repeated, negative, and past the cached range,
// one call after another (the cache grows between them).
TEST(CpuRope, PositionsInAndOutOfTheCache) {
  const int64_t H = 2, D = 20;
  const std::vector<std::vector<int32_t>> calls = {
      {0, 1, 2}, {3}, {500, 7, 7, 2}, {-5, 0, 3}, {70000, 65535, 65536, 1}, {2000000000}, {4},
      {3000}, {3001}, {3002}};  // a late start: computed, then cached from the second call
  uint64_t seed = 300;
  for (bool interleaved : {false, true})
    for (const auto& p : calls) {
      const int64_t S = int64_t(p.size());
      Tensor x = f32({S, H, D}, scaled_values(size_t(S * H * D), seed++, 1.0f));
      Attrs attrs = {{"theta", 500000.0}, {"interleaved", interleaved}};
      EXPECT_GT(expect_cpu_matches_reference("rope", {x, i32({S}, p)}, attrs, "positions from " + std::to_string(p[0])),
                0.1);
    }
}

// Decode steps past max_position_embeddings under "dynamic" scaling: new
// frequencies every step (each from its own seq_len).
TEST(CpuRope, DynamicScalingDecodeSteps) {
  const int64_t H = 3, D = 16;
  const Attrs attrs = {{"theta", 10000.0},
                       {"scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}},
                       {"max_position_embeddings", 32}};
  uint64_t seed = 400;
  for (int32_t p = 28; p < 60; ++p) {
    Tensor x = f32({1, H, D}, scaled_values(size_t(H * D), seed++, 1.0f));
    EXPECT_GT(expect_cpu_matches_reference("rope", {x, i32({1}, {p})}, attrs, "dynamic at " + std::to_string(p)), 0.1);
  }
}

// LongRoPE: the short factors up to the original length, the long ones past
// it, decode steps across the switch; and several sequences' rows in one
// call, each rotated by its own regime (a server's batch), as each alone.
TEST(CpuRope, LongRopeAcrossTheSwitchAndPerSequence) {
  const int64_t H = 2, D = 12;
  const Attrs attrs = {{"theta", 10000.0},
                       {"scaling", {{"type", "longrope"},
                                    {"short_factor", {1.0, 1.1, 1.3, 1.6, 2.0, 2.5}},
                                    {"long_factor", {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}}}},
                       {"max_position_embeddings", 256},
                       {"original_max_position_embeddings", 24}};
  uint64_t seed = 500;
  for (int32_t p = 20; p < 30; ++p) {
    Tensor x = f32({1, H, D}, scaled_values(size_t(H * D), seed++, 1.0f));
    EXPECT_GT(expect_cpu_matches_reference("rope", {x, i32({1}, {p})}, attrs, "longrope at " + std::to_string(p)), 0.1);
  }
  // Rows 0-3: a sequence at positions 20-23 (short); row 4: one at 30 (long).
  Tensor x = f32({5, H, D}, scaled_values(size_t(5 * H * D), seed++, 1.0f));
  Tensor pos = i32({5}, {20, 21, 22, 23, 30});
  SequenceRows rows;
  rows.slot_capacity = 64;
  rows.pieces = {{0, 20, 0, 4}, {1, 30, 4, 1}};
  for (const char* backend : {"reference", "cpu"}) {
    SCOPED_TRACE(backend);
    Runner r;
    r.backend = backend;
    r.sequences = &rows;
    auto both = r.run("rope", {x, pos}, attrs);
    ASSERT_TRUE(both.ok()) << both.error().message;
    for (auto [first, n] : {std::pair<int64_t, int64_t>{0, 4}, {4, 1}}) {
      std::vector<float> part(x.f32() + first * H * D, x.f32() + (first + n) * H * D);
      std::vector<int32_t> at(pos.i32() + first, pos.i32() + first + n);
      auto alone = run_on("reference", "rope", {f32({n, H, D}, part), i32({n}, at)}, attrs);
      ASSERT_TRUE(alone.ok());
      for (int64_t i = 0; i < n * H * D; ++i)
        EXPECT_NEAR((*both)[0].f32()[first * H * D + i], (*alone)[0].f32()[i], 1e-6) << "row " << first + i / (H * D);
    }
  }
}

TEST(CpuRope, ErrorsAreTheReferences) {
  // An odd rope_dim and an unknown scaling type, past the shape rule.
  Tensor x = f32({2, 1, 8}, scaled_values(16, 1, 1.0f));
  Tensor pos = i32({2}, {0, 1});
  const Attrs bad[] = {{{"theta", 1e4}, {"rope_dim", 3}},
                       {{"theta", 1e4}, {"scaling", {{"rope_type", "wobbly"}}}},
                       {{"theta", -1.0}}};
  for (const Attrs& a : bad) {
    std::vector<Tensor> out{Tensor::zeros(DType::F32, {2, 1, 8})};
    std::string ref = kernel_message("reference", "rope", {x, pos}, out, a);
    EXPECT_FALSE(ref.empty()) << a.dump();
    EXPECT_EQ(kernel_message("cpu", "rope", {x, pos}, out, a), ref);
  }
}

// rotary over given tables (Flux's, Wan's): rows on the threads, each
// vectorised, against the reference, with cos and sin that differ within a
// pair too (the op's contract) and head dims whose tail is scalar (12: a
// vector and a tail on 8-lane AVX2, all tail on 16 lanes).
TEST(CpuRotary, MatchesTheReference) {
  uint64_t seed = 5;
  for (auto [n, H, D] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{3, 2, 12}, {40, 12, 128}, {1300, 4, 64}, {7, 3, 34}}) {
    Tensor x = f32({n, H, D}, scaled_values(size_t(n * H * D), seed++, 1.0f));
    Tensor c = f32({n, D}, scaled_values(size_t(n * D), seed++, 1.0f));
    Tensor s = f32({n, D}, scaled_values(size_t(n * D), seed++, 1.0f));
    expect_cpu_matches_reference("rotary", {x, c, s}, Attrs::object(), "[" + std::to_string(n) + ", " + std::to_string(H) + ", " + std::to_string(D) + "]");
  }
}

}  // namespace
}  // namespace arch::test

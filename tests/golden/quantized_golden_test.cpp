// Every decoder golden imported as a canonical model (archrun import) at
// each weight type, run on the cpu path and compared with transformers'
// float32 logits. "stored" must match within the golden tolerance (the
// import changes nothing); bf16, q8 and q4 are measured and printed (logit
// error relative to max|logit|, top-1 agreement over the prompt positions,
// greedy tokens agreeing with transformers' before the first difference)
// and held to bounds that catch a broken format or kernel, not rounding.
#include <gtest/gtest.h>

#include <cstdio>
#include <tuple>

#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/safetensors.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/quant_dot.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::golden_dir;
using testing::read_json;

struct Quality {
  double rel_err = 0;      // max|out - ref| / max|ref| over the prompt logits
  double top1 = 0;         // share of prompt positions whose argmax agrees
  size_t greedy_same = 0;  // greedy tokens equal to transformers' before the first difference
};

Quality measure(const std::string& model_path, const std::string& golden, const LoadOptions& load = {}) {
  Quality q;
  auto model = load_model(model_path, load);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return q;
  auto expected = read_safetensors(golden + "/expected.safetensors");
  EXPECT_TRUE(expected.ok());
  const Tensor& ref = expected->tensors.at("logits");
  auto ids = read_json(golden + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  Session s(**model, int64_t(ids.size()));
  auto outs = s.step(ids);
  EXPECT_TRUE(outs.ok()) << (outs.ok() ? "" : outs.error().message);
  if (!outs.ok()) return q;
  const Tensor& got = outs->at("logits");
  EXPECT_EQ(got.shape, ref.shape);
  auto c = testing::compare_f32(got.f32(), ref.f32(), ref.numel());
  q.rel_err = c.max_abs / c.ref_max;
  const int64_t vocab = ref.shape[1], rows = ref.shape[0];
  int64_t agree = 0;
  for (int64_t r = 0; r < rows; ++r)
    agree += argmax({got.f32() + r * vocab, size_t(vocab)}) == argmax({ref.f32() + r * vocab, size_t(vocab)});
  q.top1 = double(agree) / double(rows);
  auto want = read_json(golden + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  GenerateOptions opt;
  opt.max_new_tokens = int(want.size());
  auto r = generate(**model, ids, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (r.ok())
    while (q.greedy_same < want.size() && q.greedy_same < r->tokens.size() && r->tokens[q.greedy_same] == want[q.greedy_same])
      ++q.greedy_same;
  return q;
}

class QuantizedGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizedGolden, ImportedModelsStayCloseToTransformers) {
  std::string golden = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(golden);
  testing::TempDir tmp;
  struct Bound {
    const char* dtype;
    double rel_err, top1;
  };
  // Bounds far outside what rounding does on these models (see the printed
  // figures), tight enough that a wrong scale, nibble order or block offset
  // fails them.
  // On these random-weight models bf16 moves the logits by up to 5% of
  // their largest magnitude, q8 by 2-27% (MoE the most: a rounded score
  // flips a near-tie in the choice of experts) and q4 by 30-115%; much the
  // same on the reference path, with f32 activations: it is the weights'
  // rounding. Chance top-1 agreement is under 1%.
  for (Bound b : {Bound{"stored", 0, 1.0}, Bound{"bf16", 0.06, 0.75}, Bound{"q8", 0.3, 0.6},
                  Bound{"q4", 1.5, 0.15}}) {
    SCOPED_TRACE(b.dtype);
    std::string out = tmp / (std::string(b.dtype) + ".safetensors");
    auto report = import_checkpoint(golden, out, *import_type_from_name(b.dtype));
    ASSERT_TRUE(report.ok()) << report.error().message;
    Quality q = measure(out, golden);
    std::printf("[ quantized ] %-12s %-6s logit error %.4f of max|logit|, top-1 %.2f, greedy %zu/16 before the first difference\n",
                GetParam(), b.dtype, q.rel_err, q.top1, q.greedy_same);
    if (std::string(b.dtype) == "stored") {
      EXPECT_LE(q.rel_err, 1e-4 + 1e-5);  // the golden tolerance
      EXPECT_EQ(q.greedy_same, 16u);
    } else {
      EXPECT_LE(q.rel_err, b.rel_err);
    }
    EXPECT_GE(q.top1, b.top1);
  }
}

// --kv-f16 (the KV cache's rows as F16, as llama.cpp keeps them) on the
// checkpoint as it is: measured and printed, and held to bounds that catch
// a broken F16 cache or attention path, not rounding. On these models it
// moves the logits by 0.04-0.33% of their largest magnitude, and every
// greedy token agrees (the goldens' float32 rule is 0.01%, which is why it
// is not the default).
TEST_P(QuantizedGolden, F16KvCacheStaysClose) {
  std::string golden = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(golden);
  LoadOptions f16;
  f16.kernels.kv_f16 = true;
  Quality q = measure(golden, golden, f16);
  std::printf("[ kv-f16    ] %-12s logit error %.4f of max|logit|, top-1 %.2f, greedy %zu/16 before the first difference\n",
              GetParam(), q.rel_err, q.top1, q.greedy_same);
  EXPECT_GT(q.rel_err, 0.0);  // the option did take: F16 rows round
  EXPECT_LE(q.rel_err, 0.02);
  EXPECT_GE(q.top1, 0.9);
  EXPECT_GE(q.greedy_same, 8u);  // decoding reads the F16 cache too
}

// A real trained model says more than random weights: stories260K imported
// at each type, 256 greedy tokens from BOS against llama2.c's float32 ones.
TEST(QuantizedStories260K, GreedyTextStaysWithLlama2c) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  auto want = read_json(dir + "/reference_greedy.json")["greedy_ids_incl_bos"].get<std::vector<int32_t>>();
  testing::TempDir tmp;
  struct Bound {
    const char* dtype;
    size_t min_same;  // greedy tokens before the first difference, of 255
  };
  // Measured here: bf16 185, q8 114, q4 20 (a 260K-parameter model is touchy).
  for (Bound b : {Bound{"bf16", 100}, Bound{"q8", 50}, Bound{"q4", 8}}) {
    std::string out = tmp / (std::string(b.dtype) + ".safetensors");
    ASSERT_TRUE(import_checkpoint(dir, out, *import_type_from_name(b.dtype)).ok());
    auto model = load_model(out);
    ASSERT_TRUE(model.ok()) << model.error().message;
    GenerateOptions opt;
    opt.max_new_tokens = int(want.size()) - 1;
    auto r = generate(**model, {want[0]}, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    size_t same = 0, equal = 0;
    while (same < r->tokens.size() && r->tokens[same] == want[same + 1]) ++same;
    for (size_t i = 0; i < r->tokens.size() && i + 1 < want.size(); ++i) equal += r->tokens[i] == want[i + 1];
    std::printf("[ quantized ] stories260K  %-6s greedy %zu/255 before the first difference, %zu/255 equal position by position\n",
                b.dtype, same, equal);
    EXPECT_GE(same, b.min_same) << b.dtype;
  }
}

// A q4 MoE import keeps its experts q4: the stacked expert weights the
// program folds at load are Q4_0 [experts, out, in] (BF16 where a row does
// not split into whole blocks: this golden's down_proj has 48 columns),
// never widened to F32.
TEST(QuantizedMoE, ExpertsStayQuantizedAtLoad) {
  std::string golden = golden_dir("qwen3_moe");
  ARCH_REQUIRE_SHARED(golden);
  testing::TempDir tmp;
  std::string out = tmp / "q4.safetensors";
  ASSERT_TRUE(import_checkpoint(golden, out, ImportType::Q4).ok());
  auto model = load_model(out);
  ASSERT_TRUE(model.ok()) << model.error().message;
  int stacked_q4 = 0, stacked_f32 = 0;
  for (const Tensor& w : (*model)->program().weights)
    if (w.data && w.shape.size() == 3) {
      stacked_q4 += w.dtype == DType::Q4_0;
      stacked_f32 += w.dtype == DType::F32;
    }
  EXPECT_GT(stacked_q4, 0);
  EXPECT_EQ(stacked_f32, 0);
}

// DeepSeek's per-head matrices, folded at load from kv_b_proj (reshaped,
// sliced, transposed), keep two bytes a value where the checkpoint is
// bf16 (exactly) or q4 (as bf16), not the F32 the folding passes through
// (how close the logits stay: QuantizedGolden's deepseek cases).
TEST(QuantizedLatent, FoldedPerHeadMatricesStayTwoBytes) {
  std::string golden = golden_dir("deepseek_v2_lite");
  ARCH_REQUIRE_SHARED(golden);
  for (ImportType type : {ImportType::BF16, ImportType::Q4}) {
    testing::TempDir tmp;
    std::string out = tmp / "m.safetensors";
    ASSERT_TRUE(import_checkpoint(golden, out, type).ok());
    auto model = load_model(out);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const Program& p = (*model)->program();
    int per_head = 0;
    for (const Node& node : p.graph->nodes) {
      if (node.op != "routed_matmul") continue;
      const std::string& name = p.graph->values[size_t(node.inputs[1])].name;  // the template's W_uk, W_uv
      if (!name.ends_with(".W_uk") && !name.ends_with(".W_uv")) continue;
      EXPECT_EQ(p.weights[size_t(node.inputs[1])].dtype, DType::BF16) << name;
      ++per_head;
    }
    EXPECT_EQ(per_head, 2 * read_json(golden + "/config.json")["num_hidden_layers"].get<int>());
  }
}

// The 2-d q4, q8 and bf16 matrices of a dense model are interleaved (16
// rows, bf16 64) at load on the cpu path (every reader takes that layout: the matmuls, and
// the embed that shares a tied table), and kept in rows for the reference.
TEST(DenseImport, MatricesAreInterleavedAtLoad) {
  std::string golden = golden_dir("qwen2");
  ARCH_REQUIRE_SHARED(golden);
  testing::TempDir tmp;
  // The tiles are the cpu backend's layouts: the core names them as it registered them.
  for (auto [type, rows, interleaved] : {std::tuple{ImportType::Q4, DType::Q4_0, "Q4_0x16"},
                                         std::tuple{ImportType::Q8, DType::Q8_0, "Q8_0x16"},
                                         std::tuple{ImportType::BF16, DType::BF16, "BF16x64"}}) {
    std::string out = tmp / (std::string(dtype_name(rows)) + ".safetensors");
    ASSERT_TRUE(import_checkpoint(golden, out, type).ok());
    for (const char* backend : {"cpu", "reference"}) {
      LoadOptions opt;
      opt.backend = backend;
      auto model = load_model(out, opt);
      ASSERT_TRUE(model.ok()) << model.error().message;
      int in_rows = 0, in_tiles = 0;
      for (const Tensor& w : (*model)->program().weights) {
        in_rows += w.data && w.dtype == rows && !w.layout;
        in_tiles += w.data && w.layout && stored_name(w) == interleaved;
      }
      SCOPED_TRACE(std::string(backend) + " " + std::string(dtype_name(rows)));
      // Tiles only where the CPU has the dot products they pay with: AVX-512
      // BF16 for BF16, VNNI or AVX2 for Q8_0 / Q4_0.
      const bool tiled = std::string(backend) == "cpu" && (rows == DType::BF16 ? has_avx512_bf16_dot()
                                                                               : has_avx512_vnni() || cpu_features().avx2);
      if (tiled) {
        EXPECT_EQ(in_rows, 0);
        EXPECT_GT(in_tiles, 0);
      } else {
        EXPECT_EQ(in_tiles, 0);
        if (std::string(backend) == "reference") {
          EXPECT_EQ(in_rows, 0);  // widened at load
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, QuantizedGolden,
                         ::testing::Values("llama", "llama_bf16", "mistral", "qwen2", "qwen3", "gemma", "gemma2",
                                           "gemma3_text", "mixtral", "qwen2_moe", "qwen3_moe", "gemma4_text", "phi3",
                                           "starcoder2", "deepseek_v2_lite"));
// Not deepseek_v3: its q8 import moves the logits by 80% of their largest
// magnitude on the reference path as on the cpu one (rounded sigmoid scores
// re-route its random experts' group-limited choice), past any bound that
// would still catch a broken format.

}  // namespace
}  // namespace arch

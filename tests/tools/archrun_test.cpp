// archrun from the command line: every LlamaStyle golden through `forward`
// and `generate`, the embedded default, and clear errors on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/safetensors.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/golden/golden_case.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

// A fresh directory of this test's own, removed however the test ends.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("archrun_test_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& p) const { return path / p; }
};

class ArchrunGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchrunGolden, ForwardWritesTransformersLogits) {
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int64_t>>();
  TempDir tmp(GetParam());
  // input_ids as transformers takes them: int64 [1, seq].
  Tensor in = Tensor::zeros(DType::I64, {1, int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), static_cast<int64_t*>(in.data));
  ASSERT_TRUE(write_safetensors((tmp / "in.safetensors").string(), {{"input_ids", in}}).ok());
  auto r = run_tool(testing::archrun() + " forward " + dir + " --inputs " + (tmp / "in.safetensors").string() +
                    " --out " + (tmp / "out.safetensors").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto out = read_safetensors((tmp / "out.safetensors").string());
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& logits = out->tensors.at("logits");
  const Tensor& ref = expected->tensors.at("logits");
  ASSERT_EQ(logits.dtype, DType::F32);
  ASSERT_EQ(logits.shape, (Dims{1, ref.shape[0], ref.shape[1]}));
  auto c = testing::compare_f32(logits.f32(), ref.f32(), ref.numel());
  EXPECT_TRUE(c.ok()) << GetParam() << ": logits differ by " << c.max_abs << " (allowed " << c.bound << ")";
}

TEST_P(ArchrunGolden, GenerateGivesTransformersGreedyTokens) {
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int64_t>>();
  auto want = testing::read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  std::string list;
  for (auto id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  auto r = run_tool(testing::archrun() + " generate " + dir + " --ids " + list + " -n 16 --greedy --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), want) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Cases, ArchrunGolden,
                         ::testing::Values("llama", "llama3_rope", "llama_bf16", "llama_tf447",
                                           "mistral", "qwen2", "qwen3", "gemma", "gemma2",
                                           "gemma3_text", "mixtral", "qwen2_moe", "qwen3_moe",
                                           "gemma4_text", "gemma4_moe", "gpt2", "gpt_neox", "phi"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// An encoder-decoder from the command line: forward takes input_ids and
// decoder_input_ids as transformers does and writes the decoder's logits
// and the encoder's output; generate --ids encodes the ids and decodes
// from decoder_start_token_id.
class ArchrunEncoderDecoder : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchrunEncoderDecoder, ForwardAndGenerateMatchTransformers) {
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto inputs = testing::read_json(dir + "/inputs.json");
  TempDir tmp(GetParam());
  auto ids_tensor = [](const std::vector<int64_t>& ids) {
    Tensor t = Tensor::zeros(DType::I64, {1, int64_t(ids.size())});
    std::copy(ids.begin(), ids.end(), static_cast<int64_t*>(t.data));
    return t;
  };
  // The encoder's input: T5's input_ids, or Whisper's input_features as stored.
  std::vector<std::pair<std::string, Tensor>> feed = {
      {"decoder_input_ids", ids_tensor(inputs["decoder_input_ids"].get<std::vector<int64_t>>())}};
  std::vector<int64_t> src;
  if (inputs["input_ids"].is_array()) {
    src = inputs["input_ids"].get<std::vector<int64_t>>();
    feed.emplace_back("input_ids", ids_tensor(src));
  } else {
    auto stored = read_safetensors(dir + "/inputs.safetensors");
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    for (auto& [name, t] : stored->tensors) feed.emplace_back(name, t);
  }
  ASSERT_TRUE(write_safetensors((tmp / "in.safetensors").string(), feed).ok());
  auto r = run_tool(testing::archrun() + " forward " + dir + " --inputs " + (tmp / "in.safetensors").string() +
                    " --outputs logits,encoder_last_hidden_state --out " + (tmp / "out.safetensors").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto out = read_safetensors((tmp / "out.safetensors").string());
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  for (const char* name : {"logits", "encoder_last_hidden_state"}) {
    const Tensor& got = out->tensors.at(name);
    const Tensor& ref = expected->tensors.at(name);
    ASSERT_EQ(got.shape, (Dims{1, ref.shape[0], ref.shape[1]})) << name;
    auto c = testing::compare_f32(got.f32(), ref.f32(), ref.numel());
    EXPECT_TRUE(c.ok()) << GetParam() << ": " << name << " differs by " << c.max_abs << " (allowed " << c.bound << ")";
  }
  if (src.empty()) return;  // Whisper's generation takes audio: archrun transcribe
  std::string list;
  for (auto id : src) list += (list.empty() ? "" : ",") + std::to_string(id);
  auto g = run_tool(testing::archrun() + " generate " + dir + " --ids " + list + " -n 16 --greedy --json");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  auto want = testing::read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(nlohmann::json::parse(g.out)["tokens"].get<std::vector<int32_t>>(), want) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Cases, ArchrunEncoderDecoder, ::testing::Values("t5", "t5_v11", "mt5", "bart", "mbart", "marian", "m2m_100", "whisper"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Archrun, InfoSaysWhichFamilyAndWhy) {
  std::string dir = testing::golden_dir("qwen3");
  ARCH_REQUIRE_SHARED(dir);
  auto r = run_tool(testing::archrun() + " info " + dir + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["family"], "LlamaStyle");
  EXPECT_NE(j["reason"].get<std::string>().find("model_type 'qwen3'"), std::string::npos);
  EXPECT_EQ(j["flags"]["has_qk_norm"], true);
  EXPECT_EQ(j["flags"]["tied"], true);
  EXPECT_EQ(j["config"]["head_dim"], 32);
  EXPECT_EQ(j["unused_tensors"].size(), 0u);
}

// No model named: stories260K, shipped as families/default/stories260K.gguf,
// tells run.c's story; the random toy is still there by name.
TEST(Archrun, DefaultModelTellsAStoryWithoutAnyDownload) {
  auto r = run_tool(testing::archrun() + " generate -p \"Once upon a time\" -n 20 --greedy --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  EXPECT_EQ(j["text"].get<std::string>().rfind(", there was a little girl named Lily. She loved to play", 0), 0u) << j["text"];
  auto info = run_tool(testing::archrun() + " info --json");
  ASSERT_EQ(info.exit_code, 0) << info.out;
  auto ij = nlohmann::json::parse(info.out);
  EXPECT_NE(ij["model"].get<std::string>().find("families/default/stories260K.gguf"), std::string::npos);
  EXPECT_EQ(ij["gguf"]["architecture"], "llama");

  auto toy = run_tool(testing::archrun() + " generate toy --ids 1,2,3 -n 5 --json");
  ASSERT_EQ(toy.exit_code, 0) << toy.out;
  auto tokens = nlohmann::json::parse(toy.out)["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 5u);
  // Deterministic: the same command gives the same tokens.
  auto again = run_tool(testing::archrun() + " generate toy --ids 1,2,3 -n 5 --json");
  EXPECT_EQ(nlohmann::json::parse(again.out)["tokens"].get<std::vector<int32_t>>(), tokens);
}

TEST(Archrun, SeededSamplingIsReproducible) {
  auto cmd = testing::archrun() + " generate --ids 1,2,3 -n 12 --temperature 1.5 --top-k 50 --top-p 0.9 --json";
  auto a = run_tool(cmd + " --seed 7"), b = run_tool(cmd + " --seed 7"), c = run_tool(cmd + " --seed 8");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST(Archrun, ErrorsAreClearAndNonZero) {
  TempDir tmp("errors");
  // A directory that is not there.
  auto r = run_tool(testing::archrun() + " info " + (tmp / "nope").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("nope"), std::string::npos) << r.out;

  // A truncated safetensors file names the file.
  ASSERT_TRUE(write_toy_checkpoint((tmp / "trunc").string()).ok());
  fs::resize_file(tmp / "trunc" / "model.safetensors", 1000);
  r = run_tool(testing::archrun() + " generate " + (tmp / "trunc").string() + " --ids 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model.safetensors"), std::string::npos) << r.out;

  // A config that disagrees with the tensors: named tensor, both shapes.
  ASSERT_TRUE(write_toy_checkpoint((tmp / "shape").string()).ok());
  {
    auto cfg = testing::read_json((tmp / "shape" / "config.json").string());
    cfg["intermediate_size"] = 100;
    std::ofstream((tmp / "shape" / "config.json").string()) << cfg.dump();
  }
  r = run_tool(testing::archrun() + " generate " + (tmp / "shape").string() + " --ids 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[128, 64]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[100, 64]"), std::string::npos) << r.out;

  // A model type no family lists, without any family's tensors.
  fs::create_directories(tmp / "alien");
  std::ofstream((tmp / "alien" / "config.json").string()) << R"({"model_type": "alien"})";
  Tensor t = Tensor::zeros(DType::F32, {2});
  ASSERT_TRUE(write_safetensors((tmp / "alien" / "model.safetensors").string(), {{"x.weight", t}}).ok());
  r = run_tool(testing::archrun() + " info " + (tmp / "alien").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no family for model_type 'alien'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LlamaStyle"), std::string::npos) << r.out;

  // Token ids out of the vocabulary.
  r = run_tool(testing::archrun() + " generate --ids 1,99999 -n 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("99999"), std::string::npos) << r.out;

  // Not token ids at all.
  r = run_tool(testing::archrun() + " generate --ids 1,x -n 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("'x' is not a token id"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

// Encoders, vision models and VITS voices through `archrun forward
// --all-outputs`: every tensor transformers stored, with the batch dim of 1
// it returns. The inputs: inputs.json's ids (and an all-ones mask) with
// inputs.safetensors' tensors (pixel values; VITS' recorded noise).
class ArchrunEncoderGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchrunEncoderGolden, ForwardWritesEveryExpectedTensor) {
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  TempDir tmp("enc_" + GetParam());
  std::vector<std::pair<std::string, Tensor>> inputs;
  auto j = testing::read_json(dir + "/inputs.json");
  for (const char* key : {"input_ids", "token_type_ids"}) {
    if (!j.contains(key) || !j[key].is_array()) continue;
    auto ids = j[key].get<std::vector<int64_t>>();
    Tensor t = Tensor::zeros(DType::I64, {1, int64_t(ids.size())});
    std::copy(ids.begin(), ids.end(), static_cast<int64_t*>(t.data));
    inputs.emplace_back(key, t);
    if (std::string(key) == "input_ids") {
      Tensor mask = Tensor::zeros(DType::I64, {1, int64_t(ids.size())});
      std::fill_n(static_cast<int64_t*>(mask.data), ids.size(), 1);
      inputs.emplace_back("attention_mask", mask);
    }
  }
  if (fs::exists(dir + "/inputs.safetensors")) {
    auto stored = read_safetensors(dir + "/inputs.safetensors");
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    for (const auto& [name, t] : stored->tensors) inputs.emplace_back(name, t);
  }
  const std::string in_path = (tmp / "in.safetensors").string();
  ASSERT_TRUE(write_safetensors(in_path, inputs).ok());
  auto r = run_tool(testing::archrun() + " forward " + dir + " --inputs " + in_path + " --out " +
                    (tmp / "out.safetensors").string() + " --all-outputs");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto out = read_safetensors((tmp / "out.safetensors").string());
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  for (const auto& [name, ref] : expected->tensors) {
    ASSERT_TRUE(out->tensors.count(name)) << GetParam() << ": archrun wrote no " << name;
    const Tensor& got = out->tensors.at(name);
    Dims want = ref.shape;
    want.insert(want.begin(), 1);
    ASSERT_EQ(got.shape, want) << name;
    auto c = testing::compare_f32(got.f32(), ref.f32(), ref.numel());
    EXPECT_TRUE(c.ok()) << GetParam() << ": " << name << " differs by " << c.max_abs << " (allowed " << c.bound << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ArchrunEncoderGolden,
                         ::testing::Values("bert", "bert_mlm", "roberta", "modernbert", "modernbert_mlm", "deberta_v2", "vit", "vit_model", "clip_vision", "deit", "dinov2", "dinov2_interp", "dinov2_registers", "siglip_vision",
                                           "resnet", "resnet_bottleneck", "swin2sr", "vits", "vits_noise"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// RoBERTa has one token type, so embed's ids alone are the golden's whole
// input: the vector must be transformers' mean-pooled one.
TEST(Archrun, EmbedPrintsTheMeanPooledVector) {
  std::string dir = testing::golden_dir("roberta");
  ARCH_REQUIRE_SHARED(dir);
  auto ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int64_t>>();
  std::string list;
  for (auto id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  auto r = run_tool(testing::archrun() + " embed " + dir + " --ids " + list + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto v = nlohmann::json::parse(r.out)["embedding"].get<std::vector<float>>();
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& ref = expected->tensors.at("mean_pooled");
  ASSERT_EQ(int64_t(v.size()), ref.numel());
  auto c = testing::compare_f32(v.data(), ref.f32(), ref.numel());
  EXPECT_TRUE(c.ok()) << "mean_pooled differs by " << c.max_abs << " (allowed " << c.bound << ")";
  // --normalize: the same direction, unit length.
  auto n = run_tool(testing::archrun() + " embed " + dir + " --ids " + list + " --json --normalize");
  auto u = nlohmann::json::parse(n.out)["embedding"].get<std::vector<float>>();
  double norm = 0, vv = 0;
  for (float x : v) vv += double(x) * x;
  for (size_t i = 0; i < u.size(); ++i) {
    norm += double(u[i]) * u[i];
    EXPECT_NEAR(u[i], v[i] / std::sqrt(vv), 1e-6);
  }
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(Archrun, CompareMatchesAGolden) {
  std::string dir = testing::golden_dir("qwen3");
  ARCH_REQUIRE_SHARED(dir);
  auto r = run_tool(testing::archrun() + " compare " + dir + " " + dir + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["greedy_tokens_agree"], 16);
  EXPECT_TRUE(j["first_failure"].is_null());
}

// A vision-language golden: the image's features made first (pixel_values
// from inputs.safetensors), the prompt with them in place, the greedy
// tokens from the image too; a tower the model reads only so far (LLaVA's
// vision_feature_layer) is not computed past it, which is no failure.
TEST(Archrun, CompareRunsAVisionLanguageGoldenWithItsImage) {
  for (const char* name : {"llava", "gemma3_vlm"}) {
    SCOPED_TRACE(name);
    const std::string dir = testing::golden_dir(name);
    ARCH_REQUIRE_SHARED(dir);
    auto r = run_tool(testing::archrun() + " compare " + dir + " " + dir + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ok"], true) << r.out;
    EXPECT_EQ(j["greedy_tokens_agree"], 16);
    EXPECT_TRUE(j["missing"].empty()) << r.out;
    if (std::string(name) == "llava")
      EXPECT_EQ(j["not_computed"], (nlohmann::json{"vision_last_hidden_state", "vision_layer_outputs[2]"}));
  }
}

// A template wrong on one line (RoPE theta doubled) is caught at the first
// layer, by name.
TEST(Archrun, CompareNamesTheFirstDivergingLayerOfAWrongTemplate) {
  std::string dir = testing::golden_dir("llama");
  ARCH_REQUIRE_SHARED(dir);
  std::ifstream in(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::string good = "q = rope(q, positions, theta: theta,";
  size_t at = text.find(good);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, good.size(), "q = rope(q, positions, theta: theta * 2,");
  TempDir tmp("wrong_template");
  std::ofstream(tmp / "llama.arch") << text;
  auto r = run_tool(testing::archrun() + " compare " + dir + " " + dir + " --template " +
                    (tmp / "llama.arch").string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("first divergence: layer_outputs[0]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does NOT match"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace arch

#include <stb/stb_image_write.h>

namespace arch {
namespace {

TEST(Archrun, ClassifyAnImage) {
  std::string dir = testing::golden_dir("vit");
  ARCH_REQUIRE_SHARED(dir);
  TempDir tmp("classify");
  std::vector<unsigned char> rgb(48 * 40 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<unsigned char>((i * 37) % 251);
  std::string png = (tmp / "image.png").string();
  ASSERT_NE(stbi_write_png(png.c_str(), 48, 40, 3, rgb.data(), 48 * 3), 0);
  auto r = run_tool(testing::archrun() + " classify " + dir + " " + png + " --top-k 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto top = nlohmann::json::parse(r.out)["top"];
  ASSERT_EQ(top.size(), 3u);
  double total = 0, last = 1;
  for (const auto& t : top) {
    double p = t["probability"].get<double>();
    EXPECT_LE(p, last);
    last = p;
    total += p;
    EXPECT_FALSE(t["label"].get<std::string>().empty());
  }
  EXPECT_LE(total, 1.0 + 1e-9);
  // Deterministic.
  EXPECT_EQ(run_tool(testing::archrun() + " classify " + dir + " " + png + " --top-k 3 --json").out, r.out);

  // Not an image: a clear error naming the file.
  std::ofstream(tmp / "fake.png") << "this is not a PNG";
  auto bad = run_tool(testing::archrun() + " classify " + dir + " " + (tmp / "fake.png").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("fake.png"), std::string::npos) << bad.out;
  // A truncated PNG, too.
  std::ifstream whole(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(whole)), {});
  std::ofstream(tmp / "cut.png", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto cut = run_tool(testing::archrun() + " classify " + dir + " " + (tmp / "cut.png").string());
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_NE(cut.out.find("cut.png"), std::string::npos) << cut.out;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(Archrun, BenchPrintsItsFiguresAsOneJsonObject) {
  auto r = run_tool(testing::archrun() + " bench -p 16 -n 4 --repeat 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string last = testing::last_line(r.out);
  auto j = nlohmann::json::parse(last);
  for (const char* k : {"prompt_tok_s", "decode_tok_s", "ttft_ms", "load_ms", "peak_rss_mb"})
    EXPECT_GT(j[k].get<double>(), 0) << k;
  // Decode against the memory bound: bytes per token times tokens/s, and
  // the machine's read bandwidth probed beside it.
  for (const char* k : {"weights_per_token_mb", "decode_gb_s", "read_bandwidth_gb_s", "decode_share_of_bandwidth"})
    EXPECT_GT(j[k].get<double>(), 0) << k;
  EXPECT_NEAR(j["decode_gb_s"].get<double>(),
              j["weights_per_token_mb"].get<double>() * j["decode_tok_s"].get<double>() / 1000, 1e-6);
  // Each run against the probes beside it; the share reported is the
  // median of the runs' shares.
  ASSERT_EQ(j["runs"].size(), 3u);
  std::vector<double> shares;
  for (const auto& run : j["runs"]) {
    EXPECT_GT(run["read_bandwidth_gb_s"].get<double>(), 0);
    shares.push_back(run["decode_share_of_bandwidth"].get<double>());
    EXPECT_NEAR(shares.back(),
                j["weights_per_token_mb"].get<double>() * run["decode_tok_s"].get<double>() / 1000 /
                    run["read_bandwidth_gb_s"].get<double>(),
                1e-9);
  }
  std::sort(shares.begin(), shares.end());
  EXPECT_EQ(j["decode_share_of_bandwidth"].get<double>(), shares[1]);
  // The probes' 256 MiB buffers are not counted as the model's memory.
  EXPECT_LT(j["peak_rss_mb"].get<double>(), 256);
}

// --profile: time per op for each phase, the walk between kernels as an
// entry of its own, all of it within the phase's wall time.
TEST(Archrun, BenchProfileSplitsEachPhaseByOp) {
  auto r = run_tool(testing::archrun() + " bench -p 16 -n 8 --profile --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  for (const char* phase : {"prompt", "decode"}) {
    SCOPED_TRACE(phase);
    std::map<std::string, double> ms;
    double total = 0;
    for (const auto& op : j["profile"][phase]) {
      EXPECT_GT(op["calls"].get<int64_t>(), 0);
      EXPECT_GE(op["ms"].get<double>(), 0);
      ms[op["op"].get<std::string>()] = op["ms"].get<double>();
      total += op["ms"].get<double>();
    }
    EXPECT_TRUE(ms.count("matmul"));
    EXPECT_TRUE(ms.count("attention"));
    EXPECT_TRUE(ms.count("(between kernels)"));
    const double wall = std::string(phase) == "prompt" ? j["ttft_ms"].get<double>()
                                                       : 7 / j["decode_tok_s"].get<double>() * 1000;
    EXPECT_LE(total, wall * 1.01 + 0.1);
    // The same time by the block of a layer each value was made in:
    // attention's and the MLP's among them, all within the op total.
    std::map<std::string, double> blocks;
    for (const auto& b : j["profile"][std::string(phase) + "_blocks"]) blocks[b["block"].get<std::string>()] = b["ms"].get<double>();
    EXPECT_TRUE(blocks.count("self_attention") && blocks.count("swiglu")) << j["profile"].dump();
    double in_blocks = 0;
    for (auto& [block, t] : blocks) in_blocks += t;
    EXPECT_LE(in_blocks, total + 0.01);
  }
}

// bench-serve on a toy checkpoint served in-process: every stream of every
// round gets its tokens; with --repeat, each sweep's ratios are to its own
// single stream, and the summary spans the sweeps.
TEST(Archrun, BenchServeSweepsAndSummarises) {
  TempDir tmp("bench_serve");
  ASSERT_EQ(run_tool(testing::archrun() + " toy -o " + (tmp / "toy").string()).exit_code, 0);
  auto r = run_tool(testing::archrun() + " bench-serve " + (tmp / "toy").string() +
                    " -p 8 -n 4 --concurrency 1,3 --repeat 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("sweep 2 of 2"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  EXPECT_EQ(j["repeat"], 2);
  ASSERT_EQ(j["rounds"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const auto& round = j["rounds"][i];
    const int streams = i % 2 == 0 ? 1 : 3;
    EXPECT_EQ(round["sweep"], int(i / 2));
    EXPECT_EQ(round["streams"], streams);
    EXPECT_EQ(round["tokens"], 4 * streams);
    EXPECT_EQ(round["errors"], 0);
    EXPECT_GT(round["decode_tok_s"].get<double>(), 0);
    const double own_single = j["rounds"][i / 2 * 2]["decode_tok_s"];
    EXPECT_DOUBLE_EQ(round["vs_one_stream"].get<double>(), round["decode_tok_s"].get<double>() / own_single);
  }
  ASSERT_EQ(j["summary"].size(), 2u);
  const auto& three = j["summary"][1];
  EXPECT_EQ(three["streams"], 3);
  EXPECT_EQ(three["rounds"], 2);
  const double a = j["rounds"][1]["decode_tok_s"], b = j["rounds"][3]["decode_tok_s"];
  EXPECT_DOUBLE_EQ(three["decode_tok_s_min"].get<double>(), std::min(a, b));
  EXPECT_DOUBLE_EQ(three["decode_tok_s_max"].get<double>(), std::max(a, b));
  EXPECT_DOUBLE_EQ(three["vs_one_stream_min"].get<double>(),
                   std::min(j["rounds"][1]["vs_one_stream"].get<double>(), j["rounds"][3]["vs_one_stream"].get<double>()));
}

TEST(Archrun, ToyWritesBf16WeightsThatRunLikeTheF32Ones) {
  TempDir tmp("toy_bf16");
  ASSERT_EQ(run_tool(testing::archrun() + " toy -o " + (tmp / "bf16").string() + " --dtype bf16").exit_code, 0);
  auto f = read_safetensors((tmp / "bf16" / "model.safetensors").string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->tensors.at("model.embed_tokens.weight").dtype, DType::BF16);
  auto r = run_tool(testing::archrun() + " generate " + (tmp / "bf16").string() + " --ids 1,2,3 -n 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 4u);
  auto bad = run_tool(testing::archrun() + " toy -o " + (tmp / "x").string() + " --shape gpt-5");
  EXPECT_NE(bad.exit_code, 0);
}

// A bf16 checkpoint's bench says what --bf16-activations would change, on a
// CPU with bf16 arithmetic (its header line names it) and only there; the
// JSON says whether the option was on.
TEST(Archrun, BenchOfBf16WeightsNamesTheBf16ActivationsOption) {
  TempDir tmp("bench_bf16");
  const std::string dir = (tmp / "bf16").string();
  ASSERT_EQ(run_tool(testing::archrun() + " toy -o " + dir + " --dtype bf16").exit_code, 0);
  for (const char* cpu : {"", "ARCHETYPE_CPU=avx2 "}) {
    auto r = run_tool(std::string(cpu) + testing::archrun() + " bench " + dir + " -p 8 -n 2");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::string header = r.out.substr(0, r.out.find('\n'));
    const bool bf16_cpu = header.find("bf16)") != std::string::npos;
    EXPECT_EQ(r.out.find("prompts kept f32-grade") != std::string::npos, bf16_cpu) << cpu << r.out;
  }
  auto on = run_tool(testing::archrun() + " bench " + dir + " -p 8 -n 2 --bf16-activations --json");
  ASSERT_EQ(on.exit_code, 0) << on.out;
  EXPECT_TRUE(nlohmann::json::parse(testing::last_line(on.out))["bf16_activations"].get<bool>());
  auto f32 = run_tool(testing::archrun() + " bench -p 8 -n 2");  // the embedded toy: f32 weights
  ASSERT_EQ(f32.exit_code, 0) << f32.out;
  EXPECT_EQ(f32.out.find("bf16 weights:"), std::string::npos) << f32.out;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(Archrun, ForwardRefusesAPaddedAttentionMask) {
  TempDir tmp("mask");
  Tensor ids = Tensor::zeros(DType::I64, {1, 3}), mask = Tensor::zeros(DType::I64, {1, 3});
  for (int i = 0; i < 3; ++i) static_cast<int64_t*>(ids.data)[i] = i + 1, static_cast<int64_t*>(mask.data)[i] = i < 2;
  ASSERT_TRUE(write_safetensors((tmp / "in.safetensors").string(), {{"input_ids", ids}, {"attention_mask", mask}}).ok());
  auto r = run_tool(testing::archrun() + " forward --inputs " + (tmp / "in.safetensors").string() + " --out " +
                    (tmp / "out.safetensors").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("attention_mask with padding is not supported"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp / "out.safetensors"));
}

// A template's graphs, as info lists them and forward --graph picks one;
// a graph it lacks is refused with the ones it has.
TEST(Archrun, InfoListsTheGraphsAndForwardPicksOne) {
  auto info = run_tool(testing::archrun() + " info toy");
  ASSERT_EQ(info.exit_code, 0) << info.out;
  EXPECT_NE(info.out.find("graph step(tokens: i32[seq], positions: i32[seq]) -> embeddings, layer_outputs, "
                          "last_hidden_state, logits"),
            std::string::npos)
      << info.out;
  TempDir tmp("graph");
  Tensor ids = Tensor::zeros(DType::I64, {1, 3});
  ASSERT_TRUE(write_safetensors((tmp / "in.safetensors").string(), {{"input_ids", ids}}).ok());
  const std::string base = testing::archrun() + " forward --inputs " + (tmp / "in.safetensors").string() + " --out " +
                           (tmp / "out.safetensors").string();
  auto step = run_tool(base + " --graph step");
  EXPECT_EQ(step.exit_code, 0) << step.out;
  auto none = run_tool(base + " --graph denoise");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("no graph 'denoise' (it has: step)"), std::string::npos) << none.out;
}

// An unlisted model_type whose tensors fit LlamaStyle but whose config has
// a field LlamaStyle never reads: refused with the field named; run with
// --force-family it warns, and info tells the unread field.
TEST(Archrun, UnlistedCheckpointWithUnreadFieldsIsRefusedUnlessForced) {
  TempDir tmp("unlisted");
  const std::string dir = (tmp / "m").string();
  ASSERT_EQ(run_tool(testing::archrun() + " toy -o " + dir).exit_code, 0);
  auto config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  config["model_type"] = "alien_lm";
  config["logit_multiplier"] = 0.5;
  std::ofstream(dir + "/config.json") << config.dump();
  auto refused = run_tool(testing::archrun() + " generate " + dir + " --ids 1,2 -n 2 --greedy");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.out.find("LlamaStyle does not read: logit_multiplier"), std::string::npos) << refused.out;
  auto forced = run_tool(testing::archrun() + " info " + dir + " --force-family LlamaStyle");
  EXPECT_EQ(forced.exit_code, 0) << forced.out;
  EXPECT_NE(forced.out.find("archrun: warning: --force-family LlamaStyle"), std::string::npos) << forced.out;
  EXPECT_NE(forced.out.find("config fields the template leaves unread: logit_multiplier"), std::string::npos)
      << forced.out;
}

// A tensor no graph reads: generate warns on stderr naming it, and runs;
// --strict refuses it.
TEST(Archrun, UnreadTensorsWarnAndStrictRefuses) {
  TempDir tmp("unread");
  const std::string dir = (tmp / "m").string();
  ASSERT_EQ(run_tool(testing::archrun() + " toy -o " + dir).exit_code, 0);
  {
    auto ckpt = read_safetensors(dir + "/model.safetensors");
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const auto& [name, t] : ckpt->tensors) {
      Tensor copy = Tensor::zeros(t.dtype, t.shape);
      std::memcpy(copy.data, t.data, t.nbytes());
      tensors.emplace_back(name, copy);
    }
    tensors.emplace_back("model.layers.0.self_attn.sinks", Tensor::zeros(DType::F32, {4}));
    ASSERT_TRUE(write_safetensors((tmp / "extra.safetensors").string(), tensors).ok());
  }
  fs::rename(tmp / "extra.safetensors", tmp / "m" / "model.safetensors");
  auto warned = run_tool(testing::archrun() + " generate " + dir + " --ids 1,2 -n 2 --greedy");
  EXPECT_EQ(warned.exit_code, 0) << warned.out;
  EXPECT_NE(warned.out.find("archrun: warning: 1 checkpoint tensor is read by no graph of "), std::string::npos)
      << warned.out;
  EXPECT_NE(warned.out.find("llama.arch: model.layers.0.self_attn.sinks; "), std::string::npos) << warned.out;
  auto strict = run_tool(testing::archrun() + " generate " + dir + " --ids 1,2 -n 2 --greedy --strict");
  EXPECT_EQ(strict.exit_code, 1) << strict.out;
  EXPECT_NE(strict.out.find("archrun: error: " + dir + ": 1 checkpoint tensor is read by no graph of "),
            std::string::npos)
      << strict.out;
  EXPECT_NE(strict.out.find("model.layers.0.self_attn.sinks (--strict:"), std::string::npos) << strict.out;
  auto help = run_tool(testing::archrun() + " forward --help");
  EXPECT_NE(help.out.find("--strict"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// archrun denoise from the command line: the trajectory written, and bad
// input refused with the fault named.
TEST(ArchrunDenoise, WritesTheTrajectoryAndRefusesBadInput) {
  const std::string dir = testing::golden_dir("unet_sd15");
  ARCH_REQUIRE_SHARED(dir);
  const std::string out = (std::filesystem::temp_directory_path() / ("denoise_" + std::to_string(getpid()) + ".safetensors")).string();
  // The golden's inputs file holds three tensors: a context must be one.
  auto many = testing::run_tool(testing::archrun() + " denoise " + dir + " --context " + dir + "/inputs.safetensors --steps 2 -o " + out);
  EXPECT_NE(many.exit_code, 0);
  EXPECT_NE(many.out.find("must be one tensor"), std::string::npos) << many.out;
  auto neg = testing::run_tool(testing::archrun() + " denoise " + dir + " --context x --steps -1 -o " + out);
  EXPECT_NE(neg.exit_code, 0);
  EXPECT_NE(neg.out.find("--steps must be at least 1"), std::string::npos) << neg.out;
  // A pipeline folder to a PNG, from ids (the golden keeps no tokenizer).
  const std::string pipe = testing::golden_dir("sd15_pipeline");
  const std::string png = out + ".png";
  auto img = testing::run_tool(testing::archrun() + " imagine " + pipe +
                               " --ids 98,18,80,16,93,12,59,99,99,99,99,99,99,99,99,99 --steps 2 --seed 3 -o " + png);
  EXPECT_EQ(img.exit_code, 0) << img.out;
  EXPECT_NE(img.out.find("seed 3"), std::string::npos) << img.out;
  std::ifstream f(png, std::ios::binary);
  char sig[8] = {};
  f.read(sig, 8);
  EXPECT_EQ(std::string(sig + 1, 3), "PNG");
  auto text = testing::run_tool(testing::archrun() + " imagine " + pipe + " -p 'a cat' -o " + png);
  EXPECT_NE(text.exit_code, 0);
  EXPECT_NE(text.out.find("-p needs the pipeline's tokenizer/"), std::string::npos) << text.out;
  // Any size the VAE's scale (2 for this tiny one) divides: a 40 x 24 PNG.
  auto size = testing::run_tool(testing::archrun() + " imagine " + pipe + " --ids 98,99 --steps 1 --height 40 --width 24 -o " + png);
  ASSERT_EQ(size.exit_code, 0) << size.out;
  std::ifstream g(png, std::ios::binary);
  unsigned char ihdr[24] = {};
  g.read(reinterpret_cast<char*>(ihdr), 24);
  EXPECT_EQ(ihdr[19], 24);  // width, big-endian at 16..19
  EXPECT_EQ(ihdr[23], 40);  // height at 20..23
  auto odd = testing::run_tool(testing::archrun() + " imagine " + pipe + " --ids 98,99 --height 33 -o " + png);
  EXPECT_NE(odd.exit_code, 0);
  EXPECT_NE(odd.out.find("multiple of 2 (the VAE's scale)"), std::string::npos) << odd.out;
  std::filesystem::remove(png);
}

// -p through a CLIP tokenizer/ (vocab.json + merges.txt): the same image
// as the ids it encodes to, padded as the pipeline pads them.
TEST(ArchrunImagine, APromptThroughClipsTokenizerIsItsIds) {
  const std::string pipe = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(pipe);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("imagine_tok_" + std::to_string(getpid()));
  fs::create_directories(dir / "tokenizer");
  for (const char* c : {"model_index.json", "text_encoder", "unet", "vae", "scheduler"})
    fs::create_symlink(fs::path(pipe) / c, dir / c);  // the golden's components, read where they are
  std::ofstream(dir / "tokenizer" / "vocab.json") << R"({"a</w>": 18, "a": 5, "t</w>": 6, "c": 3, "at</w>": 4, "cat</w>": 80, "<|startoftext|>": 98, "<|endoftext|>": 99})";
  std::ofstream(dir / "tokenizer" / "merges.txt") << "#version: 0.2\na t</w>\nc at</w>\n";
  const std::string a = (dir / "a.png").string(), b = (dir / "b.png").string();
  auto text = testing::run_tool(testing::archrun() + " imagine " + dir.string() + " -p 'A cat' --steps 2 --seed 1 -o " + a);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  auto ids = testing::run_tool(testing::archrun() + " imagine " + dir.string() +
                               " --ids 98,18,80,99,99,99,99,99,99,99,99,99,99,99,99,99"
                               " --negative-ids 98,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99 --steps 2 --seed 1 -o " + b);
  ASSERT_EQ(ids.exit_code, 0) << ids.out;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string pa((std::istreambuf_iterator<char>(fa)), {}), pb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_FALSE(pa.empty());
  EXPECT_EQ(pa, pb);
  // info names every component; bad sizes and paths are refused before any work.
  auto info = testing::run_tool(testing::archrun() + " info " + dir.string());
  EXPECT_EQ(info.exit_code, 0) << info.out;
  for (const char* f : {"CLIPTextStyle", "UNetDiffusion", "VAEStyle"}) EXPECT_NE(info.out.find(f), std::string::npos) << info.out;
  auto odd = testing::run_tool(testing::archrun() + " imagine " + dir.string() + " -p cat --height 31 -o " + a);
  EXPECT_NE(odd.out.find("multiple of 2"), std::string::npos) << odd.out;
  auto nowhere = testing::run_tool(testing::archrun() + " imagine " + dir.string() + " -p cat -o /nonexistent/x.png");
  EXPECT_NE(nowhere.out.find("/nonexistent/x.png: the folder /nonexistent does not exist"), std::string::npos) << nowhere.out;
  // A UNet whose cross-attention width is not the text encoder's.
  fs::remove(dir / "unet");
  fs::create_symlink(fs::path(testing::golden_dir("unet_sd15")), dir / "unet");
  auto misfit = testing::run_tool(testing::archrun() + " imagine " + dir.string() + " -p cat -o " + a);
  EXPECT_NE(misfit.exit_code, 0);
  EXPECT_NE(misfit.out.find("is not unet's cross_attention_dim"), std::string::npos) << misfit.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace arch

// A tiny cross-encoder to rerank with: the bert golden given a one-label
// classification head (random weights) and a whitespace word-level
// tokenizer.json over its vocabulary ([CLS] 2, [SEP] 3, words from 4),
// laid out as BERT lays out a pair.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/engine/runtime/golden_variant.h"

namespace arch::testing {

inline const std::vector<std::string>& cross_encoder_words() {
  static const std::vector<std::string> words = {"what", "did", "the", "cat", "sit", "on", "a", "mat", "dog", "ran",
                                                 "in", "park", "bird", "sang", "tree", "it", "was", "red", "blue", "sky"};
  return words;
}

// Weights of `shape` from `seed`: uniform in [-0.5, 0.5].
inline Tensor seeded(Dims shape, uint64_t seed) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.f32()[i] = float(double(x % 20001) / 10000.0 - 1.0) * 0.5f;
  }
  return t;
}

struct CrossEncoder {
  GoldenVariant variant{"bert", "cross_encoder", {{"id2label", {{"0", "LABEL_0"}}}},
                        {{"classifier.weight", seeded({1, 64}, 21)}, {"classifier.bias", seeded({1}, 22)}}};
  CrossEncoder() {
    nlohmann::json vocab = {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}};
    for (size_t i = 0; i < cross_encoder_words().size(); ++i) vocab[cross_encoder_words()[i]] = int(i) + 4;
    nlohmann::json tok = {
        {"version", "1.0"},
        {"added_tokens", nlohmann::json::array()},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
        {"post_processor", {{"type", "BertProcessing"}, {"cls", {"[CLS]", 2}}, {"sep", {"[SEP]", 3}}}},
        {"decoder", nullptr},
        {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "[UNK]"}}}};
    std::ofstream(variant.dir / "tokenizer.json") << tok.dump();
  }
  std::string path() const { return variant.path(); }
};

}  // namespace arch::testing

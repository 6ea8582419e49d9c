// Goldens dressed as users have them: the weights and config linked from
// ../shared into a scratch directory, beside the side files the golden does
// not store.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/shared_data.h"

namespace arch::testing {

// The VITS golden as a voice: a 40-character vocabulary (its vocab_size),
// the blank "_" at 0, VitsTokenizer's settings.
inline void write_golden_voice(const std::filesystem::path& dir) {
  const std::string g = golden_dir("vits");
  std::filesystem::create_symlink(g + "/config.json", dir / "config.json");
  std::filesystem::create_symlink(g + "/model.safetensors", dir / "model.safetensors");
  nlohmann::ordered_json vocab;
  const std::string chars = "_ abcdefghijklmnopqrstuvwxyz'-.,!?0123456789";
  for (size_t i = 0; i < 40; ++i) vocab[chars.substr(i, 1)] = i;
  std::ofstream(dir / "vocab.json") << vocab.dump();
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"tokenizer_class": "VitsTokenizer", "add_blank": true, "normalize": true, "phonemize": false})";
}

// The whisper golden beside a Whisper-style generation config:
// <|startoftranscript|> 1, <|endoftext|> 2, <|en|> 3, <|de|> 4,
// transcribe 5, translate 6, <|notimestamps|> 7, timestamps from 8.
// `extra`: more fields (", \"...\": ..."); `tokenizer`: GPT-2's byte-level
// BPE as its tokenizer (Whisper's, less its special tokens).
inline void write_golden_whisper(const std::filesystem::path& dir, const std::string& extra = "", bool tokenizer = false) {
  const std::string g = golden_dir("whisper");
  for (const char* f : {"config.json", "model.safetensors"}) std::filesystem::create_symlink(g + "/" + f, dir / f);
  if (tokenizer) std::filesystem::create_symlink(shared_dir() + "/tokenizers/gpt2/tokenizer.json", dir / "tokenizer.json");
  std::ofstream(dir / "generation_config.json")
      << R"({"decoder_start_token_id": 1, "eos_token_id": 2, "is_multilingual": true,
            "lang_to_id": {"<|en|>": 3, "<|de|>": 4}, "task_to_id": {"transcribe": 5, "translate": 6},
            "no_timestamps_token_id": 7, "max_initial_timestamp_index": 10, "suppress_tokens": [0],
            "begin_suppress_tokens": [9])"
      << extra << "}";
}

}  // namespace arch::testing

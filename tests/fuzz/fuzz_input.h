// What the fuzz targets share: the input as a file, for readers that take a
// path (libsndfile, the mapped safetensors reader). One file per process,
// rewritten for every input.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace arch::fuzz {

inline std::string input_file(const uint8_t* data, size_t size, const char* suffix) {
  // In memory where there is a tmpfs: a disk file's write and unlink cost
  // more than parsing most inputs.
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  static const std::string path = dir + "/archetype-fuzz-" + std::to_string(getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return path;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

// The input split at its first NUL: a text to use with the rest (a
// tokenizer's text to encode, a template's config).
inline std::pair<std::string, std::string> split_at_nul(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t at = all.find('\0');
  if (at == std::string::npos) return {std::string(), all};
  return {all.substr(0, at), all.substr(at + 1)};
}

}  // namespace arch::fuzz

// llama.cpp's GGUF file, versions 2 and 3: "GGUF", a version, counts of
// tensors and metadata keys (64-bit), the metadata (typed key/value pairs),
// the tensor infos (name, dims innermost first, ggml type, offset), then
// the data section, aligned to general.alignment (default 32).
//
//   ARCH_TRY(GgufFile f, read_gguf("model.Q4_K_M.gguf"));
//   const GgufValue* arch = f.find("general.architecture");
//
// Every count, length and offset is checked against the file before it is
// used, as the safetensors reader does; errors name the file and the key or
// tensor. Nothing is copied: tensor bytes stay in the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/mapped_file.h"

namespace arch {

enum class GgufType : uint32_t { U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };
// "UINT32", "ARRAY/STRING" (gguf-py's spelling), "type 13" for others.
std::string gguf_type_name(GgufType type, std::optional<GgufType> element = std::nullopt);

struct GgufValue {
  GgufType type = GgufType::U8;
  GgufType element = GgufType::U8;  // an array's
  nlohmann::json value;             // numbers, bools, strings; arrays as JSON arrays
};

// ggml's tensor types by number, and what a block of each holds.
struct GgmlType {
  uint32_t id;
  const char* name;     // "Q4_K"
  int64_t block;        // values per block
  uint64_t block_bytes;
};
const GgmlType* ggml_type(uint32_t id);  // null for a number ggml does not define
std::string ggml_type_name(uint32_t id);   // "Q4_K", or "type 99"

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;          // ggml type
  std::vector<int64_t> ne;    // innermost (contiguous) first
  uint64_t offset = 0;        // in the data section
  uint64_t bytes = 0;
  const std::byte* data = nullptr;  // in the mapping
};

struct GgufFile {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // of the data section, from the start of the file
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensorInfo> tensors;                      // in file order
  std::shared_ptr<const MappedFile> file;

  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* tensor(std::string_view name) const;
};

Result<GgufFile> read_gguf(const std::string& path);

// Whether the file at `path` starts with GGUF's magic.
bool is_gguf_file(const std::string& path);

}  // namespace arch

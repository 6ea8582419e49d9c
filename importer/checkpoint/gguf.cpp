#include "importer/checkpoint/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

#include "engine/core/limits.h"
#include "engine/core/utf8.h"

namespace arch {

static_assert(std::endian::native == std::endian::little, "GGUF files read here are little-endian");

namespace {

using json = nlohmann::json;

// ggml's numbering (ggml.h's enum ggml_type); the gaps are retired types.
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4},        {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},   {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},  {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},  {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},        {25, "I16", 1, 2},
    {26, "I32", 1, 4},       {27, "I64", 1, 8},        {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},      {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
};

// A cursor over the header; every read checks the bytes left first.
class Reader {
 public:
  Reader(const std::string& path, const std::byte* data, uint64_t size) : path_(path), data_(data), size_(size) {}

  const std::string& path() const { return path_; }
  uint64_t at() const { return at_; }
  uint64_t left() const { return size_ - at_; }

  template <class T>
  Result<T> read(const char* what, const std::string& where) {
    if (left() < sizeof(T)) return truncated(what, where, sizeof(T));
    T v;
    std::memcpy(&v, data_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }

  Result<std::string> string(const std::string& where) {
    ARCH_TRY(uint64_t n, read<uint64_t>("a string's length", where));
    if (n > left())
      return error(path_ + ": " + where + ": a string of " + std::to_string(n) + " bytes at offset " +
                   std::to_string(at_ - 8) + " runs past the end of the file (" + std::to_string(left()) +
                   " bytes left)");
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    // GGUF's strings are UTF-8; what is not would reach JSON (a synthesised
    // tokenizer.json, info --json) as bytes no JSON text may hold.
    if (!is_valid_utf8(s))
      return error(path_ + ": " + where + ": the string at offset " + std::to_string(at_) + " is not valid UTF-8");
    at_ += n;
    return s;
  }

  Error truncated(const char* what, const std::string& where, uint64_t need) const {
    return error(path_ + ": truncated: " + where + ": " + what + " needs " + std::to_string(need) +
                 " bytes at offset " + std::to_string(at_) + ", the file has " + std::to_string(left()) + " left");
  }

 private:
  const std::string& path_;
  const std::byte* data_;
  uint64_t size_;
  uint64_t at_ = 0;
};

uint64_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    default: return 0;  // strings and arrays have no fixed size
  }
}

bool known_type(uint32_t t) { return t <= uint32_t(GgufType::F64); }

Result<json> read_scalar(Reader& r, GgufType t, const std::string& where) {
  switch (t) {
    case GgufType::U8: { ARCH_TRY(auto v, r.read<uint8_t>("a UINT8", where)); return json(v); }
    case GgufType::I8: { ARCH_TRY(auto v, r.read<int8_t>("an INT8", where)); return json(v); }
    case GgufType::U16: { ARCH_TRY(auto v, r.read<uint16_t>("a UINT16", where)); return json(v); }
    case GgufType::I16: { ARCH_TRY(auto v, r.read<int16_t>("an INT16", where)); return json(v); }
    case GgufType::U32: { ARCH_TRY(auto v, r.read<uint32_t>("a UINT32", where)); return json(v); }
    case GgufType::I32: { ARCH_TRY(auto v, r.read<int32_t>("an INT32", where)); return json(v); }
    case GgufType::U64: { ARCH_TRY(auto v, r.read<uint64_t>("a UINT64", where)); return json(v); }
    case GgufType::I64: { ARCH_TRY(auto v, r.read<int64_t>("an INT64", where)); return json(v); }
    case GgufType::F32: { ARCH_TRY(auto v, r.read<float>("a FLOAT32", where)); return json(double(v)); }
    case GgufType::F64: { ARCH_TRY(auto v, r.read<double>("a FLOAT64", where)); return json(v); }
    case GgufType::BOOL: {
      ARCH_TRY(auto v, r.read<uint8_t>("a BOOL", where));
      if (v > 1) return error(r.path() + ": " + where + ": a BOOL holds " + std::to_string(v) + ", expected 0 or 1");
      return json(v == 1);
    }
    case GgufType::STRING: { ARCH_TRY(std::string s, r.string(where)); return json(std::move(s)); }
    default: return error(r.path() + ": " + where + ": no scalar of type " + gguf_type_name(t));
  }
}

Result<GgufValue> read_value(Reader& r, const std::string& path, const std::string& where) {
  ARCH_TRY(uint32_t type, r.read<uint32_t>("the value's type", where));
  if (!known_type(type))
    return error(path + ": " + where + ": unknown value type " + std::to_string(type) + " (GGUF defines 0-12)");
  GgufValue v;
  v.type = GgufType(type);
  if (v.type != GgufType::ARRAY) {
    ARCH_TRY(v.value, read_scalar(r, v.type, where));
    return v;
  }
  ARCH_TRY(uint32_t element, r.read<uint32_t>("an array's element type", where));
  if (!known_type(element))
    return error(path + ": " + where + ": unknown array element type " + std::to_string(element));
  if (GgufType(element) == GgufType::ARRAY)
    return error(path + ": " + where + ": an array of arrays, which no GGUF metadata key holds");
  v.element = GgufType(element);
  ARCH_TRY(uint64_t count, r.read<uint64_t>("an array's length", where));
  if (count > uint64_t(limit("gguf_items")))
    return over_limit("gguf_items", path + ": " + where, "the array's length", int64_t(std::min<uint64_t>(count, INT64_MAX)));
  // Each element takes at least its fixed size (a string at least its 8-byte length).
  const uint64_t least = v.element == GgufType::STRING ? 8 : scalar_bytes(v.element);
  if (count > r.left() / least)
    return error(path + ": " + where + ": an array of " + std::to_string(count) + " " + gguf_type_name(v.element) +
                 " runs past the end of the file (" + std::to_string(r.left()) + " bytes left)");
  v.value = json::array();
  auto& arr = v.value.get_ref<json::array_t&>();
  arr.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ARCH_TRY(json e, read_scalar(r, v.element, where + "[" + std::to_string(i) + "]"));
    arr.push_back(std::move(e));
  }
  return v;
}

Result<GgufTensorInfo> read_tensor_info(Reader& r, const std::string& path, uint64_t index) {
  const std::string where = "tensor info " + std::to_string(index);
  GgufTensorInfo t;
  ARCH_TRY(t.name, r.string(where + "'s name"));
  const std::string named = "tensor '" + t.name + "'";
  ARCH_TRY(uint32_t dims, r.read<uint32_t>("the number of dims", named));
  if (dims < 1 || dims > 4)
    return error(path + ": " + named + ": " + std::to_string(dims) + " dims, expected 1 to 4 (ggml's most)");
  for (uint32_t d = 0; d < dims; ++d) {
    ARCH_TRY(uint64_t n, r.read<uint64_t>("a dim", named));
    if (n > uint64_t(INT64_MAX)) return error(path + ": " + named + ": dim " + std::to_string(n) + " is too large");
    if (n == 0) return error(path + ": " + named + ": a dim of 0 (a tensor holds at least one value)");
    t.ne.push_back(int64_t(n));
  }
  ARCH_TRY(t.type, r.read<uint32_t>("the ggml type", named));
  ARCH_TRY(t.offset, r.read<uint64_t>("the data offset", named));
  const GgmlType* type = ggml_type(t.type);
  if (!type) return error(path + ": " + named + ": unknown ggml type " + std::to_string(t.type));
  if (t.ne[0] % type->block != 0)
    return error(path + ": " + named + ": rows of " + std::to_string(t.ne[0]) + " values do not split into " +
                 type->name + " blocks of " + std::to_string(type->block));
  // Bytes = rows x blocks per row x block bytes, without overflow (and the
  // element count within int64, as Tensor::numel computes it).
  uint64_t bytes = 0;
  int64_t count = t.ne[0];
  if (__builtin_mul_overflow(uint64_t(t.ne[0] / type->block), type->block_bytes, &bytes))
    return error(path + ": " + named + ": dims are too large to address");
  for (size_t d = 1; d < t.ne.size(); ++d)
    if (__builtin_mul_overflow(bytes, uint64_t(t.ne[d]), &bytes) || __builtin_mul_overflow(count, t.ne[d], &count))
      return error(path + ": " + named + ": dims are too large to address");
  t.bytes = bytes;
  return t;
}

// Tensors may not share bytes (a correct writer never makes them do so).
Status check_no_overlap(const std::string& path, std::vector<const GgufTensorInfo*> tensors) {
  std::sort(tensors.begin(), tensors.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  const GgufTensorInfo* reach = nullptr;
  for (const GgufTensorInfo* t : tensors) {
    if (t->bytes == 0) continue;
    if (reach && t->offset < reach->offset + reach->bytes)
      return error(path + ": tensors '" + reach->name + "' and '" + t->name + "' overlap (offsets " +
                   std::to_string(reach->offset) + "+" + std::to_string(reach->bytes) + " and " +
                   std::to_string(t->offset) + "+" + std::to_string(t->bytes) + ")");
    if (!reach || t->offset + t->bytes > reach->offset + reach->bytes) reach = t;
  }
  return {};
}

}  // namespace

std::string gguf_type_name(GgufType type, std::optional<GgufType> element) {
  static const char* kNames[] = {"UINT8", "INT8",   "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                 "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64", "FLOAT64"};
  const uint32_t i = uint32_t(type);
  std::string name = i < std::size(kNames) ? kNames[i] : "type " + std::to_string(i);
  if (type == GgufType::ARRAY && element) name += "/" + gguf_type_name(*element);
  return name;
}

const GgmlType* ggml_type(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string ggml_type_name(uint32_t id) {
  const GgmlType* t = ggml_type(id);
  return t ? t->name : "type " + std::to_string(id);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* GgufFile::tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

bool is_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

Result<GgufFile> read_gguf(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  GgufFile out;
  out.path = path;
  out.file = file;
  Reader r(path, file->data(), file->size());
  ARCH_TRY(uint32_t magic, r.read<uint32_t>("the magic", "header"));
  if (std::memcmp(&magic, "GGUF", 4) != 0) return error(path + ": not a GGUF file (it does not start with \"GGUF\")");
  ARCH_TRY(out.version, r.read<uint32_t>("the version", "header"));
  if (out.version == 1)
    return error(path + ": GGUF version 1 (32-bit counts, before August 2023) is not read; convert the model again "
                        "with a current llama.cpp");
  if (out.version != 2 && out.version != 3)
    return error(path + ": GGUF version " + std::to_string(out.version) + " (versions 2 and 3 are read)");
  ARCH_TRY(uint64_t tensor_count, r.read<uint64_t>("the tensor count", "header"));
  ARCH_TRY(uint64_t kv_count, r.read<uint64_t>("the metadata count", "header"));
  for (auto [n, what] : {std::pair{tensor_count, "the tensor count"}, std::pair{kv_count, "the metadata count"}})
    if (n > uint64_t(limit("gguf_items")))
      return over_limit("gguf_items", path, what, int64_t(std::min<uint64_t>(n, INT64_MAX)));

  std::set<std::string, std::less<>> keys;
  for (uint64_t i = 0; i < kv_count; ++i) {
    ARCH_TRY(std::string key, r.string("metadata key " + std::to_string(i)));
    if (!keys.insert(key).second) return error(path + ": metadata key '" + key + "' appears twice");
    ARCH_TRY(GgufValue value, read_value(r, path, "metadata '" + key + "'"));
    out.metadata.emplace_back(std::move(key), std::move(value));
    if (r.at() > uint64_t(limit("header_bytes")))
      return over_limit("header_bytes", path, "the metadata's bytes", int64_t(r.at()));
  }
  if (const GgufValue* a = out.find("general.alignment")) {
    const bool u32 = a->type == GgufType::U32;
    const uint64_t v = u32 ? a->value.get<uint64_t>() : 0;
    if (!u32 || v == 0 || (v & (v - 1)) != 0)
      return error(path + ": general.alignment is " + gguf_type_name(a->type) + " " + a->value.dump() +
                   ", expected a UINT32 power of two");
    out.alignment = v;
  }

  std::set<std::string, std::less<>> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    ARCH_TRY(GgufTensorInfo t, read_tensor_info(r, path, i));
    if (!names.insert(t.name).second) return error(path + ": tensor '" + t.name + "' appears twice");
    if (t.offset % out.alignment != 0)
      return error(path + ": tensor '" + t.name + "': offset " + std::to_string(t.offset) +
                   " is not a multiple of the alignment " + std::to_string(out.alignment));
    out.tensors.push_back(std::move(t));
  }
  if (r.at() > uint64_t(limit("header_bytes")))
    return over_limit("header_bytes", path, "the header's bytes", int64_t(r.at()));
  out.data_offset = (r.at() + out.alignment - 1) / out.alignment * out.alignment;
  const uint64_t size = file->size();
  if (out.data_offset > size && !out.tensors.empty())
    return error(path + ": truncated: the data section would start at " + std::to_string(out.data_offset) +
                 ", past the end of the file (" + std::to_string(size) + " bytes)");
  const uint64_t data_size = size > out.data_offset ? size - out.data_offset : 0;
  std::vector<const GgufTensorInfo*> all;
  for (GgufTensorInfo& t : out.tensors) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      return error(path + ": tensor '" + t.name + "' (" + ggml_type_name(t.type) + ", " + std::to_string(t.bytes) +
                   " bytes at data offset " + std::to_string(t.offset) + ") runs past the end of the file (the data "
                   "section holds " + std::to_string(data_size) + " bytes)");
    t.data = file->data() + out.data_offset + t.offset;
    all.push_back(&t);
  }
  ARCH_TRY_STATUS(check_no_overlap(path, all));
  return out;
}

}  // namespace arch

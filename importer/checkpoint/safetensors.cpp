#include "importer/checkpoint/safetensors.h"

#include "engine/core/quant.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>

#include "engine/core/json_text.h"
#include "engine/core/limits.h"
#include "engine/core/mapped_file.h"
#include "engine/core/output_file.h"

namespace arch {

// Tensors are handed out as views of the file's bytes, which are little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using json = nlohmann::json;

constexpr const char* kSupportedDTypes = "F32, F16, BF16, I32, I64, U8, I8, F64, BOOL, F8_E4M3, F8_E5M2";

// One header entry after its checks: where its bytes are and what they mean.
struct Entry {
  std::string name;
  DType dtype = DType::F32;
  Dims shape;
  uint64_t begin = 0, end = 0;  // relative to the data section
};

std::string offsets_str(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

Result<DType> parse_dtype(const std::string& where, const json& v) {
  if (!v.is_string())
    return error(where + ": field 'dtype' is " + json_type_name(v) + ", expected a string");
  auto name = v.get<std::string>();
  auto dtype = dtype_from_name(name);
  if (!dtype || is_block_quantized(*dtype))  // block types live in U8 tensors (importer/checkpoint/canonical.h)
    return error(where + ": unknown dtype '" + name + "' (supported: " + kSupportedDTypes + ")");
  return *dtype;
}

Result<Dims> parse_shape(const std::string& where, const json& v) {
  if (!v.is_array())
    return error(where + ": field 'shape' is " + json_type_name(v) + ", expected an array of integers");
  Dims shape;
  for (const json& d : v) {
    if (!d.is_number_integer())
      return error(where + ": shape " + v.dump() + " holds " + json_type_name(d) + " " + d.dump() +
                   ", expected integers");
    if (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t(INT64_MAX))
      return error(where + ": dimension " + d.dump() + " in shape " + v.dump() + " is too large");
    if (d.get<int64_t>() < 0)
      return error(where + ": negative dimension " + d.dump() + " in shape " + v.dump());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// Two non-negative integers, begin <= end.
Result<std::pair<uint64_t, uint64_t>> parse_offsets(const std::string& where, const json& v) {
  bool two_ints = v.is_array() && v.size() == 2 && v[0].is_number_unsigned() && v[1].is_number_unsigned();
  if (!two_ints || v[0].get<uint64_t>() > v[1].get<uint64_t>())
    return error(where + ": data_offsets " + v.dump() +
                 " must be two ascending non-negative integers [begin, end]");
  return std::pair{v[0].get<uint64_t>(), v[1].get<uint64_t>()};
}

// Bytes a dtype x shape needs, or nothing if that overflows 64 bits, or if
// the element count, multiplied dim by dim as numel() does, passes int64:
// [2^62, 2, 0] needs no bytes, but numel() would overflow on its way to 0.
std::optional<uint64_t> bytes_for(DType dtype, const Dims& shape) {
  uint64_t n = dtype_size(dtype);
  int64_t count = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, uint64_t(d), &n) || __builtin_mul_overflow(count, d, &count)) return std::nullopt;
  return n;
}

Result<Entry> parse_entry(const std::string& path, const std::string& name, const json& v,
                          uint64_t data_size) {
  std::string where = path + ": tensor '" + name + "'";
  if (!v.is_object())
    return error(where + ": entry is " + json_type_name(v) + ", expected an object with dtype, shape, data_offsets");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!v.contains(field)) return error(where + ": missing field '" + field + "'");

  Entry e;
  e.name = name;
  ARCH_TRY(e.dtype, parse_dtype(where, v["dtype"]));
  ARCH_TRY(e.shape, parse_shape(where, v["shape"]));
  ARCH_TRY(auto offsets, parse_offsets(where, v["data_offsets"]));
  std::tie(e.begin, e.end) = offsets;

  if (e.end > data_size)
    return error(where + ": data_offsets " + offsets_str(e.begin, e.end) +
                 " run past the end of the data section (" + std::to_string(data_size) + " bytes)");
  auto expected = bytes_for(e.dtype, e.shape);
  std::string what = std::string(dtype_name(e.dtype)) + " x " + dims_str(e.shape);
  if (!expected) return error(where + ": " + what + " is too large to address");
  if (*expected != e.end - e.begin)
    return error(where + ": size mismatch: " + what + " needs " + std::to_string(*expected) +
                 " bytes (expected), but data_offsets " + offsets_str(e.begin, e.end) + " hold " +
                 std::to_string(e.end - e.begin) + " bytes (actual)");
  return e;
}

// Two tensors may not share a byte: a write to one would change the other,
// and it is never what a correct writer produces.
Status check_no_overlap(const std::string& path, std::vector<Entry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  const Entry* reach = nullptr;  // the non-empty tensor reaching furthest so far
  for (const Entry& e : entries) {
    if (e.begin == e.end) continue;  // empty tensors own no bytes
    if (reach && e.begin < reach->end)
      return error(path + ": tensors '" + reach->name + "' and '" + e.name + "' overlap: data_offsets " +
                   offsets_str(reach->begin, reach->end) + " and " + offsets_str(e.begin, e.end));
    if (!reach || e.end > reach->end) reach = &e;
  }
  return {};
}

Result<std::map<std::string, std::string>> parse_metadata(const std::string& path, const json& v) {
  if (!v.is_object())
    return error(path + ": __metadata__ is " + json_type_name(v) + ", expected an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      return error(path + ": __metadata__ '" + key + "' is " + json_type_name(value) + ", expected a string");
    metadata[key] = value.get<std::string>();
  }
  return metadata;
}

// The view of one tensor's bytes; a misaligned one is copied so that kernels
// may load its elements with the alignment their type needs.
Tensor tensor_at(const std::shared_ptr<const MappedFile>& file, const std::byte* data_section, const Entry& e) {
  std::byte* p = const_cast<std::byte*>(data_section) + e.begin;
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(e.dtype) == 0) {
    Tensor t = Tensor::view(e.dtype, e.shape, p, file);
    t.mapped = true;
    return t;
  }
  Tensor copy = Tensor::zeros(e.dtype, e.shape);
  std::memcpy(copy.data, p, e.end - e.begin);
  return copy;
}

}  // namespace

Result<SafetensorsFile> read_safetensors(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  const uint64_t size = file->size();
  if (size < 8)
    return error(path + ": truncated: the file is " + std::to_string(size) +
                 " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file->data(), 8);
  if (header_len > size - 8)
    return error(path + ": header length " + std::to_string(header_len) +
                 " runs past the end of the file (only " + std::to_string(size - 8) +
                 " bytes follow the length field)");
  // A header as large as the file may be: a JSON of 100 MB is no checkpoint's.
  if (header_len > uint64_t(limit("header_bytes")))
    return over_limit("header_bytes", path, "the header's length in bytes", int64_t(header_len));
  const std::byte* data_section = file->data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  std::string_view header_text(reinterpret_cast<const char*>(file->data()) + 8, header_len);
  ARCH_TRY(json header, parse_json(header_text, path + " header"));
  if (!header.is_object())
    return error(path + ": header is " + json_type_name(header) + ", expected a JSON object");

  SafetensorsFile out;
  out.path = path;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      ARCH_TRY(out.metadata, parse_metadata(path, value));
      continue;
    }
    ARCH_TRY(Entry e, parse_entry(path, name, value, data_size));
    entries.push_back(std::move(e));
  }
  ARCH_TRY_STATUS(check_no_overlap(path, entries));
  for (const Entry& e : entries) out.tensors.emplace(e.name, tensor_at(file, data_section, e));
  return out;
}

namespace {

// Everything a header entry for `t` needs, or why it cannot be written.
Status check_writable(const std::string& path, const std::string& name, const Tensor& t,
                      std::set<std::string>& seen) {
  std::string where = path + ": tensor '" + name + "'";
  if (name == "__metadata__") return error(where + ": the name is reserved for metadata");
  if (!seen.insert(name).second) return error(where + ": given twice");
  for (int64_t d : t.shape)
    if (d < 0) return error(where + ": negative dimension in shape " + dims_str(t.shape));
  if (!bytes_for(t.dtype, t.shape)) return error(where + ": shape " + dims_str(t.shape) + " is too large");
  return {};
}

}  // namespace

Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  for (const auto& [name, t] : tensors)
    if (t.nbytes() > 0 && !t.data) return error(path + ": tensor '" + name + "': has no data");
  return write_safetensors(path, tensors, metadata, [&](size_t i) -> Result<Tensor> { return tensors[i].second; });
}

Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& layout,
                         const std::map<std::string, std::string>& metadata, const TensorSource& produce) {
  // ordered_json keeps the header in the caller's order: readable and stable.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, t] : layout) {
    ARCH_TRY_STATUS(check_writable(path, name, t, seen));
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = std::string(dtype_name(t.dtype));
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + t.nbytes()};
    header[name] = std::move(entry);
    offset += t.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    return error(path + ": cannot write: a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // data section starts 8-aligned

  // Whole or absent: a failure or a kill leaves no truncated file, and an
  // earlier output at the path stays until this one is complete.
  ARCH_TRY(OutputFile out, OutputFile::create(path));
  std::FILE* f = out.stream();
  auto fail = [&](const std::string& why) { return error(path + ": " + why); };
  uint64_t header_len = text.size();  // little-endian, as the static_assert above guarantees
  if (std::fwrite(&header_len, 8, 1, f) != 1 || std::fwrite(text.data(), 1, text.size(), f) != text.size())
    return fail(std::string("cannot write: ") + std::strerror(errno));
  for (size_t i = 0; i < layout.size(); ++i) {
    const size_t want = layout[i].second.nbytes();
    if (want == 0) continue;
    auto t = produce(i);
    if (!t.ok()) return fail(t.error().message);
    if (t->nbytes() != want || !t->data)
      return fail("tensor '" + layout[i].first + "': " + std::to_string(t->nbytes()) + " bytes made, the header says " +
                  std::to_string(want));
    if (std::fwrite(t->data, 1, want, f) != want) return fail(std::string("cannot write: ") + std::strerror(errno));
  }
  return out.commit();
}

}  // namespace arch

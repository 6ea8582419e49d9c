#include "importer/checkpoint/canonical.h"

#include "engine/core/finite.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "engine/core/quant.h"
#include "importer/checkpoint/config.h"
#include "importer/checkpoint/fp8_weights.h"
#include "importer/checkpoint/gguf_names.h"
#include "importer/checkpoint/gguf_side_files.h"
#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/checkpoint/safetensors.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

const char* const kSideFiles[] = {"config.json",           "tokenizer.json",          "tokenizer_config.json",
                                  "generation_config.json", "special_tokens_map.json", "chat_template.jinja"};

Result<std::string> read_file_text(const fs::path& p) {
  ARCH_TRY(auto file, MappedFile::open(p.string()));  // its errors name the path and the reason
  return std::string(file->text());
}

// The type a tensor is written as. Matrices of 32 rows or more whose rows
// split into whole blocks are quantized. Vectors (norms, biases) and
// narrower matrices (a MoE router over 8 experts, which picks discrete
// things from near-ties) keep F32: a rounding error in size, not in
// accuracy.
// A block-quantized input (a GGUF's) is converted as its values are: the
// type asked for is the type written.
DType target_type(const Tensor& t, ImportType type) {
  const bool is_float = t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16 ||
                        is_block_quantized(t.dtype);
  if (!is_float || type == ImportType::AsStored) return t.dtype;
  if (type == ImportType::F32) return DType::F32;
  const bool matrix = t.shape.size() == 2 && t.shape[0] >= 32;
  if (type == ImportType::BF16) return matrix ? DType::BF16 : DType::F32;
  if (!matrix) return DType::F32;
  const int64_t k = t.shape.back();
  if (type == ImportType::Q4 && quantizable(DType::Q4_0, k)) return DType::Q4_0;
  if (quantizable(DType::Q8_0, k)) return DType::Q8_0;
  return DType::BF16;
}

// The bytes written for `t` as `to`: quantized rows as U8 [rows, row bytes].
Tensor convert(const Tensor& t, DType to) {
  Tensor c = convert_to(t, to);
  if (is_block_quantized(to)) {
    c.shape = {t.numel() / t.shape.back(), int64_t(quant_row_bytes(to, t.shape.back()))};
    c.dtype = DType::U8;
  }
  return c;
}

// How a tensor of type `t` is stored in the file: block types as U8 rows.
DType stored_as(DType t) { return is_block_quantized(t) ? DType::U8 : t; }

// Widest element first, so every tensor's offset stays a multiple of its
// element size (the reader then maps rather than copies it).
int alignment_rank(DType t) { return -int(dtype_size(t)); }

}  // namespace

std::optional<ImportType> import_type_from_name(const std::string& name) {
  if (name == "stored") return ImportType::AsStored;
  if (name == "f32") return ImportType::F32;
  if (name == "bf16") return ImportType::BF16;
  if (name == "q8" || name == "q8_0") return ImportType::Q8;
  if (name == "q4" || name == "q4_0") return ImportType::Q4;
  return std::nullopt;
}

Result<ImportReport> import_checkpoint(const std::string& dir, const std::string& out, ImportType type,
                                       const ImportProgress& progress) {
  if (canonical_file_of(dir)) return error(dir + ": already a canonical model; import reads a checkpoint directory");
  // A canonical model is known by its name when read back: any other name
  // would be written, then refused by every command.
  if (!out.ends_with(".safetensors"))
    return error(out + ": a canonical model's file name ends in .safetensors (it is read back by that name): " + out +
                 ".safetensors, say");
  ARCH_TRY(Checkpoint ckpt, load_checkpoint(dir));
  std::map<std::string, std::string> meta;
  meta["format"] = "archetype";
  static const char* kTypeNames[] = {"stored", "f32", "bf16", "q8", "q4"};
  meta["archetype.dtype"] = kTypeNames[int(type)];
  meta["file:config.json"] = ckpt.config.dump();
  // A directory's own files, or what a GGUF's metadata stands for.
  for (const char* side : kSideFiles) {
    if (std::string(side) == "config.json") continue;
    ARCH_TRY(auto text, read_side_file(dir, side));
    if (text) meta[std::string("file:") + side] = std::move(*text);
  }
  ImportReport report;
  nlohmann::json quantized = nlohmann::json::object();
  // The layout first (types and sizes are known before converting), then
  // one tensor converted at a time as it is written: an import holds one
  // tensor, not the model.
  struct Planned {
    std::string name;
    const Tensor* source;
    DType to;
  };
  std::vector<Planned> plan;
  for (const auto& [name, t] : ckpt.tensors) plan.push_back({name, &t, target_type(t, type)});
  std::stable_sort(plan.begin(), plan.end(), [](const Planned& a, const Planned& b) {
    return alignment_rank(stored_as(a.to)) < alignment_rank(stored_as(b.to));
  });
  std::vector<std::pair<std::string, Tensor>> layout;
  for (const Planned& p : plan) {
    const Tensor& t = *p.source;
    Tensor header{stored_as(p.to), t.shape, nullptr, nullptr};
    if (is_block_quantized(p.to)) {
      header.shape = {t.numel() / t.shape.back(), int64_t(quant_row_bytes(p.to, t.shape.back()))};
      quantized[p.name] = {{"dtype", std::string(dtype_name(p.to))}, {"shape", t.shape}};
      ++report.quantized;
    } else if (p.to != t.dtype) {
      ++report.converted;
    }
    report.bytes_in += t.nbytes();
    report.bytes_out += header.nbytes();
    layout.emplace_back(p.name, std::move(header));
  }
  meta["archetype.quantized"] = quantized.dump();
  std::error_code ec;
  report.path = fs::is_directory(out, ec) ? (fs::path(out) / "model.safetensors").string() : out;
  const int64_t total = int64_t(plan.size());
  // A source tensor's mapped pages go back once it has been written, so
  // the import's resident memory stays about one tensor, not the model.
  size_t written = 0;
  ARCH_TRY_STATUS(write_safetensors(report.path, layout, meta, [&](size_t i) -> Result<Tensor> {
    for (; written < i; ++written) release_pages(*plan[written].source);
    if (const int64_t bad = non_finite_values(*plan[i].source))
      report.non_finite.push_back(plan[i].name + ": " + std::to_string(bad) + " of " +
                                  std::to_string(plan[i].source->numel()) + " values are NaN or Inf");
    Tensor c = convert(*plan[i].source, plan[i].to);
    if (progress) progress(int64_t(i) + 1, total, plan[i].name);
    return c;
  }));
  report.tensors = total;
  return report;
}

namespace {

using Metadata = std::map<std::string, std::string>;

// A safetensors file's metadata, parsed once per process and file version:
// loading a canonical model asks for it several times (is it canonical,
// then the tokenizer, the chat template and generation settings each ask
// for a side file), and it carries a tokenizer.json of megabytes.
Result<std::shared_ptr<const Metadata>> metadata_of(const std::string& path) {
  static std::mutex lock;
  static std::map<std::string, std::pair<std::string, std::shared_ptr<const Metadata>>> read;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto stamp = fs::last_write_time(path, ec);
  const std::string version = std::to_string(size) + "@" + std::to_string(stamp.time_since_epoch().count());
  std::lock_guard<std::mutex> guard(lock);
  auto it = read.find(path);
  if (it != read.end() && it->second.first == version) return it->second.second;
  ARCH_TRY(SafetensorsFile f, read_safetensors(path));
  auto meta = std::make_shared<const Metadata>(std::move(f.metadata));
  read[path] = {version, meta};
  return meta;
}

}  // namespace

bool is_canonical_file(const std::string& path) {
  auto meta = metadata_of(path);
  if (!meta.ok()) return false;
  auto format = (*meta)->find("format");
  return format != (*meta)->end() && format->second == "archetype";
}

Error not_canonical_reason(const std::string& path) {
  auto meta = metadata_of(path);
  if (!meta.ok()) return error(meta.error().message + " (it was to be read as a canonical model)");
  return error(path + ": a safetensors file that archrun import did not write (no 'format: archetype' in its "
                      "metadata): give the checkpoint's directory (config.json + *.safetensors), or import it first");
}

std::optional<std::string> canonical_file_of(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::path(path).extension() == ".safetensors" && is_canonical_file(path)
                                                ? std::optional<std::string>(path)
                                                : std::nullopt;
  fs::path inside = fs::path(path) / "model.safetensors";
  if (fs::is_directory(path, ec) && !fs::exists(fs::path(path) / "config.json", ec) && fs::is_regular_file(inside, ec) &&
      is_canonical_file(inside.string()))
    return inside.string();
  return std::nullopt;
}

Result<std::optional<std::string>> read_side_file(const std::string& model, const std::string& name) {
  if (is_gguf_path(model)) return gguf_side_file(model, name, default_gguf_maps_dir());
  std::error_code ec;
  if (fs::is_directory(model, ec) && fs::exists(fs::path(model) / name, ec)) {
    ARCH_TRY(std::string text, read_file_text(fs::path(model) / name));
    return std::optional<std::string>(std::move(text));
  }
  auto file = canonical_file_of(model);
  if (!file) return std::optional<std::string>();
  ARCH_TRY(auto meta, metadata_of(*file));
  auto it = meta->find("file:" + name);
  if (it == meta->end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

namespace {

// The type and shape an archetype.quantized entry gives a stored U8 tensor,
// or nothing where the entry is not {"dtype": "Q8_0" | "Q4_0", "shape":
// [rows >= 0, k in whole blocks]} whose rows x row bytes are the bytes stored
// (computed without overflow: a shape of [2^62, 64] over no bytes must not
// pass as 0 = 2^62 * 68 mod 2^64, nor leave numel() to overflow later).
std::optional<std::pair<DType, Dims>> quantized_layout(const nlohmann::json& q, const Tensor& stored) {
  if (!q.is_object() || stored.dtype != DType::U8) return std::nullopt;
  auto d = q.find("dtype");
  auto s = q.find("shape");
  if (d == q.end() || !d->is_string() || s == q.end() || !s->is_array() || s->size() != 2) return std::nullopt;
  auto dtype = dtype_from_name(d->get<std::string>());
  if (!dtype || !is_block_quantized(*dtype)) return std::nullopt;
  for (const auto& x : *s)
    if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT64_MAX))) return std::nullopt;
  const int64_t rows = (*s)[0].get<int64_t>(), k = (*s)[1].get<int64_t>();
  if (rows < 0 || !holds_rows_of(*dtype, k)) return std::nullopt;
  uint64_t bytes = 0;
  int64_t count = 0;
  if (__builtin_mul_overflow(uint64_t(rows), uint64_t(quant_row_bytes(*dtype, k)), &bytes) ||
      __builtin_mul_overflow(rows, k, &count) || bytes != stored.nbytes())
    return std::nullopt;
  return std::pair{*dtype, Dims{rows, k}};
}

}  // namespace

Result<Checkpoint> load_canonical(const std::string& file) {
  ARCH_TRY(SafetensorsFile f, read_safetensors(file));
  Checkpoint ckpt;
  ckpt.dir = file;
  auto config = f.metadata.find("file:config.json");
  if (config == f.metadata.end()) return error(file + ": a canonical model without 'file:config.json' in its metadata");
  ARCH_TRY(ckpt.config, parse_json(config->second, file + " (metadata file:config.json)"));
  if (!ckpt.config.is_object()) return error(file + ": metadata file:config.json is not a JSON object");
  normalize_config(ckpt.config);
  nlohmann::json quantized = nlohmann::json::object();
  if (auto q = f.metadata.find("archetype.quantized"); q != f.metadata.end()) {
    ARCH_TRY(quantized, parse_json(q->second, file + " (metadata archetype.quantized)"));
    if (!quantized.is_object())
      return error(file + ": metadata archetype.quantized is " + json_type_name(quantized) +
                   ", expected an object of tensor names");
  }
  for (auto& [name, t] : f.tensors) {
    auto q = quantized.find(name);
    if (q != quantized.end()) {
      auto layout = quantized_layout(*q, t);
      if (!layout)
        return error(file + ": tensor '" + name + "': its quantization entry " + q->dump() +
                     " does not fit the stored " + std::string(dtype_name(t.dtype)) + dims_str(t.shape));
      std::tie(t.dtype, t.shape) = *layout;
    }
    ckpt.tensor_file[name] = file;
    ckpt.tensors.emplace(name, std::move(t));
  }
  ARCH_TRY_STATUS(dequantize_fp8_weights(ckpt));  // import writes none, but a file may hold them
  return ckpt;
}

}  // namespace arch

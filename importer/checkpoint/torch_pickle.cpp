#include "importer/checkpoint/torch_pickle.h"

#include <algorithm>

#include <bit>
#include <cstring>
#include <functional>
#include <optional>

#include "engine/core/limits.h"
#include "engine/core/mapped_file.h"
#include "importer/checkpoint/pickle_machine.h"
#include "importer/checkpoint/zip_archive.h"

namespace arch {

// Tensors are handed out as views of the file's bytes, which are little-endian.
static_assert(std::endian::native == std::endian::little, "torch.save data is little-endian");

namespace {

using pickle::Kind;
using pickle::Pickle;
using pickle::Ref;
using Bytes = std::span<const std::byte>;

// torch/serialization.py's legacy magic number, 0x1950a86a20f9469cfc6c, as
// LONG1 stores it (little-endian), and its protocol version.
constexpr uint8_t kLegacyMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocol = 1001;

// Where a state dict sits inside a training checkpoint's dict, in order.
constexpr const char* kStateDictKeys[] = {"state_dict", "model_state_dict", "model", "module"};

// A storage's bytes by its key: an error (naming the file) if there are none.
using StorageSource = std::function<Result<Bytes>(const std::string& key)>;

bool is_str(const Pickle& p, Ref r, std::string_view s) { return p.at(r).kind == Kind::Str && p.str(r) == s; }

bool holds_tensor(const Pickle& p, Ref dict) {
  const auto& items = p.items(dict);
  for (size_t i = 1; i < items.size(); i += 2)
    if (p.at(items[i]).kind == Kind::Tensor) return true;
  return false;
}

Result<Ref> find_state_dict(const Pickle& p, const std::string& where) {
  if (p.at(p.root).kind != Kind::Dict)
    return error(where + ": the pickled object is a " + std::string(pickle::kind_name(p.at(p.root).kind)) +
                 ", expected a dict of tensors (a state dict)");
  if (holds_tensor(p, p.root)) return p.root;
  const auto& items = p.items(p.root);
  for (const char* key : kStateDictKeys) {
    // The key's last value, as Python's dict keeps it: one dict looked
    // through, however often a pickle repeats the key.
    std::optional<Ref> value;
    for (size_t i = 0; i + 1 < items.size(); i += 2)
      if (is_str(p, items[i], key)) value = items[i + 1];
    if (value && p.at(*value).kind == Kind::Dict && holds_tensor(p, *value)) return *value;
  }
  return error(where +
               ": the pickled dict holds no tensors, nor a dict of them under 'state_dict', "
               "'model_state_dict', 'model' or 'module'");
}

// Tensors made from their storages' bytes: views where the layout allows,
// copies (within a budget) where it does not.
class TensorMaker {
 public:
  TensorMaker(const std::string& path, std::shared_ptr<const MappedFile> file, StorageSource source)
      : path_(path), file_(std::move(file)), source_(std::move(source)), budget_(2 * file_->size()) {}

  Result<Tensor> make(const std::string& name, const Pickle& p, const pickle::TensorInfo& t) {
    const std::string where = path_ + ": tensor '" + name + "'";
    const pickle::StorageInfo& s = p.storage(t.storage);
    const uint64_t esize = dtype_size(s.dtype);
    const std::string storage =
        "its storage '" + s.key + "' (" + s.type_name + ", " + std::to_string(s.numel) + " elements)";
    uint64_t storage_bytes = 0;
    if (__builtin_mul_overflow(uint64_t(s.numel), esize, &storage_bytes))
      return error(where + ": " + storage + " is too large to address");
    auto found = source_(s.key);
    if (!found.ok()) return error(found.error().message + " (the storage of tensor '" + name + "')");
    const Bytes bytes = *found;
    if (bytes.size() < storage_bytes)
      return error(where + ": " + storage + " needs " + std::to_string(storage_bytes) + " bytes, its data holds " +
                   std::to_string(bytes.size()));

    // The element count, multiplied as numel() does, and the furthest
    // element the size and stride reach.
    int64_t count = 1, last = t.offset;
    bool overflow = false;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      int64_t reach = 0;
      overflow |= __builtin_mul_overflow(count, t.shape[d], &count);
      if (t.shape[d] > 0)
        overflow |=
            __builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &reach) || __builtin_add_overflow(last, reach, &last);
    }
    const std::string layout =
        "size " + dims_str(t.shape) + ", stride " + dims_str(t.stride) + " at offset " + std::to_string(t.offset);
    uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(uint64_t(count), esize, &nbytes))
      return error(where + ": " + layout + " is too large to address");
    if (count == 0) return Tensor::zeros(s.dtype, t.shape);
    if (last >= s.numel)
      return error(where + ": " + layout + " reaches element " + std::to_string(last) + ", past the end of " + storage);

    if (!contiguous(t)) {
      ARCH_TRY_STATUS(spend(where, nbytes, "a contiguous copy of its " + layout));
      return gather(s.dtype, t, bytes.data());
    }
    const std::byte* base = bytes.data();
    std::shared_ptr<const void> owner = file_;
    const bool aligned = reinterpret_cast<uintptr_t>(base) % esize == 0;
    if (!aligned) {
      auto it = copies_.find(s.key);
      if (it == copies_.end()) {
        ARCH_TRY_STATUS(spend(where, bytes.size(), "an aligned copy of " + storage));
        Tensor copy = Tensor::zeros(DType::U8, {int64_t(bytes.size())});
        std::memcpy(copy.data, bytes.data(), bytes.size());
        it = copies_.emplace(s.key, std::move(copy)).first;
      }
      base = static_cast<const std::byte*>(it->second.data);
      owner = it->second.owner;
    }
    Tensor out = Tensor::view(s.dtype, t.shape, const_cast<std::byte*>(base) + t.offset * esize, owner);
    out.mapped = aligned;
    return out;
  }

 private:
  // Row-major order, where a dimension of size 1 may have any stride.
  static bool contiguous(const pickle::TensorInfo& t) {
    int64_t expect = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      if (t.shape[d] != 1 && t.stride[d] != expect) return false;
      expect *= t.shape[d];
    }
    return true;
  }

  Status spend(const std::string& where, uint64_t bytes, const std::string& what) {
    if (bytes > budget_)
      return error(where + ": " + what + " needs " + std::to_string(bytes) + " bytes, more than the " +
                   std::to_string(budget_) + " left of the copies a file may make (twice its size)");
    budget_ -= bytes;
    return {};
  }

  // A strided tensor's elements in row-major order, a row (the last
  // dimension) at a time. The extent check above bounds every offset.
  static Tensor gather(DType dtype, const pickle::TensorInfo& t, const std::byte* base) {
    Tensor out = Tensor::zeros(dtype, t.shape);
    const size_t esize = dtype_size(dtype), nd = t.shape.size();
    const int64_t inner = t.shape[nd - 1], inner_stride = t.stride[nd - 1];
    auto* dst = static_cast<std::byte*>(out.data);
    Dims at(nd, 0);
    for (int64_t row = 0, rows = out.numel() / inner; row < rows; ++row) {
      int64_t src = t.offset;
      for (size_t d = 0; d + 1 < nd; ++d) src += at[d] * t.stride[d];
      if (inner_stride == 1) {
        std::memcpy(dst, base + src * esize, inner * esize);
      } else {
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * esize, base + (src + j * inner_stride) * esize, esize);
      }
      dst += inner * esize;
      for (size_t d = nd - 1; d-- > 0;) {  // the next row's index
        if (++at[d] < t.shape[d]) break;
        at[d] = 0;
      }
    }
    return out;
  }

  std::string path_;
  std::shared_ptr<const MappedFile> file_;
  StorageSource source_;
  uint64_t budget_;
  std::map<std::string, Tensor> copies_;  // aligned copies of misaligned storages, by key
};

Result<std::map<std::string, Tensor>> make_tensors(const Pickle& p, const std::string& where, TensorMaker& maker,
                                                   const std::string& path) {
  ARCH_TRY(Ref dict, find_state_dict(p, where));
  std::map<std::string, Tensor> tensors;
  const auto& items = p.items(dict);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (p.at(items[i + 1]).kind != Kind::Tensor) continue;  // "_metadata", a step count, ...
    if (p.at(items[i]).kind != Kind::Str)
      return error(where + ": a tensor's name is a " + std::string(pickle::kind_name(p.at(items[i]).kind)) +
                   ", expected a str");
    const std::string& name = p.str(items[i]);
    if (tensors.count(name)) return error(path + ": tensor '" + name + "' is given twice");
    ARCH_TRY(Tensor t, maker.make(name, p, p.tensor(items[i + 1])));
    tensors.emplace(name, std::move(t));
  }
  return tensors;
}

// ---- the zip layout

Result<std::string> pickle_entry(const ZipArchive& zip, const std::string& path) {
  std::vector<std::string> found;
  for (const std::string& name : zip.names()) {
    const size_t slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash) == "/data.pkl") found.push_back(name);
  }
  if (found.size() == 1) return found[0];
  if (found.empty()) return error(path + ": a zip archive without a <folder>/data.pkl entry: not a torch.save file");
  std::string list;
  for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
  return error(path + ": the zip archive holds " + std::to_string(found.size()) + " pickles (" + list +
               "); a torch.save file holds one");
}

Status check_byteorder(const ZipArchive& zip, const std::string& folder, const std::string& path) {
  const std::string name = folder + "byteorder";
  if (!zip.contains(name)) return {};  // torch before 2.1 wrote none: little-endian
  ARCH_TRY(Bytes bytes, zip.entry(name));
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text == "little") return {};
  if (text == "big")
    return error(path + ": " + name + " says 'big': the storages are big-endian, and only little-endian ones are read");
  return error(path + ": " + name + " says '" + std::string(text.substr(0, 40)) + "', expected 'little' or 'big'");
}

Result<TorchFile> read_zip(const std::string& path, const std::shared_ptr<const MappedFile>& file) {
  ARCH_TRY(ZipArchive zip, ZipArchive::parse(file->data(), file->size(), path));
  ARCH_TRY(std::string pkl_name, pickle_entry(zip, path));
  const std::string folder = pkl_name.substr(0, pkl_name.size() - std::string("data.pkl").size());
  ARCH_TRY_STATUS(check_byteorder(zip, folder, path));
  ARCH_TRY(Bytes pkl, zip.entry(pkl_name));
  // The pickle is the file's header, as a safetensors file's JSON is.
  if (pkl.size() > uint64_t(limit("header_bytes")))
    return over_limit("header_bytes", path + ": " + pkl_name, "the pickle's length in bytes", int64_t(pkl.size()));
  const std::string where = path + ": " + pkl_name;
  ARCH_TRY(Pickle p, pickle::unpickle(pkl, 0, where));

  TensorMaker maker(path, file, [&](const std::string& key) -> Result<Bytes> {
    const std::string name = folder + "data/" + key;
    if (!zip.contains(name)) return error(path + ": the zip archive has no entry '" + name + "'");
    return zip.entry(name);
  });
  TorchFile out;
  out.path = path;
  ARCH_TRY(out.tensors, make_tensors(p, where, maker, path));
  return out;
}

// ---- the legacy layout

Status check_legacy_header(std::span<const std::byte> all, const std::string& path, uint64_t& at) {
  ARCH_TRY(Pickle magic, pickle::unpickle(all, at, path + ": the magic number's pickle"));
  const bool is_magic =
      magic.at(magic.root).kind == Kind::BigInt &&
      magic.str(magic.root) == std::string_view(reinterpret_cast<const char*>(kLegacyMagic), sizeof kLegacyMagic);
  if (!is_magic) return error(path + ": not a torch.save file: its first pickle is not torch's magic number");
  ARCH_TRY(Pickle version, pickle::unpickle(all, magic.end, path + ": the protocol version's pickle"));
  if (version.at(version.root).kind != Kind::Int || version.at(version.root).number != kLegacyProtocol)
    return error(path + ": legacy torch.save protocol version is not " + std::to_string(kLegacyProtocol));
  ARCH_TRY(Pickle info, pickle::unpickle(all, version.end, path + ": the sys_info pickle"));
  if (info.at(info.root).kind == Kind::Dict) {
    const auto& items = info.items(info.root);
    for (size_t i = 0; i + 1 < items.size(); i += 2)
      if (is_str(info, items[i], "little_endian") && info.at(items[i + 1]).kind == Kind::Bool &&
          info.at(items[i + 1]).number == 0)
        return error(path +
                     ": written on a big-endian machine (sys_info little_endian = False); only "
                     "little-endian storages are read");
  }
  at = info.end;
  return {};
}

// After the object's pickle: the list of storage keys, then each storage as
// an int64 element count and its bytes.
Result<std::map<std::string, Bytes>> legacy_storages(std::span<const std::byte> all, const Pickle& object,
                                                     const std::string& path) {
  std::map<std::string, const pickle::StorageInfo*> named;  // by key, from the object's persistent ids
  for (const pickle::StorageInfo& s : object.storages) {
    auto [it, fresh] = named.emplace(s.key, &s);
    if (!fresh && (it->second->dtype != s.dtype || it->second->numel != s.numel))
      return error(path + ": storage '" + s.key + "' is named as " + it->second->type_name + " of " +
                   std::to_string(it->second->numel) + " elements and as " + s.type_name + " of " +
                   std::to_string(s.numel));
  }
  const std::string where = path + ": the storage keys' pickle";
  ARCH_TRY(Pickle keys, pickle::unpickle(all, object.end, where));
  if (keys.at(keys.root).kind != Kind::List)
    return error(where + ": a " + std::string(pickle::kind_name(keys.at(keys.root).kind)) + ", expected a list of str");
  std::map<std::string, Bytes> out;
  uint64_t at = keys.end;
  for (Ref k : keys.items(keys.root)) {
    if (keys.at(k).kind != Kind::Str)
      return error(where + ": a key is a " + std::string(pickle::kind_name(keys.at(k).kind)) + ", expected a str");
    const std::string& key = keys.str(k);
    auto it = named.find(key);
    if (it == named.end()) return error(path + ": storage '" + key + "' is listed, but no tensor names it");
    const pickle::StorageInfo& s = *it->second;
    const std::string here = path + ": storage '" + key + "' at byte " + std::to_string(at);
    if (all.size() - at < 8) return error(here + ": truncated: no room for its 8-byte element count");
    uint64_t count = 0;
    std::memcpy(&count, all.data() + at, 8);
    if (count != uint64_t(s.numel))
      return error(here + ": holds " + std::to_string(count) + " elements, its persistent id says " +
                   std::to_string(s.numel));
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(count, uint64_t(dtype_size(s.dtype)), &nbytes) || nbytes > all.size() - at - 8)
      return error(here + ": truncated: " + std::to_string(count) + " elements of " + s.type_name +
                   " run past the end of the file (" + std::to_string(all.size()) + " bytes)");
    if (!out.emplace(key, all.subspan(at + 8, nbytes)).second)
      return error(path + ": storage '" + key + "' is listed twice");
    at += 8 + nbytes;
  }
  return out;
}

Result<TorchFile> read_legacy(const std::string& path, const std::shared_ptr<const MappedFile>& file) {
  const std::span<const std::byte> all(file->data(), file->size());
  uint64_t at = 0;
  ARCH_TRY_STATUS(check_legacy_header(all, path, at));
  const std::string where = path + ": the object's pickle";
  // As the zip form's data.pkl: the object's pickle is the file's header.
  const uint64_t most = std::min<uint64_t>(all.size(), at + uint64_t(limit("header_bytes")));
  ARCH_TRY(Pickle p, pickle::unpickle(all.first(most), at, where));
  ARCH_TRY(auto storages, legacy_storages(all, p, path));
  TensorMaker maker(path, file, [&](const std::string& key) -> Result<Bytes> {
    auto it = storages.find(key);
    if (it == storages.end()) return error(path + ": storage '" + key + "' is not among the file's storages");
    return it->second;
  });
  TorchFile out;
  out.path = path;
  ARCH_TRY(out.tensors, make_tensors(p, where, maker, path));
  return out;
}

}  // namespace

Result<TorchFile> read_torch_file(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  const std::string_view head = file->text().substr(0, 4);
  if (head == std::string_view("PK\x03\x04", 4) || head == std::string_view("PK\x05\x06", 4))
    return read_zip(path, file);
  if (!head.empty() && uint8_t(head[0]) == 0x80) return read_legacy(path, file);
  return error(path + ": not a torch.save file: it starts with neither a zip header ('PK') nor a pickle (0x80)");
}

}  // namespace arch

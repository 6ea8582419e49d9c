// Hand-made torch.save files for the reader's tests: pickles written opcode
// by opcode, zip archives of stored entries (torch's 64-byte data
// alignment, optionally zip64), and the legacy layout.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace arch::testing {

inline std::string le_bytes(uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += char((v >> (8 * i)) & 0xff);
  return out;
}

// Pickle bytes, opcode by opcode, as protocol 2 writes them.
class PickleWriter {
 public:
  // Pieces appended one by one (a literal + std::string trips GCC 12's
  // -Wrestrict false positive).
  PickleWriter& raw(std::string_view a, std::string_view b = {}, std::string_view c = {}) {
    out_.append(a).append(b).append(c);
    return *this;
  }
  PickleWriter& proto(int v = 2) { return raw("\x80", std::string(1, char(v))); }
  PickleWriter& op(char c) { return raw(std::string(1, c)); }
  PickleWriter& mark() { return op('('); }
  PickleWriter& stop() { return op('.'); }
  PickleWriter& global(const std::string& module, const std::string& name) {
    return raw("c", module, "\n").raw(name, "\n");
  }
  PickleWriter& str(const std::string& s) { return raw("X", le_bytes(s.size(), 4), s); }
  PickleWriter& integer(int64_t v) {
    if (v >= 0 && v < 256) return raw("K", le_bytes(v, 1));
    if (v >= 0 && v < 65536) return raw("M", le_bytes(v, 2));
    if (v >= INT32_MIN && v <= INT32_MAX) return raw("J", le_bytes(uint64_t(v), 4));
    return raw("\x8a\x08", le_bytes(uint64_t(v), 8));
  }
  PickleWriter& ints(const std::vector<int64_t>& vs) {
    mark();
    for (int64_t v : vs) integer(v);
    return op('t');
  }
  PickleWriter& put(int id) { return raw("q", le_bytes(id, 1)); }
  PickleWriter& get(int id) { return raw("h", le_bytes(id, 1)); }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// One tensor of a state dict: its storage (type, key, elements) and layout.
struct TensorSpec {
  std::string name;
  std::string storage_type = "FloatStorage";
  std::string key;
  int64_t numel = 0;
  int64_t offset = 0;
  std::vector<int64_t> shape, stride;
};

// torch._utils._rebuild_tensor_v2(persistent storage, offset, size, stride,
// False, OrderedDict()); the legacy layout's persistent id has a sixth
// field, None.
inline void write_tensor(PickleWriter& w, const TensorSpec& t, bool legacy = false) {
  w.global("torch._utils", "_rebuild_tensor_v2").mark();
  w.mark().str("storage").global("torch", t.storage_type).str(t.key).str("cpu").integer(t.numel);
  if (legacy) w.op('N');
  w.op('t').op('Q');
  w.integer(t.offset).ints(t.shape).ints(t.stride).op('\x89');
  w.global("collections", "OrderedDict").op(')').op('R');
  w.op('t').op('R');
}

// {name: tensor, ...} as transformers' save_pretrained pickles it.
inline std::string state_dict_pickle(const std::vector<TensorSpec>& tensors, bool legacy = false) {
  PickleWriter w;
  w.proto().op('}').mark();
  for (const TensorSpec& t : tensors) {
    w.str(t.name);
    write_tensor(w, t, legacy);
  }
  return w.op('u').stop().bytes();
}

// A zip of stored entries, each entry's data at a multiple of 64 bytes (an
// extra field pads the local header, as torch's writer does).
struct ZipEntry {
  std::string name, data;
  uint16_t method = 0;
};

inline std::string zip_bytes(const std::vector<ZipEntry>& entries, bool zip64 = false) {
  std::string out, central;
  for (const ZipEntry& e : entries) {
    const uint64_t offset = out.size();
    const uint64_t unpadded = offset + 30 + e.name.size() + 4;
    const uint64_t pad = (64 - unpadded % 64) % 64;
    out += le_bytes(0x04034b50, 4) + le_bytes(zip64 ? 45 : 20, 2) + le_bytes(0, 2) + le_bytes(e.method, 2) +
           le_bytes(0, 4) + le_bytes(0, 4) + le_bytes(e.data.size(), 4) + le_bytes(e.data.size(), 4) +
           le_bytes(e.name.size(), 2) + le_bytes(4 + pad, 2) + e.name + "FB" + le_bytes(pad, 2) +
           std::string(pad, '\0') + e.data;
    // zip64: both sizes and the offset saturated, their 64-bit values in the extra field.
    const std::string extra = zip64 ? le_bytes(1, 2) + le_bytes(24, 2) + le_bytes(e.data.size(), 8) +
                                          le_bytes(e.data.size(), 8) + le_bytes(offset, 8)
                                    : "";
    const uint64_t sat = 0xffffffff;
    central += le_bytes(0x02014b50, 4) + le_bytes(20, 2) + le_bytes(zip64 ? 45 : 20, 2) + le_bytes(0, 2) +
               le_bytes(e.method, 2) + le_bytes(0, 4) + le_bytes(0, 4) + le_bytes(zip64 ? sat : e.data.size(), 4) +
               le_bytes(zip64 ? sat : e.data.size(), 4) + le_bytes(e.name.size(), 2) + le_bytes(extra.size(), 2) +
               le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 4) + le_bytes(zip64 ? sat : offset, 4) +
               e.name + extra;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (zip64) {
    const uint64_t end64 = out.size();
    out += le_bytes(0x06064b50, 4) + le_bytes(44, 8) + le_bytes(45, 2) + le_bytes(45, 2) + le_bytes(0, 4) +
           le_bytes(0, 4) + le_bytes(entries.size(), 8) + le_bytes(entries.size(), 8) + le_bytes(central.size(), 8) +
           le_bytes(cd_offset, 8);
    out += le_bytes(0x07064b50, 4) + le_bytes(0, 4) + le_bytes(end64, 8) + le_bytes(1, 4);
    return out + le_bytes(0x06054b50, 4) + le_bytes(0, 4) + le_bytes(0xffff, 2) + le_bytes(0xffff, 2) +
           le_bytes(0xffffffff, 4) + le_bytes(0xffffffff, 4) + le_bytes(0, 2);
  }
  return out + le_bytes(0x06054b50, 4) + le_bytes(0, 4) + le_bytes(entries.size(), 2) + le_bytes(entries.size(), 2) +
         le_bytes(central.size(), 4) + le_bytes(cd_offset, 4) + le_bytes(0, 2);
}

// The bytes of a few floats, as a storage holds them.
inline std::string f32_bytes(const std::vector<float>& vs) {
  std::string out(vs.size() * 4, '\0');
  std::memcpy(out.data(), vs.data(), out.size());
  return out;
}

// A zip-layout torch.save file: archive/data.pkl and archive/data/<key>.
inline std::string torch_zip(const std::string& pickle,
                             const std::vector<std::pair<std::string, std::string>>& storages,
                             const std::string& folder = "archive") {
  std::vector<ZipEntry> entries{{folder + "/data.pkl", pickle}};
  for (const auto& [key, data] : storages) entries.push_back({folder + "/data/" + key, data});
  entries.push_back({folder + "/version", "3\n"});
  return zip_bytes(entries);
}

// A legacy storage: its key, bytes and element size.
struct LegacyStorage {
  std::string key, data;
  int element_size = 4;
};

// A legacy-layout torch.save file: the magic number, protocol 1001,
// sys_info, the object, the storage keys, then each storage's element count
// and bytes.
inline std::string torch_legacy(const std::string& object_pickle, const std::vector<LegacyStorage>& storages) {
  std::string out = "\x80\x02\x8a\x0a";
  out.append("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 11).append("\x80\x02M").append(le_bytes(1001, 2)).append(".");
  PickleWriter info;
  info.proto().op('}').mark().str("protocol_version").integer(1001).str("little_endian").op('\x88');
  out += info.op('u').stop().bytes() + object_pickle;
  PickleWriter keys;
  keys.proto().op(']').mark();
  for (const LegacyStorage& s : storages) keys.str(s.key);
  out += keys.op('e').stop().bytes();
  for (const LegacyStorage& s : storages) out += le_bytes(s.data.size() / s.element_size, 8) + s.data;
  return out;
}

}  // namespace arch::testing

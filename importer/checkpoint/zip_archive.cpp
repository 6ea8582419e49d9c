#include "importer/checkpoint/zip_archive.h"

#include <cstring>

namespace arch {

namespace {

// Record signatures and sizes, as the zip format (PKWARE's APPNOTE) gives them.
constexpr uint32_t kEndSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EndSig = 0x06064b50,
                   kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr uint64_t kEndSize = 22, kZip64LocatorSize = 20, kZip64EndSize = 56, kCentralSize = 46, kLocalSize = 30;
constexpr uint64_t kMaxComment = 65535;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kSaturated32 = 0xffffffff;

// Little-endian fields; callers have checked the bytes are there.
uint16_t u16(const std::byte* p) { return uint16_t(uint16_t(p[0]) | uint16_t(p[1]) << 8); }
uint32_t u32(const std::byte* p) { return uint32_t(u16(p)) | uint32_t(u16(p + 2)) << 16; }
uint64_t u64(const std::byte* p) { return uint64_t(u32(p)) | uint64_t(u32(p + 4)) << 32; }

// [at, at + n) lies inside [0, size), without overflow.
bool fits(uint64_t at, uint64_t n, uint64_t size) { return at <= size && n <= size - at; }

std::string method_name(uint16_t method) {
  switch (method) {
    case 8: return "deflate";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    case 99: return "AES-encrypted";
    default: return "method " + std::to_string(method);
  }
}

// Where the central directory lies and how many entries it holds.
struct Directory {
  uint64_t entries = 0, size = 0, offset = 0;
};

// The end record is the last 22 bytes, unless a comment (at most 65535
// bytes) follows it: then it is the last signature whose comment fits.
Result<uint64_t> find_end_record(const std::byte* data, uint64_t size, const std::string& path) {
  if (size < kEndSize)
    return error(path + ": not a zip archive: " + std::to_string(size) +
                 " bytes, too short for the end-of-central-directory record");
  const uint64_t lowest = size - kEndSize > kMaxComment ? size - kEndSize - kMaxComment : 0;
  for (uint64_t at = size - kEndSize;; --at) {
    if (u32(data + at) == kEndSig && u16(data + at + 20) <= size - at - kEndSize) return at;
    if (at == lowest) break;
  }
  return error(path + ": not a zip archive: no end-of-central-directory record in its last " +
               std::to_string(size - lowest) + " bytes");
}

// zip64's end record, which a locator just before the plain one points to,
// holds the figures the plain one saturates (0xffff entries, 0xffffffff bytes).
Result<Directory> read_zip64_end(const std::byte* data, uint64_t size, uint64_t locator, const std::string& path) {
  const std::byte* loc = data + locator;
  if (u32(loc + 4) != 0 || u32(loc + 16) > 1)
    return error(path + ": the zip archive spans several disks (" + std::to_string(u32(loc + 16)) +
                 "); only single-file archives are read");
  const uint64_t at = u64(loc + 8);
  if (!fits(at, kZip64EndSize, locator) || u32(data + at) != kZip64EndSig)
    return error(path + ": the zip64 locator points to byte " + std::to_string(at) +
                 ", where no zip64 end-of-central-directory record lies");
  const std::byte* end = data + at;
  if (u32(end + 16) != 0 || u32(end + 20) != 0)
    return error(path + ": the zip archive spans several disks; only single-file archives are read");
  return Directory{u64(end + 32), u64(end + 40), u64(end + 48)};
}

Result<Directory> read_end(const std::byte* data, uint64_t size, const std::string& path) {
  ARCH_TRY(uint64_t at, find_end_record(data, size, path));
  if (at >= kZip64LocatorSize && u32(data + at - kZip64LocatorSize) == kZip64LocatorSig)
    return read_zip64_end(data, size, at - kZip64LocatorSize, path);
  const std::byte* end = data + at;
  if (u16(end + 4) != 0 || u16(end + 6) != 0)
    return error(path + ": the zip archive spans several disks; only single-file archives are read");
  return Directory{u16(end + 10), u32(end + 12), u32(end + 16)};
}

// The zip64 extra field carries, in this order, those of the sizes and the
// offset that the fixed fields saturate.
Status read_zip64_extra(const std::byte* extra, uint64_t length, uint64_t& size, uint64_t& compressed, uint64_t& offset,
                        const std::string& where) {
  for (uint64_t at = 0; at + 4 <= length;) {
    const uint16_t id = u16(extra + at), n = u16(extra + at + 2);
    if (n > length - at - 4) return error(where + ": an extra field runs past the entry's extra data");
    if (id == kZip64ExtraId) {
      uint64_t used = 0;
      for (uint64_t* field : {&size, &compressed, &offset}) {
        if (*field != kSaturated32) continue;
        if (used + 8 > n) return error(where + ": its zip64 extra field is too short for its 64-bit sizes");
        *field = u64(extra + at + 4 + used);
        used += 8;
      }
    }
    at += 4 + n;
  }
  return {};
}

}  // namespace

Result<ZipArchive> ZipArchive::parse(const std::byte* data, uint64_t size, const std::string& path) {
  ARCH_TRY(Directory dir, read_end(data, size, path));
  if (!fits(dir.offset, dir.size, size))
    return error(path + ": the zip central directory (" + std::to_string(dir.size) + " bytes at byte " +
                 std::to_string(dir.offset) + ") runs past the end of the file (" + std::to_string(size) + " bytes)");
  // Each entry takes at least the fixed record: a count beyond that is a lie
  // told before anything is allocated for it.
  if (dir.entries > dir.size / kCentralSize)
    return error(path + ": the zip end record claims " + std::to_string(dir.entries) +
                 " entries, more than its central directory of " + std::to_string(dir.size) + " bytes can hold");

  ZipArchive zip(data, size, path);
  const std::byte* central = data + dir.offset;
  uint64_t at = 0;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    const std::string where = path + ": zip central directory entry " + std::to_string(i);
    if (!fits(at, kCentralSize, dir.size) || u32(central + at) != kCentralSig)
      return error(where + ": no entry record at byte " + std::to_string(dir.offset + at));
    const std::byte* rec = central + at;
    const uint64_t name_len = u16(rec + 28), extra_len = u16(rec + 30), comment_len = u16(rec + 32);
    if (!fits(at + kCentralSize, name_len + extra_len + comment_len, dir.size))
      return error(where + ": its name and extra fields run past the central directory");
    std::string name(reinterpret_cast<const char*>(rec + kCentralSize), name_len);
    Entry e;
    e.flags = u16(rec + 8);
    e.method = u16(rec + 10);
    e.compressed = u32(rec + 20);
    e.size = u32(rec + 24);
    e.local_header = u32(rec + 42);
    ARCH_TRY_STATUS(read_zip64_extra(rec + kCentralSize + name_len, extra_len, e.size, e.compressed, e.local_header,
                                     where + " ('" + name + "')"));
    // Two entries of one name: readers would disagree on which is meant.
    if (!zip.entries_.emplace(name, e).second)
      return error(path + ": the zip archive holds entry '" + name + "' twice");
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  return zip;
}

std::vector<std::string> ZipArchive::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

Result<std::span<const std::byte>> ZipArchive::entry(const std::string& name) const {
  const std::string where = path_ + ": zip entry '" + name + "'";
  auto it = entries_.find(name);
  if (it == entries_.end()) return error(path_ + ": the zip archive has no entry '" + name + "'");
  const Entry& e = it->second;
  if (e.flags & 1) return error(where + " is encrypted");
  if (e.method != 0)
    return error(where + " is compressed (" + method_name(e.method) +
                 "); torch.save stores its entries uncompressed, and only those are read");
  if (e.compressed != e.size)
    return error(where + " is stored uncompressed, yet its sizes differ (" + std::to_string(e.compressed) + " and " +
                 std::to_string(e.size) + " bytes)");
  if (!fits(e.local_header, kLocalSize, size_) || u32(data_ + e.local_header) != kLocalSig)
    return error(where + ": no local header at byte " + std::to_string(e.local_header));
  const std::byte* local = data_ + e.local_header;
  const uint64_t name_len = u16(local + 26), extra_len = u16(local + 28);
  const uint64_t start = e.local_header + kLocalSize + name_len + extra_len;
  if (!fits(e.local_header + kLocalSize, name_len, size_) ||
      std::string_view(reinterpret_cast<const char*>(local + kLocalSize), name_len) != name)
    return error(where + ": its local header at byte " + std::to_string(e.local_header) + " names another entry");
  if (!fits(start, e.size, size_))
    return error(where + ": its " + std::to_string(e.size) + " bytes at byte " + std::to_string(start) +
                 " run past the end of the file (" + std::to_string(size_) + " bytes)");
  return std::span<const std::byte>(data_ + start, e.size);
}

}  // namespace arch

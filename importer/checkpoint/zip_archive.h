// A zip archive's directory, read in place: torch.save's default format is a
// zip of uncompressed (stored) entries, so an entry's bytes are a span of
// the mapped file. The end-of-central-directory record (zip64's too, for
// archives past 4 GB or 65535 entries) gives the central directory; each
// entry's local header, read when the entry is asked for, gives where its
// data starts (torch pads it to 64 bytes with an extra field).
//
//   ARCH_TRY(ZipArchive zip, ZipArchive::parse(file->data(), file->size(), path));
//   ARCH_TRY(auto bytes, zip.entry("archive/data.pkl"));
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace arch {

class ZipArchive {
 public:
  // Reads the end records and the central directory of data[0, size);
  // `path` names the archive in errors. The bytes must outlive the archive.
  static Result<ZipArchive> parse(const std::byte* data, uint64_t size, const std::string& path);

  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // The bytes of a stored entry; an error names a missing, compressed,
  // encrypted or out-of-bounds one.
  Result<std::span<const std::byte>> entry(const std::string& name) const;

 private:
  struct Entry {
    uint16_t flags = 0, method = 0;
    uint64_t compressed = 0, size = 0, local_header = 0;
  };
  ZipArchive(const std::byte* data, uint64_t size, std::string path)
      : data_(data), size_(size), path_(std::move(path)) {}

  const std::byte* data_;
  uint64_t size_;
  std::string path_;
  std::map<std::string, Entry> entries_;
};

}  // namespace arch

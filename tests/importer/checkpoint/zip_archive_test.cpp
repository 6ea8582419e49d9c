#include "importer/checkpoint/zip_archive.h"

#include <gtest/gtest.h>

#include "tests/importer/checkpoint/torch_files.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::le_bytes;
using testing::ZipEntry;

Result<ZipArchive> parse(const std::string& bytes) {
  return ZipArchive::parse(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(), "z.zip");
}

std::string text(std::span<const std::byte> s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

const std::vector<ZipEntry> kEntries = {{"a/data.pkl", "pickle"}, {"a/data/0", std::string(100, 'x')}, {"a/e", ""}};

TEST(TorchZipArchive, StoredEntriesAreSpansOfTheFileAtTheirPaddedOffsets) {
  for (bool zip64 : {false, true}) {
    const std::string bytes = testing::zip_bytes(kEntries, zip64);
    auto zip = parse(bytes);
    ASSERT_TRUE(zip.ok()) << zip.error().message;
    EXPECT_EQ(zip->names(), (std::vector<std::string>{"a/data.pkl", "a/data/0", "a/e"}));
    for (const ZipEntry& e : kEntries) {
      auto s = zip->entry(e.name);
      ASSERT_TRUE(s.ok()) << s.error().message;
      EXPECT_EQ(text(*s), e.data);
      EXPECT_EQ((reinterpret_cast<const char*>(s->data()) - bytes.data()) % 64, 0) << e.name;
    }
    EXPECT_CONTAINS(zip->entry("a/none").error().message, "z.zip: the zip archive has no entry 'a/none'");
  }
}

TEST(TorchZipArchive, ACommentAfterTheEndRecordIsAllowed) {
  std::string bytes = testing::zip_bytes(kEntries);
  bytes[bytes.size() - 2] = 5;  // the comment's length
  bytes += "hello";
  auto zip = parse(bytes);
  ASSERT_TRUE(zip.ok()) << zip.error().message;
  EXPECT_EQ(text(zip->entry("a/data.pkl").value()), "pickle");
}

TEST(TorchZipArchive, FaultsAreNamed) {
  EXPECT_CONTAINS(parse("PK").error().message, "z.zip: not a zip archive: 2 bytes, too short");
  EXPECT_CONTAINS(parse(std::string(100, 'x')).error().message,
                  "no end-of-central-directory record in its last 100 bytes");

  const std::string good = testing::zip_bytes(kEntries);
  // The central directory's records: the first's local header offset made
  // to point into the second entry's data, and so on.
  const size_t central = good.find("PK\x01\x02"), second = central + 46 + 10;
  std::string moved = good;
  moved[central + 42] = '\x80';
  EXPECT_CONTAINS(parse(moved)->entry("a/data.pkl").error().message,
                  "z.zip: zip entry 'a/data.pkl': no local header at byte 128");
  std::string encrypted = good;
  encrypted[central + 8] = 1;
  EXPECT_CONTAINS(parse(encrypted)->entry("a/data.pkl").error().message, "zip entry 'a/data.pkl' is encrypted");
  std::string sizes = good;
  sizes[central + 20] = 7;  // the compressed size
  EXPECT_CONTAINS(parse(sizes)->entry("a/data.pkl").error().message, "its sizes differ (7 and 6 bytes)");
  std::string past = good;
  past[second + 23] = past[second + 27] = '\x7f';  // the second record's sizes, high bytes
  EXPECT_CONTAINS(parse(past)->entry("a/data/0").error().message, "run past the end of the file");
  std::string name = good;
  name[central + 46] = 'b';  // the central name: its local header names another
  EXPECT_CONTAINS(parse(name)->entry("b/data.pkl").error().message, "names another entry");
  std::string record = good;
  record[second] = 'X';  // the second record's signature
  EXPECT_CONTAINS(parse(record).error().message, "z.zip: zip central directory entry 1: no entry record at byte");
  std::string disks = good;
  disks[disks.size() - 18] = 1;  // the end record's disk number
  EXPECT_CONTAINS(parse(disks).error().message, "spans several disks");

  // zip64: a locator pointing nowhere, a short extra field.
  std::string z64 = testing::zip_bytes(kEntries, true);
  const size_t locator = z64.find("PK\x06\x07");
  std::string nowhere = z64;
  nowhere[locator + 8] = '\x01';
  EXPECT_CONTAINS(parse(nowhere).error().message, "where no zip64 end-of-central-directory record lies");
  std::string short_extra = z64;
  const size_t c64 = short_extra.find("PK\x01\x02");
  short_extra[c64 + 46 + 10 + 2] = 8;  // the zip64 field's length: one of its three values
  EXPECT_CONTAINS(parse(short_extra).error().message, "its zip64 extra field is too short");
}

}  // namespace
}  // namespace arch

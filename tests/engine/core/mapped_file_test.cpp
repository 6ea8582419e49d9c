#include "engine/core/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

TEST(MappedFile, MapsTheWholeFile) {
  TempDir dir;
  testing::write_file(dir / "a.bin", "hello, mapping");
  auto m = MappedFile::open(dir / "a.bin");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->size(), 14u);
  EXPECT_EQ((*m)->text(), "hello, mapping");
  EXPECT_EQ((*m)->path(), dir / "a.bin");
}

// A checkpoint larger than memory and swap maps (read-only pages, which the
// commit limit does not count): a sparse file of four times the memory.
TEST(MappedFile, MapsAFileLargerThanMemory) {
  TempDir dir;
  const std::string path = dir / "huge.bin";
  const int64_t memory = int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
  const int64_t size = 4 * memory;
  {
    std::ofstream(path) << "x";
  }
  if (::truncate(path.c_str(), off_t(size)) != 0) GTEST_SKIP() << "no sparse file of " << size << " bytes here";
  auto m = MappedFile::open(path);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->size(), size_t(size));
  EXPECT_EQ(char((*m)->data()[0]), 'x');
  EXPECT_EQ(int((*m)->data()[size - 1]), 0);  // a hole reads as zeros
}

TEST(MappedFile, EmptyFileMapsToNothing) {
  TempDir dir;
  testing::write_file(dir / "empty", "");
  auto m = MappedFile::open(dir / "empty");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->size(), 0u);
  EXPECT_EQ((*m)->text(), "");
}

TEST(MappedFile, MissingFileNamesPathAndReason) {
  TempDir dir;
  auto m = MappedFile::open(dir / "missing.bin");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, dir / "missing.bin" + ": cannot open: No such file or directory");
}

TEST(MappedFile, DirectoryIsNotARegularFile) {
  TempDir dir;
  auto m = MappedFile::open(dir.path());
  ASSERT_FALSE(m.ok());
  EXPECT_CONTAINS(m.error().message, "not a regular file (it is a directory)");
}

TEST(MappedFile, FifoIsRefusedWithoutHanging) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  auto m = MappedFile::open(dir / "pipe");
  ASSERT_FALSE(m.ok());
  EXPECT_CONTAINS(m.error().message, "not a regular file");
}

TEST(MappedFile, MappingOutlivesItsFirstOwner) {
  TempDir dir;
  testing::write_file(dir / "b.bin", "abc");
  std::shared_ptr<const void> keep;
  const std::byte* data = nullptr;
  {
    auto m = MappedFile::open(dir / "b.bin");
    ASSERT_TRUE(m.ok());
    data = (*m)->data();
    keep = *m;  // as Tensor::owner holds it
  }
  EXPECT_EQ(char(data[2]), 'c');
}

}  // namespace
}  // namespace arch

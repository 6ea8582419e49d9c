// An output is whole or absent: nothing reaches the target's name before
// commit(), an earlier file there survives a failure or a kill, and no
// partial file is left beside it.
#include "engine/core/output_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

int files_in(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file() || e.is_symlink();
  return n;
}

TEST(OutputFile, NamedOnlyAtCommit) {
  TempDir dir;
  auto out = OutputFile::create(dir / "a.bin");
  ASSERT_TRUE(out.ok()) << out.error().message;
  std::fputs("hello", out->stream());
  std::fflush(out->stream());
  EXPECT_FALSE(std::filesystem::exists(dir / "a.bin"));
  ASSERT_TRUE(out->commit().ok());
  EXPECT_EQ(testing::read_file(dir / "a.bin"), "hello");
  EXPECT_EQ(files_in(dir.path()), 1);
}

TEST(OutputFile, DroppedWithoutCommitLeavesTheEarlierFile) {
  TempDir dir;
  testing::write_file(dir / "a.bin", "good");
  {
    auto out = OutputFile::create(dir / "a.bin");
    ASSERT_TRUE(out.ok());
    std::fputs("half", out->stream());
  }
  EXPECT_EQ(testing::read_file(dir / "a.bin"), "good");
  EXPECT_EQ(files_in(dir.path()), 1);
}

TEST(OutputFile, CommitReplacesTheEarlierFile) {
  TempDir dir;
  testing::write_file(dir / "a.bin", "old");
  auto out = OutputFile::create(dir / "a.bin");
  ASSERT_TRUE(out.ok());
  std::fputs("new", out->stream());
  ASSERT_TRUE(out->commit().ok());
  EXPECT_EQ(testing::read_file(dir / "a.bin"), "new");
  EXPECT_EQ(files_in(dir.path()), 1);
}

// A process killed mid-write (SIGKILL: nothing of ours runs) leaves neither
// a truncated target nor a stray file.
TEST(OutputFile, AKillMidWriteLeavesNothing) {
  TempDir dir;
  testing::write_file(dir / "kept.bin", "good");
  for (const char* name : {"new.bin", "kept.bin"}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto out = OutputFile::create(dir / name);
      if (!out.ok()) _exit(3);
      std::string block(1 << 20, 'x');
      std::fwrite(block.data(), 1, block.size(), out->stream());
      std::fflush(out->stream());
      raise(SIGKILL);
      _exit(4);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited with " << WEXITSTATUS(status);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "new.bin"));
  EXPECT_EQ(testing::read_file(dir / "kept.bin"), "good");
  EXPECT_EQ(files_in(dir.path()), 1);
}

TEST(OutputFile, RefusesAFolderThatIsNotThere) {
  TempDir dir;
  auto out = OutputFile::create(dir / "no/such/a.bin");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, dir / "no/such/a.bin" + ": the folder " + dir / "no/such" + " does not exist");
  auto folder = OutputFile::create(dir.path());
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("is a folder"), std::string::npos) << folder.error().message;
}

}  // namespace
}  // namespace arch

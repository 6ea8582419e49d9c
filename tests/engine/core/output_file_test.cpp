// An output is whole or absent: nothing reaches the target's name before
// commit(), an earlier file there survives a failure or a kill, and no
// partial file is left beside it.
#include "engine/core/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

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

// Targets that are not regular files. The tests make their own nodes in a
// scratch folder (never touching /dev): a char device as /dev/null is
// (1, 3), one as /dev/full is (1, 7), and a FIFO.
bool make_device(const std::string& path, unsigned minor) {
  return mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

bool is_char_device(const std::string& path, unsigned minor) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, minor);
}

Status write_through(const std::string& path, const std::string& bytes) {
  auto out = OutputFile::create(path);
  if (!out.ok()) return out.error();
  std::fwrite(bytes.data(), 1, bytes.size(), out->stream());
  return out->commit();
}

TEST(OutputFile, ADeviceIsWrittenInPlaceNeverReplaced) {
  TempDir dir;
  if (!make_device(dir / "null", 3)) GTEST_SKIP() << "SKIPPED LOUDLY: mknod needs root (CAP_MKNOD)";
  EXPECT_TRUE(OutputFile::in_place(dir / "null"));
  Status st = write_through(dir / "null", "hello");
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(is_char_device(dir / "null", 3)) << "the device was replaced";
  // Through a symlink (as /dev/stdout is one): followed to decide, neither replaced.
  std::filesystem::create_symlink(dir / "null", dir / "link");
  st = write_through(dir / "link", std::string(1 << 20, 'x'));
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link"));
  EXPECT_TRUE(is_char_device(dir / "null", 3));
  EXPECT_EQ(files_in(dir.path()), 1) << "something was made beside the device";  // the link
}

TEST(OutputFile, AFullDeviceIsAnErrorNamingThePath) {
  TempDir dir;
  if (!make_device(dir / "full", 7)) GTEST_SKIP() << "SKIPPED LOUDLY: mknod needs root (CAP_MKNOD)";
  for (size_t bytes : {size_t(5), size_t(1) << 20}) {  // left in the buffer until commit; written before it
    Status st = write_through(dir / "full", std::string(bytes, 'x'));
    ASSERT_FALSE(st.ok()) << bytes << " bytes went into a full device";
    EXPECT_EQ(st.error().message, dir / "full" + ": cannot be written (No space left on device)");
    EXPECT_TRUE(is_char_device(dir / "full", 7));
  }
}

TEST(OutputFile, AFifoGetsTheWholeOutputAndStaysAFifo) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = open(fifo.c_str(), O_RDONLY);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) got.append(buf, size_t(n));
    close(fd);
  });
  // A writer that seeks back to finish its header (libsndfile's WAV) works
  // too: the bytes reach the FIFO at commit.
  auto out = OutputFile::create(fifo);
  ASSERT_TRUE(out.ok()) << out.error().message;
  std::fputs("xxxxx world", out->stream());
  std::fflush(out->stream());
  ASSERT_EQ(pwrite(out->fd(), "hello", 5, 0), 5);
  Status st = out->commit();
  reader.join();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(got, "hello world");
  struct stat s;
  ASSERT_EQ(stat(fifo.c_str(), &s), 0);
  EXPECT_TRUE(S_ISFIFO(s.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(files_in(dir.path()), 0);
}

// "-": standard output (here a pipe, as in `archrun speak ... -o - | aplay`),
// after whatever the process printed there before.
TEST(OutputFile, DashIsStandardOutput) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(pipe_fds[1], 1);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::printf("first ");
    _exit(write_through("-", "then the output").ok() && std::fflush(stdout) == 0 ? 0 : 3);
  }
  close(pipe_fds[1]);
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) got.append(buf, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(got, "first then the output");
}

}  // namespace
}  // namespace arch

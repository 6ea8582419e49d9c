// What a request sets at archrun's command line, hostile or mistaken
// (docs/malformed-inputs.md): an output that is not a regular file is
// written in place and never replaced; sizes are bounded before anything of
// theirs is made; an allocation that fails anyway is one error, not an
// abort; NaN and infinity are refused where they enter, named.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "importer/audio/audio_file.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden_checkpoints.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;
using testing::TempDir;

void expect_refused(const std::string& command, const std::string& message) {
  auto r = run_tool(command);
  EXPECT_GT(r.exit_code, 0) << command << "\n" << r.out;  // exited, not killed by a signal
  EXPECT_NE(r.out.find(message), std::string::npos) << command << "\n" << r.out;
  EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;
}

// Nodes of the test's own, never anything under /dev: a char device as
// /dev/null is (1, 3), one as /dev/full is (1, 7).
bool make_device(const std::string& path, unsigned minor) {
  return mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

bool is_char_device(const std::string& path, unsigned minor) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, minor);
}

// One f32 tensor `name` of `shape`, 0.5 everywhere but `bad` at `at`.
std::string tensor_file(const TempDir& dir, const std::string& file, const std::string& name, const Dims& shape,
                        int64_t at = -1, float bad = NAN) {
  Tensor t = Tensor::zeros(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = i == at ? bad : 0.5f;
  const std::string path = dir / file;
  EXPECT_TRUE(write_safetensors(path, {{name, t}}).ok());
  return path;
}

std::string speak(const TempDir& voice, const std::string& args) {
  return testing::archrun() + " speak " + voice.path() + " " + args;
}

std::string imagine(const std::string& args) {
  return testing::archrun() + " imagine " + testing::golden_dir("sd15_pipeline") + " --ids 98,99 " + args;
}

std::string denoise(const std::string& context, const std::string& args) {
  return testing::archrun() + " denoise " + testing::golden_dir("unet_sd15") + " --context " + context + " " + args;
}

TEST(ArchrunRequests, OutputsThatAreNotRegularFilesAreWrittenInPlace) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd15_pipeline"));
  TempDir voice, dir;
  testing::write_golden_voice(voice.path());
  const std::string null = dir / "null", full = dir / "full";
  if (!make_device(null, 3) || !make_device(full, 7)) GTEST_SKIP() << "SKIPPED LOUDLY: mknod needs root (CAP_MKNOD)";
  for (const std::string& command : {speak(voice, "-p hello -o " + null), imagine("--steps 1 -o " + null)}) {
    auto r = run_tool(command);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.out;
    EXPECT_TRUE(is_char_device(null, 3)) << command << " replaced the device";
  }
  expect_refused(speak(voice, "-p hello -o " + full), full + ": cannot be written (System error : No space left on device.)");
  expect_refused(imagine("--steps 1 -o " + full), full + ": cannot be written (No space left on device)");
  EXPECT_TRUE(is_char_device(full, 7));
  // A FIFO with a reader: the WAV whole (libsndfile seeks back to finish its
  // header, so it reaches the FIFO at the end), the FIFO still one.
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A writer of ours holds the FIFO open until archrun is done, so the
  // reader ends whatever archrun does (had it replaced the FIFO, the reader
  // would wait on it forever).
  const int held = open(fifo.c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  std::string got;
  std::thread reader([&] { got = testing::read_file(fifo); });
  auto r = run_tool(speak(voice, "-p hello -o " + fifo));
  close(held);
  reader.join();
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(got.substr(0, 4), "RIFF");
  struct stat st;
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 3) << "something was made beside";
}

// -o -: the WAV or PNG on stdout (a file, or a pipe), everything for people
// on stderr (speak --json's object too).
TEST(ArchrunRequests, DashWritesTheOutputToStandardOutput) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd15_pipeline"));
  TempDir voice, dir;
  testing::write_golden_voice(voice.path());
  auto r = run_tool("(" + speak(voice, "-p hello -o - --json") + " > " + dir / "s.wav" + " 2> " + dir / "s.err)");
  ASSERT_EQ(r.exit_code, 0) << testing::read_file(dir / "s.err");
  auto wav = read_audio(dir / "s.wav");
  ASSERT_TRUE(wav.ok()) << wav.error().message;
  const auto j = nlohmann::json::parse(testing::last_line(testing::read_file(dir / "s.err")));
  EXPECT_EQ(int64_t(wav->samples.size()), j["samples"].get<int64_t>());
  r = run_tool(speak(voice, "-p hello -o - 2>/dev/null | cat > " + dir / "p.wav"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto piped = read_audio(dir / "p.wav");
  ASSERT_TRUE(piped.ok()) << piped.error().message;
  EXPECT_EQ(piped->samples, wav->samples);
  r = run_tool(imagine("--steps 1 -o - 2>/dev/null | cat > " + dir / "p.png"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(testing::read_file(dir / "p.png").substr(1, 3), "PNG");
  EXPECT_FALSE(fs::exists("-"));
}

TEST(ArchrunRequests, SizesAreBoundedBeforeAnythingIsMade) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd15_pipeline"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("unet_sd15"));
  TempDir voice, dir;
  testing::write_golden_voice(voice.path());
  const std::string ctx = tensor_file(dir, "ctx.safetensors", "c", {7, 48});
  expect_refused(imagine("--height 100000 --width 100000 -o " + dir / "x.png"),
                 "an image of 100000x100000: its pixels (10000000000) exceeds the limit 'image_pixels' (178956970)");
  expect_refused(imagine("--steps 100000000 -o " + dir / "x.png"),
                 "the latents a loop of 100000000 steps over [4, 16, 16] keeps (200000001 of them: the trajectory and "
                 "the noise predictions), in elements (204800001024) exceeds the limit 'latent_elements' (268435456)");
  expect_refused(denoise(ctx, "--latent-height 100000 --latent-width 100000 -o " + dir / "x.safetensors"),
                 "the latents a loop of 20 steps over [4, 100000, 100000] keeps (41 of them: the trajectory and the "
                 "noise predictions), in elements (1640000000000) exceeds the limit 'latent_elements' (268435456)");
  std::string ids = "1";
  for (int k = 1; k < 5000; ++k) ids += ",1";
  expect_refused(speak(voice, "--ids " + ids + " -o " + dir / "x.wav"),
                 "the ids one run of the voice takes (5000) exceeds the limit 'speech_ids' (4096)");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1) << "an output was left";
}

// Past the limits (raised here) the allocation fails: one error and exit
// 1, never std::terminate's abort.
TEST(ArchrunRequests, OutOfMemoryIsOneErrorNotAnAbort) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("unet_sd15"));
  TempDir dir;
  const std::string ctx = tensor_file(dir, "ctx.safetensors", "c", {7, 48});
  auto r = run_tool("(ulimit -v 4000000; " +
                    denoise(ctx, "--latent-height 100000 --latent-width 100000 --limit latent_elements=1e15 -o " +
                                     dir / "x.safetensors") +
                    ")");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("archrun: error: out of memory: an allocation failed (std::bad_alloc)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "x.safetensors"));
}

TEST(ArchrunRequests, NanAndInfinityAreRefusedWhereTheyEnter) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("vit"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("vits"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd15_pipeline"));
  ARCH_REQUIRE_SHARED(testing::golden_dir("unet_sd15"));
  TempDir voice, dir;
  testing::write_golden_voice(voice.path());
  const std::string px = tensor_file(dir, "px.safetensors", "pixel_values", {1, 3, 32, 32}, 100);
  const std::string ctx = tensor_file(dir, "ctx.safetensors", "c", {7, 48});
  const std::string bad_ctx = tensor_file(dir, "bad_ctx.safetensors", "c", {7, 48}, 5);
  const std::string lat = tensor_file(dir, "lat.safetensors", "l", {4, 16, 16}, 7, INFINITY);
  const std::string out = " -o " + dir / "x.safetensors";
  expect_refused(testing::archrun() + " forward " + testing::golden_dir("vit") + " --inputs " + px + " --out " + dir / "o.safetensors",
                 px + ": tensor 'pixel_values' holds NaN at index 100 (element [0, 0, 3, 4] of [1, 3, 32, 32]; 1 of "
                      "3072 values are NaN or Inf): an input must be all numbers");
  expect_refused(denoise(bad_ctx, "--latent-height 16 --latent-width 16" + out),
                 bad_ctx + ": the context (tensor 'c') holds NaN at index 5 (element [0, 5] of [7, 48]; 1 of 336 values");
  expect_refused(denoise(ctx, "--negative-context " + bad_ctx + " --latents " + lat + out),
                 bad_ctx + ": the negative context (tensor 'c') holds NaN at index 5");
  expect_refused(denoise(ctx, "--latents " + lat + out),
                 lat + ": the latents (tensor 'l') holds inf at index 7 (element [0, 0, 7] of [4, 16, 16]");
  expect_refused(denoise(ctx, "--pooled " + bad_ctx + " --latent-height 16 --latent-width 16" + out),
                 bad_ctx + ": the pooled projections (tensor 'c') holds NaN at index 5");
  expect_refused(imagine("--latents " + lat + " -o " + dir / "x.png"), lat + ": the latents (tensor 'l') holds inf at index 7");
  // Options: finite, and in a range where the arithmetic stays numbers.
  expect_refused(imagine("--guidance 1e38 -o " + dir / "x.png"), "--guidance is 1e+38: a guidance scale must be a number from 0 to 100");
  expect_refused(denoise(ctx, "--guidance 1e38 --latent-height 16 --latent-width 16" + out),
                 "--guidance is 1e+38: a guidance scale must be a number from 0 to 100");
  expect_refused(imagine("--guidance inf -o " + dir / "x.png"), "--guidance: 'inf' is not a finite number");
  expect_refused(speak(voice, "-p hi --speaking-rate 1e-30 -o " + dir / "x.wav"),
                 "speaking_rate is 1e-30: it must be a number from 0.1 to 10");
  expect_refused(speak(voice, "-p hi --noise-scale 1e38 -o " + dir / "x.wav"), "noise_scale is 1e+38: it must be a number from 0 to 10");
  expect_refused(speak(voice, "-p hi --noise-scale-duration 100 -o " + dir / "x.wav"),
                 "noise_scale_duration is 100: it must be a number from 0 to 10");
  expect_refused(testing::archrun() + " generate toy --ids 1 -n 2 --temperature 1e38", "--temperature: Value 1e38 not in range");
  expect_refused(testing::archrun() + " generate toy --ids 1 -n 2 --top-p inf", "--top-p: ('inf' is not a finite number)");
  for (const char* made : {"x.safetensors", "o.safetensors", "x.png", "x.wav"}) EXPECT_FALSE(fs::exists(dir / made)) << made;
}

}  // namespace
}  // namespace arch

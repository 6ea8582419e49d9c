// archrun imagine on a Wan pipeline folder (archrun toy --shape wan-tiny):
// an animated GIF (a frame each, looping), WebM, a PNG a frame, and what a
// video pipeline does not take refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ArchrunVideo, AWanFolderToAGifAndToFrames) {
  const fs::path root = fs::temp_directory_path() / ("archrun_video_" + std::to_string(getpid()));
  fs::remove_all(root);
  const std::string dir = (root / "wan").string();
  auto toy = testing::run_tool(testing::archrun() + " toy --shape wan-tiny -o " + dir);
  ASSERT_EQ(toy.exit_code, 0) << toy.out;
  auto info = testing::run_tool(testing::archrun() + " info " + dir);
  ASSERT_EQ(info.exit_code, 0) << info.out;
  for (const char* f : {"WanPipeline", "WanDiT", "WanVAE", "T5EncoderStyle"}) EXPECT_NE(info.out.find(f), std::string::npos) << f << "\n" << info.out;
  const std::string run = testing::archrun() + " imagine " + dir + " --ids 5,9,1 --negative-ids 1 --steps 2 --height 32 --width 48 ";
  const std::string gif = (root / "v.gif").string();
  auto g = testing::run_tool(run + "--frames 9 --fps 10 -o " + gif);
  ASSERT_EQ(g.exit_code, 0) << g.out;
  EXPECT_NE(g.out.find("9 frames of 32x48"), std::string::npos) << g.out;
  const std::string bytes = testing::read_file(gif);
  EXPECT_EQ(bytes.substr(0, 6), "GIF89a");
  EXPECT_NE(bytes.find("NETSCAPE2.0"), std::string::npos);  // it loops
  // A graphics control block a frame (0x21 0xF9, 4 bytes: each frame kept under the next, 1/10 s, 10
  // hundredths little-endian).
  EXPECT_EQ(count(bytes, std::string("\x21\xF9\x04\x04\x0A\x00", 6)), 9u);
  auto webm = testing::run_tool(run + "--frames 5 -o " + (root / "v.webm").string());
  ASSERT_EQ(webm.exit_code, 0) << webm.out;
  EXPECT_EQ(testing::read_file((root / "v.webm").string()).substr(0, 4), "\x1a\x45\xdf\xa3");  // EBML: WebM
  auto frames = testing::run_tool(run + "--frames 5 -o " + (root / "f.png").string());
  ASSERT_EQ(frames.exit_code, 0) << frames.out;
  for (int f = 0; f < 5; ++f) EXPECT_EQ(testing::read_file((root / ("f_00" + std::to_string(f) + ".png")).string()).substr(1, 3), "PNG") << f;
  EXPECT_FALSE(fs::exists(root / "f_005.png"));

  auto odd = testing::run_tool(run + "--frames 8 -o " + gif);
  EXPECT_NE(odd.exit_code, 0);
  EXPECT_NE(odd.out.find("5 or 9 would be"), std::string::npos) << odd.out;
  auto jpg = testing::run_tool(run + "--frames 5 -o " + (root / "v.jpg").string());
  EXPECT_NE(jpg.exit_code, 0);
  EXPECT_NE(jpg.out.find("makes videos: write one as -o NAME.webm (VP9), NAME.gif (animated) or NAME.png"), std::string::npos) << jpg.out;
  auto second = testing::run_tool(run + "--guidance-2 3 --frames 5 -o " + gif);
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.out.find("a second guidance scale is for a second (low-noise) transformer"), std::string::npos) << second.out;
  auto ids2 = testing::run_tool(run + "--ids-2 3,1 --frames 5 -o " + gif);
  EXPECT_NE(ids2.exit_code, 0);
  EXPECT_NE(ids2.out.find("--ids-2"), std::string::npos) << ids2.out;
  fs::remove_all(root);
}

}  // namespace
}  // namespace arch

// Videos written: WebM read back by FFmpeg (its frames, size and colours),
// an animated GIF's frames and timing, PNG frames' names, the faults named.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "importer/image/video_write.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

// A video [3, F, H, W] of one colour a frame: red, then green, then blue, ...
Tensor solid_video(int64_t F, int64_t H, int64_t W) {
  Tensor v = Tensor::zeros(DType::F32, {3, F, H, W});
  for (int64_t f = 0; f < F; ++f)
    for (int64_t i = 0; i < H * W; ++i) v.f32()[((f % 3) * F + f) * H * W + i] = 1.0f;
  return v;
}

struct Decoded {
  int frames = 0, width = 0, height = 0;
  std::vector<double> mean_y, mean_u, mean_v;  // per frame
};

// The WebM decoded by FFmpeg: every frame's planes averaged.
Decoded decode(const std::string& path) {
  Decoded d;
  AVFormatContext* fmt = nullptr;
  if (avformat_open_input(&fmt, path.c_str(), nullptr, nullptr) < 0) return d;
  avformat_find_stream_info(fmt, nullptr);
  const int s = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  const AVCodec* codec = avcodec_find_decoder(fmt->streams[s]->codecpar->codec_id);
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  avcodec_parameters_to_context(ctx, fmt->streams[s]->codecpar);
  avcodec_open2(ctx, codec, nullptr);
  AVPacket* pkt = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  auto take = [&]() {
    while (avcodec_receive_frame(ctx, frame) == 0) {
      ++d.frames;
      d.width = frame->width, d.height = frame->height;
      auto mean = [&](int p, int w, int h) {
        double sum = 0;
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) sum += frame->data[p][y * frame->linesize[p] + x];
        return sum / (w * h);
      };
      d.mean_y.push_back(mean(0, frame->width, frame->height));
      d.mean_u.push_back(mean(1, frame->width / 2, frame->height / 2));
      d.mean_v.push_back(mean(2, frame->width / 2, frame->height / 2));
    }
  };
  while (av_read_frame(fmt, pkt) >= 0) {
    if (pkt->stream_index == s) avcodec_send_packet(ctx, pkt), take();
    av_packet_unref(pkt);
  }
  avcodec_send_packet(ctx, nullptr);
  take();
  av_frame_free(&frame);
  av_packet_free(&pkt);
  avcodec_free_context(&ctx);
  avformat_close_input(&fmt);
  return d;
}

TEST(VideoWrite, WebmReadsBackFrameByFrame) {
  TempDir dir;
  const std::string path = dir / "v.webm";
  ASSERT_TRUE(write_webm(path, solid_video(6, 32, 48), 8).ok());
  EXPECT_EQ(testing::read_file(path).substr(0, 4), "\x1a\x45\xdf\xa3");  // EBML
  Decoded d = decode(path);
  ASSERT_EQ(d.frames, 6);
  EXPECT_EQ(d.width, 48);
  EXPECT_EQ(d.height, 32);
  // BT.601 limited range: red (81, 90, 240), green (145, 54, 34), blue (41, 240, 110).
  const double y[3] = {81.5, 144.6, 41.0}, u[3] = {90.2, 53.8, 240.0}, v[3] = {240.0, 34.2, 109.8};
  for (int f = 0; f < 6; ++f) {
    EXPECT_NEAR(d.mean_y[size_t(f)], y[f % 3], 3.0) << "frame " << f;
    EXPECT_NEAR(d.mean_u[size_t(f)], u[f % 3], 3.0) << "frame " << f;
    EXPECT_NEAR(d.mean_v[size_t(f)], v[f % 3], 3.0) << "frame " << f;
  }
}

TEST(VideoWrite, FaultsAreNamed) {
  TempDir dir;
  auto odd = write_webm(dir / "odd.webm", solid_video(2, 31, 48), 8);
  ASSERT_FALSE(odd.ok());
  EXPECT_CONTAINS(odd.error().message, "sides must be even");
  auto image = write_webm(dir / "img.webm", Tensor::zeros(DType::F32, {3, 8, 8}), 8);
  ASSERT_FALSE(image.ok());
  EXPECT_CONTAINS(image.error().message, "must be F32 [3, F, H, W]");
  auto fps = write_gif(dir / "v.gif", solid_video(2, 8, 8), 0);
  ASSERT_FALSE(fps.ok());
  EXPECT_CONTAINS(fps.error().message, "frames a second");
  EXPECT_FALSE(std::filesystem::exists(dir / "odd.webm"));  // nothing left behind
}

TEST(VideoWrite, PngFramesAreNumbered) {
  EXPECT_EQ(frame_paths("out.png", 3), (std::vector<std::string>{"out_000.png", "out_001.png", "out_002.png"}));
  EXPECT_EQ(frame_paths("dir/clip.png", 1001).back(), "dir/clip_1000.png");
  EXPECT_EQ(frame_paths("dir/clip.png", 1001).front(), "dir/clip_0000.png");
}

}  // namespace
}  // namespace arch

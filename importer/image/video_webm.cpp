// write_webm (video_write.h): the frames converted to BT.601 limited-range
// YUV 4:2:0 (as FFmpeg's swscale converts RGB for VP9 by default), encoded
// by libavcodec's VP9 encoder (libvpx) at constant quality, muxed into WebM
// by libavformat through callbacks into an OutputFile (whole or absent).
#include <cmath>
#include <cstdio>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
}

#include "engine/core/output_file.h"
#include "importer/image/video_write.h"

namespace arch {

namespace {

std::string av_message(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

// What FFmpeg allocates, freed however the writing ends.
struct Writer {
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  AVIOContext* io = nullptr;
  ~Writer() {
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&codec);
    if (io) av_freep(&io->buffer);
    avio_context_free(&io);
    avformat_free_context(format);
  }
};

int write_bytes(void* file, uint8_t* data, int n) {
  return std::fwrite(data, 1, size_t(n), static_cast<std::FILE*>(file)) == size_t(n) ? n : AVERROR(EIO);
}

int64_t seek_bytes(void* file, int64_t offset, int whence) {
  auto* f = static_cast<std::FILE*>(file);
  if (whence == AVSEEK_SIZE) return -1;
  if (fseeko(f, off_t(offset), whence & ~AVSEEK_FORCE) != 0) return -1;
  return ftello(f);
}

uint8_t clamp_byte(double v) { return uint8_t(std::lround(std::fmin(255.0, std::fmax(0.0, v)))); }

}  // namespace

Status write_webm(const std::string& path, const Tensor& video, double fps, int crf) {
  ARCH_TRY_STATUS(check_video(path, video));
  const int64_t F = video.dim(1), H = video.dim(2), W = video.dim(3), plane = H * W;
  if (H % 2 || W % 2 || H > 16384 || W > 16384)
    return error(path + ": a WebM's sides must be even (4:2:0) and at most 16384, not " + std::to_string(W) + "x" + std::to_string(H));
  if (!(fps > 0 && fps <= 1000)) return error(path + ": frames a second must be above 0 and at most 1000, not " + std::to_string(fps));
  if (crf < 0 || crf > 63) return error(path + ": VP9's quality (crf) is 0 to 63, not " + std::to_string(crf));
  const AVCodec* vp9 = avcodec_find_encoder(AV_CODEC_ID_VP9);
  if (!vp9) return error(path + ": this FFmpeg has no VP9 encoder (libvpx)");
  ARCH_TRY(OutputFile out, OutputFile::create(path));
  Writer w;
  auto fail = [&](const std::string& what, int code) { return error(path + ": " + what + ": " + av_message(code)); };
  int rc = avformat_alloc_output_context2(&w.format, nullptr, "webm", nullptr);
  if (rc < 0 || !w.format) return fail("cannot start the WebM", rc);
  const AVRational rate = av_d2q(fps, 100000);
  w.codec = avcodec_alloc_context3(vp9);
  w.codec->width = int(W);
  w.codec->height = int(H);
  w.codec->pix_fmt = AV_PIX_FMT_YUV420P;
  w.codec->time_base = av_inv_q(rate);
  w.codec->framerate = rate;
  w.codec->bit_rate = 0;  // constant quality
  w.codec->color_range = AVCOL_RANGE_MPEG;
  w.codec->colorspace = AVCOL_SPC_BT470BG;
  w.codec->thread_count = 0;
  av_opt_set_int(w.codec->priv_data, "crf", crf, 0);
  av_opt_set(w.codec->priv_data, "deadline", "good", 0);
  av_opt_set_int(w.codec->priv_data, "cpu-used", 4, 0);
  if (w.format->oformat->flags & AVFMT_GLOBALHEADER) w.codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if ((rc = avcodec_open2(w.codec, vp9, nullptr)) < 0) return fail("cannot open the VP9 encoder", rc);
  AVStream* stream = avformat_new_stream(w.format, nullptr);
  if (!stream) return error(path + ": cannot add the video stream");
  stream->time_base = w.codec->time_base;
  if ((rc = avcodec_parameters_from_context(stream->codecpar, w.codec)) < 0) return fail("cannot describe the stream", rc);
  constexpr int kBuffer = 1 << 16;
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBuffer));
  const bool seekable = !OutputFile::in_place(path);
  w.io = avio_alloc_context(buffer, kBuffer, 1, out.stream(), nullptr, write_bytes, seekable ? seek_bytes : nullptr);
  if (!w.io) {
    av_free(buffer);
    return error(path + ": cannot start writing");
  }
  w.format->pb = w.io;
  if ((rc = avformat_write_header(w.format, nullptr)) < 0) return fail("cannot write the WebM header", rc);
  w.frame = av_frame_alloc();
  w.packet = av_packet_alloc();
  w.frame->format = AV_PIX_FMT_YUV420P;
  w.frame->width = int(W);
  w.frame->height = int(H);
  if ((rc = av_frame_get_buffer(w.frame, 0)) < 0) return fail("cannot hold a frame", rc);
  // Every packet the encoder has ready, into the file.
  auto drain = [&]() -> Status {
    for (;;) {
      int r = avcodec_receive_packet(w.codec, w.packet);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return {};
      if (r < 0) return fail("cannot encode", r);
      av_packet_rescale_ts(w.packet, w.codec->time_base, stream->time_base);
      w.packet->stream_index = stream->index;
      if ((r = av_interleaved_write_frame(w.format, w.packet)) < 0) return fail("cannot write a frame", r);
    }
  };
  const float* rgb = video.f32();
  auto at = [&](int64_t c, int64_t f, int64_t i) { return std::fmin(1.0, std::fmax(0.0, double(rgb[(c * F + f) * plane + i]))); };
  for (int64_t f = 0; f < F; ++f) {
    if ((rc = av_frame_make_writable(w.frame)) < 0) return fail("cannot write a frame", rc);
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        const int64_t i = y * W + x;
        w.frame->data[0][y * w.frame->linesize[0] + x] = clamp_byte(16 + 65.481 * at(0, f, i) + 128.553 * at(1, f, i) + 24.966 * at(2, f, i));
      }
    for (int64_t y = 0; y < H / 2; ++y)
      for (int64_t x = 0; x < W / 2; ++x) {
        double r = 0, g = 0, b = 0;  // the 2x2 block's mean
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dx = 0; dx < 2; ++dx) {
            const int64_t i = (2 * y + dy) * W + 2 * x + dx;
            r += at(0, f, i) / 4, g += at(1, f, i) / 4, b += at(2, f, i) / 4;
          }
        w.frame->data[1][y * w.frame->linesize[1] + x] = clamp_byte(128 - 37.797 * r - 74.203 * g + 112.0 * b);
        w.frame->data[2][y * w.frame->linesize[2] + x] = clamp_byte(128 + 112.0 * r - 93.786 * g - 18.214 * b);
      }
    w.frame->pts = f;
    if ((rc = avcodec_send_frame(w.codec, w.frame)) < 0) return fail("cannot encode frame " + std::to_string(f), rc);
    ARCH_TRY_STATUS(drain());
  }
  if ((rc = avcodec_send_frame(w.codec, nullptr)) < 0) return fail("cannot finish encoding", rc);
  ARCH_TRY_STATUS(drain());
  if ((rc = av_write_trailer(w.format)) < 0) return fail("cannot finish the WebM", rc);
  avio_flush(w.io);
  if (std::ferror(out.stream())) return error(path + ": cannot write the WebM");
  return out.commit();
}

}  // namespace arch

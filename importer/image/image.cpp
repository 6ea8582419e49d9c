#include "importer/image/image.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>

#include <zlib.h>

#include "engine/core/limits.h"
#include "engine/core/mapped_file.h"

// Debian's libstb.so already holds stb_image's implementation (stbi_load,
// stbi_load_from_memory, stbi_failure_reason, ...): this file includes the
// header only, without STB_IMAGE_IMPLEMENTATION.

namespace arch {

namespace {


enum class Format { kPng, kJpeg, kBmp, kGif, kUnknown };

const char* format_name(Format f) {
  switch (f) {
    case Format::kPng: return "PNG";
    case Format::kJpeg: return "JPEG";
    case Format::kBmp: return "BMP";
    case Format::kGif: return "GIF";
    default: return "unknown";
  }
}

bool starts_with(const unsigned char* p, size_t n, const char* magic, size_t m) {
  if (n < m) return false;
  for (size_t i = 0; i < m; ++i)
    if (p[i] != static_cast<unsigned char>(magic[i])) return false;
  return true;
}

Format sniff(const unsigned char* p, size_t n) {
  if (starts_with(p, n, "\x89PNG\r\n\x1a\n", 8)) return Format::kPng;
  if (starts_with(p, n, "\xff\xd8\xff", 3)) return Format::kJpeg;
  if (starts_with(p, n, "BM", 2)) {
    // "BM" alone is weak evidence: also ask for a known DIB header size.
    if (n < 18) return Format::kBmp;  // check_bmp: truncated header
    const uint32_t header = uint32_t(p[14]) | uint32_t(p[15]) << 8 | uint32_t(p[16]) << 16 | uint32_t(p[17]) << 24;
    for (uint32_t known : {12u, 16u, 40u, 52u, 56u, 64u, 108u, 124u})
      if (header == known) return Format::kBmp;
  }
  if (starts_with(p, n, "GIF87a", 6) || starts_with(p, n, "GIF89a", 6)) return Format::kGif;
  return Format::kUnknown;
}

// What a file that is not a supported image looks like, for the message.
std::string describe_unknown(const unsigned char* p, size_t n) {
  if (starts_with(p, n, "RIFF", 4) && n >= 12 && starts_with(p + 8, n - 8, "WEBP", 4))
    return "a WebP image, which is not supported";
  if (starts_with(p, n, "II*\0", 4) || starts_with(p, n, "MM\0*", 4)) return "a TIFF image, which is not supported";
  if (n >= 12 && starts_with(p + 4, n - 4, "ftyp", 4)) return "an ISO media file (HEIC/AVIF?), which is not supported";
  if (starts_with(p, n, "8BPS", 4)) return "a PSD file, which is not supported";
  if (n < 8) return "only " + std::to_string(n) + " byte" + (n == 1 ? "" : "s") + " long";
  bool text = true;
  for (size_t i = 0; i < n && i < 512; ++i)
    if (p[i] < 0x09 || (p[i] > 0x0d && p[i] < 0x20 && p[i] != 0x1b)) text = false;
  if (text) return "text";
  return "of unknown format";
}

// Error texts for the structure walks below; "" means the file is complete.
const std::string kOk;

uint32_t le16(const unsigned char* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const unsigned char* p) { return le16(p) | le16(p + 2) << 16; }
uint32_t be32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// stb_image reads past the end of a PNG as zeros and then complains about a
// chunk type made of them (an empty or garbled reason), and never checks a
// chunk's CRC (a damaged file decodes to wrong pixels). Walk the chunks up
// to IEND first, each CRC checked, for a clear message; the size comes from
// IHDR (`width`, `height`), so a bomb is refused before stb_image is asked.
std::string check_png(const unsigned char* p, size_t n, int64_t& width, int64_t& height) {
  const std::string truncated = "truncated PNG (the data ends before the IEND chunk)";
  size_t pos = 8;
  for (bool first = true;; first = false) {
    if (n - pos < 8) return truncated;
    const uint32_t length = be32(p + pos);
    if (length > 0x7fffffffu) return "corrupt PNG (a chunk length of " + std::to_string(length) + ")";
    if (n - pos - 8 < size_t(length) + 4) return truncated;
    const std::string type(reinterpret_cast<const char*>(p + pos + 4), 4);
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), p + pos + 4, uInt(length + 4));
    if (crc != be32(p + pos + 8 + length))
      return "corrupt PNG (" + (std::all_of(type.begin(), type.end(), ::isalpha) ? "its " + type : "a") +
             " chunk fails its CRC check)";
    if (first) {
      if (type != "IHDR" || length < 8) return "corrupt PNG (it does not start with an IHDR chunk)";
      width = be32(p + pos + 8);
      height = be32(p + pos + 12);
    }
    pos += 12 + size_t(length);
    if (type == "IEND") return kOk;
  }
}

// stb_image fills a JPEG whose entropy-coded data runs out with guesses
// instead of failing. Walk the markers (skipping segment bodies, so that an
// EXIF thumbnail's own markers are not mistaken for ours) and the scan data
// up to the end-of-image marker.
std::string check_jpeg(const unsigned char* p, size_t n) {
  const std::string truncated = "truncated JPEG (the data ends before the end-of-image marker)";
  size_t pos = 2;  // after SOI
  for (;;) {
    while (pos < n && p[pos] != 0xff) ++pos;  // stray bytes between segments: libjpeg skips them too
    while (pos < n && p[pos] == 0xff) ++pos;  // fill bytes
    if (pos >= n) return truncated;
    unsigned marker = p[pos++];
    if (marker == 0xd9) return kOk;  // EOI
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;  // TEM, RSTn: no length
    if (pos + 2 > n) return truncated;
    size_t length = size_t(p[pos]) << 8 | p[pos + 1];
    if (length < 2) return "corrupt JPEG (a marker segment with length " + std::to_string(length) + ")";
    if (length > n - pos) return truncated;
    pos += length;
    if (marker != 0xda) continue;
    // Entropy-coded data after SOS: 0xFF is stuffed as FF 00; RSTn markers
    // may interleave; any other marker ends the scan.
    for (;;) {
      if (pos >= n) return truncated;
      if (p[pos] != 0xff) {
        ++pos;
        continue;
      }
      if (pos + 1 >= n) return truncated;
      unsigned next = p[pos + 1];
      if (next == 0x00 || (next >= 0xd0 && next <= 0xd7)) {
        pos += 2;
      } else if (next == 0xff) {
        ++pos;
      } else {
        break;
      }
    }
  }
}

// stb_image reads past the end of a BMP as zeros. For the uncompressed and
// bit-field kinds the pixel array's size follows from the header.
std::string check_bmp(const unsigned char* p, size_t n) {
  if (n < 18) return "truncated BMP header";
  const uint32_t offset = le32(p + 10);
  const uint32_t header = le32(p + 14);
  int64_t width = 0, height = 0, bpp = 0, compression = 0;
  if (header == 12) {  // OS/2 BITMAPCOREHEADER
    if (n < 26) return "truncated BMP header";
    width = le16(p + 18);
    height = le16(p + 20);
    bpp = le16(p + 24);
  } else {
    if (n < 34) return "truncated BMP header";
    width = int32_t(le32(p + 18));
    height = int32_t(le32(p + 22));
    bpp = le16(p + 28);
    compression = le32(p + 30);
  }
  if (header != 12 && header < 40) return kOk;  // stb_image rejects it with its own reason
  if (compression != 0 && compression != 3 && compression != 6) return kOk;  // RLE etc.: stb_image decides
  if (width <= 0 || bpp <= 0 || bpp > 32) return kOk;
  if (height < 0) height = -height;  // top-down rows
  // stride < 2^35 and height <= 2^31: their product may pass int64 (a
  // fuzzed header did), so the bytes needed are counted in 128 bits.
  const int64_t stride = (width * bpp + 31) / 32 * 4;
  const unsigned __int128 need = offset + static_cast<unsigned __int128>(stride) * uint64_t(height);
  if (need > n) {
    std::string bytes;
    for (unsigned __int128 v = need; v > 0; v /= 10) bytes.insert(bytes.begin(), char('0' + int(v % 10)));
    return "truncated BMP (" + std::to_string(n) + " bytes; the header's " + std::to_string(width) + "x" +
           std::to_string(height) + " pixels at " + std::to_string(bpp) + " bits need " + bytes + ")";
  }
  return kOk;
}

// stb_image ends a GIF frame whose data runs out without a word. Walk the
// blocks up to the end of the first image's data sub-blocks.
std::string check_gif(const unsigned char* p, size_t n) {
  const std::string truncated = "truncated GIF (the data ends inside the first frame)";
  if (n < 13) return truncated;
  size_t pos = 13;
  if (p[10] & 0x80) pos += 3u << ((p[10] & 7) + 1);  // global colour table
  auto skip_sub_blocks = [&]() {
    for (;;) {
      if (pos >= n) return false;
      unsigned size = p[pos++];
      if (size == 0) return true;
      pos += size;
    }
  };
  for (;;) {
    if (pos >= n) return truncated;
    unsigned block = p[pos++];
    if (block == 0x21) {  // extension: label, then sub-blocks
      ++pos;
      if (!skip_sub_blocks()) return truncated;
    } else if (block == 0x2c) {  // image descriptor
      if (pos + 9 > n) return truncated;
      unsigned packed = p[pos + 8];
      pos += 9;
      if (packed & 0x80) pos += 3u << ((packed & 7) + 1);  // local colour table
      ++pos;                                                // LZW minimum code size
      return skip_sub_blocks() ? kOk : truncated;
    } else if (block == 0x3b) {
      return "GIF with no image in it";
    } else {
      return "corrupt GIF (unknown block type " + std::to_string(block) + ")";
    }
  }
}

}  // namespace

Result<Tensor> decode_image(const unsigned char* data, size_t size, const std::string& source) {
  if (size == 0) return error(source + ": empty file, not an image");
  const Format format = sniff(data, size);
  if (format == Format::kUnknown)
    return error(source + ": not a PNG, JPEG, BMP or GIF image (the file is " + describe_unknown(data, size) + ")");
  if (size > size_t(INT_MAX)) return error(source + ": image file too large (over 2 GiB)");

  int64_t png_width = 0, png_height = 0;
  std::string problem = format == Format::kPng   ? check_png(data, size, png_width, png_height)
                        : format == Format::kJpeg ? check_jpeg(data, size)
                        : format == Format::kBmp ? check_bmp(data, size)
                                                  : check_gif(data, size);
  if (!problem.empty()) return error(source + ": " + problem);

  const std::string kind = format_name(format);
  // stb_image's reasons are terse ("bad huffman code", "outofdata"); a few
  // are built from the data and may come out empty.
  auto reason = []() -> std::string {
    const char* r = stbi_failure_reason();
    std::string s = r ? r : "";
    bool printable = !s.empty();
    for (char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) printable = false;
    return printable ? s : "corrupt data";
  };
  // A PNG's size is its IHDR's (stbi_info would try every format in turn
  // and leave the last one's reason, a JPEG's, for a PNG it cannot take).
  int width = 0, height = 0, channels = 0;
  int64_t w = png_width, h = png_height;
  if (format != Format::kPng) {
    if (!stbi_info_from_memory(data, int(size), &width, &height, &channels))
      return error(source + ": cannot decode " + kind + " image: " + reason());
    w = width, h = height;
  }
  if (w <= 0 || h <= 0) return error(source + ": " + kind + " image with no pixels");
  ARCH_TRY_STATUS(check_limit("image_pixels", w * h, source,
                              kind + " image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels"));

  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, int(size), &width, &height, &channels, 3), stbi_image_free);
  if (!pixels) return error(source + ": cannot decode " + kind + " image: " + reason());

  const int64_t plane = int64_t(width) * height;
  Tensor out = Tensor::zeros(DType::F32, {3, height, width});
  float* dst = out.f32();
  const stbi_uc* src = pixels.get();
  for (int64_t i = 0; i < plane; ++i) {
    dst[i] = src[3 * i];
    dst[plane + i] = src[3 * i + 1];
    dst[2 * plane + i] = src[3 * i + 2];
  }
  return out;
}

Result<Tensor> load_image(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  return decode_image(reinterpret_cast<const unsigned char*>(file->data()), file->size(), path);
}

}  // namespace arch

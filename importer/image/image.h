// Decoding an image file a user handed us (archrun classify MODEL IMAGE)
// into an RGB float tensor, with stb_image (Debian's libstb) doing the
// decoding.
//
// Formats: PNG, JPEG (baseline and progressive), BMP (uncompressed and
// bit-field BMPs; stb_image has no RLE) and GIF (the first frame). The format
// is recognised by its signature, never by the file name; anything else
// (TGA, PSD, HDR, ...; stb_image would guess at TGA from its header alone) is
// refused. Before decoding, the file's structure is walked far enough to
// notice truncation, which stb_image would fill in silently with zeros or
// report with a garbled reason: a PNG whose chunks stop before IEND, a JPEG
// without its end-of-image marker, a BMP shorter than its pixel rows, a GIF
// whose first frame's data stops early. Corrupt data inside a complete file
// is stb_image's to find; its reason (stbi_failure_reason) is in the message.
//
// Pixels match PIL's Image.open(path).convert("RGB") (what transformers'
// image processors are fed) for 8-bit PNG, BMP and GIF: gray is replicated
// into R, G and B; alpha is dropped, not composited; a palette is expanded.
// Known differences from PIL:
//   - JPEG: stb_image's IDCT and chroma upsampling are not libjpeg's;
//     values may differ by a few levels (a handful per pixel at most).
//   - 16-bit PNG: stb_image keeps the high byte; PIL does the same for RGB
//     but clips 16-bit grayscale to 255 instead.
//   - GIF: pixels that are transparent in the first frame come out black
//     (PIL gives their palette colour).
//   - EXIF orientation is not applied (neither does Image.open; note that
//     transformers.image_utils.load_image does apply it).
#pragma once

#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

// An F32 tensor [3, H, W] (channels R, G, B; rows top to bottom) holding the
// 8-bit values 0..255 as floats. Errors name the path: missing or unreadable
// file, empty file, not a PNG/JPEG/BMP/GIF, truncated or corrupt data (with
// stb_image's reason), an image over 178,956,970 pixels (PIL's
// decompression-bomb limit, 2 * Image.MAX_IMAGE_PIXELS).
Result<Tensor> load_image(const std::string& path);

// The same from bytes already in memory; `source` names them in messages.
Result<Tensor> decode_image(const unsigned char* data, size_t size, const std::string& source);

}  // namespace arch

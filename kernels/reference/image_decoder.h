// Reference kernels for ImageDecoder (opset 20): format sniffing, one decoder per format, and the
// conversion of a decoded image to the requested pixel format.
//
// Every decoder takes untrusted bytes: it never reads outside [data, data + size), never crashes
// on corrupt or truncated input, and returns a kRuntime Status whose message says what is wrong
// (without node context; the op adds that). JPEG, PNG, TIFF, WebP and JPEG 2000 go through
// Debian's codec libraries (libjpeg-turbo, libpng, libtiff, libwebp, openjp2); BMP and PNM are
// parsed here. Decoding follows onnx.reference, which uses Pillow: no gamma or colour-profile
// correction, no EXIF rotation, the first frame of multi-image files, alpha dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "onyx/status.h"

namespace onyx::kernels::reference {

enum class ImageFormat { kUnknown, kBmp, kJpeg, kJpeg2000, kPng, kPnm, kTiff, kWebp };
enum class PixelFormat { kRgb, kBgr, kGrayscale };

// An 8-bit image, channel-last, rows top to bottom.
struct DecodedImage {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;  // 1 (grayscale) or 3 (RGB)
  // height * width * channels bytes. Left uninitialised by AllocateImage, so a forged header
  // costs no memory traffic; a decoder that succeeds has written every byte.
  std::unique_ptr<uint8_t[]> pixels;
  size_t bytes() const { return static_cast<size_t>(height * width * channels); }
};

// Largest image accepted (width * height), so a forged header cannot make a decoder allocate
// without bound: 2^28 pixels is 16384 x 16384, 768 MiB as RGB.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// Fails (naming `format`) when either dimension is not positive or the image exceeds
// kMaxImagePixels. Decoders call it as soon as the header is read, before the codec allocates.
Status CheckImageSize(const char* format, int64_t width, int64_t height);

// Sizes `img` as width x height x channels after CheckImageSize.
Status AllocateImage(const char* format, int64_t width, int64_t height, int channels,
                     DecodedImage* img);

// The format named by the leading magic bytes, or kUnknown.
ImageFormat SniffImageFormat(const uint8_t* data, size_t size);
const char* ImageFormatName(ImageFormat format);

// Sniffs the format and decodes. Errors name the format ("PNG data is corrupt: ...").
Status DecodeImage(const uint8_t* data, size_t size, DecodedImage* img);

// One decoder per format (image_decoder_<format>.cc). Each outputs 1 or 3 channels.
Status DecodeBmp(const uint8_t* data, size_t size, DecodedImage* img);
Status DecodePnm(const uint8_t* data, size_t size, DecodedImage* img);
Status DecodeJpeg(const uint8_t* data, size_t size, DecodedImage* img);
Status DecodePng(const uint8_t* data, size_t size, DecodedImage* img);
Status DecodeTiff(const uint8_t* data, size_t size, DecodedImage* img);
Status DecodeWebp(const uint8_t* data, size_t size, DecodedImage* img);
Status DecodeJpeg2000(const uint8_t* data, size_t size, DecodedImage* img);

// Pillow's RGB -> L conversion (ITU-R 601-2 luma in 16-bit fixed point, rounded):
// L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16. Gray values map to themselves.
inline uint8_t RgbToLuma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

// Writes img as height x width x C bytes to dst (C = 3 for kRgb/kBgr, 1 for kGrayscale):
// gray images are replicated to RGB/BGR, RGB images go to gray through RgbToLuma.
void ConvertImage(const DecodedImage& img, PixelFormat format, uint8_t* dst);

}  // namespace onyx::kernels::reference

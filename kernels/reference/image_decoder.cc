// ImageDecoder reference: format sniffing, dispatch to the per-format decoders, and the final
// conversion to RGB / BGR / Grayscale.
#include "kernels/reference/image_decoder.h"

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace onyx::kernels::reference {
namespace {

bool StartsWith(const uint8_t* data, size_t size, const char* magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

// "ff d8 ff e0" for the message about an unknown format.
std::string HexPrefix(const uint8_t* data, size_t size) {
  std::string s;
  const size_t kShown = 8;
  for (size_t i = 0; i < size && i < kShown; ++i) {
    char buf[4];
    std::snprintf(buf, sizeof(buf), i == 0 ? "%02x" : " %02x", data[i]);
    s += buf;
  }
  return s;
}

}  // namespace

Status CheckImageSize(const char* format, int64_t width, int64_t height) {
  if (width <= 0 || height <= 0) {
    return RuntimeError(format, " header gives an empty or negative size ", width, "x", height);
  }
  if (width > kMaxImagePixels || height > kMaxImagePixels / width) {
    return RuntimeError(format, " image size ", width, "x", height, " exceeds the limit of ",
                        kMaxImagePixels, " pixels");
  }
  return Status::Ok();
}

Status AllocateImage(const char* format, int64_t width, int64_t height, int channels,
                     DecodedImage* img) {
  ONYX_RETURN_IF_ERROR(CheckImageSize(format, width, height));
  img->width = width;
  img->height = height;
  img->channels = channels;
  img->pixels.reset(new (std::nothrow) uint8_t[img->bytes()]);
  if (!img->pixels) {
    return RuntimeError("out of memory allocating a ", width, "x", height, "x", channels, " image");
  }
  return Status::Ok();
}

ImageFormat SniffImageFormat(const uint8_t* data, size_t size) {
  if (StartsWith(data, size, "\xff\xd8\xff", 3)) return ImageFormat::kJpeg;
  if (StartsWith(data, size, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  if (StartsWith(data, size, "BM", 2)) return ImageFormat::kBmp;
  // JP2 file (signature box) or a raw J2K codestream (SOC + SIZ markers).
  if (StartsWith(data, size, "\x00\x00\x00\x0cjP  \r\n\x87\n", 12) ||
      StartsWith(data, size, "\xff\x4f\xff\x51", 4)) {
    return ImageFormat::kJpeg2000;
  }
  // Classic TIFF and BigTIFF, both byte orders.
  if (StartsWith(data, size, "II*\0", 4) || StartsWith(data, size, "MM\0*", 4) ||
      StartsWith(data, size, "II+\0", 4) || StartsWith(data, size, "MM\0+", 4)) {
    return ImageFormat::kTiff;
  }
  if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0) {
    return ImageFormat::kWebp;
  }
  // PBM/PGM/PPM, plain (P1-P3) and raw (P4-P6).
  if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return ImageFormat::kPnm;
  return ImageFormat::kUnknown;
}

const char* ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kJpeg2000:
      return "JPEG 2000";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kPnm:
      return "PNM";
    case ImageFormat::kTiff:
      return "TIFF";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

Status DecodeImage(const uint8_t* data, size_t size, DecodedImage* img) {
  if (size == 0) return RuntimeError("no encoded bytes (the tensor is empty)");
  const ImageFormat format = SniffImageFormat(data, size);
  Status s;
  switch (format) {
    case ImageFormat::kBmp:
      s = DecodeBmp(data, size, img);
      break;
    case ImageFormat::kJpeg:
      s = DecodeJpeg(data, size, img);
      break;
    case ImageFormat::kJpeg2000:
      s = DecodeJpeg2000(data, size, img);
      break;
    case ImageFormat::kPng:
      s = DecodePng(data, size, img);
      break;
    case ImageFormat::kPnm:
      s = DecodePnm(data, size, img);
      break;
    case ImageFormat::kTiff:
      s = DecodeTiff(data, size, img);
      break;
    case ImageFormat::kWebp:
      s = DecodeWebp(data, size, img);
      break;
    case ImageFormat::kUnknown:
      return RuntimeError("unrecognised image format (", size, " bytes starting ",
                          HexPrefix(data, size),
                          "); expected BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP");
  }
  if (!s.ok()) {
    return Status(s.code(), StrCat("cannot decode ", ImageFormatName(format), " image (", size,
                                   " bytes): ", s.message()));
  }
  if (img->channels != 1 && img->channels != 3) {  // decoder contract
    return RuntimeError(ImageFormatName(format), " decoder produced ", img->channels, " channels");
  }
  return Status::Ok();
}

void ConvertImage(const DecodedImage& img, PixelFormat format, uint8_t* dst) {
  const int64_t n = img.height * img.width;
  const uint8_t* src = img.pixels.get();
  if (format == PixelFormat::kGrayscale) {
    if (img.channels == 1) {
      std::memcpy(dst, src, static_cast<size_t>(n));
    } else {
      for (int64_t i = 0; i < n; ++i, src += 3) dst[i] = RgbToLuma(src[0], src[1], src[2]);
    }
    return;
  }
  const bool bgr = format == PixelFormat::kBgr;
  for (int64_t i = 0; i < n; ++i, dst += 3) {
    if (img.channels == 1) {
      dst[0] = dst[1] = dst[2] = src[i];
    } else {
      const uint8_t* p = src + 3 * i;
      dst[0] = p[bgr ? 2 : 0];
      dst[1] = p[1];
      dst[2] = p[bgr ? 0 : 2];
    }
  }
}

}  // namespace onyx::kernels::reference

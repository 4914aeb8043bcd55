// ImageDecoder reference: TIFF through libtiff, first directory (page) only. 8-bit RGB and
// min-is-black gray strips are read as stored (alpha dropped, not premultiplied, as Pillow keeps
// it); every other layout (palette, 1-16 bit, YCbCr, CMYK, tiles, planar) goes through libtiff's
// RGBA interface. libtiff reports errors by return value; its messages are captured per handle
// (TIFFOpenOptions), so decoding is thread safe and prints nothing.
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

// Largest single allocation libtiff may make for one strip, tile or table.
constexpr tmsize_t kMaxTiffAllocation = tmsize_t{1} << 30;

// The encoded bytes as a read-only libtiff "file", plus the first error libtiff reported.
struct TiffSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char message[512] = {};
};

tmsize_t TiffRead(thandle_t handle, void* buf, tmsize_t n) {
  auto* src = static_cast<TiffSource*>(handle);
  if (n <= 0 || src->pos >= src->size) return 0;
  const size_t count = std::min(static_cast<size_t>(n), src->size - src->pos);
  std::memcpy(buf, src->data + src->pos, count);
  src->pos += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t TiffWrite(thandle_t, void*, tmsize_t) {
  return -1;
}  // read only

toff_t TiffSeek(thandle_t handle, toff_t offset, int whence) {
  auto* src = static_cast<TiffSource*>(handle);
  uint64_t base = 0;
  if (whence == SEEK_CUR) base = src->pos;
  if (whence == SEEK_END) base = src->size;
  const uint64_t target = base + offset;  // offsets past the end are allowed; reads return 0
  if (target < base && whence != SEEK_SET) return static_cast<toff_t>(-1);
  src->pos = static_cast<size_t>(std::min<uint64_t>(target, SIZE_MAX));
  return target;
}

int TiffClose(thandle_t) {
  return 0;
}
toff_t TiffSize(thandle_t handle) {
  return static_cast<TiffSource*>(handle)->size;
}
int TiffMap(thandle_t, void**, toff_t*) {
  return 0;
}  // no mapping: reads go through TiffRead
void TiffUnmap(thandle_t, void*, toff_t) {}

// Keeps the first error message; returning 1 stops libtiff from also calling the global handler.
int TiffErrorHandler(TIFF*, void* user_data, const char* module, const char* fmt, va_list ap) {
  auto* src = static_cast<TiffSource*>(user_data);
  if (src->message[0] == '\0') {
    char text[400];
    std::vsnprintf(text, sizeof(text), fmt, ap);
    std::snprintf(src->message, sizeof(src->message), "%s%s%s", module ? module : "",
                  module ? ": " : "", text);
  }
  return 1;
}

int TiffWarningHandler(TIFF*, void*, const char*, const char*, va_list) {
  return 1;
}

struct TiffCloser {
  void operator()(TIFF* tif) const { TIFFClose(tif); }
};
struct TiffOptionsDeleter {
  void operator()(TIFFOpenOptions* opts) const { TIFFOpenOptionsFree(opts); }
};

Status TiffError(const TiffSource& src, const char* what) {
  return src.message[0] ? RuntimeError(what, ": ", src.message) : RuntimeError(what);
}

}  // namespace

Status DecodeTiff(const uint8_t* data, size_t size, DecodedImage* img) {
  TiffSource src;
  src.data = data;
  src.size = size;
  std::unique_ptr<TIFFOpenOptions, TiffOptionsDeleter> opts(TIFFOpenOptionsAlloc());
  if (!opts) return RuntimeError("libtiff could not allocate open options");
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), TiffErrorHandler, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), TiffWarningHandler, &src);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), kMaxTiffAllocation);
  // "m": never memory-map (there is no file).
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFClientOpenExt("ImageDecoder", "rm", &src, TiffRead,
                                                          TiffWrite, TiffSeek, TiffClose, TiffSize,
                                                          TiffMap, TiffUnmap, opts.get()));
  if (!tif) return TiffError(src, "cannot read the TIFF header or first directory");

  uint32_t width = 0, height = 0;
  uint16_t bits = 1, samples = 1, photometric = PHOTOMETRIC_MINISWHITE,
           planar = PLANARCONFIG_CONTIG;
  uint16_t extra_count = 0;
  uint16_t* extra_types = nullptr;
  if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width) ||
      !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height)) {
    return TiffError(src, "the first directory has no image width or length");
  }
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_EXTRASAMPLES, &extra_count, &extra_types);
  const bool has_photometric = TIFFGetField(tif.get(), TIFFTAG_PHOTOMETRIC, &photometric);
  const int color_samples = samples > extra_count ? samples - extra_count : samples;
  const bool gray =
      has_photometric && color_samples == 1 &&
      (photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE);
  const int channels = gray ? 1 : 3;
  ONYX_RETURN_IF_ERROR(AllocateImage("TIFF", width, height, channels, img));
  uint8_t* dst = img->pixels.get();

  // Stored 8-bit RGB / min-is-black strips: copy the colour samples, skip the extra ones.
  const bool direct = has_photometric && bits == 8 && planar == PLANARCONFIG_CONTIG &&
                      !TIFFIsTiled(tif.get()) &&
                      ((photometric == PHOTOMETRIC_RGB && samples >= 3) ||
                       (photometric == PHOTOMETRIC_MINISBLACK && gray));
  if (direct) {
    const tmsize_t line_size = TIFFScanlineSize(tif.get());
    if (line_size < static_cast<tmsize_t>(width) * samples) {
      return TiffError(src, "scanline size is smaller than width x samples");
    }
    std::vector<uint8_t> line(static_cast<size_t>(line_size));
    for (uint32_t y = 0; y < height; ++y) {
      if (TIFFReadScanline(tif.get(), line.data(), y) < 0) {
        return TiffError(src, "cannot read scanline (corrupt or truncated data)");
      }
      for (uint32_t x = 0; x < width; ++x) {
        for (int c = 0; c < channels; ++c) *dst++ = line[size_t{x} * samples + c];
      }
    }
    return Status::Ok();
  }

  char why[1024] = {};
  if (!TIFFRGBAImageOK(tif.get(), why)) {
    return Unsupported("layout not supported by libtiff's RGBA reader: ", why);
  }
  // Packed ABGR words (TIFFGetR/G/B), top row first; libtiff writes every word on success.
  const size_t count = size_t{width} * height;
  std::unique_ptr<uint32_t[]> raster(new (std::nothrow) uint32_t[count]);
  if (!raster) return RuntimeError("out of memory for a ", width, "x", height, " RGBA raster");
  if (!TIFFReadRGBAImageOriented(tif.get(), width, height, raster.get(), ORIENTATION_TOPLEFT,
                                 /*stop_on_error=*/1)) {
    return TiffError(src, "cannot decode image data (corrupt or truncated)");
  }
  for (size_t i = 0; i < count; ++i) {
    const uint32_t word = raster[i];
    *dst++ = static_cast<uint8_t>(TIFFGetR(word));
    if (!gray) {
      *dst++ = static_cast<uint8_t>(TIFFGetG(word));
      *dst++ = static_cast<uint8_t>(TIFFGetB(word));
    }
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::reference

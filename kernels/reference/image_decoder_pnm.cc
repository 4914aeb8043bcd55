// ImageDecoder reference: Netpbm parser for PBM, PGM and PPM in plain (P1-P3) and raw (P4-P6)
// form. Samples with maxval != 255 are rescaled to 0..255 (round half to even, like Pillow's
// round()); 16-bit raw samples are big-endian. Every read is bounds checked.
#include <cstring>

#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

constexpr int64_t kMaxSampleValue = 65535;  // Netpbm: 0 < maxval < 65536

bool IsSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
bool IsDigit(uint8_t c) {
  return c >= '0' && c <= '9';
}

// A cursor over the file that skips whitespace and '#' comments between tokens.
class PnmReader {
 public:
  PnmReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  void set_pos(size_t p) { pos_ = p; }

  void SkipSpaceAndComments() {
    while (pos_ < size_) {
      if (IsSpace(data_[pos_])) {
        ++pos_;
      } else if (data_[pos_] == '#') {
        while (pos_ < size_ && data_[pos_] != '\n' && data_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  // A decimal number no larger than `limit`; false at end of data, on junk or when too large.
  bool ReadNumber(int64_t limit, int64_t* value) {
    SkipSpaceAndComments();
    if (pos_ >= size_ || !IsDigit(data_[pos_])) return false;
    int64_t v = 0;
    while (pos_ < size_ && IsDigit(data_[pos_])) {
      v = v * 10 + (data_[pos_++] - '0');
      if (v > limit) return false;
    }
    *value = v;
    return true;
  }

  // One '0' or '1' of a plain PBM raster; digits need not be separated.
  bool ReadBit(int64_t* value) {
    SkipSpaceAndComments();
    if (pos_ >= size_ || (data_[pos_] != '0' && data_[pos_] != '1')) return false;
    *value = data_[pos_++] - '0';
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// value * 255 / maxval rounded half to even.
uint8_t Rescale(int64_t value, int64_t maxval) {
  if (maxval == 255) return static_cast<uint8_t>(value);
  const int64_t num = value * 255;
  int64_t q = num / maxval;
  const int64_t twice_r = 2 * (num % maxval);
  if (twice_r > maxval || (twice_r == maxval && (q & 1))) ++q;
  return static_cast<uint8_t>(q);
}

}  // namespace

Status DecodePnm(const uint8_t* data, size_t size, DecodedImage* img) {
  const char kind = static_cast<char>(data[1]);
  const bool bitmap = kind == '1' || kind == '4';
  const bool plain = kind <= '3';
  const int channels = (kind == '3' || kind == '6') ? 3 : 1;

  PnmReader reader(data, size);
  reader.set_pos(2);
  int64_t width = 0, height = 0, maxval = 1;
  if (!reader.ReadNumber(kMaxImagePixels, &width) || !reader.ReadNumber(kMaxImagePixels, &height)) {
    return RuntimeError("header has no valid width and height");
  }
  if (!bitmap && (!reader.ReadNumber(kMaxSampleValue, &maxval) || maxval == 0)) {
    return RuntimeError("header has no valid maxval (1..", kMaxSampleValue, ")");
  }
  if (width <= 0 || height <= 0) {
    return RuntimeError("invalid image size ", width, "x", height);
  }
  // Raw rasters start after exactly one whitespace byte following the header.
  size_t raster = reader.pos();
  if (!plain) {
    if (raster >= size || !IsSpace(data[raster])) {
      return RuntimeError("header is not followed by whitespace and raster data");
    }
    ++raster;
    const int64_t sample_bytes = maxval < 256 ? 1 : 2;
    const int64_t row_bytes = bitmap ? (width + 7) / 8 : width * channels * sample_bytes;
    if (static_cast<int64_t>((size - raster) / row_bytes) < height) {
      return RuntimeError("raster is truncated: ", height, " rows of ", row_bytes, " bytes need ",
                          height * row_bytes, ", ", size - raster, " bytes remain");
    }
  }
  ONYX_RETURN_IF_ERROR(AllocateImage("PNM", width, height, channels, img));
  uint8_t* dst = img->pixels.get();
  const int64_t count = width * height * channels;

  if (plain) {
    reader.set_pos(raster);
    for (int64_t i = 0; i < count; ++i) {
      int64_t v = 0;
      const bool ok = bitmap ? reader.ReadBit(&v) : reader.ReadNumber(maxval, &v);
      if (!ok) {
        return RuntimeError("plain raster ends or has a bad sample (above maxval ", maxval,
                            "?) at sample ", i, " of ", count);
      }
      dst[i] = bitmap ? (v ? 0 : 255) : Rescale(v, maxval);  // PBM: 1 is black
    }
    return Status::Ok();
  }

  const uint8_t* src = data + raster;
  if (bitmap) {
    const int64_t row_bytes = (width + 7) / 8;
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        const bool black = (src[y * row_bytes + x / 8] >> (7 - x % 8)) & 1;
        dst[y * width + x] = black ? 0 : 255;
      }
    }
    return Status::Ok();
  }
  for (int64_t i = 0; i < count; ++i) {
    const int64_t v = maxval < 256 ? src[i] : (src[2 * i] << 8) | src[2 * i + 1];
    if (v > maxval) {
      return RuntimeError("sample ", i, " is ", v, ", above maxval ", maxval);
    }
    dst[i] = Rescale(v, maxval);
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::reference

// ImageDecoder reference: BMP (Windows bitmap) parser. Handles BITMAPCOREHEADER (OS/2 1.x), the
// BITMAPINFOHEADER family (V2-V5, OS/2 2.x), 1/2/4/8-bit palettes, 16/24/32-bit direct colour
// (BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS) and RLE8/RLE4. Alpha is dropped. Every read is bounds
// checked against the buffer; a file that ends early is an error.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

constexpr size_t kFileHeaderSize = 14;
constexpr uint32_t kCoreHeaderSize = 12;   // BITMAPCOREHEADER: 16-bit dims, 3-byte palette
constexpr uint32_t kInfoHeaderSize = 40;   // BITMAPINFOHEADER
constexpr uint32_t kOs2V2HeaderSize = 64;  // OS/2 2.x reuses compression 3/4 for Huffman/RLE24

// Compression codes of the BITMAPINFOHEADER family.
constexpr uint32_t kBiRgb = 0;
constexpr uint32_t kBiRle8 = 1;
constexpr uint32_t kBiRle4 = 2;
constexpr uint32_t kBiBitfields = 3;
constexpr uint32_t kBiAlphaBitfields = 6;

uint32_t U16(const uint8_t* p) {
  return p[0] | (p[1] << 8);
}
uint32_t U32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
int64_t I32(const uint8_t* p) {
  return static_cast<int32_t>(U32(p));
}

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// One channel of a BI_BITFIELDS pixel: the masked bits scaled to 0..255 the way Pillow unpacks
// 15/16-bit BMPs (v * 255 / max, truncating).
struct ChannelMask {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;  // mask >> shift; 0 for an absent channel
  explicit ChannelMask(uint32_t m = 0) : mask(m) {
    if (m == 0) return;
    while (((m >> shift) & 1u) == 0) ++shift;
    max = m >> shift;
  }
  uint8_t Extract(uint32_t pixel) const {
    if (max == 0) return 0;
    const uint64_t v = (pixel & mask) >> shift;
    return static_cast<uint8_t>(max == 255 ? v : v * 255 / max);
  }
};

struct BmpInfo {
  int64_t width = 0;
  int64_t height = 0;  // positive; `top_down` holds the sign
  bool top_down = false;
  uint32_t bpp = 0;
  uint32_t compression = kBiRgb;
  ChannelMask red, green, blue;
  std::vector<Rgb> palette;
};

// Fills the palette indices of an RLE8/RLE4 bitmap; `indices` is width * height in file row order
// (row 0 first in the file). Pixels a delta skips stay index 0.
Status DecodeRle(const uint8_t* data, size_t size, size_t pos, const BmpInfo& info,
                 std::vector<uint8_t>* indices) {
  const bool rle4 = info.compression == kBiRle4;
  int64_t x = 0, row = 0;
  auto put = [&](uint8_t index) {
    if (x < info.width && row < info.height) (*indices)[row * info.width + x] = index;
    ++x;
  };
  while (row < info.height) {
    if (pos + 2 > size) {
      // Some writers omit the end-of-bitmap marker after the last row; anything earlier is lost.
      if (row == info.height - 1 && x >= info.width) return Status::Ok();
      return RuntimeError("RLE data ends at row ", row, " of ", info.height, " (truncated file)");
    }
    const uint32_t count = data[pos], value = data[pos + 1];
    pos += 2;
    if (count > 0) {  // encoded run
      for (uint32_t i = 0; i < count; ++i) {
        put(rle4 ? static_cast<uint8_t>(i % 2 == 0 ? value >> 4 : value & 0xf)
                 : static_cast<uint8_t>(value));
      }
      continue;
    }
    if (value == 0) {  // end of line
      x = 0;
      ++row;
    } else if (value == 1) {  // end of bitmap
      return Status::Ok();
    } else if (value == 2) {  // delta: move right dx, up dy rows
      if (pos + 2 > size) return RuntimeError("RLE delta is truncated");
      x += data[pos];
      row += data[pos + 1];
      pos += 2;
    } else {  // absolute run of `value` literal indices, padded to a 16-bit boundary
      const size_t bytes = rle4 ? (value + 1) / 2 : value;
      const size_t padded = (bytes + 1) & ~size_t{1};
      if (pos + bytes > size) return RuntimeError("RLE literal run is truncated");
      for (uint32_t i = 0; i < value; ++i) {
        const uint8_t b = data[pos + (rle4 ? i / 2 : i)];
        put(rle4 ? static_cast<uint8_t>(i % 2 == 0 ? b >> 4 : b & 0xf) : b);
      }
      pos += padded;
    }
  }
  return Status::Ok();
}

}  // namespace

Status DecodeBmp(const uint8_t* data, size_t size, DecodedImage* img) {
  if (size < kFileHeaderSize + 4) return RuntimeError("file header is truncated");
  const uint32_t pixel_offset = U32(data + 10);
  const uint32_t dib_size = U32(data + 14);
  if (dib_size < kCoreHeaderSize || dib_size > size - kFileHeaderSize) {
    return RuntimeError("DIB header size ", dib_size, " is invalid or exceeds the file (", size,
                        " bytes)");
  }
  const uint8_t* h = data + kFileHeaderSize;
  BmpInfo info;
  size_t palette_entry = 4;  // BGRX quads; BITMAPCOREHEADER uses BGR triples
  if (dib_size == kCoreHeaderSize) {
    info.width = U16(h + 4);
    info.height = U16(h + 6);
    info.bpp = U16(h + 10);
    palette_entry = 3;
  } else {
    if (dib_size < 16) return RuntimeError("DIB header size ", dib_size, " is invalid");
    info.width = I32(h + 4);
    info.height = I32(h + 8);
    info.bpp = U16(h + 14);
    if (dib_size >= 20) info.compression = U32(h + 16);
  }
  if (info.height < 0) {
    info.top_down = true;
    info.height = -info.height;
  }
  if (info.bpp != 1 && info.bpp != 2 && info.bpp != 4 && info.bpp != 8 && info.bpp != 16 &&
      info.bpp != 24 && info.bpp != 32) {
    return RuntimeError("unsupported bit depth ", info.bpp);
  }
  if (dib_size == kOs2V2HeaderSize && (info.compression == 3 || info.compression == 4)) {
    return Unsupported("OS/2 Huffman and RLE24 compression are not supported");
  }
  const bool bitfields = info.compression == kBiBitfields || info.compression == kBiAlphaBitfields;
  const bool rle = info.compression == kBiRle8 || info.compression == kBiRle4;
  if (info.compression != kBiRgb && !bitfields && !rle) {
    return Unsupported("compression ", info.compression,
                       " (embedded JPEG/PNG or unknown) is not supported");
  }
  if ((info.compression == kBiRle8 && info.bpp != 8) ||
      (info.compression == kBiRle4 && info.bpp != 4)) {
    return RuntimeError("compression ", info.compression, " does not match bit depth ", info.bpp);
  }
  if (bitfields && info.bpp != 16 && info.bpp != 32) {
    return RuntimeError("bitfields need 16 or 32 bits per pixel, got ", info.bpp);
  }

  // Channel masks: inside V2+ headers, or right after a 40-byte header for (ALPHA)BITFIELDS.
  size_t header_end = kFileHeaderSize + dib_size;
  if (bitfields) {
    const uint8_t* masks = h + kInfoHeaderSize;
    if (dib_size == kInfoHeaderSize) {
      const size_t n = info.compression == kBiAlphaBitfields ? 16 : 12;
      if (header_end + n > size) return RuntimeError("colour masks are truncated");
      header_end += n;
    } else if (dib_size < kInfoHeaderSize + 12) {
      return RuntimeError("DIB header size ", dib_size, " has no room for colour masks");
    }
    info.red = ChannelMask(U32(masks));
    info.green = ChannelMask(U32(masks + 4));
    info.blue = ChannelMask(U32(masks + 8));
  } else if (info.bpp == 16) {  // BI_RGB 16-bit is X1R5G5B5
    info.red = ChannelMask(0x7c00);
    info.green = ChannelMask(0x03e0);
    info.blue = ChannelMask(0x001f);
  } else if (info.bpp == 32) {  // BI_RGB 32-bit is BGRX
    info.red = ChannelMask(0xff0000);
    info.green = ChannelMask(0x00ff00);
    info.blue = ChannelMask(0x0000ff);
  }

  if (info.bpp <= 8) {
    const uint32_t colors_used = dib_size >= 36 ? U32(h + 32) : 0;
    const uint32_t max_colors = 1u << info.bpp;
    const uint32_t count = colors_used == 0 || colors_used > max_colors ? max_colors : colors_used;
    if (header_end + size_t{count} * palette_entry > size) {
      return RuntimeError("palette of ", count, " colours is truncated");
    }
    info.palette.resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t* p = data + header_end + i * palette_entry;
      info.palette[i] = Rgb{p[2], p[1], p[0]};
    }
  }

  if (pixel_offset >= size) {
    return RuntimeError("pixel data offset ", pixel_offset, " is past the end of the file (", size,
                        " bytes)");
  }
  if (info.width <= 0 || info.height <= 0 || info.width > kMaxImagePixels ||
      info.height > kMaxImagePixels) {
    return RuntimeError("invalid image size ", info.width, "x", info.height);
  }
  // Rows are padded to 4 bytes; uncompressed data must all be present.
  const int64_t stride = (info.width * info.bpp + 31) / 32 * 4;
  if (!rle && (size - pixel_offset) / stride < static_cast<size_t>(info.height)) {
    return RuntimeError("pixel data is truncated: ", info.height, " rows of ", stride,
                        " bytes need ", info.height * stride, " bytes from offset ", pixel_offset,
                        ", the file has ", size);
  }
  ONYX_RETURN_IF_ERROR(AllocateImage("BMP", info.width, info.height, 3, img));

  std::vector<uint8_t> rle_indices;
  if (rle) {
    rle_indices.assign(static_cast<size_t>(info.width * info.height), 0);
    ONYX_RETURN_IF_ERROR(DecodeRle(data, size, pixel_offset, info, &rle_indices));
  }
  const Rgb kBlack;
  auto palette_color = [&](uint32_t index) -> const Rgb& {
    return index < info.palette.size() ? info.palette[index] : kBlack;  // out of range: black
  };
  for (int64_t row = 0; row < info.height; ++row) {
    const int64_t y = info.top_down ? row : info.height - 1 - row;
    uint8_t* dst = img->pixels.get() + y * info.width * 3;
    const uint8_t* src = data + pixel_offset + row * stride;  // valid only when !rle
    for (int64_t x = 0; x < info.width; ++x, dst += 3) {
      Rgb c;
      if (rle) {
        c = palette_color(rle_indices[row * info.width + x]);
      } else if (info.bpp <= 8) {  // packed indices, most significant bits first
        const int64_t bit = x * info.bpp;
        const uint32_t byte = src[bit / 8];
        const uint32_t shift = 8 - info.bpp - static_cast<uint32_t>(bit % 8);
        c = palette_color((byte >> shift) & ((1u << info.bpp) - 1));
      } else if (info.bpp == 24) {
        const uint8_t* p = src + x * 3;
        c = Rgb{p[2], p[1], p[0]};
      } else {
        const uint8_t* p = src + x * (info.bpp / 8);
        const uint32_t pixel = info.bpp == 16 ? U16(p) : U32(p);
        c = Rgb{info.red.Extract(pixel), info.green.Extract(pixel), info.blue.Extract(pixel)};
      }
      dst[0] = c.r;
      dst[1] = c.g;
      dst[2] = c.b;
    }
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::reference

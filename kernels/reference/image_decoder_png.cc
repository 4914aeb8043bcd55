// ImageDecoder reference: PNG through libpng. Like Pillow: no gamma correction, 16-bit samples
// keep their high byte; palettes expand to RGB, low-bit gray to 8 bits; alpha (and tRNS) dropped.
//
// libpng reports fatal errors through the error callback, which must not return; we longjmp back
// to RunPng. Per C++ [csetjmp.syn] the frames the jump skips (DecodePngBody, libpng's) hold no
// C++ object with a destructor while libpng runs.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

// Owns everything the setjmp in RunPng protects. It lives in DecodePng's frame, not RunPng's, so
// its contents stay determinate after a longjmp (C11 7.13.2.1).
struct PngState {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;  // next byte libpng reads
  png_structp png = nullptr;
  png_infop info = nullptr;
  char message[256] = {};  // libpng's error, or ours
};

void PngRead(png_structp png, png_bytep out, size_t n) {
  auto* st = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > st->size - st->pos) png_error(png, "unexpected end of data (truncated file)");
  std::memcpy(out, st->data + st->pos, n);
  st->pos += n;
}

[[noreturn]] void PngError(png_structp png, png_const_charp message) {
  auto* st = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(st->message, sizeof(st->message), "%s", message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}  // benign: libpng carries on

// Everything libpng may longjmp out of. Returns false with st->message set for errors found here.
bool DecodePngBody(PngState* st, DecodedImage* img) {
  png_structp png = st->png;
  png_infop info = st->info;
  png_set_read_fn(png, st, PngRead);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16) png_set_strip_16(png);
  png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);

  const int channels = png_get_channels(png, info);
  if ((channels != 1 && channels != 3) || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != size_t{width} * channels) {
    std::snprintf(st->message, sizeof(st->message),
                  "unexpected layout after expansion (%d channels, %d bits)", channels,
                  png_get_bit_depth(png, info));
    return false;
  }
  {
    Status s = AllocateImage("PNG", width, height, channels, img);
    if (!s.ok()) {
      std::snprintf(st->message, sizeof(st->message), "%s", s.message().c_str());
      return false;
    }
  }
  // Row by row (each pass over all rows for Adam7): libpng fills in each pass's pixels.
  const size_t row_bytes = size_t{width} * channels;
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < height; ++y) {
      png_read_row(png, img->pixels.get() + y * row_bytes, nullptr);
    }
  }
  // The image data is complete; chunks after IDAT (and IEND) are not needed.
  return true;
}

bool RunPng(PngState* st, DecodedImage* img) {
  if (setjmp(png_jmpbuf(st->png))) return false;
  return DecodePngBody(st, img);
}

}  // namespace

Status DecodePng(const uint8_t* data, size_t size, DecodedImage* img) {
  PngState st;
  st.data = data;
  st.size = size;
  st.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, PngError, PngWarning);
  if (st.png == nullptr) return RuntimeError("libpng could not create a read struct");
  st.info = png_create_info_struct(st.png);
  if (st.info == nullptr) {
    png_destroy_read_struct(&st.png, nullptr, nullptr);
    return RuntimeError("libpng could not create an info struct");
  }
  const bool ok = RunPng(&st, img);
  png_destroy_read_struct(&st.png, &st.info, nullptr);
  if (ok) return Status::Ok();
  return RuntimeError(st.message);
}

}  // namespace onyx::kernels::reference

// ImageDecoder reference: JPEG 2000 (JP2 files and raw J2K codestreams) through openjp2, in
// strict mode so truncated codestreams are errors. Samples map to 8 bits as Pillow's j2k
// unpacker does: signed samples are offset by 2^(prec-1), then shifted by (8 - prec) bits.
// One or two components are gray (+alpha), three or more RGB(+alpha); sYCC is converted to RGB.
#include <openjpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

constexpr OPJ_UINT32 kMaxPrecision = 31;

// The encoded bytes as an openjp2 input stream, plus the first error openjp2 reported.
struct J2kSource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  std::string message;
};

OPJ_SIZE_T J2kRead(void* buf, OPJ_SIZE_T n, void* user) {
  auto* src = static_cast<J2kSource*>(user);
  if (src->pos >= src->size) return static_cast<OPJ_SIZE_T>(-1);  // end of stream
  const size_t count = std::min(static_cast<size_t>(n), src->size - src->pos);
  std::memcpy(buf, src->data + src->pos, count);
  src->pos += count;
  return count;
}

OPJ_OFF_T J2kSkip(OPJ_OFF_T n, void* user) {
  auto* src = static_cast<J2kSource*>(user);
  if (n < 0) {
    if (static_cast<uint64_t>(-n) > src->pos) return -1;
  } else if (static_cast<uint64_t>(n) > src->size - src->pos) {
    src->pos = src->size;
    return -1;
  }
  src->pos = static_cast<size_t>(static_cast<OPJ_OFF_T>(src->pos) + n);
  return n;
}

OPJ_BOOL J2kSeek(OPJ_OFF_T offset, void* user) {
  auto* src = static_cast<J2kSource*>(user);
  if (offset < 0 || static_cast<uint64_t>(offset) > src->size) return OPJ_FALSE;
  src->pos = static_cast<size_t>(offset);
  return OPJ_TRUE;
}

void J2kError(const char* msg, void* user) {
  auto* src = static_cast<J2kSource*>(user);
  if (!src->message.empty()) return;
  src->message = msg;
  while (!src->message.empty() && (src->message.back() == '\n' || src->message.back() == ' ')) {
    src->message.pop_back();
  }
}
void J2kQuiet(const char*, void*) {}

struct StreamDeleter {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct CodecDeleter {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct ImageDeleter {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};

Status J2kFailure(const J2kSource& src, const char* what) {
  return src.message.empty() ? RuntimeError(what) : RuntimeError(what, ": ", src.message);
}

// Reads component `comp` at image pixel (x, y) as an 8-bit value. Subsampled components (dx, dy
// > 1) are sampled at the nearest stored position.
uint8_t Sample(const opj_image_t& image, const opj_image_comp_t& comp, int64_t x, int64_t y) {
  const int64_t cx = std::clamp<int64_t>((image.x0 + x) / comp.dx - comp.x0, 0, comp.w - 1);
  const int64_t cy = std::clamp<int64_t>((image.y0 + y) / comp.dy - comp.y0, 0, comp.h - 1);
  int64_t v = comp.data[cy * comp.w + cx];
  if (comp.sgnd) v += int64_t{1} << (comp.prec - 1);
  v = std::clamp<int64_t>(v, 0, (int64_t{1} << comp.prec) - 1);
  return static_cast<uint8_t>(comp.prec >= 8 ? v >> (comp.prec - 8) : v << (8 - comp.prec));
}

uint8_t ClampToByte(double v) {
  return static_cast<uint8_t>(std::clamp(std::lround(v), 0l, 255l));
}

}  // namespace

Status DecodeJpeg2000(const uint8_t* data, size_t size, DecodedImage* img) {
  J2kSource src;
  src.data = data;
  src.size = size;
  const bool codestream = size >= 2 && data[0] == 0xff && data[1] == 0x4f;
  std::unique_ptr<opj_codec_t, CodecDeleter> codec(
      opj_create_decompress(codestream ? OPJ_CODEC_J2K : OPJ_CODEC_JP2));
  std::unique_ptr<opj_stream_t, StreamDeleter> stream(
      opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE));
  if (!codec || !stream) return RuntimeError("openjp2 could not create a decoder");
  opj_set_error_handler(codec.get(), J2kError, &src);
  opj_set_warning_handler(codec.get(), J2kQuiet, nullptr);
  opj_set_info_handler(codec.get(), J2kQuiet, nullptr);
  opj_stream_set_user_data(stream.get(), &src, nullptr);
  opj_stream_set_user_data_length(stream.get(), size);
  opj_stream_set_read_function(stream.get(), J2kRead);
  opj_stream_set_skip_function(stream.get(), J2kSkip);
  opj_stream_set_seek_function(stream.get(), J2kSeek);

  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec.get(), &params)) return J2kFailure(src, "decoder setup failed");
  opj_decoder_set_strict_mode(codec.get(), OPJ_TRUE);  // truncated codestreams are errors

  opj_image_t* raw_image = nullptr;
  const bool header_ok = opj_read_header(stream.get(), codec.get(), &raw_image);
  std::unique_ptr<opj_image_t, ImageDeleter> image(raw_image);
  if (!header_ok || !image) return J2kFailure(src, "cannot read the header");
  if (image->numcomps == 0 || image->x1 <= image->x0 || image->y1 <= image->y0) {
    return RuntimeError("header describes an empty image");
  }
  const int64_t width = int64_t{image->x1} - image->x0;
  const int64_t height = int64_t{image->y1} - image->y0;
  const int channels = image->numcomps >= 3 ? 3 : 1;
  // Checks the size before openjp2 allocates the components.
  ONYX_RETURN_IF_ERROR(AllocateImage("JPEG 2000", width, height, channels, img));
  if (!opj_decode(codec.get(), stream.get(), image.get()) ||
      !opj_end_decompress(codec.get(), stream.get())) {
    return J2kFailure(src, "cannot decode image data (corrupt or truncated)");
  }
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (comp.data == nullptr || comp.w == 0 || comp.h == 0 || comp.dx == 0 || comp.dy == 0) {
      return RuntimeError("component ", c, " was not decoded");
    }
    if (comp.prec == 0 || comp.prec > kMaxPrecision) {
      return RuntimeError("component ", c, " has unsupported precision ", comp.prec);
    }
  }

  const bool sycc = channels == 3 && image->color_space == OPJ_CLRSPC_SYCC;
  uint8_t* dst = img->pixels.get();
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      if (channels == 1) {
        *dst++ = Sample(*image, image->comps[0], x, y);
        continue;
      }
      const uint8_t a = Sample(*image, image->comps[0], x, y);
      const uint8_t b = Sample(*image, image->comps[1], x, y);
      const uint8_t c = Sample(*image, image->comps[2], x, y);
      if (!sycc) {
        *dst++ = a;
        *dst++ = b;
        *dst++ = c;
        continue;
      }
      // Full-range YCbCr (ITU-R BT.601, as JFIF) to RGB.
      const double yy = a, cb = b - 128.0, cr = c - 128.0;
      *dst++ = ClampToByte(yy + 1.402 * cr);
      *dst++ = ClampToByte(yy - 0.344136 * cb - 0.714136 * cr);
      *dst++ = ClampToByte(yy + 1.772 * cb);
    }
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::reference

// ImageDecoder reference: JPEG through libjpeg(-turbo), the decoder Pillow uses: integer slow DCT
// and "fancy" (triangle-filter) chroma upsampling, as the ImageDecoder spec describes.
//
// libjpeg reports fatal errors through error_exit, which must not return; we longjmp back to
// RunJpeg. Per C++ [csetjmp.syn] that is only defined when the jump skips no non-trivial
// destructor, so the frames it skips (DecodeJpegBody, libjpeg's) hold no C++ object with a
// destructor while libjpeg runs.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include "kernels/reference/image_decoder.h"

extern "C" {
#include <jerror.h>
#include <jpeglib.h>
}

namespace onyx::kernels::reference {
namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg hands back cinfo->err, cast to this struct
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// libjpeg treats running out of data as a warning and pads the image with gray; for us a
// truncated stream is an error. Other warnings (corrupt-data resyncs) are counted, not printed.
void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) JpegErrorExit(cinfo);
  cinfo->err->num_warnings++;
}

// Pillow's MULDIV255: a * b / 255, rounded.
uint8_t MulDiv255(uint32_t a, uint32_t b) {
  const uint32_t t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

// CMYK -> RGB as Pillow's cmyk2rgb: R = (255 - K) - C * (255 - K) / 255. Adobe JPEGs store the
// four channels inverted.
void CmykRowToRgb(const uint8_t* src, int64_t width, bool inverted, uint8_t* dst) {
  for (int64_t x = 0; x < width; ++x, src += 4, dst += 3) {
    const uint32_t k = inverted ? 255 - src[3] : src[3];
    const uint32_t nk = 255 - k;
    for (int c = 0; c < 3; ++c) {
      const uint32_t v = inverted ? 255 - src[c] : src[c];
      dst[c] = static_cast<uint8_t>(nk - MulDiv255(v, nk));
    }
  }
}

// Everything libjpeg may longjmp out of. Returns false with *status set for errors found here;
// libjpeg's own errors longjmp to RunJpeg instead.
bool DecodeJpegBody(j_decompress_ptr cinfo, const uint8_t* data, size_t size, DecodedImage* img,
                    Status* status) {
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  bool cmyk = false;
  int channels = 3;
  switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
      cinfo->out_color_space = JCS_GRAYSCALE;
      channels = 1;
      break;
    case JCS_CMYK:
    case JCS_YCCK:  // libjpeg converts YCCK to CMYK; we convert CMYK to RGB
      cinfo->out_color_space = JCS_CMYK;
      cmyk = true;
      break;
    default:
      cinfo->out_color_space = JCS_RGB;
      break;
  }
  {
    // Before jpeg_start_decompress, which allocates whole-image buffers for progressive files.
    Status s = CheckImageSize("JPEG", cinfo->image_width, cinfo->image_height);
    if (!s.ok()) {
      *status = s;
      return false;
    }
  }
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(cinfo);
  {
    Status s = AllocateImage("JPEG", cinfo->output_width, cinfo->output_height, channels, img);
    if (!s.ok()) {
      *status = s;
      return false;
    }
  }
  const int64_t width = cinfo->output_width;
  // CMYK rows go through a scratch row owned by libjpeg's pool (freed with cinfo).
  JSAMPARRAY cmyk_row = cmyk ? (*cinfo->mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(cinfo),
                                                           JPOOL_IMAGE, cinfo->output_width * 4, 1)
                             : nullptr;
  while (cinfo->output_scanline < cinfo->output_height) {
    uint8_t* dst = img->pixels.get() + int64_t{cinfo->output_scanline} * width * channels;
    JSAMPROW row = cmyk ? cmyk_row[0] : dst;
    if (jpeg_read_scanlines(cinfo, &row, 1) != 1) {
      *status = RuntimeError("no scanline returned at row ", cinfo->output_scanline);
      return false;
    }
    if (cmyk) CmykRowToRgb(cmyk_row[0], width, cinfo->saw_Adobe_marker, dst);
  }
  // Every scanline is decoded; a missing EOI marker after them is harmless, so stop here rather
  // than jpeg_finish_decompress (which would fail on it).
  return true;
}

// Owns everything the setjmp in RunJpeg protects. It lives in DecodeJpeg's frame, not RunJpeg's,
// so its contents stay determinate after a longjmp (C11 7.13.2.1).
struct JpegState {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  Status status;  // errors found by our code (libjpeg's own go to err.message)
};

bool RunJpeg(JpegState* st, const uint8_t* data, size_t size, DecodedImage* img) {
  if (setjmp(st->err.jump)) return false;
  jpeg_create_decompress(&st->cinfo);
  return DecodeJpegBody(&st->cinfo, data, size, img, &st->status);
}

}  // namespace

Status DecodeJpeg(const uint8_t* data, size_t size, DecodedImage* img) {
  JpegState st{};
  st.cinfo.err = jpeg_std_error(&st.err.pub);  // jpeg_create_decompress keeps this pointer
  st.err.pub.error_exit = JpegErrorExit;
  st.err.pub.emit_message = JpegEmitMessage;
  const bool ok = RunJpeg(&st, data, size, img);
  jpeg_destroy_decompress(&st.cinfo);  // no-op when creation itself failed (mem == NULL)
  if (ok) return Status::Ok();
  if (!st.status.ok()) return st.status;
  const bool truncated = st.err.pub.msg_code == JWRN_JPEG_EOF;
  return RuntimeError(st.err.message, truncated ? " (the data is truncated)" : "");
}

}  // namespace onyx::kernels::reference

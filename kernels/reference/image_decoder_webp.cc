// ImageDecoder reference: WebP (lossy VP8 and lossless VP8L, still images) through libwebp with
// its default options, as Pillow decodes: fancy upsampling of the 4:2:0 chroma, alpha dropped.
#include <webp/decode.h>

#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

const char* Vp8StatusText(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "decoding suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "not enough data (truncated file)";
  }
  return "unknown error";
}

}  // namespace

Status DecodeWebp(const uint8_t* data, size_t size, DecodedImage* img) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return RuntimeError("libwebp version mismatch");
  VP8StatusCode code = WebPGetFeatures(data, size, &config.input);
  if (code != VP8_STATUS_OK) return RuntimeError("cannot read the header: ", Vp8StatusText(code));
  if (config.input.has_animation) {
    return Unsupported("animated WebP is not supported (", config.input.width, "x",
                       config.input.height, ")");
  }
  ONYX_RETURN_IF_ERROR(AllocateImage("WebP", config.input.width, config.input.height, 3, img));
  // Decode straight into our buffer: RGB, rows of width * 3 bytes.
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = img->pixels.get();
  config.output.u.RGBA.stride = static_cast<int>(img->width * 3);
  config.output.u.RGBA.size = img->bytes();
  code = WebPDecode(data, size, &config);
  WebPFreeDecBuffer(&config.output);  // external memory: releases nothing of ours
  if (code != VP8_STATUS_OK) return RuntimeError("cannot decode image data: ", Vp8StatusText(code));
  return Status::Ok();
}

}  // namespace onyx::kernels::reference

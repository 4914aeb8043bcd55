// ImageDecoder without the codec libraries (ONYX_IMAGE_CODECS=OFF, as in the portable wheel): the
// formats that need libjpeg, libpng, libtiff, libwebp or openjp2 fail with an error that says why
// and how to get them; BMP and PNM, parsed in-tree, still decode.
#include "kernels/reference/image_decoder.h"

namespace onyx::kernels::reference {
namespace {

Status NoCodec(const char* format) {
  return Unsupported(format,
                     " decoding is not available: this onyx was built without image codecs "
                     "(ONYX_IMAGE_CODECS=OFF, as the portable wheel is); BMP and PNM still "
                     "decode. Build onyx from source with -DONYX_IMAGE_CODECS=ON for ",
                     format);
}

}  // namespace

Status DecodeJpeg(const uint8_t*, size_t, DecodedImage*) {
  return NoCodec("JPEG");
}
Status DecodePng(const uint8_t*, size_t, DecodedImage*) {
  return NoCodec("PNG");
}
Status DecodeTiff(const uint8_t*, size_t, DecodedImage*) {
  return NoCodec("TIFF");
}
Status DecodeWebp(const uint8_t*, size_t, DecodedImage*) {
  return NoCodec("WebP");
}
Status DecodeJpeg2000(const uint8_t*, size_t, DecodedImage*) {
  return NoCodec("JPEG 2000");
}

}  // namespace onyx::kernels::reference

// ImageDecoder family: ImageDecoder (JPEG, PNG, BMP, TIFF, WebP, PNM, JPEG 2000 through Debian's
// codec libraries).
#include "kernels/reference/image_decoder.h"

#include <string>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

using reference::PixelFormat;

StatusOr<PixelFormat> ParsePixelFormat(const NodeView& node) {
  const std::string format = node.attr_string("pixel_format", "RGB");
  if (format == "RGB") return PixelFormat::kRgb;
  if (format == "BGR") return PixelFormat::kBgr;
  if (format == "Grayscale") return PixelFormat::kGrayscale;
  return node.Invalid("attribute 'pixel_format' must be RGB, BGR or Grayscale, got '", format, "'");
}

int64_t ChannelCount(PixelFormat format) {
  return format == PixelFormat::kGrayscale ? 1 : 3;
}

// ---- ImageDecoder (opset 20) ----

// encoded_stream: 1-D uint8 bytes. image: uint8 [H, W, C]; H and W come from the data.
Status InferImageDecoder(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const PixelFormat format, ParsePixelFormat(node));
  const TypeInfo& t = ctx.input_type(0);
  if (t.kind == TypeInfo::Kind::kTensor && t.elem != DType::kUndefined && t.elem != DType::kUInt8) {
    return node.Invalid("input 0 '", InputName(node, 0), "' has type ", DTypeName(t.elem),
                        "; expected uint8 (the encoded image bytes)");
  }
  if (t.is_tensor() && t.has_shape && t.rank() != 1) {
    return node.Invalid("input 0 '", InputName(node, 0), "' has rank ", t.rank(),
                        "; expected a 1-D tensor of encoded bytes");
  }
  TypeInfo out = TypeInfo::Tensor(DType::kUInt8);
  out.has_shape = true;
  out.dims = {Dim(), Dim(), Dim::Known(ChannelCount(format))};
  ctx.SetOutputType(0, std::move(out));
  return Status::Ok();
}

Status ImageDecoderRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const PixelFormat format, ParsePixelFormat(node));
  const Tensor& encoded = ctx.input(0);
  if (encoded.dtype() != DType::kUInt8 || encoded.rank() != 1) {
    return node.Invalid("input 0 '", InputName(node, 0), "' is ", DTypeName(encoded.dtype()),
                        ShapeToString(encoded.shape()), "; expected 1-D uint8 encoded bytes");
  }
  reference::DecodedImage img;
  const Status s =
      reference::DecodeImage(encoded.data<uint8_t>(), static_cast<size_t>(encoded.numel()), &img);
  if (!s.ok()) return node.Error(s.code(), "input 0 '", InputName(node, 0), "': ", s.message());
  Tensor out = ctx.Output(0, DType::kUInt8, {img.height, img.width, ChannelCount(format)});
  reference::ConvertImage(img, format, out.data<uint8_t>());
  return Status::Ok();
}

}  // namespace

void RegisterImageDecoder(OpRegistry& r) {
  r.Add("", "ImageDecoder", 20, kLatestOpset, InferImageDecoder, ImageDecoderRef);
}

}  // namespace onyx::kernels

// libFuzzer harness: model + feeds -> run. The input is a model followed by TensorProto feeds,
// each introduced by kFeedSeparator (tests/fuzz/make_seed_corpus.py writes the node tests this
// way). Feeds go to the required inputs in order; an input without a decodable feed gets zeros of
// its declared shape (symbolic dims = 1), so a mutated feed does not stop the model from running.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tensor_proto.h"
#include "onnx/onnx-ml.pb.h"
#include "onyx/session.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

constexpr std::string_view kFeedSeparator = "\n==onyx-fuzz-feed==\n";
constexpr int64_t kMaxDefaultElements = 1 << 16;  // zeros made up for a missing feed

std::vector<std::string_view> Split(std::string_view input) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = input.find(kFeedSeparator);
    parts.push_back(input.substr(0, at));
    if (at == std::string_view::npos) return parts;
    input.remove_prefix(at + kFeedSeparator.size());
  }
}

// Zeros for a tensor input with a known rank; nothing for other kinds or unknown ranks.
bool DefaultFeed(const onyx::TypeInfo& type, onyx::Value* value) {
  if (!type.is_tensor() || !type.has_shape || type.elem == onyx::DType::kUndefined) return false;
  onyx::Shape shape;
  int64_t count = 1;
  for (const onyx::Dim& d : type.dims) {
    const int64_t v = d.known() ? d.value : 1;
    if (v > kMaxDefaultElements || (v > 0 && count > kMaxDefaultElements / v)) return false;
    count *= v;
    shape.push_back(v);
  }
  *value = onyx::Tensor::Allocate(type.elem, shape);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts =
      Split(std::string_view(reinterpret_cast<const char*>(data), size));
  auto session =
      onyx::Session::CreateFromBytes(std::string(parts[0]), onyx::fuzz::FuzzSessionOptions());
  if (!session.ok()) return 0;

  onyx::NamedValues feeds;
  const std::vector<std::string> required = session->required_inputs();
  for (size_t i = 0; i < required.size(); ++i) {
    const auto info = std::find_if(session->inputs().begin(), session->inputs().end(),
                                   [&](const onyx::IoInfo& io) { return io.name == required[i]; });
    onyx::Value value;
    bool have = false;
    if (i + 1 < parts.size()) {
      onnx::TensorProto proto;
      if (proto.ParseFromArray(parts[i + 1].data(), static_cast<int>(parts[i + 1].size()))) {
        onyx::engine::ExternalDataContext ext;  // no directory: external data is an error
        ext.max_tensor_bytes = session->limits().max_tensor_bytes;
        auto tensor = onyx::engine::TensorFromProto(proto, ext);
        if (tensor.ok()) {
          value = std::move(*tensor);
          have = true;
        }
      }
    }
    if (!have && (info == session->inputs().end() || !DefaultFeed(info->type, &value))) return 0;
    feeds.emplace_back(required[i], std::move(value));
  }

  onyx::RunOptions run_options;
  run_options.timeout_ms = 2000;  // a Loop with a huge trip count is an error, not a hang
  onyx::NamedValues outputs;
  (void)session->Run(feeds, run_options, &outputs);
  return 0;
}

// libFuzzer harness: model bytes -> load, validate, plan; and the same bytes as a model file,
// whose wire format the loader walks itself before protobuf parses the rest
// (engine/weights_in_file.h). Any input must give a Session or an error Status; a crash, a
// sanitizer report, a leak or a hang is a bug.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/weights_in_file.h"
#include "memory/mapped_file.h"
#include "onnx/onnx-ml.pb.h"
#include "onyx/session.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// One file per fuzzing process, rewritten for each input and removed when the process exits
// (libFuzzer ends a bounded run with exit()).
char model_file_name[] = "/tmp/onyx_fuzz_model_XXXXXX";

void RemoveModelFile() {
  unlink(model_file_name);
}

const std::string& ModelFile() {
  static const std::string path = [] {
    const int fd = mkstemp(model_file_name);
    if (fd < 0) std::abort();
    close(fd);
    std::atexit(RemoveModelFile);
    return std::string(model_file_name);
  }();
  return path;
}

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

// Walked with every tensor left in the file: when the input parses as a ModelProto, what the walk
// gives must parse too, with the same initializers, nodes and attributes, each tensor left in the
// file pointing at exactly the bytes protobuf read as its raw_data.
void CheckWalk(const std::string& path, const uint8_t* data, size_t size) {
  onnx::ModelProto original;
  if (!original.ParseFromArray(data, static_cast<int>(size))) return;
  auto file = onyx::memory::RegularFile::Open(path);
  if (!file.ok()) std::abort();
  std::string walked;
  bool plain = false;
  if (!onyx::engine::ReadModelLeavingWeights(*file, 1, &walked, &plain).ok()) std::abort();
  if (!plain) return;
  onnx::ModelProto m;
  if (!m.ParseFromString(walked)) std::abort();
  if (m.graph().initializer_size() != original.graph().initializer_size() ||
      m.graph().node_size() != original.graph().node_size())
    std::abort();
  std::vector<std::pair<const onnx::TensorProto*, const onnx::TensorProto*>> tensors;
  for (int i = 0; i < m.graph().initializer_size(); ++i)
    tensors.emplace_back(&m.graph().initializer(i), &original.graph().initializer(i));
  for (int i = 0; i < m.graph().node_size(); ++i) {
    const onnx::NodeProto &n = m.graph().node(i), &o = original.graph().node(i);
    if (n.attribute_size() != o.attribute_size()) std::abort();
    for (int j = 0; j < n.attribute_size(); ++j)
      if (n.attribute(j).has_t()) tensors.emplace_back(&n.attribute(j).t(), &o.attribute(j).t());
  }
  for (const auto& [walked_tensor, original_tensor] : tensors) {
    const onnx::TensorProto& t = *walked_tensor;
    uint64_t offset = 0, length = 0;
    bool left = false;
    for (const auto& e : t.external_data()) {
      if (e.key() == onyx::engine::kInModelFileKey) left = true;
      if (e.key() == "offset") offset = std::stoull(e.value());
      if (e.key() == "length") length = std::stoull(e.value());
    }
    if (!left) continue;
    if (offset > size || length > size - offset ||
        std::string(reinterpret_cast<const char*>(data) + offset, length) !=
            original_tensor->raw_data())
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const onyx::SessionOptions options = onyx::fuzz::FuzzSessionOptions();
  WriteFile(ModelFile(), data, size);
  CheckWalk(ModelFile(), data, size);
  (void)onyx::Session::Create(ModelFile(), options);
  auto session = onyx::Session::CreateFromBytes(bytes, options);
  if (!session.ok()) return 0;
  // A model with symbolic input dims is planned at its first run; plan it here for the declared
  // shapes (symbolic dims = 1) so the planner sees every model that loads.
  (void)session->DescribePlan({}, /*json=*/true);
  return 0;
}

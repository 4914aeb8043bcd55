// ModelMetadata and SaveModelCopy (onyx/model_file.h).
#include "onyx/model_file.h"

#include <fstream>
#include <functional>
#include <limits>

#include "engine/model_loader.h"
#include "engine/tensor_proto.h"
#include "onnx/onnx-ml.pb.h"

namespace onyx {
namespace {

ModelMetadata MetadataOf(const onnx::ModelProto& mp) {
  ModelMetadata m;
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.description = mp.doc_string();
  m.graph_name = mp.graph().name();
  m.graph_description = mp.graph().doc_string();
  // onnxruntime reports an unset model_version as INT64_MAX; so does onyx, for code comparing them.
  m.version = mp.has_model_version() ? mp.model_version() : std::numeric_limits<int64_t>::max();
  for (const auto& p : mp.metadata_props()) m.custom_metadata.emplace_back(p.key(), p.value());
  return m;
}

// Calls f on every initializer of `g` and of its subgraphs.
void ForEachInitializer(onnx::GraphProto* g, const std::function<Status(onnx::TensorProto*)>& f,
                        Status* status) {
  for (auto& t : *g->mutable_initializer()) {
    if (!status->ok()) return;
    *status = f(&t);
  }
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) ForEachInitializer(a.mutable_g(), f, status);
      for (auto& sg : *a.mutable_graphs()) ForEachInitializer(&sg, f, status);
    }
}

}  // namespace

StatusOr<ModelMetadata> ReadModelMetadata(const std::string& path, const Limits& limits) {
  onnx::ModelProto mp;
  // The metadata needs none of the large tensors: they stay unread in the file.
  ONYX_RETURN_IF_ERROR(engine::ReadModelProtoLeavingWeights(path, limits, &mp, nullptr));
  return MetadataOf(mp);
}

StatusOr<ModelMetadata> ReadModelMetadataFromBytes(const std::string& bytes, const Limits& limits) {
  onnx::ModelProto mp;
  ONYX_RETURN_IF_ERROR(engine::ParseModelProto(bytes, "<bytes>", limits, &mp));
  return MetadataOf(mp);
}

Status SaveModelCopy(const std::string& source_path, const std::string& source_bytes,
                     const std::string& dest_path, const SaveModelOptions& options,
                     const Limits& limits) {
  onnx::ModelProto mp;
  if (!source_path.empty())
    ONYX_RETURN_IF_ERROR(engine::ReadModelProto(source_path, limits, &mp));
  else
    ONYX_RETURN_IF_ERROR(engine::ParseModelProto(source_bytes, "<bytes>", limits, &mp));
  engine::ExternalDataContext source_ext;
  source_ext.model_dir = source_path.empty() ? "" : engine::ModelDir(source_path);
  source_ext.max_tensor_bytes = limits.max_tensor_bytes;

  std::ofstream data_file;
  std::string data_path;
  if (!options.external_data_file.empty()) {
    data_path = engine::ModelDir(dest_path) + "/" + options.external_data_file;
    data_file.open(data_path, std::ios::binary | std::ios::trunc);
    if (!data_file)
      return IoError("cannot write the external data file '", data_path, "' for the saved model '",
                     dest_path, "'");
  }
  uint64_t offset = 0;
  Status status;
  ForEachInitializer(
      mp.mutable_graph(),
      [&](onnx::TensorProto* t) -> Status {
        const bool external = t->data_location() == onnx::TensorProto::EXTERNAL;
        if (!external && !data_file.is_open()) return Status::Ok();
        if (t->data_type() == onnx::TensorProto::STRING) return Status::Ok();
        // Re-encode as raw_data (external bytes read from next to the source model).
        auto tensor = engine::TensorFromProto(*t, source_ext);
        if (!tensor.ok()) return tensor.status().WithContext("saving the model: ");
        onnx::TensorProto encoded;
        engine::TensorToProto(*tensor, t->name(), &encoded);
        encoded.set_doc_string(t->doc_string());
        *t = std::move(encoded);
        if (!data_file.is_open() || t->raw_data().size() < options.external_min_bytes)
          return Status::Ok();
        const std::string& raw = t->raw_data();
        data_file.write(raw.data(), static_cast<std::streamsize>(raw.size()));
        if (!data_file) return IoError("writing the external data file '", data_path, "' failed");
        t->set_data_location(onnx::TensorProto::EXTERNAL);
        auto add = [&](const char* key, const std::string& value) {
          auto* e = t->add_external_data();
          e->set_key(key);
          e->set_value(value);
        };
        add("location", options.external_data_file);
        add("offset", std::to_string(offset));
        add("length", std::to_string(raw.size()));
        offset += raw.size();
        t->clear_raw_data();
        return Status::Ok();
      },
      &status);
  ONYX_RETURN_IF_ERROR(status);
  if (data_file.is_open()) {
    data_file.close();
    if (!data_file) return IoError("writing the external data file '", data_path, "' failed");
  }
  std::string out;
  if (mp.ByteSizeLong() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !mp.SerializeToString(&out))
    return InvalidArgument("cannot save the model to '", dest_path,
                           "': it is over protobuf's 2 GiB; set an external data file "
                           "(session.optimized_model_external_initializers_file_name)");
  std::ofstream f(dest_path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError("cannot write the model file '", dest_path, "'");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!f) return IoError("writing the model file '", dest_path, "' failed");
  return Status::Ok();
}

}  // namespace onyx

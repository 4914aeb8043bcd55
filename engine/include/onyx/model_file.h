// Model-file facts and copies that need no Session: the metadata fields of a ModelProto
// (onnxruntime's ModelMetadata) and a re-saved copy of a model with its initializers inline or in
// one external-data file (SessionOptions.optimized_model_filepath in the Python API).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "onyx/limits.h"
#include "onyx/status.h"

namespace onyx {

struct ModelMetadata {
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  std::string description;  // ModelProto.doc_string
  std::string graph_name;
  std::string graph_description;  // GraphProto.doc_string
  int64_t version = 0;            // ModelProto.model_version (INT64_MAX when unset)
  std::vector<std::pair<std::string, std::string>> custom_metadata;  // metadata_props, in order
};

// Reads the metadata of a model file or of serialized ModelProto bytes (the graph is parsed but
// not converted or checked; external data is not read).
StatusOr<ModelMetadata> ReadModelMetadata(const std::string& path,
                                          const Limits& limits = ResolveLimits());
StatusOr<ModelMetadata> ReadModelMetadataFromBytes(const std::string& bytes,
                                                   const Limits& limits = ResolveLimits());

struct SaveModelOptions {
  // Initializers of at least `external_min_bytes` go to this file, named relative to the saved
  // model's directory (empty: every initializer inline).
  std::string external_data_file;
  uint64_t external_min_bytes = 1024;
};

// Writes the model (from `source_path`, or from `source_bytes` when the path is empty) to
// `dest_path` with the same graph; initializers stored as external data next to the source are
// read and written inline or to options.external_data_file, so the copy loads on its own.
Status SaveModelCopy(const std::string& source_path, const std::string& source_bytes,
                     const std::string& dest_path, const SaveModelOptions& options,
                     const Limits& limits = ResolveLimits());

}  // namespace onyx

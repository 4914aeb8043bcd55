// Reading a model file without copying its weights twice.
//
// protobuf copies every raw_data field it parses into a std::string of its own, so a model read
// whole and then parsed held its weights twice, each copy faulting in fresh pages (BERT-base,
// 438 MB: half of session creation). Instead the file's wire bytes are walked once and the main
// graph's large tensors are left in the file: protobuf parses the rest, and each such tensor is
// read later with one pread straight into its own buffer.
#pragma once

#include <cstdint>
#include <string>

#include "memory/mapped_file.h"
#include "onyx/status.h"

namespace onyx::engine {

// The external_data key that marks an initializer whose bytes were left in the model file itself
// (its "offset" and "length" entries say where). Only the loader that read the file honours it
// (ExternalDataContext::model_file); elsewhere it is an unknown key.
inline constexpr const char* kInModelFileKey = "onyx.in_model_file";

// Tensors of the main graph whose raw_data is at least this many bytes stay in the file.
inline constexpr uint64_t kLeaveInFileMinBytes = 16 * 1024;

// The serialized ModelProto in `file`, with every tensor of the main graph (its initializers and
// its nodes' attribute tensors, such as Constant values) whose raw_data is its storage as it is
// (RawStorageElementBytes) and holds at least `min_bytes`, exactly the bytes its dims need,
// replaced by an
// external_data reference into the file (kInModelFileKey, offset, length; data_location
// EXTERNAL). Any tensor that does not fit that exact form is kept as it is, so that a malformed
// one reaches protobuf and the tensor checks unchanged. *plain is false, and `out` empty, when
// the file's wire format is not walkable (truncated, bad lengths, groups): the caller then reads
// the whole file and lets protobuf report what is wrong.
Status ReadModelLeavingWeights(const memory::RegularFile& file, uint64_t min_bytes,
                               std::string* out, bool* plain);

}  // namespace onyx::engine

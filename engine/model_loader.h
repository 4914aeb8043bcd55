// The ONNX loader: ModelProto bytes → validated ir::Model (DESIGN contracts 2 and 6).
#pragma once

#include <memory>
#include <string>

#include "kernels/ir/graph.h"
#include "memory/mapped_file.h"
#include "onyx/limits.h"
#include "onyx/session.h"
#include "onyx/status.h"

namespace onnx {
class ModelProto;
}

namespace onyx::engine {

constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = 14;  // the newest IR the pinned onnx release (1.23) defines

// Reads, parses and validates a model file. External data is resolved relative to its directory.
// The model and its external data are regular files only (a FIFO or device fails at once) and
// are read into owned memory: later changes to the files do not reach the model.
// `limits` (resolved) bounds nodes after inlining, nesting (subgraphs, and function calls
// within calls), initializers and tensor sizes; each is a kLimit error naming the limit. The
// work is linear in the model's size after inlining.
// `edits` (SessionOptions::edits) are applied to the parsed model before it is converted.
StatusOr<ir::Model> LoadModelFromFile(const std::string& path,
                                      const Limits& limits = ResolveLimits(),
                                      const ModelEdits& edits = {});
// Parses and validates serialized ModelProto bytes (external data is rejected: no directory).
StatusOr<ir::Model> LoadModelFromBytes(const std::string& bytes,
                                       const std::string& display_name = "<bytes>",
                                       const Limits& limits = ResolveLimits(),
                                       const ModelEdits& edits = {});

// A model path's directory (where its external data is looked up: "." for a bare name) and its
// file name (how errors name the model).
std::string ModelDir(const std::string& path);
std::string ModelBaseName(const std::string& path);

// Reads and parses a model file / serialized bytes into `mp` with the loader's checks and errors,
// without converting it (model metadata, re-saving).
Status ReadModelProto(const std::string& path, const Limits& limits, onnx::ModelProto* mp);
// The same for a file, leaving the main graph's large initializers in it
// (engine/weights_in_file.h): `*file` (when `file` is given) is the open file to read them from,
// or null when the file was read whole instead.
Status ReadModelProtoLeavingWeights(const std::string& path, const Limits& limits,
                                    onnx::ModelProto* mp,
                                    std::shared_ptr<const memory::RegularFile>* file);
Status ParseModelProto(const std::string& bytes, const std::string& display_name,
                       const Limits& limits, onnx::ModelProto* mp);

// Validates a graph and its subgraphs: every input defined (in the graph, an initializer, a graph
// input or an enclosing scope), every value produced once, no cycles, and each node's input and
// output counts within its ONNX schema (kernels/op_arity.h). Fills Node::implicit_inputs.
Status ValidateGraph(ir::Graph& graph, const std::vector<std::string>& outer_scope);

}  // namespace onyx::engine

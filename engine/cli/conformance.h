// `onyx conformance`: the ONNX backend node-test runner.
#pragma once

#include "engine/cli/cli_util.h"

namespace onyx::cli {

// Returns the process exit code: 0, 1 when an expected-pass test regressed, 2 on bad arguments.
int ConformanceMain(const Args& args);

}  // namespace onyx::cli

// Status helpers and the internal-invariant failure handler.
#include "onyx/status.h"

#include <cstdio>
#include <cstdlib>

namespace onyx {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInvalidModel:
      return "invalid model";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kRuntime:
      return "runtime error";
    case ErrorCode::kLimit:
      return "limit exceeded";
    case ErrorCode::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

namespace internal {
void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "onyx internal error: check '%s' failed at %s:%d\n", cond, file, line);
  std::abort();
}
}  // namespace internal

}  // namespace onyx

// Status, StatusOr<T> and onyx::Error: how every layer reports what went wrong and where.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace onyx {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad feeds, bad options, bad command-line arguments
  kInvalidModel,     // the model file breaks the ONNX rules or the IR contracts
  kUnsupported,      // valid ONNX that onyx cannot run (yet)
  kNotFound,         // a file or a name that does not exist
  kIo,               // reading or writing a file failed
  kRuntime,          // a kernel failed on the values it was given
  kLimit,            // a size or count beyond a configured ceiling (onyx::Limits)
  kCancelled,        // the run was stopped: RunOptions::terminate or RunOptions::timeout_ms
};

const char* ErrorCodeName(ErrorCode code);

// Concatenates anything that has an operator<< into one string.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Adds outer context in front: "model.onnx: " + "Conv node 'c1' (#3): ...".
  Status WithContext(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, prefix + message_);
  }
  std::string ToString() const { return ok() ? "OK" : message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidArgument(const Args&... args) {
  return Status(ErrorCode::kInvalidArgument, StrCat(args...));
}
template <typename... Args>
Status InvalidModel(const Args&... args) {
  return Status(ErrorCode::kInvalidModel, StrCat(args...));
}
template <typename... Args>
Status Unsupported(const Args&... args) {
  return Status(ErrorCode::kUnsupported, StrCat(args...));
}
template <typename... Args>
Status NotFound(const Args&... args) {
  return Status(ErrorCode::kNotFound, StrCat(args...));
}
template <typename... Args>
Status IoError(const Args&... args) {
  return Status(ErrorCode::kIo, StrCat(args...));
}
template <typename... Args>
Status RuntimeError(const Args&... args) {
  return Status(ErrorCode::kRuntime, StrCat(args...));
}

template <typename... Args>
Status LimitExceeded(const Args&... args) {
  return Status(ErrorCode::kLimit, StrCat(args...));
}
template <typename... Args>
Status Cancelled(const Args&... args) {
  return Status(ErrorCode::kCancelled, StrCat(args...));
}

template <typename T>
class StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  bool ok() const { return v_.index() == 1; }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<0>(v_);
  }
  T& value() & { return std::get<1>(v_); }
  const T& value() const& { return std::get<1>(v_); }
  T&& value() && { return std::get<1>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<Status, T> v_;
};

// Thrown only by the public API (Session, the Python module); carries the Status.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status)
      : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }
  ErrorCode code() const { return status_.code(); }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& s) {
  if (!s.ok()) throw Error(s);
}

}  // namespace onyx

#define ONYX_CONCAT_INNER(a, b) a##b
#define ONYX_CONCAT(a, b) ONYX_CONCAT_INNER(a, b)

#define ONYX_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::onyx::Status onyx_status_ = (expr);        \
    if (!onyx_status_.ok()) return onyx_status_; \
  } while (0)

#define ONYX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#define ONYX_ASSIGN_OR_RETURN(lhs, expr) \
  ONYX_ASSIGN_OR_RETURN_IMPL(ONYX_CONCAT(onyx_statusor_, __LINE__), lhs, expr)

// For broken internal invariants only (bugs), never for bad input.
#define ONYX_CHECK(cond)                                                   \
  do {                                                                     \
    if (!(cond)) ::onyx::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

namespace onyx::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}

// Status and Result<T>: the error values every Strata module returns.
// No exception crosses a module boundary; bugs use STRATA_ASSERT (assert.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "store/base/assert.h"

namespace strata {

// Named error codes. kBusy and kFsFull are retryable: the caller may try again
// after progress (see Status::retryable()).
enum class StatusCode : unsigned char {
  kOk = 0,
  kCorruption,          // bytes on disk or on the wire are not what they claim
  kIoError,             // the OS refused an operation
  kInvalidArgument,     // the caller passed something malformed
  kNotFound,            // the named thing does not exist
  kAlreadyExists,       // the named thing exists already
  kBusy,                // retry after progress (queue full, resource held)
  kFsFull,              // ENOSPC / EDQUOT: retry after space is freed
  kUnavailable,         // a peer or device is gone
  kFailedPrecondition,  // the object is in the wrong state for the call
  kAborted,             // the operation was abandoned (shutdown, stop)
  kInternal,            // an invariant was broken somewhere else
};

std::string_view StatusCodeName(StatusCode code);

// An OK status holds no message and costs one byte plus an empty string.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
  static Status FsFull(std::string m) { return {StatusCode::kFsFull, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  // Maps an errno value to kIoError, or kFsFull for ENOSPC/EDQUOT, with
  // "<what>: <strerror>" as the message.
  static Status FromErrno(int err, std::string_view what);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // True for errors a caller may retry after progress: kBusy and kFsFull.
  bool retryable() const { return code_ == StatusCode::kBusy || code_ == StatusCode::kFsFull; }
  // "OK" or "<code name>: <message>".
  std::string ToString() const;
  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status. Accessing the value of an error is a bug.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    STRATA_ASSERT(!std::get<Status>(v_).ok(), "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->checked(); }
  T&& operator*() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }

 private:
  T& checked() {
    STRATA_ASSERT(ok(), "value() of an error Result: " + std::get<Status>(v_).ToString());
    return std::get<T>(v_);
  }
  std::variant<T, Status> v_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::strata::Status strata_status_ = (expr);        \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

// Evaluates a Result-returning `expr`; returns its error, or moves the value
// into `lhs` (which may be a declaration such as `auto x`).
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_result_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

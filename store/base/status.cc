#include "store/base/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata {

void AssertFail(const char* file, int line, const char* cond, std::string_view message) {
  std::fprintf(stderr, "%s:%d: assertion `%s` failed: %.*s\n", file, line, cond,
               static_cast<int>(message.size()), message.data());
  std::abort();
}

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCorruption: return "corruption";
    case StatusCode::kIoError: return "io error";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kAlreadyExists: return "already exists";
    case StatusCode::kBusy: return "busy";
    case StatusCode::kFsFull: return "filesystem full";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kAborted: return "aborted";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status Status::FromErrno(int err, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return FsFull(std::move(message));
  return IoError(std::move(message));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

}  // namespace strata

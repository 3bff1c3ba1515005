// How a Strata Status reaches Python: as strata.StrataError (a RuntimeError)
// carrying `kind` ("invalid_argument", "unavailable", ... : StatusCodeName)
// and `message`. Every binding turns a failed Status into it through
// ThrowIfError; nothing else crosses into Python as a C++ exception.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "store/base/status.h"

namespace strata::python {

// Carries a failed Status to the translator registered by RegisterErrors.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)), text_(status_.ToString()) {}
  const char* what() const noexcept override { return text_.c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
  std::string text_;
};

// Throws StatusError unless `status` is OK.
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

// The value of `result`, or throws its error.
template <typename T>
T ValueOrThrow(Result<T> result) {
  ThrowIfError(result.status());
  return std::move(*result);
}

// Defines strata.StrataError on `m` and the translator.
void RegisterErrors(pybind11::module_& m);

}  // namespace strata::python

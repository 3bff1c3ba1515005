#include "python/src/py_status.h"

#include <pybind11/eval.h>

#include <algorithm>

namespace strata::python {

namespace py = pybind11;

void RegisterErrors(py::module_& m) {
  // The class is built in Python so it can carry attributes; the translator
  // fills them from the Status.
  py::dict scope;
  py::exec(R"(
class StrataError(RuntimeError):
    """A Strata operation failed. `kind` names the error class (Strata's
    StatusCode: "invalid_argument", "unavailable", "failed_precondition",
    ...); `message` says what failed and why."""
    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
)",
           py::globals(), scope);
  py::object error_type = scope["StrataError"];
  error_type.attr("__module__") = "strata";
  m.attr("StrataError") = error_type;
  // A static handle: the translator outlives this function; the module
  // keeps the class alive.
  static PyObject* const kErrorType = error_type.ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      std::string kind(StatusCodeName(e.status().code()));
      std::replace(kind.begin(), kind.end(), ' ', '_');
      py::object instance =
          py::reinterpret_borrow<py::object>(kErrorType)(kind, e.status().message());
      PyErr_SetObject(kErrorType, instance.ptr());
    }
  });
}

}  // namespace strata::python

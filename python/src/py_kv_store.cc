#include "python/src/py_kv_store.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

namespace strata::python {

namespace py = pybind11;

Result<std::unique_ptr<PyKeyValueStore>> PyKeyValueStore::Wrap(py::object store) {
  if (!py::hasattr(store, "set") || !py::hasattr(store, "get")) {
    return Status::InvalidArgument(
        "the rendezvous store needs set(key, value) and get(key) (a torch.distributed.Store "
        "works as it is)");
  }
  return std::unique_ptr<PyKeyValueStore>(new PyKeyValueStore(std::move(store)));
}

PyKeyValueStore::~PyKeyValueStore() {
  py::gil_scoped_acquire gil;
  store_ = py::object();
}

Status PyKeyValueStore::Set(const std::string& key, const std::string& value) {
  py::gil_scoped_acquire gil;
  try {
    store_.attr("set")(key, py::bytes(value));
    return Status::Ok();
  } catch (py::error_already_set& e) {
    return Status::IoError("rendezvous store set('" + key + "'): " + e.what());
  }
}

Result<std::string> PyKeyValueStore::Get(const std::string& key, RendezvousDeadline deadline) {
  py::gil_scoped_acquire gil;
  try {
    if (py::hasattr(store_, "wait")) {
      const auto left = std::max(
          std::chrono::milliseconds(1),
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RendezvousClock::now()));
      try {
        store_.attr("wait")(std::vector<std::string>{key}, left);
      } catch (py::error_already_set& e) {
        // The store's wait ran out (torch raises RuntimeError "Wait timeout").
        return Status::Unavailable("rendezvous store wait for '" + key + "': " + e.what());
      }
    }
    py::object value = store_.attr("get")(key);
    if (py::isinstance<py::bytes>(value)) return std::string(value.cast<py::bytes>());
    return value.cast<std::string>();
  } catch (py::error_already_set& e) {
    return Status::IoError("rendezvous store get('" + key + "'): " + e.what());
  } catch (py::cast_error& e) {
    return Status::InvalidArgument("rendezvous store get('" + key +
                                   "') returned neither bytes nor str");
  }
}

}  // namespace strata::python

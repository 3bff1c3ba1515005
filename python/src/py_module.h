// The parts of the strata._strata extension module, each registered by its
// own file (module.cc calls them in order).
#pragma once

#include <pybind11/pybind11.h>

namespace strata::python {

void RegisterErrors(pybind11::module_& m);        // py_status.cc
void RegisterStore(pybind11::module_& m);         // py_store.cc
void RegisterLocal(pybind11::module_& m);         // py_local_bindings.cc
void RegisterMultiProcess(pybind11::module_& m);  // py_multi_process.cc
void RegisterAttach(pybind11::module_& m);        // py_attach.cc
void RegisterCuda(pybind11::module_& m);          // py_cuda.cc

}  // namespace strata::python

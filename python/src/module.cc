// strata._strata: the C++ half of the `strata` Python package
// (python/strata/__init__.py is the other half; docs/python.md).
#include "python/src/py_module.h"

PYBIND11_MODULE(_strata, m) {
  m.doc() = "Strata: KV-cache checkpoint offload to host memory and disk";
  strata::python::RegisterErrors(m);
  strata::python::RegisterStore(m);
  strata::python::RegisterLocal(m);
  strata::python::RegisterMultiProcess(m);
  strata::python::RegisterAttach(m);
  strata::python::RegisterCuda(m);
}

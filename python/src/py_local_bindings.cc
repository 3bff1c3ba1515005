// Bindings of the plane description and the single-process stores.
#include <pybind11/stl.h>

#include "python/src/py_local_stores.h"
#include "python/src/py_module.h"
#include "python/src/py_status.h"
#include "store/record/record_layout.h"

namespace strata::python {

namespace py = pybind11;

void RegisterLocal(py::module_& m) {
  py::enum_<AllocationGroup>(m, "_Group")
      .value("PAGES", AllocationGroup::kKvPages)
      .value("STATE_ROWS", AllocationGroup::kStateRows);
  py::enum_<MemoryOwner>(m, "_Owner")
      .value("LOCAL", MemoryOwner::kLocal)
      .value("PEER", MemoryOwner::kPeer);
  py::class_<AllocationIn>(m, "_Allocation")
      .def(py::init<>())
      .def_readwrite("name", &AllocationIn::name)
      .def_readwrite("group", &AllocationIn::group)
      .def_readwrite("owner", &AllocationIn::owner)
      .def_readwrite("unit_bytes", &AllocationIn::unit_bytes)
      .def_readwrite("count", &AllocationIn::count)
      .def_readwrite("address", &AllocationIn::address)
      .def_readwrite("capacity", &AllocationIn::capacity);
  py::class_<PlanesIn>(m, "_Planes")
      .def(py::init<>())
      .def_readwrite("page_tokens", &PlanesIn::page_tokens)
      .def_readwrite("allocations", &PlanesIn::allocations)
      .def_property(
          "cuda_device", [](const PlanesIn& p) { return p.device.cuda_ordinal; },
          [](PlanesIn& p, int ordinal) { p.device.cuda_ordinal = ordinal; });
  // Checks the description without touching a device; returns the bytes of
  // one page id of every plane, and of one stored page record (with its
  // padding and checksum: one slot of a memory tier).
  m.def("_check_planes", [](const PlanesIn& in) {
    std::vector<SizedAllocation> sized;
    for (const AllocationIn& a : in.allocations) {
      sized.push_back({a.name, a.group, a.unit_bytes, a.count, a.owner});
      if (a.owner == MemoryOwner::kLocal && a.unit_bytes > 0 && a.count > 0 &&
          a.unit_bytes > a.capacity / a.count) {
        ThrowIfError(
            Status::InvalidArgument("allocation '" + a.name + "' declares " +
                                    std::to_string(a.count) + " x " + std::to_string(a.unit_bytes) +
                                    " bytes but its memory holds " + std::to_string(a.capacity)));
      }
    }
    RankGeometry rank = ValueOrThrow(RankGeometryFromAllocations(sized));
    const CacheGeometry geometry{in.page_tokens, {rank}};
    ThrowIfError(ValidateGeometry(geometry));
    return std::make_pair(rank.page_bytes(), RecordLayout(geometry).page_record_bytes());
  });
  py::class_<LocalStoreOptions>(m, "_LocalStoreOptions")
      .def(py::init<>())
      .def_readwrite("memory_bytes", &LocalStoreOptions::memory_bytes)
      .def_readwrite("directory", &LocalStoreOptions::directory)
      .def_readwrite("disk_bytes", &LocalStoreOptions::disk_bytes)
      .def_readwrite("model_identity", &LocalStoreOptions::model_identity)
      .def_readwrite("drain_on_close", &LocalStoreOptions::drain_on_close)
      .def_readwrite("pool", &LocalStoreOptions::pool)
      .def_readwrite("pool_instance", &LocalStoreOptions::pool_instance)
      .def_readwrite("pool_data", &LocalStoreOptions::pool_data)
      .def_property(
          "durable", [](const LocalStoreOptions& o) { return o.durability == Durability::kSync; },
          [](LocalStoreOptions& o, bool durable) {
            o.durability = durable ? Durability::kSync : Durability::kNone;
          })
      .def_property(
          "copy_out_rate",
          [](const LocalStoreOptions& o) { return o.threads.copy_out_bytes_per_s; },
          [](LocalStoreOptions& o, uint64_t rate) { o.threads.copy_out_bytes_per_s = rate; })
      .def_property(
          "restore_rate", [](const LocalStoreOptions& o) { return o.threads.restore_bytes_per_s; },
          [](LocalStoreOptions& o, uint64_t rate) { o.threads.restore_bytes_per_s = rate; });
  m.def(
      "_open_local_store",
      [](const PlanesIn& planes, const LocalStoreOptions& o, py::object keep_alive) {
        std::unique_ptr<StoreOwner> owner;
        {
          py::gil_scoped_release release;
          owner = ValueOrThrow(OpenLocalStore(ValueOrThrow(RuntimePlanes::Create(planes)), o));
        }
        std::string what = !o.directory         ? "memory store"
                           : o.memory_bytes > 0 ? "composite store"
                                                : "disk store";
        if (o.pool) what = !o.directory && o.memory_bytes == 0 ? "pool only" : "pooled " + what;
        return std::make_unique<StoreHandle>(std::move(owner), what, std::move(keep_alive));
      },
      py::arg("planes"), py::arg("options"), py::arg("keep_alive"));
}

}  // namespace strata::python

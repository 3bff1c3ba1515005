// strata.DeviceBuffer: device memory allocated through Strata's CUDA module
// (cuda/driver_api.h, libcuda loaded at run time), for a runtime whose torch
// has no CUDA (Debian's) and for the GPU tests. It exposes
// __cuda_array_interface__, so strata.Allocation takes it like a CUDA tensor,
// and synchronous read / write / fill for setting up and checking bytes.
#include <pybind11/stl.h>

#include "cuda/driver_api.h"
#include "python/src/py_module.h"
#include "python/src/py_status.h"

namespace strata::python {

namespace py = pybind11;

namespace {

class DeviceBuffer {
 public:
  DeviceBuffer(int ordinal, uint64_t bytes) : bytes_(bytes) {
    if (bytes == 0) throw StatusError(Status::InvalidArgument("a device buffer needs bytes > 0"));
    driver_ = ValueOrThrow(CudaDriver::Load());
    context_ = ValueOrThrow(PrimaryContext::Retain(driver_, ordinal));
    ContextGuard guard(*driver_, context_->get());
    ThrowIfError(guard.status());
    address_ = ValueOrThrow(driver_->MemAlloc(bytes));
  }
  ~DeviceBuffer() {
    ContextGuard guard(*driver_, context_->get());
    if (guard.status().ok()) (void)driver_->MemFree(address_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint64_t address() const { return address_; }
  uint64_t bytes() const { return bytes_; }
  int device() const { return context_->ordinal(); }

  py::bytes Read(uint64_t offset, uint64_t count) const {
    CheckRange(offset, count);
    std::string out(count, '\0');
    {
      py::gil_scoped_release release;
      ContextGuard guard(*driver_, context_->get());
      ThrowIfError(guard.status());
      ThrowIfError(driver_->CopySync(TransferDirection::kDeviceToHost, address_ + offset,
                                     out.data(), count));
    }
    return py::bytes(out);
  }
  void Write(uint64_t offset, const py::bytes& data) const {
    std::string in = data;
    CheckRange(offset, in.size());
    py::gil_scoped_release release;
    ContextGuard guard(*driver_, context_->get());
    ThrowIfError(guard.status());
    ThrowIfError(driver_->CopySync(TransferDirection::kHostToDevice, address_ + offset, in.data(),
                                   in.size()));
  }
  void Fill(uint8_t value) const {
    py::gil_scoped_release release;
    ContextGuard guard(*driver_, context_->get());
    ThrowIfError(guard.status());
    ThrowIfError(driver_->MemsetD8(address_, value, bytes_));
  }

 private:
  void CheckRange(uint64_t offset, uint64_t count) const {
    if (offset > bytes_ || count > bytes_ - offset) {
      throw StatusError(Status::InvalidArgument("range beyond the device buffer"));
    }
  }
  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<PrimaryContext> context_;
  uint64_t bytes_ = 0;
  uint64_t address_ = 0;
};

}  // namespace

void RegisterCuda(py::module_& m) {
  py::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def(py::init<int, uint64_t>(), py::arg("device"), py::arg("bytes"))
      .def_property_readonly("address", &DeviceBuffer::address)
      .def_property_readonly("bytes", &DeviceBuffer::bytes)
      .def_property_readonly("device", &DeviceBuffer::device)
      .def_property_readonly("__cuda_array_interface__",
                             [](const DeviceBuffer& b) {
                               py::dict d;
                               d["shape"] = py::make_tuple(b.bytes());
                               d["typestr"] = "|u1";
                               d["data"] = py::make_tuple(b.address(), false);
                               d["version"] = 2;
                               return d;
                             })
      .def("read", &DeviceBuffer::Read, py::arg("offset"), py::arg("count"))
      .def("write", &DeviceBuffer::Write, py::arg("offset"), py::arg("data"))
      .def("fill", &DeviceBuffer::Fill, py::arg("value"));
  // (handle bytes, offset) sharing the cudaMalloc'd memory at `address` on
  // `device` by legacy IPC: the handle of the block that holds it and the
  // address's offset in that block (attach, docs/python.md).
  m.def(
      "_cuda_ipc_plane",
      [](int device, uint64_t address) {
        std::string handle;
        uint64_t offset = 0;
        {
          py::gil_scoped_release release;
          std::shared_ptr<const CudaDriver> driver = ValueOrThrow(CudaDriver::Load());
          std::unique_ptr<PrimaryContext> context =
              ValueOrThrow(PrimaryContext::Retain(driver, device));
          ContextGuard guard(*driver, context->get());
          ThrowIfError(guard.status());
          const CudaDriver::DeviceBlock block = ValueOrThrow(driver->BlockOf(address));
          if (block.ordinal != device) {
            ThrowIfError(Status::InvalidArgument("the memory at that address is device " +
                                                 std::to_string(block.ordinal) + "'s, not device " +
                                                 std::to_string(device) + "'s"));
          }
          const CudaIpcHandle h = ValueOrThrow(driver->IpcHandleOf(block.base));
          handle.assign(reinterpret_cast<const char*>(h.data()), h.size());
          offset = address - block.base;
        }
        return py::make_tuple(py::bytes(handle), offset);
      },
      py::arg("device"), py::arg("address"));
  m.def("cuda_device_count", [] {
    Result<std::shared_ptr<const CudaDriver>> d = CudaDriver::Load();
    if (!d.ok()) return 0;
    Result<int> n = (*d)->DeviceCount();
    return n.ok() ? *n : 0;
  });
}

}  // namespace strata::python

// CudaDriver: device memory shared between processes through VMM handles
// exported as POSIX file descriptors, and through legacy IPC handles.
#include <cstdint>
#include <cstring>

#include "cuda/driver_api.h"
#include "cuda/driver_table.h"

namespace strata {

#if STRATA_HAVE_CUDA_HEADERS

namespace {

CUmemAllocationProp ShareableDeviceProperties(int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

}  // namespace

bool CudaDriver::has_shareable_handles() const {
  return has_vmm() && api_->cuMemExportToShareableHandle_ != nullptr &&
         api_->cuMemImportFromShareableHandle_ != nullptr &&
         api_->cuMemGetAllocationPropertiesFromHandle_ != nullptr;
}

Result<uint64_t> CudaDriver::DeviceGranularity(int ordinal) const {
  if (!has_vmm()) return Missing("cuMemGetAllocationGranularity");
  CUmemAllocationProp prop = ShareableDeviceProperties(ordinal);
  size_t granularity = 0;
  STRATA_RETURN_IF_ERROR(Check(
      api_->cuMemGetAllocationGranularity_(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
      "cuMemGetAllocationGranularity"));
  return static_cast<uint64_t>(granularity);
}

Result<CudaAllocationHandle> CudaDriver::CreateShareableDeviceAllocation(int ordinal,
                                                                         uint64_t bytes) const {
  if (!has_shareable_handles()) return Missing("cuMemExportToShareableHandle");
  CUmemAllocationProp prop = ShareableDeviceProperties(ordinal);
  CUmemGenericAllocationHandle handle = 0;
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemCreate_(&handle, bytes, &prop, 0), "cuMemCreate"));
  return static_cast<CudaAllocationHandle>(handle);
}

Result<int> CudaDriver::ExportToFd(CudaAllocationHandle handle) const {
  if (!has_shareable_handles()) return Missing("cuMemExportToShareableHandle");
  int fd = -1;
  STRATA_RETURN_IF_ERROR(Check(
      api_->cuMemExportToShareableHandle_(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
      "cuMemExportToShareableHandle"));
  return fd;
}

Result<CudaAllocationHandle> CudaDriver::ImportFromFd(int fd) const {
  if (!has_shareable_handles()) return Missing("cuMemImportFromShareableHandle");
  CUmemGenericAllocationHandle handle = 0;
  // The driver takes a POSIX descriptor passed by value in the pointer.
  void* os_handle = reinterpret_cast<void*>(static_cast<intptr_t>(fd));
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemImportFromShareableHandle_(
                                   &handle, os_handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                               "cuMemImportFromShareableHandle"));
  return static_cast<CudaAllocationHandle>(handle);
}

Result<int> CudaDriver::AllocationDevice(CudaAllocationHandle handle) const {
  if (!has_shareable_handles()) return Missing("cuMemGetAllocationPropertiesFromHandle");
  CUmemAllocationProp prop{};
  STRATA_RETURN_IF_ERROR(Check(api_->cuMemGetAllocationPropertiesFromHandle_(&prop, handle),
                               "cuMemGetAllocationPropertiesFromHandle"));
  if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return Status::InvalidArgument("the shared allocation is not device memory");
  }
  return prop.location.id;
}

Status CudaDriver::SetDeviceAccess(uint64_t address, uint64_t bytes, int ordinal) const {
  if (!has_vmm()) return Missing("cuMemSetAccess");
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return Check(api_->cuMemSetAccess_(address, bytes, &access, 1), "cuMemSetAccess");
}

static_assert(sizeof(CUipcMemHandle) == kCudaIpcHandleBytes);

bool CudaDriver::has_legacy_ipc() const {
  return api_->cuIpcGetMemHandle_ != nullptr && api_->cuIpcOpenMemHandle_ != nullptr &&
         api_->cuIpcCloseMemHandle_ != nullptr && api_->cuMemGetAddressRange_ != nullptr &&
         api_->cuPointerGetAttribute_ != nullptr;
}

Result<CudaIpcHandle> CudaDriver::IpcHandleOf(uint64_t device) const {
  if (!has_legacy_ipc()) return Missing("cuIpcGetMemHandle");
  CUipcMemHandle handle{};
  STRATA_RETURN_IF_ERROR(Check(api_->cuIpcGetMemHandle_(&handle, device), "cuIpcGetMemHandle"));
  CudaIpcHandle out{};
  std::memcpy(out.data(), &handle, out.size());
  return out;
}

Result<uint64_t> CudaDriver::IpcOpen(const CudaIpcHandle& handle) const {
  if (!has_legacy_ipc()) return Missing("cuIpcOpenMemHandle");
  CUipcMemHandle h{};
  std::memcpy(&h, handle.data(), handle.size());
  CUdeviceptr device = 0;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuIpcOpenMemHandle_(&device, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            "cuIpcOpenMemHandle"));
  return static_cast<uint64_t>(device);
}

Status CudaDriver::IpcClose(uint64_t device) const {
  if (!has_legacy_ipc()) return Missing("cuIpcCloseMemHandle");
  return Check(api_->cuIpcCloseMemHandle_(device), "cuIpcCloseMemHandle");
}

Result<CudaDriver::DeviceBlock> CudaDriver::BlockOf(uint64_t device) const {
  if (!has_legacy_ipc()) return Missing("cuMemGetAddressRange");
  CUdeviceptr base = 0;
  size_t bytes = 0;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuMemGetAddressRange_(&base, &bytes, device), "cuMemGetAddressRange"));
  int ordinal = -1;
  STRATA_RETURN_IF_ERROR(
      Check(api_->cuPointerGetAttribute_(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, device),
            "cuPointerGetAttribute"));
  return DeviceBlock{.base = base, .bytes = bytes, .ordinal = ordinal};
}

#else  // !STRATA_HAVE_CUDA_HEADERS

bool CudaDriver::has_shareable_handles() const { return false; }
Result<uint64_t> CudaDriver::DeviceGranularity(int) const {
  return Missing("cuMemGetAllocationGranularity");
}
Result<CudaAllocationHandle> CudaDriver::CreateShareableDeviceAllocation(int, uint64_t) const {
  return Missing("cuMemCreate");
}
Result<int> CudaDriver::ExportToFd(CudaAllocationHandle) const {
  return Missing("cuMemExportToShareableHandle");
}
Result<CudaAllocationHandle> CudaDriver::ImportFromFd(int) const {
  return Missing("cuMemImportFromShareableHandle");
}
Result<int> CudaDriver::AllocationDevice(CudaAllocationHandle) const {
  return Missing("cuMemGetAllocationPropertiesFromHandle");
}
Status CudaDriver::SetDeviceAccess(uint64_t, uint64_t, int) const {
  return Missing("cuMemSetAccess");
}
bool CudaDriver::has_legacy_ipc() const { return false; }
Result<CudaIpcHandle> CudaDriver::IpcHandleOf(uint64_t) const {
  return Missing("cuIpcGetMemHandle");
}
Result<uint64_t> CudaDriver::IpcOpen(const CudaIpcHandle&) const {
  return Missing("cuIpcOpenMemHandle");
}
Result<CudaDriver::DeviceBlock> CudaDriver::BlockOf(uint64_t) const {
  return Missing("cuMemGetAddressRange");
}
Status CudaDriver::IpcClose(uint64_t) const { return Missing("cuIpcCloseMemHandle"); }

#endif  // STRATA_HAVE_CUDA_HEADERS

}  // namespace strata

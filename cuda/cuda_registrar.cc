#include "cuda/cuda_registrar.h"

#include <fmt/format.h>

namespace strata {

uint64_t RegistrationDeviceCostBytes(uint64_t registered_bytes) {
  return (registered_bytes + kRegisteredBytesPerDeviceByte - 1) / kRegisteredBytesPerDeviceByte +
         kTransferStreamDeviceBytes;
}

Result<std::unique_ptr<CudaHostRegistrar>> CudaHostRegistrar::Create(
    std::shared_ptr<const CudaDriver> driver, int ordinal) {
  STRATA_ASSIGN_OR_RETURN(auto context, PrimaryContext::Retain(std::move(driver), ordinal));
  return std::unique_ptr<CudaHostRegistrar>(new CudaHostRegistrar(std::move(context)));
}

CudaHostRegistrar::~CudaHostRegistrar() {
  while (!regions_.empty()) (void)Unregister(regions_.begin()->first);
}

Status CudaHostRegistrar::Register(void* base, uint64_t bytes) {
  if (base == nullptr || bytes == 0) return Status::InvalidArgument("registering an empty region");
  if (regions_.count(base) != 0) return Status::AlreadyExists("host region already registered");
  ContextGuard guard(context_->driver(), context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  Status s = context_->driver().HostRegister(base, bytes);
  if (!s.ok())
    return s.WithContext("registering " + std::to_string(bytes >> 20) + " MiB of host memory");
  regions_[base] = bytes;
  registered_bytes_ += bytes;
  return Status::Ok();
}

Status CudaHostRegistrar::Unregister(void* base) {
  auto it = regions_.find(base);
  if (it == regions_.end()) return Status::NotFound("host region was not registered here");
  const uint64_t bytes = it->second;
  regions_.erase(it);
  registered_bytes_ -= bytes;
  ContextGuard guard(context_->driver(), context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  return context_->driver().HostUnregister(base);
}

Status CudaHostRegistrar::CheckSameAddress(void* base) const {
  if (!regions_.contains(base)) return Status::NotFound("host region was not registered here");
  ContextGuard guard(context_->driver(), context_->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(const uint64_t device, context_->driver().HostDevicePointer(base));
  const auto host = reinterpret_cast<uint64_t>(base);
  if (device != host) {
    return Status::FailedPrecondition(fmt::format(
        "registered host memory at {:#x} is addressed by the device at {:#x}", host, device));
  }
  return Status::Ok();
}

}  // namespace strata

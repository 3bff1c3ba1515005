#include "launch/runtime/attach_planes.h"

#include "attach/imported_planes.h"
#include "cuda/attached_device_planes.h"
#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "launch/runtime/process_planes.h"

namespace strata {

namespace {

class HostAttachPlanes final : public AttachPlanes {
 public:
  HostAttachPlanes(std::unique_ptr<attach::ImportedPlanes> planes,
                   const ThreadedTransfersOptions& threads)
      : planes_(std::move(planes)), threads_(threads) {}
  PlaneImporter& importer() override { return *planes_; }
  Result<std::unique_ptr<Transfers>> MakeTransfers() override {
    return MakeHostTransfers(*planes_, threads_);
  }
  HostRegistrar* registrar() override { return nullptr; }
  std::string Describe() const override {
    return "planes shared by an attached runtime (memfd host memory)";
  }

 private:
  std::unique_ptr<attach::ImportedPlanes> planes_;
  ThreadedTransfersOptions threads_;
};

class DeviceAttachPlanes final : public AttachPlanes {
 public:
  Status Open(const CacheGeometry& geometry, const std::vector<int>& gpus,
              const ThreadedTransfersOptions& threads) {
    threads_ = threads;
    STRATA_ASSIGN_OR_RETURN(driver_, CudaDriver::Load());
    STRATA_ASSIGN_OR_RETURN(std::vector<int> ordinals, RankDevices(*driver_, geometry, gpus));
    STRATA_ASSIGN_OR_RETURN(planes_, AttachedDevicePlanes::Create(driver_, geometry, ordinals));
    STRATA_ASSIGN_OR_RETURN(registrar_, CudaHostRegistrar::Create(driver_, ordinals.front()));
    describe_ = "planes shared by an attached runtime (" +
                PlaneHandleKindsName(planes_->handle_kinds()) + " on " +
                DescribeDevices(*driver_, ordinals) + ")";
    return Status::Ok();
  }
  PlaneImporter& importer() override { return *planes_; }
  // Over the importer as a PlaneBaseSource: each job copies through the
  // planes of the attachment it was submitted under (VMM planes stay at
  // their reserved addresses; IPC blocks open anywhere on each attach).
  Result<std::unique_ptr<Transfers>> MakeTransfers() override {
    CudaTransfersOptions options;
    options.device_ordinals = planes_->device_ordinals();
    options.threads = threads_;
    return MakeCudaTransfers(driver_, planes_->shared_geometry(), *planes_, options);
  }
  HostRegistrar* registrar() override { return registrar_.get(); }
  std::string Describe() const override { return describe_; }
  std::shared_ptr<const PlaneBaseSource> bases() const override { return planes_; }
  // Ranks in separate processes hold one rank each: one GPU.
  std::optional<AttachedGpu> gpu() const override {
    return AttachedGpu{.driver = driver_, .ordinal = planes_->device_ordinals().front()};
  }
  void ObserveMappings(std::function<void(const PlaneBases* mapped)> observer) override {
    planes_->SetMappingObserver(std::move(observer));
  }

 private:
  std::shared_ptr<const CudaDriver> driver_;
  std::shared_ptr<AttachedDevicePlanes> planes_;
  std::unique_ptr<CudaHostRegistrar> registrar_;
  std::string describe_;
  ThreadedTransfersOptions threads_;
};

}  // namespace

Result<std::unique_ptr<AttachPlanes>> AttachPlanes::Open(const CacheGeometry& geometry,
                                                         const std::vector<int>& gpus,
                                                         const ThreadedTransfersOptions& threads) {
  if (gpus.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<attach::ImportedPlanes> planes,
                            attach::ImportedPlanes::Reserve(geometry));
    return std::unique_ptr<AttachPlanes>(new HostAttachPlanes(std::move(planes), threads));
  }
  auto p = std::make_unique<DeviceAttachPlanes>();
  STRATA_RETURN_IF_ERROR(p->Open(geometry, gpus, threads).WithContext("runtime.gpus"));
  return std::unique_ptr<AttachPlanes>(std::move(p));
}

}  // namespace strata

#include "launch/runtime/process_planes.h"

#include <algorithm>

#include "cuda/cuda_planes.h"
#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "store/transfer/host_planes.h"

namespace strata {

namespace {

class HostProcessPlanes final : public ProcessPlanes {
 public:
  HostProcessPlanes(const CacheGeometry& geometry, const ThreadedTransfersOptions& threads)
      : planes_(geometry), threads_(threads) {}
  DevicePlanes& planes() override { return planes_; }
  Result<std::unique_ptr<Transfers>> MakeTransfers() override {
    return MakeHostTransfers(planes_, threads_);
  }
  HostRegistrar* registrar() override { return nullptr; }
  std::vector<uint64_t> DeviceFreeBytes() const override { return {}; }
  std::vector<std::string> DeviceUuids() const override { return {}; }
  std::string Describe() const override { return "planes in host memory"; }

 private:
  HostPlanes planes_;
  ThreadedTransfersOptions threads_;
};

class CudaProcessPlanes final : public ProcessPlanes {
 public:
  Status Open(const CacheGeometry& geometry, const std::vector<int>& gpus,
              const ThreadedTransfersOptions& threads) {
    threads_ = threads;
    STRATA_ASSIGN_OR_RETURN(driver_, CudaDriver::Load());
    STRATA_ASSIGN_OR_RETURN(std::vector<int> ordinals, RankDevices(*driver_, geometry, gpus));
    STRATA_ASSIGN_OR_RETURN(planes_, CudaPlanes::Create(driver_, geometry, ordinals));
    STRATA_ASSIGN_OR_RETURN(registrar_, CudaHostRegistrar::Create(driver_, ordinals.front()));
    describe_ = "planes in GPU memory: " + DescribeDevices(*driver_, ordinals);
    ordinals_ = ordinals;
    std::sort(ordinals_.begin(), ordinals_.end());
    ordinals_.erase(std::unique(ordinals_.begin(), ordinals_.end()), ordinals_.end());
    return Status::Ok();
  }

  DevicePlanes& planes() override { return *planes_; }
  Result<std::unique_ptr<Transfers>> MakeTransfers() override {
    CudaTransfersOptions options;
    options.threads = threads_;
    return MakeCudaTransfers(*planes_, options);
  }
  HostRegistrar* registrar() override { return registrar_.get(); }
  std::vector<uint64_t> DeviceFreeBytes() const override {
    std::vector<uint64_t> out;
    for (int ordinal : ordinals_) {
      uint64_t free_bytes = 0;
      if (Result<std::unique_ptr<PrimaryContext>> ctx = PrimaryContext::Retain(driver_, ordinal);
          ctx.ok()) {
        ContextGuard guard(*driver_, (*ctx)->get());
        Result<std::pair<uint64_t, uint64_t>> info = driver_->MemInfo();
        if (guard.status().ok() && info.ok()) free_bytes = info->first;
      }
      out.push_back(free_bytes);
    }
    return out;
  }
  std::vector<std::string> DeviceUuids() const override {
    std::vector<std::string> out;
    for (int ordinal : ordinals_) {
      if (Result<std::string> uuid = driver_->DeviceUuid(ordinal); uuid.ok()) {
        out.push_back(std::move(*uuid));
      }
    }
    return out;
  }
  std::string Describe() const override { return describe_; }

 private:
  ThreadedTransfersOptions threads_;
  std::vector<int> ordinals_;  // distinct, ascending
  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<CudaPlanes> planes_;
  std::unique_ptr<CudaHostRegistrar> registrar_;
  std::string describe_;
};

}  // namespace

Result<std::vector<int>> RankDevices(const CudaDriver& driver, const CacheGeometry& geometry,
                                     const std::vector<int>& gpus) {
  STRATA_ASSIGN_OR_RETURN(int devices, driver.DeviceCount());
  std::vector<int> ordinals;
  for (uint32_t r = 0; r < geometry.rank_count(); ++r) {
    const int ordinal = gpus[r % gpus.size()];
    if (ordinal >= devices) {
      return Status::InvalidArgument("runtime.gpus: device " + std::to_string(ordinal) +
                                     " does not exist (" + std::to_string(devices) +
                                     " CUDA devices)");
    }
    ordinals.push_back(ordinal);
  }
  return ordinals;
}

std::string DescribeDevices(const CudaDriver& driver, const std::vector<int>& ordinals) {
  std::string out;
  for (size_t r = 0; r < ordinals.size(); ++r) {
    Result<std::string> name = driver.DeviceName(ordinals[r]);
    out += (r == 0 ? "" : ", ") + std::string("rank ") + std::to_string(r) + " on GPU " +
           std::to_string(ordinals[r]) + " (" + (name.ok() ? *name : "?") + ")";
  }
  return out;
}

Result<std::unique_ptr<ProcessPlanes>> ProcessPlanes::Open(
    const CacheGeometry& geometry, const std::vector<int>& gpus,
    const ThreadedTransfersOptions& threads) {
  if (gpus.empty()) {
    return std::unique_ptr<ProcessPlanes>(new HostProcessPlanes(geometry, threads));
  }
  auto p = std::make_unique<CudaProcessPlanes>();
  STRATA_RETURN_IF_ERROR(p->Open(geometry, gpus, threads).WithContext("runtime.gpus"));
  return std::unique_ptr<ProcessPlanes>(std::move(p));
}

}  // namespace strata

#include "cuda/cuda_transfers.h"

namespace strata {

Result<std::vector<int>> AssignDevices(uint32_t rank_count, int device_count,
                                       const std::vector<int>& requested) {
  if (device_count <= 0) return Status::Unavailable("no CUDA device");
  if (requested.empty()) {
    std::vector<int> out;
    for (uint32_t r = 0; r < rank_count; ++r) out.push_back(static_cast<int>(r % device_count));
    return out;
  }
  if (requested.size() != rank_count) {
    return Status::InvalidArgument(std::to_string(requested.size()) + " device ordinals for " +
                                   std::to_string(rank_count) + " ranks");
  }
  for (int d : requested) {
    if (d < 0 || d >= device_count) {
      return Status::InvalidArgument("device ordinal " + std::to_string(d) + " out of range (" +
                                     std::to_string(device_count) + " devices)");
    }
  }
  return requested;
}

namespace {

// One CudaCopyEngine per rank of `geometry`, on its assigned device.
Result<std::vector<std::unique_ptr<CopyEngine>>> MakeEngines(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    const CudaTransfersOptions& options) {
  STRATA_ASSIGN_OR_RETURN(int device_count, driver->DeviceCount());
  STRATA_ASSIGN_OR_RETURN(
      std::vector<int> ordinals,
      AssignDevices(geometry.rank_count(), device_count, options.device_ordinals));
  std::vector<std::unique_ptr<CopyEngine>> engines;
  engines.reserve(ordinals.size());
  for (int ordinal : ordinals) {
    engines.push_back(std::make_unique<CudaCopyEngine>(
        driver, CudaEngineOptions{ordinal, options.method, options.batches_in_flight,
                                  options.kernel_blocks, options.staged}));
  }
  return engines;
}

}  // namespace

Result<std::unique_ptr<Transfers>> MakeCudaTransfers(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    std::vector<RankPlanes> planes, const CudaTransfersOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto engines, MakeEngines(driver, geometry, options));
  STRATA_ASSIGN_OR_RETURN(auto t, ThreadedTransfers::Create(geometry, std::move(planes),
                                                            std::move(engines), options.threads));
  return std::unique_ptr<Transfers>(std::move(t));
}

Result<std::unique_ptr<Transfers>> MakeCudaTransfers(
    const std::shared_ptr<const CudaDriver>& driver, const CacheGeometry& geometry,
    const PlaneBaseSource& source, const CudaTransfersOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto engines, MakeEngines(driver, geometry, options));
  STRATA_ASSIGN_OR_RETURN(
      auto t, ThreadedTransfers::Create(geometry, source, std::move(engines), options.threads));
  return std::unique_ptr<Transfers>(std::move(t));
}

Result<std::unique_ptr<Transfers>> MakeCudaTransfers(const CudaPlanes& planes,
                                                     CudaTransfersOptions options) {
  std::vector<RankPlanes> rank_planes;
  for (uint32_t r = 0; r < planes.geometry().rank_count(); ++r) {
    rank_planes.push_back(planes.planes(r));
  }
  options.device_ordinals = planes.device_ordinals();
  return MakeCudaTransfers(planes.driver(), planes.geometry(), std::move(rank_planes), options);
}

}  // namespace strata

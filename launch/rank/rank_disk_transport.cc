#include "launch/rank/rank_disk_transport.h"

#include "cuda/cuda_planes.h"
#include "cuda/cufile_io.h"
#include "cuda/device_record_checksums_kernel.h"
#include "store/tier/gated_disk_transport.h"

namespace strata {

namespace {

std::vector<RankPlanes> PlanesOf(const DevicePlanes& planes) {
  std::vector<RankPlanes> out;
  for (uint32_t r = 0; r < planes.geometry().rank_count(); ++r) out.push_back(planes.planes(r));
  return out;
}

// Every page plane and the row plane of every rank, whole.
std::vector<CuFileBuffer> BuffersOf(const DevicePlanes& planes) {
  std::vector<CuFileBuffer> out;
  const CacheGeometry& g = planes.geometry();
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    const RankGeometry& rank = g.ranks[r];
    const RankPlanes p = planes.planes(r);
    for (size_t k = 0; k < rank.page_planes.size(); ++k) {
      out.push_back({p.page_plane_base[k], rank.page_planes[k].unit_bytes * rank.page_count});
    }
    out.push_back({p.row_base, rank.row.unit_bytes * rank.row_count});
  }
  return out;
}

// The seams on GPU `ordinal` (every plane of the process there), with
// `buffers` registered (none: cuFile bounces each entry through its own).
Result<DirectSeams> MakeSeamsOnGpu(const std::shared_ptr<CuFileLibrary>& library, CuFileIoMode mode,
                                   const std::shared_ptr<const CudaDriver>& driver, int ordinal,
                                   const std::vector<CuFileBuffer>& buffers) {
  if (library == nullptr) return Status::FailedPrecondition("the cuFile driver is not open");
  if (!RecordChecksumKernelBuilt()) {
    return Status::FailedPrecondition(
        "this build has no GPU record checksum kernel (built without nvcc)");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PrimaryContext> owned,
                          PrimaryContext::Retain(driver, ordinal));
  std::shared_ptr<PrimaryContext> context = std::move(owned);
  DirectSeams seams;
  STRATA_ASSIGN_OR_RETURN(seams.checksums,
                          GpuRecordChecksums::Load(driver, context->get(), ordinal));
  // The io keeps the library and context alive itself: its registrations
  // end with it, wherever its last owner lets go.
  STRATA_ASSIGN_OR_RETURN(seams.io,
                          CuFileDirectIo::Create(library, context, buffers, {.mode = mode}));
  seams.keep_alive = {library, context};
  return seams;
}

Result<DirectSeams> MakeCuFileSeams(const std::shared_ptr<CuFileLibrary>& library,
                                    CuFileIoMode mode, const DevicePlanes& planes) {
  const auto* cuda = dynamic_cast<const CudaPlanes*>(&planes);
  if (cuda == nullptr) {
    return Status::FailedPrecondition("the direct transport needs the planes in GPU memory");
  }
  const std::vector<int>& ordinals = cuda->device_ordinals();
  for (int o : ordinals) {
    if (o != ordinals.front()) {
      return Status::FailedPrecondition(
          "the direct transport runs this process's ranks on one GPU; runtime.gpus names "
          "several");
    }
  }
  return MakeSeamsOnGpu(library, mode, cuda->driver(), ordinals.front(), BuffersOf(planes));
}

}  // namespace

CuFileIoMode CuFileIoModeFor(TransportKind kind) {
  return kind == TransportKind::kDirectCompat ? CuFileIoMode::kSynchronous : CuFileIoMode::kBatch;
}

Result<DirectSeams> CuFileAttachedSeams(const std::shared_ptr<CuFileLibrary>& library,
                                        CuFileIoMode mode, const AttachedGpu& gpu) {
  return MakeSeamsOnGpu(library, mode, gpu.driver, gpu.ordinal, {});
}

DirectSeamsFactory CuFileSeams(std::shared_ptr<CuFileLibrary> library, CuFileIoMode mode) {
  return [library = std::move(library), mode](const DevicePlanes& planes) {
    return MakeCuFileSeams(library, mode, planes);
  };
}

Result<std::unique_ptr<DiskTransport>> OpenRankDiskTransport(const TransportDecision& decision,
                                                             LocalDisk& disk,
                                                             const DevicePlanes& planes,
                                                             std::unique_ptr<Transfers> transfers,
                                                             const DirectSeamsFactory& seams) {
  if (decision.kind == TransportKind::kStaged) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> staged,
                            disk.MakeTransport(std::move(transfers)));
    return std::unique_ptr<DiskTransport>(std::move(staged));
  }
  Result<DirectSeams> made = seams(planes);
  if (!made.ok()) return made.status().WithContext("direct transport");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> staged,
                          disk.MakeTransport(std::move(transfers)));
  std::unique_ptr<DirectTransport> direct =
      disk.MakeDirectTransport(std::make_shared<FixedPlaneBases>(PlanesOf(planes)),
                               std::move(made->io), std::move(made->checksums));
  return std::unique_ptr<DiskTransport>(std::make_unique<SplitDiskTransport>(
      std::move(direct), std::move(staged), std::move(made->keep_alive)));
}

Result<std::unique_ptr<DiskTransport>> OpenAttachedDiskTransport(
    const TransportDecision& decision, LocalDisk& disk,
    std::shared_ptr<const PlaneBaseSource> bases, std::unique_ptr<Transfers> gated_transfers,
    const StagedOptions& staged_options, GatedTransfers& gate,
    const std::function<Result<DirectSeams>()>& seams) {
  if (decision.kind == TransportKind::kStaged) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> staged,
                            disk.MakeTransport(std::move(gated_transfers), staged_options));
    return std::unique_ptr<DiskTransport>(std::move(staged));
  }
  if (bases == nullptr) {
    return Status::FailedPrecondition("the direct transport needs the planes in GPU memory")
        .WithContext("direct transport");
  }
  Result<DirectSeams> made = seams();
  if (!made.ok()) return made.status().WithContext("direct transport");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> staged,
                          disk.MakeTransport(std::move(gated_transfers), staged_options));
  std::unique_ptr<DirectTransport> direct =
      disk.MakeDirectTransport(std::move(bases), std::move(made->io), std::move(made->checksums));
  auto split = std::make_unique<SplitDiskTransport>(std::move(direct), std::move(staged),
                                                    std::move(made->keep_alive));
  return std::unique_ptr<DiskTransport>(
      std::make_unique<GatedDiskTransport>(std::move(split), gate));
}

}  // namespace strata

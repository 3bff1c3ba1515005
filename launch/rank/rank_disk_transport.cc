#include "launch/rank/rank_disk_transport.h"

#include <spdlog/spdlog.h>

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

// Every page plane and the row plane of every rank of `g`, whole, at `bases`.
std::vector<CuFileBuffer> BuffersOf(const CacheGeometry& g, const PlaneBases& bases) {
  std::vector<CuFileBuffer> out;
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    const RankGeometry& rank = g.ranks[r];
    const RankPlanes& p = bases.at(r);
    for (size_t k = 0; k < rank.page_planes.size(); ++k) {
      out.push_back({p.page_plane_base[k], rank.page_planes[k].unit_bytes * rank.page_count});
    }
    out.push_back({p.row_base, rank.row.unit_bytes * rank.row_count});
  }
  return out;
}

// A DirectFileIo over a CuFileDirectIo it shares with the attachment
// observer, which registers each attachment's planes on it.
class SharedCuFileIo final : public DirectFileIo {
 public:
  explicit SharedCuFileIo(std::shared_ptr<CuFileDirectIo> io) : io_(std::move(io)) {}
  std::vector<Status> Run(int fd, TransferDirection direction,
                          std::span<const std::vector<DirectIoEntry>> batches) override {
    return io_->Run(fd, direction, batches);
  }

 private:
  std::shared_ptr<CuFileDirectIo> io_;
};

// The seams on GPU `ordinal` (every plane of the process there), with
// `buffers` registered (none: cuFile bounces each entry through its own),
// the io still of its own type.
struct GpuSeams {
  std::unique_ptr<CuFileDirectIo> io;
  std::unique_ptr<DeviceRecordChecksums> checksums;
  std::vector<std::shared_ptr<void>> keep_alive;
};
Result<GpuSeams> MakeSeamsOnGpu(const std::shared_ptr<CuFileLibrary>& library, CuFileIoMode mode,
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
  GpuSeams seams;
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
  STRATA_ASSIGN_OR_RETURN(GpuSeams made,
                          MakeSeamsOnGpu(library, mode, cuda->driver(), ordinals.front(),
                                         BuffersOf(planes.geometry(), PlanesOf(planes))));
  return DirectSeams{.io = std::move(made.io),
                     .checksums = std::move(made.checksums),
                     .keep_alive = std::move(made.keep_alive)};
}

}  // namespace

CuFileIoMode CuFileIoModeFor(TransportKind kind) {
  return kind == TransportKind::kDirectCompat ? CuFileIoMode::kSynchronous : CuFileIoMode::kBatch;
}

Result<DirectSeams> CuFileAttachedSeams(const std::shared_ptr<CuFileLibrary>& library,
                                        CuFileIoMode mode, const AttachedGpu& gpu,
                                        const CacheGeometry& geometry) {
  STRATA_ASSIGN_OR_RETURN(GpuSeams made,
                          MakeSeamsOnGpu(library, mode, gpu.driver, gpu.ordinal, {}));
  std::shared_ptr<CuFileDirectIo> io = std::move(made.io);
  std::weak_ptr<CuFileDirectIo> registrar = io;
  DirectSeams seams{.io = std::make_unique<SharedCuFileIo>(std::move(io)),
                    .checksums = std::move(made.checksums),
                    .keep_alive = std::move(made.keep_alive)};
  seams.on_mapping = [registrar, geometry](const PlaneBases* mapped) {
    std::shared_ptr<CuFileDirectIo> live = registrar.lock();
    if (live == nullptr) return;  // the transport is gone, and its registrations with it
    if (mapped == nullptr) {
      live->DeregisterAll();
      return;
    }
    const std::vector<CuFileBuffer> buffers = BuffersOf(geometry, *mapped);
    if (Status s = live->Register(buffers); !s.ok()) {
      spdlog::warn(
          "direct transport: this attachment's planes stay unregistered with cuFile (each entry "
          "moves through cuFile's own buffers): {}",
          s.ToString());
      return;
    }
    uint64_t bytes = 0;
    for (const CuFileBuffer& b : buffers) bytes += b.bytes;
    spdlog::info("direct transport: this attachment's {} planes ({} MiB) registered with cuFile",
                 buffers.size(), bytes >> 20);
  };
  return seams;
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

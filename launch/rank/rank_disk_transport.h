// Builds the disk transport a TransportDecision names (rank_transport.h) over
// one process's ranks, or over the planes an attached runtime shares with a
// rank in its own process: staged, or (direct, or compatibility mode under
// the test-only switch) a SplitDiskTransport whose device jobs run on a
// DirectTransport over the ranks' planes and whose host jobs (a composite's
// write_from / read_into) run staged.
//
// The direct transport's seams come from a DirectSeamsFactory: CuFileSeams in
// `strata rank` (cuFile over the CUDA planes, every page plane and row
// registered once; batch I/O on the direct path, synchronous calls in
// compatibility mode), host doubles in CPU tests.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "cuda/cufile_api.h"
#include "cuda/cufile_io.h"
#include "cuda/gds_probe.h"
#include "launch/runtime/attach_planes.h"
#include "store/tier/direct_transport_split.h"
#include "store/tier/local_disk.h"
#include "store/transfer/device_planes.h"
#include "store/transfer/gated_transfers.h"
#include "store/transfer/plane_bases.h"

namespace strata {

// What a DirectTransport over some planes needs, and what those need alive.
struct DirectSeams {
  std::unique_ptr<DirectFileIo> io;
  std::unique_ptr<DeviceRecordChecksums> checksums;
  std::vector<std::shared_ptr<void>> keep_alive;  // released after the transport
  // Planes that come and go (an attached runtime's): registers each
  // attachment's planes with cuFile (AttachPlanes::ObserveMappings); a
  // no-op once the io is gone. Empty for planes registered once.
  std::function<void(const PlaneBases* mapped)> on_mapping = nullptr;
};
using DirectSeamsFactory = std::function<Result<DirectSeams>(const DevicePlanes& planes)>;

// How CuFileDirectIo moves entries for a decision of `kind`: kDirectCompat
// (cuFile's compatibility mode, under the test-only switch) synchronously,
// since its batch path polls (about 5.4 ms per entry measured); kDirect (and
// anything else) in batches.
CuFileIoMode CuFileIoModeFor(TransportKind kind);

// The real seams over CUDA planes (cuda/cuda_planes.h) whose ranks all live on
// one GPU: CuFileDirectIo in `mode` with every page plane and row of every
// rank registered (cuFileBufRegister) and GpuRecordChecksums on that GPU.
// kFailedPrecondition naming why when the planes are not CUDA planes, span
// several GPUs, or this build has no checksum kernel; the driver's error
// when a registration fails.
DirectSeamsFactory CuFileSeams(std::shared_ptr<CuFileLibrary> library, CuFileIoMode mode);

// The seams over an attached runtime's planes of `geometry` on `gpu`:
// GpuRecordChecksums there and CuFileDirectIo in `mode`, whose buffers
// on_mapping registers for each attachment (every page plane and the row of
// every rank) and deregisters before the planes are unmapped. A
// registration cuFile refuses is logged once per attachment and leaves
// that attachment unregistered (cuFile then moves each entry through its
// own buffers). The errors MakeCuFileSeams gives.
Result<DirectSeams> CuFileAttachedSeams(const std::shared_ptr<CuFileLibrary>& library,
                                        CuFileIoMode mode, const AttachedGpu& gpu,
                                        const CacheGeometry& geometry);

// The transport `decision` names: kStaged -> disk.MakeTransport(transfers);
// kDirect / kDirectCompat -> SplitDiskTransport(direct over `planes` with
// seams(planes), staged over `transfers`). A seam that cannot be made fails
// (startup then fails naming it).
Result<std::unique_ptr<DiskTransport>> OpenRankDiskTransport(const TransportDecision& decision,
                                                             LocalDisk& disk,
                                                             const DevicePlanes& planes,
                                                             std::unique_ptr<Transfers> transfers,
                                                             const DirectSeamsFactory& seams);

// The transport of a rank whose planes are an attached runtime's (ranks in
// separate processes, launch/rank/multi_process_stores.h), each rank's by
// its own probe: kStaged -> the staged transport over `gated_transfers` (the
// attach gate's transfers); kDirect / kDirectCompat -> a SplitDiskTransport
// whose direct side runs each job on the planes `bases` maps when it is
// submitted, with seams() (CuFileAttachedSeams), behind `gate`
// (GatedDiskTransport: a detach waits for its stores and fetches too).
// Null `bases` (host planes) or a seam that cannot be made fails.
Result<std::unique_ptr<DiskTransport>> OpenAttachedDiskTransport(
    const TransportDecision& decision, LocalDisk& disk,
    std::shared_ptr<const PlaneBaseSource> bases, std::unique_ptr<Transfers> gated_transfers,
    const StagedOptions& staged, GatedTransfers& gate,
    const std::function<Result<DirectSeams>()>& seams);

}  // namespace strata

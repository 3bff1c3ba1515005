// Builds the disk transport a TransportDecision names (rank_transport.h) over
// one process's ranks: staged, or (direct, or compatibility mode under the
// test-only switch) a SplitDiskTransport whose device jobs run on a
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
#include "store/tier/direct_transport_split.h"
#include "store/tier/local_disk.h"
#include "store/transfer/device_planes.h"

namespace strata {

// What a DirectTransport over some planes needs, and what those need alive.
struct DirectSeams {
  std::unique_ptr<DirectFileIo> io;
  std::unique_ptr<DeviceRecordChecksums> checksums;
  std::vector<std::shared_ptr<void>> keep_alive;  // released after the transport
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

// The transport `decision` names: kStaged -> disk.MakeTransport(transfers);
// kDirect / kDirectCompat -> SplitDiskTransport(direct over `planes` with
// seams(planes), staged over `transfers`). A seam that cannot be made fails
// (startup then fails naming it).
Result<std::unique_ptr<DiskTransport>> OpenRankDiskTransport(const TransportDecision& decision,
                                                             LocalDisk& disk,
                                                             const DevicePlanes& planes,
                                                             std::unique_ptr<Transfers> transfers,
                                                             const DirectSeamsFactory& seams);

}  // namespace strata

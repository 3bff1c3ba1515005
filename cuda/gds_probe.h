// The GPUDirect Storage startup probe (seed 2.6, 3.2): a pure decision table
// over recorded facts, deciding whether a rank's record jobs run on the
// direct transport (cuFile between NVMe and the GPU planes) or the staged one
// (host slabs and the disk thread). The direct path is accepted only where it
// is truly direct: nvidia-fs loaded, a filesystem cuFile supports with
// O_DIRECT, and peer DMA permitted. Compatibility mode, where cuFile bounces
// through its own host buffers, is an uncontrolled host copy and is refused
// for serving. Facts come from GatherGdsFacts (cuda/gds_host_facts.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cuda/cufile_api.h"
#include "cuda/cufile_policy.h"
#include "store/base/status.h"

namespace strata {

// [prefix_cache] transport.
enum class TransportChoice : unsigned char {
  kAuto,    // direct where the probe accepts it, staged otherwise (default)
  kStaged,  // always staged
  kDirect,  // direct, or startup fails with the probe's reason
};
std::string_view TransportChoiceName(TransportChoice choice);

// Whether peer DMA between the NVMe devices and the GPUs is permitted.
enum class PeerDma : unsigned char {
  kPermitted,         // IOMMU off or passthrough, ACS redirect clear where readable
  kAcsUnverified,     // IOMMU off or passthrough; bridges' ACS not readable (needs root)
  kIommuTranslating,  // an IOMMU translates DMA: peer traffic goes through the root complex
  kAcsRedirect,       // a PCIe bridge redirects peer requests upstream
};

struct GdsFacts {
  bool planes_on_gpu = false;                  // the page planes and rows are GPU memory
  std::string library_error;                   // empty: libcufile.so.0 loaded
  std::string driver_error;                    // empty: cuFileDriverOpen succeeded
  std::optional<CuFileProperties> properties;  // after a successful open
  bool nvidia_fs_loaded = false;               // /sys/module/nvidia_fs exists
  std::string filesystem;      // of the record directory: "xfs", "ext4", "tmpfs", ...
  std::string o_direct_error;  // empty: the record directory accepts O_DIRECT
  PeerDma peer_dma = PeerDma::kIommuTranslating;
};

enum class TransportKind : unsigned char {
  kStaged,
  kDirect,        // cuFile's direct path (nvidia-fs)
  kDirectCompat,  // cuFile in compatibility mode: tests only; synchronous cuFileRead/cuFileWrite
};
std::string_view TransportKindName(TransportKind kind);

struct TransportDecision {
  TransportKind kind = TransportKind::kStaged;
  // Why: for staged, the configured choice or the probe's refusal; for
  // direct, what the probe verified. One line, for the startup log and /status.
  std::string reason;
};

// Why the direct path is refused on a host with `facts`, or nullopt when it
// is accepted. `compat` kAllowedForTests accepts compatibility mode in place
// of nvidia-fs and the peer DMA path (and nothing else).
std::optional<std::string> DirectRefusal(const GdsFacts& facts, CompatMode compat);

// The table: kStaged -> staged ("configured"); kAuto -> direct when accepted,
// else staged with the refusal; kDirect -> direct when accepted, else
// kFailedPrecondition "transport = \"direct\" refused: <refusal>".
Result<TransportDecision> DecideTransport(TransportChoice choice, CompatMode compat,
                                          const GdsFacts& facts);

}  // namespace strata

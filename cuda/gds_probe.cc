#include "cuda/gds_probe.h"

#include <array>

#include "cuda/cufile_table.h"

namespace strata {

namespace {

bool Bit(uint32_t flags, unsigned bit) { return ((flags >> bit) & 1U) != 0; }

// Filesystems cuFile serves on the direct path, each with the status bit
// its driver reports when it supports that filesystem.
struct SupportedFs {
  std::string_view name;
  unsigned status_bit;
};
constexpr std::array<SupportedFs, 7> kSupportedFilesystems{{
    {"xfs", kStrataCuFileNvme},
    {"ext4", kStrataCuFileNvme},
    {"nfs", kStrataCuFileNfs},
    {"lustre", kStrataCuFileLustre},
    {"wekafs", kStrataCuFileWekaFs},
    {"gpfs", kStrataCuFileGpfs},
    {"beegfs", kStrataCuFileBeeGfs},
}};

std::optional<std::string> FilesystemRefusal(const GdsFacts& facts) {
  for (const SupportedFs& fs : kSupportedFilesystems) {
    if (facts.filesystem != fs.name) continue;
    const CuFileProperties& p = *facts.properties;
    const bool supported = fs.status_bit == kStrataCuFileNvme ? p.nvme_supported()
                                                              : Bit(p.status_flags, fs.status_bit);
    if (supported) return std::nullopt;
    return "cuFile does not report support for " + facts.filesystem + " on this host";
  }
  return "the record directory's filesystem (" +
         (facts.filesystem.empty() ? std::string("unknown") : facts.filesystem) +
         ") is not one cuFile serves directly (xfs, ext4, nfs, lustre, wekafs, gpfs, beegfs)";
}

std::optional<std::string> PeerDmaRefusal(PeerDma dma) {
  switch (dma) {
    case PeerDma::kPermitted:
    case PeerDma::kAcsUnverified: return std::nullopt;
    case PeerDma::kIommuTranslating:
      return std::string("the IOMMU translates DMA (set it off or to passthrough)");
    case PeerDma::kAcsRedirect:
      return std::string("a PCIe bridge has ACS redirect set (clear ACS control on the bridges)");
  }
  return std::string("peer DMA state unknown");
}

std::string Accepted(const GdsFacts& facts) {
  const CuFileProperties& p = *facts.properties;
  std::string r = "nvidia-fs " + std::to_string(p.nvfs_major) + "." + std::to_string(p.nvfs_minor) +
                  ", " + facts.filesystem + " with O_DIRECT, ";
  r += facts.peer_dma == PeerDma::kPermitted
           ? "peer DMA permitted"
           : "IOMMU off or passthrough (bridge ACS not verified: needs root)";
  return r;
}

}  // namespace

std::string_view TransportChoiceName(TransportChoice choice) {
  switch (choice) {
    case TransportChoice::kAuto: return "auto";
    case TransportChoice::kStaged: return "staged";
    case TransportChoice::kDirect: return "direct";
  }
  return "?";
}

std::string_view TransportKindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kStaged: return "staged";
    case TransportKind::kDirect: return "direct";
    case TransportKind::kDirectCompat: return "direct-compat";
  }
  return "?";
}

std::optional<std::string> DirectRefusal(const GdsFacts& facts, CompatMode compat) {
  if (!facts.planes_on_gpu) return std::string("the page planes are not in GPU memory");
  if (!facts.library_error.empty()) return facts.library_error;
  if (!facts.driver_error.empty()) return facts.driver_error;
  if (!facts.properties) return std::string("cuFile driver properties unavailable");
  const CuFileProperties& p = *facts.properties;
  if (!p.batch_io_supported()) return std::string("cuFile lacks the batch I/O API");
  if (!facts.o_direct_error.empty()) return facts.o_direct_error;
  const bool nvfs = facts.nvidia_fs_loaded && p.nvfs_major > 0;
  if (compat == CompatMode::kAllowedForTests && !nvfs) return std::nullopt;
  if (!nvfs) {
    return std::string(
        "no nvidia-fs kernel module: cuFile would run in compatibility mode (host bounce "
        "buffers), which is refused for serving");
  }
  if (compat == CompatMode::kRefused && p.compat_mode_allowed()) {
    return std::string("cuFile allows compatibility mode (Strata's cufile.json not applied)");
  }
  if (auto fs = FilesystemRefusal(facts)) return fs;
  return PeerDmaRefusal(facts.peer_dma);
}

Result<TransportDecision> DecideTransport(TransportChoice choice, CompatMode compat,
                                          const GdsFacts& facts) {
  if (choice == TransportChoice::kStaged) {
    return TransportDecision{.kind = TransportKind::kStaged, .reason = "configured"};
  }
  if (std::optional<std::string> refusal = DirectRefusal(facts, compat)) {
    if (choice == TransportChoice::kDirect) {
      return Status::FailedPrecondition("transport = \"direct\" refused: " + *refusal);
    }
    return TransportDecision{.kind = TransportKind::kStaged,
                             .reason = "direct refused: " + *refusal};
  }
  const bool nvfs = facts.nvidia_fs_loaded && facts.properties->nvfs_major > 0;
  if (!nvfs) {
    return TransportDecision{.kind = TransportKind::kDirectCompat,
                             .reason =
                                 "cuFile compatibility mode (test only): no nvidia-fs; "
                                 "synchronous cuFileRead/cuFileWrite per entry"};
  }
  return TransportDecision{.kind = TransportKind::kDirect, .reason = Accepted(facts)};
}

}  // namespace strata

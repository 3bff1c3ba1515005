// Gathers the facts the GPUDirect Storage probe decides on (cuda/gds_probe.h):
// loads libcufile, installs Strata's cufile.json, opens the driver and reads
// its properties, and reads the host's nvidia-fs, IOMMU and the record
// directory's filesystem and O_DIRECT support. The I/O edge of the probe.
#pragma once

#include <memory>
#include <string>

#include "cuda/cufile_api.h"
#include "cuda/cufile_policy.h"
#include "cuda/gds_probe.h"
#include "store/io/file_system.h"

namespace strata {

struct GdsProbeInputs {
  std::string library = kCuFileLibrary;
  CuFilePolicy policy = {};
  // Where records live (created if missing): its filesystem and O_DIRECT.
  std::string record_dir;
  // Read for nvidia-fs and the IOMMU; tests point these at a fake tree.
  std::string sys_root = "/sys";
  std::string proc_cmdline = "/proc/cmdline";
};

struct GdsProbeResult {
  GdsFacts facts;
  // The opened library when the driver opened (the transport keeps it), else null.
  std::shared_ptr<CuFileLibrary> library;
};

// Never fails: every problem becomes a fact the decision table refuses on.
GdsProbeResult ProbeGdsHost(FileSystem& fs, const GdsProbeInputs& inputs);

// From the IOMMU groups present under `sys_root` and the kernel command
// line: no groups -> IOMMU off; "iommu=pt" or "iommu.passthrough=1" ->
// passthrough; otherwise translating. Bridges' ACS is not readable without
// root: an IOMMU off or in passthrough gives kAcsUnverified.
PeerDma ReadPeerDma(const std::string& sys_root, const std::string& proc_cmdline);

}  // namespace strata

// The GPUDirect Storage probe's decision table over recorded property sets
// (seed 3.2 step 1): one row per reason to refuse, and the accepted cases.
#include "cuda/gds_probe.h"

#include <gtest/gtest.h>

#include "cuda/cufile_table.h"

namespace strata {
namespace {

constexpr uint32_t Flag(unsigned bit) { return 1U << bit; }

// A host like the seed's development host: nvidia-fs 2.26, XFS on NVMe,
// IOMMU off, compatibility mode disallowed by Strata's cufile.json.
GdsFacts DirectHost() {
  GdsFacts f;
  f.planes_on_gpu = true;
  f.properties = CuFileProperties{
      .nvfs_major = 2,
      .nvfs_minor = 26,
      .max_direct_io_kib = 16384,
      .status_flags = Flag(kStrataCuFileNvme),
      .control_flags = 0,
      .feature_flags = Flag(kStrataCuFileBatchIo),
      .max_batch_io_entries = 256,
  };
  f.nvidia_fs_loaded = true;
  f.filesystem = "xfs";
  f.peer_dma = PeerDma::kPermitted;
  return f;
}

// The GPU machine here: CUDA 13 libcufile, no nvidia-fs module.
GdsFacts CompatOnlyHost() {
  GdsFacts f = DirectHost();
  f.nvidia_fs_loaded = false;
  f.properties->nvfs_major = 0;
  f.properties->nvfs_minor = 0;
  f.properties->status_flags = 0;
  f.filesystem = "ext4";
  f.peer_dma = PeerDma::kIommuTranslating;
  return f;
}

struct Row {
  const char* name;
  GdsFacts (*facts)();
  const char* refusal_contains;  // null: accepted
};

const Row kRows[] = {
    {"accepted", DirectHost, nullptr},
    {"acs_unverified_accepted",
     [] {
       GdsFacts f = DirectHost();
       f.peer_dma = PeerDma::kAcsUnverified;
       return f;
     },
     nullptr},
    {"host_planes",
     [] {
       GdsFacts f = DirectHost();
       f.planes_on_gpu = false;
       return f;
     },
     "not in GPU memory"},
    {"no_library",
     [] {
       GdsFacts f = DirectHost();
       f.library_error = "libcufile.so.0 not found (dlopen)";
       f.properties.reset();
       return f;
     },
     "libcufile.so.0 not found"},
    {"driver_open_failed",
     [] {
       GdsFacts f = DirectHost();
       f.driver_error = "cuFileDriverOpen: cuFile error 5001 (CUresult 0)";
       f.properties.reset();
       return f;
     },
     "cuFileDriverOpen"},
    {"no_batch_api",
     [] {
       GdsFacts f = DirectHost();
       f.properties->feature_flags = 0;
       return f;
     },
     "batch I/O"},
    {"no_o_direct",
     [] {
       GdsFacts f = DirectHost();
       f.filesystem = "tmpfs";
       f.o_direct_error = "/dev/shm/strata (tmpfs) refuses O_DIRECT";
       return f;
     },
     "refuses O_DIRECT"},
    {"no_nvidia_fs", CompatOnlyHost, "no nvidia-fs kernel module"},
    {"module_loaded_but_driver_reports_none",
     [] {
       GdsFacts f = DirectHost();
       f.properties->nvfs_major = 0;
       return f;
     },
     "no nvidia-fs kernel module"},
    {"compat_mode_allowed",
     [] {
       GdsFacts f = DirectHost();
       f.properties->control_flags = Flag(kStrataCuFileAllowCompatMode);
       return f;
     },
     "allows compatibility mode"},
    {"unsupported_filesystem",
     [] {
       GdsFacts f = DirectHost();
       f.filesystem = "btrfs";
       return f;
     },
     "(btrfs) is not one cuFile serves"},
    {"nvme_not_supported",
     [] {
       GdsFacts f = DirectHost();
       f.properties->status_flags = 0;
       return f;
     },
     "does not report support for xfs"},
    {"nfs_with_flag",
     [] {
       GdsFacts f = DirectHost();
       f.filesystem = "nfs";
       f.properties->status_flags = Flag(kStrataCuFileNfs);
       return f;
     },
     nullptr},
    {"iommu_translating",
     [] {
       GdsFacts f = DirectHost();
       f.peer_dma = PeerDma::kIommuTranslating;
       return f;
     },
     "IOMMU translates"},
    {"acs_redirect",
     [] {
       GdsFacts f = DirectHost();
       f.peer_dma = PeerDma::kAcsRedirect;
       return f;
     },
     "ACS redirect"},
};

TEST(GdsProbeTest, DecisionTable) {
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.name);
    const std::optional<std::string> refusal = DirectRefusal(row.facts(), CompatMode::kRefused);
    if (row.refusal_contains == nullptr) {
      EXPECT_FALSE(refusal.has_value()) << *refusal;
    } else {
      ASSERT_TRUE(refusal.has_value());
      EXPECT_NE(refusal->find(row.refusal_contains), std::string::npos) << *refusal;
    }
  }
}

TEST(GdsProbeTest, AutoTakesDirectOnlyWhereAccepted) {
  Result<TransportDecision> direct =
      DecideTransport(TransportChoice::kAuto, CompatMode::kRefused, DirectHost());
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->kind, TransportKind::kDirect);
  EXPECT_EQ(direct->reason, "nvidia-fs 2.26, xfs with O_DIRECT, peer DMA permitted");

  Result<TransportDecision> staged =
      DecideTransport(TransportChoice::kAuto, CompatMode::kRefused, CompatOnlyHost());
  ASSERT_TRUE(staged.ok());
  EXPECT_EQ(staged->kind, TransportKind::kStaged);
  EXPECT_EQ(staged->reason.rfind("direct refused: no nvidia-fs kernel module", 0), 0u)
      << staged->reason;
}

TEST(GdsProbeTest, DirectFailsWithTheProbesReason) {
  Result<TransportDecision> d =
      DecideTransport(TransportChoice::kDirect, CompatMode::kRefused, CompatOnlyHost());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(d.status().message().rfind("transport = \"direct\" refused: no nvidia-fs", 0), 0u)
      << d.status().message();
}

TEST(GdsProbeTest, StagedNeverProbes) {
  GdsFacts nothing;  // no library, no GPU: irrelevant when staged is configured
  Result<TransportDecision> d =
      DecideTransport(TransportChoice::kStaged, CompatMode::kRefused, nothing);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, TransportKind::kStaged);
  EXPECT_EQ(d->reason, "configured");
}

TEST(GdsProbeTest, TestSwitchAllowsCompatibilityModeAndNothingElse) {
  Result<TransportDecision> compat =
      DecideTransport(TransportChoice::kDirect, CompatMode::kAllowedForTests, CompatOnlyHost());
  ASSERT_TRUE(compat.ok());
  EXPECT_EQ(compat->kind, TransportKind::kDirectCompat);

  GdsFacts no_library = CompatOnlyHost();
  no_library.library_error = "libcufile.so.0 not found";
  EXPECT_TRUE(DirectRefusal(no_library, CompatMode::kAllowedForTests).has_value());
  GdsFacts no_o_direct = CompatOnlyHost();
  no_o_direct.o_direct_error = "refuses O_DIRECT";
  EXPECT_TRUE(DirectRefusal(no_o_direct, CompatMode::kAllowedForTests).has_value());
  GdsFacts host_planes = CompatOnlyHost();
  host_planes.planes_on_gpu = false;
  EXPECT_TRUE(DirectRefusal(host_planes, CompatMode::kAllowedForTests).has_value());
}

TEST(GdsProbeTest, Names) {
  EXPECT_EQ(TransportChoiceName(TransportChoice::kAuto), "auto");
  EXPECT_EQ(TransportChoiceName(TransportChoice::kStaged), "staged");
  EXPECT_EQ(TransportChoiceName(TransportChoice::kDirect), "direct");
  EXPECT_EQ(TransportKindName(TransportKind::kDirectCompat), "direct-compat");
}

}  // namespace
}  // namespace strata

// `strata bench store --transport staged|direct`: the disk transport the
// bench's disk and composite stores run over, chosen and opened exactly as
// `strata rank` does for [prefix_cache] transport = "staged" / "direct":
// ChooseHostTransport (the GPUDirect Storage probe on the record directory,
// compatibility mode only under the test-only switch STRATA_TEST_CUFILE_COMPAT=1)
// and OpenRankDiskTransport over CuFileSeams (launch/rank/).
//
// The report names what ran ("staged", "direct", or "direct-compat") and the
// probe's reason, so compatibility-mode figures (cuFile bouncing through its
// own host buffers) are never read as direct ones.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "launch/rank/rank_transport.h"
#include "store/tier/disk_transport.h"
#include "store/tier/local_disk.h"
#include "store/transfer/device_planes.h"

namespace strata {

// --transport.
enum class BenchTransport : unsigned char { kStaged, kDirect };
inline constexpr std::string_view kBenchTransportNames[] = {"staged", "direct"};
Result<BenchTransport> ParseBenchTransport(std::string_view name);

class StoreBenchTransport {
 public:
  // kStaged: the staged transport, no probe. kDirect: kFailedPrecondition
  // when `planes` is kHost (the direct transport moves GPU planes: --gpu);
  // otherwise the probe decides, and its refusal fails naming why.
  static Result<StoreBenchTransport> Choose(BenchTransport requested, PlanesPlacement planes,
                                            const std::string& record_dir);

  // A new transport over `disk` and `planes`, one per store the bench opens
  // (with direct, each registers the planes with cuFile and releases them
  // when destroyed).
  Result<std::unique_ptr<DiskTransport>> Open(LocalDisk& disk, const DevicePlanes& planes,
                                              std::unique_ptr<Transfers> transfers) const;

  const TransportDecision& decision() const { return choice_.decision; }
  // Sets "transport" ("staged", "direct", "direct-compat") and
  // "transport_reason" in the report.
  void Describe(nlohmann::json& report) const;

 private:
  explicit StoreBenchTransport(RankTransportChoice choice) : choice_(std::move(choice)) {}
  RankTransportChoice choice_;
};

}  // namespace strata

#include "launch/bench/store_bench_transport.h"

#include "launch/rank/rank_disk_transport.h"

namespace strata {

Result<BenchTransport> ParseBenchTransport(std::string_view name) {
  if (name == kBenchTransportNames[0]) return BenchTransport::kStaged;
  if (name == kBenchTransportNames[1]) return BenchTransport::kDirect;
  return Status::InvalidArgument("--transport is \"staged\" or \"direct\", not \"" +
                                 std::string(name) + "\"");
}

Result<StoreBenchTransport> StoreBenchTransport::Choose(BenchTransport requested,
                                                        PlanesPlacement planes,
                                                        const std::string& record_dir) {
  if (requested == BenchTransport::kDirect && planes == PlanesPlacement::kHost) {
    return Status::FailedPrecondition(
        "--transport direct needs --gpu N: the direct transport moves record bytes between the "
        "disk and GPU planes");
  }
  const RankTransportInputs inputs{.choice = requested == BenchTransport::kDirect
                                                 ? TransportChoice::kDirect
                                                 : TransportChoice::kStaged,
                                   .disk = DiskTier::kPresent,
                                   .compat = TestCompatModeFromEnvironment()};
  Result<RankTransportChoice> chosen = ChooseHostTransport(inputs, planes, record_dir);
  if (!chosen.ok()) return chosen.status().WithContext("bench store --transport direct");
  return StoreBenchTransport(std::move(*chosen));
}

Result<std::unique_ptr<DiskTransport>> StoreBenchTransport::Open(
    LocalDisk& disk, const DevicePlanes& planes, std::unique_ptr<Transfers> transfers) const {
  return OpenRankDiskTransport(
      choice_.decision, disk, planes, std::move(transfers),
      CuFileSeams(choice_.library, CuFileIoModeFor(choice_.decision.kind)));
}

void StoreBenchTransport::Describe(nlohmann::json& report) const {
  report["transport"] = std::string(TransportKindName(choice_.decision.kind));
  report["transport_reason"] = choice_.decision.reason;
}

}  // namespace strata

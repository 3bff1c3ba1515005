#include "launch/rank/rank_transport.h"

#include <cstdlib>
#include <string_view>

#include "cuda/gds_host_facts.h"

namespace strata {

CompatMode TestCompatModeFrom(const char* value) {
  return value != nullptr && std::string_view(value) == "1" ? CompatMode::kAllowedForTests
                                                            : CompatMode::kRefused;
}

CompatMode TestCompatModeFromEnvironment() {
  return TestCompatModeFrom(std::getenv(kTestCompatSwitch));
}

Result<TransportDecision> DecideRankTransport(const RankTransportInputs& inputs,
                                              const std::function<GdsFacts()>& probe) {
  if (inputs.choice == TransportChoice::kStaged || inputs.disk == DiskTier::kAbsent) {
    return TransportDecision{.kind = TransportKind::kStaged, .reason = "configured"};
  }
  return DecideTransport(inputs.choice, inputs.compat, probe());
}

Result<RankTransportChoice> ChooseHostTransport(const RankTransportInputs& inputs,
                                                PlanesPlacement planes,
                                                const std::string& record_dir) {
  std::shared_ptr<CuFileLibrary> library;
  auto probe = [&] {
    PosixFileSystem fs;
    GdsProbeInputs probe_inputs;
    probe_inputs.record_dir = record_dir;
    probe_inputs.policy.compat = inputs.compat;
    GdsProbeResult result = ProbeGdsHost(fs, probe_inputs);
    result.facts.planes_on_gpu = planes == PlanesPlacement::kGpu;
    library = std::move(result.library);
    return result.facts;
  };
  STRATA_ASSIGN_OR_RETURN(TransportDecision decision, DecideRankTransport(inputs, probe));
  if (decision.kind == TransportKind::kStaged) library.reset();
  return RankTransportChoice{.decision = std::move(decision), .library = std::move(library)};
}

Result<RankTransportChoice> ChooseRankTransport(const RankConfig& config,
                                                const std::string& record_dir) {
  const RankTransportInputs inputs{
      .choice = config.prefix_cache.transport,
      .disk = config.prefix_cache.disk_dir ? DiskTier::kPresent : DiskTier::kAbsent,
      .compat = TestCompatModeFromEnvironment()};
  return ChooseHostTransport(
      inputs, config.runtime.gpus.empty() ? PlanesPlacement::kHost : PlanesPlacement::kGpu,
      record_dir);
}

std::string TransportSummary(const TransportDecision& decision) {
  return "transport " + std::string(TransportKindName(decision.kind)) + " (" + decision.reason +
         ")";
}

}  // namespace strata

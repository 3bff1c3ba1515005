#include "launch/rank/rank_transport.h"

#include "cuda/gds_host_facts.h"

namespace strata {

Result<TransportDecision> ChooseRankTransport(const RankConfig& config,
                                              const std::string& record_dir) {
  const TransportChoice choice = config.prefix_cache.transport;
  if (choice == TransportChoice::kStaged || !config.prefix_cache.disk_dir) {
    return TransportDecision{.kind = TransportKind::kStaged, .reason = "configured"};
  }
  PosixFileSystem fs;
  GdsProbeInputs inputs;
  inputs.record_dir = record_dir;
  GdsProbeResult probe = ProbeGdsHost(fs, inputs);
  probe.facts.planes_on_gpu = !config.runtime.gpus.empty();
  STRATA_ASSIGN_OR_RETURN(TransportDecision decision,
                          DecideTransport(choice, CompatMode::kRefused, probe.facts));
  if (decision.kind == TransportKind::kStaged) return decision;
  // The probe accepted the direct path; the DirectTransport that would run
  // it is not part of this build yet (docs/operations.md, GPUDirect Storage).
  const std::string why = "the probe accepts the direct path (" + decision.reason +
                          ") but this build has no DirectTransport yet";
  if (choice == TransportChoice::kDirect) {
    return Status::FailedPrecondition("transport = \"direct\": " + why);
  }
  return TransportDecision{.kind = TransportKind::kStaged, .reason = why};
}

std::string TransportSummary(const TransportDecision& decision) {
  return "transport " + std::string(TransportKindName(decision.kind)) + " (" + decision.reason +
         ")";
}

}  // namespace strata

// Which disk transport a rank's record jobs run on ([prefix_cache]
// transport, seed 2.6): runs the GPUDirect Storage probe on this host for
// "auto" and "direct" and applies its decision table (cuda/gds_probe.h).
// The startup line and /status report the result and its reason.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cuda/cufile_api.h"
#include "cuda/gds_probe.h"
#include "launch/config/config.h"

namespace strata {

// The test-only switch that lets cuFile run in compatibility mode (host
// bounce buffers) so the direct transport's job logic can run on a host
// without nvidia-fs: the environment variable STRATA_TEST_CUFILE_COMPAT=1.
// It is never a configuration key; TestCompatModeFromEnvironment is the one
// place that reads it.
inline constexpr const char* kTestCompatSwitch = "STRATA_TEST_CUFILE_COMPAT";
// kAllowedForTests only for the value "1" (null: unset).
CompatMode TestCompatModeFrom(const char* value);
CompatMode TestCompatModeFromEnvironment();

enum class DiskTier : unsigned char { kAbsent, kPresent };

struct RankTransportInputs {
  TransportChoice choice = TransportChoice::kAuto;  // [prefix_cache] transport
  DiskTier disk = DiskTier::kAbsent;                // a disk tier is configured
  CompatMode compat = CompatMode::kRefused;         // the test-only switch
};

// The decision (pure apart from `probe`, called at most once): "staged"
// ("configured") without a disk tier or for transport = "staged", with no
// probe; otherwise DecideTransport over the probe's facts: "auto" runs
// direct where accepted and staged with the refusal otherwise; "direct"
// fails with kFailedPrecondition naming the refusal.
Result<TransportDecision> DecideRankTransport(const RankTransportInputs& inputs,
                                              const std::function<GdsFacts()>& probe);

struct RankTransportChoice {
  TransportDecision decision;
  // The cuFile library the probe opened (its driver open), for a direct
  // decision; null otherwise.
  std::shared_ptr<CuFileLibrary> library;
};

// Where the page planes and rows live (the probe's planes_on_gpu fact).
enum class PlanesPlacement : unsigned char { kHost, kGpu };

// DecideRankTransport over this host's probe (ProbeGdsHost on `record_dir`,
// with Strata's cufile.json; compatibility mode as `inputs.compat` says) and
// `planes`. Shared by `strata rank` and `strata bench store --transport`.
Result<RankTransportChoice> ChooseHostTransport(const RankTransportInputs& inputs,
                                                PlanesPlacement planes,
                                                const std::string& record_dir);

// ChooseHostTransport for a rank's configuration: [prefix_cache] transport
// and disk, the test-only switch from the environment, and the planes that
// runtime.gpus places.
Result<RankTransportChoice> ChooseRankTransport(const RankConfig& config,
                                                const std::string& record_dir);

// "transport staged (direct refused: ...)", for the startup line.
std::string TransportSummary(const TransportDecision& decision);

}  // namespace strata

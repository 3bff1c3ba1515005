// The workloads of a `strata rank` process: what it does between opening
// its role (rank_stores.h) and closing it (RunRank, rank_process.h). Each
// runs on the rank's main thread, which owns the store, calls `publish`
// whenever its ops snapshot may have changed (and at least every few
// hundred milliseconds while it waits, so /healthz stays fresh), ends early
// once `stop` is requested, and returns the process's exit code. No
// workload sleeps: each waits on an event with a bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "launch/rank/rank_stores.h"
#include "launch/rank/stop_request.h"
#include "launch/runtime/qualification_report.h"
#include "launch/runtime/serve_load.h"

namespace strata {

// Takes a fresh ops snapshot and publishes it (called on the workload's thread).
using PublishSnapshot = std::function<void()>;

// How long a signalled peer keeps serving while rank zero drains it.
inline constexpr std::chrono::seconds kPeerStopGrace{10};
// A peer's bound on each wait for its agent to end: it republishes its
// snapshot and looks at the stop request this often.
inline constexpr std::chrono::milliseconds kPeerPublishInterval{100};

// A peer: serves rank zero's jobs until its agent ends (rank zero closed
// the session, or the agent failed). A launcher signals every rank at once
// and rank zero drains the peers as it stops, so after a stop request a
// peer keeps serving for kPeerStopGrace, then ends its side alone; a peer
// still joining stops at once. Returns 0 (Close reports how the agent ended).
// `wait_turn` waits until the agent ended or the given time (the default:
// PeerRank::WaitEnded); an attached peer also serves its runtime's channel there.
using PeerTurn = std::function<void(std::chrono::steady_clock::time_point until)>;
int ServeAsPeer(PeerRank& peer, const StopRequest& stop, const PublishSnapshot& publish,
                const PeerTurn& wait_turn = {});

// Rank zero, --workload serve: a light conversation load (ServeLoad, one
// turn every kServeTurnInterval) until a stop request. Returns 0, or 1 when a turn
// failed for another reason than the stop.
int ServeConversations(RuntimeDriver& driver, const StopRequest& stop,
                       const PublishSnapshot& publish);

struct QualifyOptions {
  QualifyPhases phases = QualifyPhases::kFirstRun;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  std::string metrics_url;   // printed and written in the summary
  std::string summary_json;  // where to write the JSON summary; empty: nowhere
};

// Rank zero, --workload qualify / restore: runs the phases in order (phase 4
// after phases 1-2 when one process holds memory and disk) while
// each passes, prints each phase and a summary table on stdout, and writes
// the JSON summary. Returns 0, or 2 when a phase failed.
int Qualify(RuntimeDriver& driver, const QualifyOptions& options, const PublishSnapshot& publish);

}  // namespace strata

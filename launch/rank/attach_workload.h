// The workload of a `strata rank` with attach.socket: instead of the
// synthetic runtime, serve the attach channel (attach/attach_server.h) to a
// runtime process until a stop request.
#pragma once

#include "launch/rank/rank_stores.h"
#include "launch/rank/stop_request.h"
#include "launch/rank/workloads.h"

namespace strata {

// Serves `*config.attach.socket` over `driver`'s store and attach planes;
// returns the exit code (1 when the socket cannot be served).
int ServeAttach(RuntimeDriver& driver, const RankConfig& config, const StopRequest& stop,
                const PublishSnapshot& publish);

}  // namespace strata

// The workload of a `strata rank` with attach.socket: instead of the
// synthetic runtime, serve the attach channel (attach/attach_server.h) to a
// runtime process until a stop request. With ranks in separate processes
// every rank serves its own runtime: rank zero's makes the store calls, a
// peer's only shares its planes with the peer's rank agent.
#pragma once

#include "launch/rank/rank_stores.h"
#include "launch/rank/stop_request.h"
#include "launch/rank/workloads.h"

namespace strata {

// The attach server's options for this rank: config's socket, its model
// identity, and `planes`' geometry and handle kind.
attach::AttachServerOptions AttachServerOptionsFor(const RankConfig& config,
                                                   const PlaneImporter& planes);

// Rank zero with cluster.rendezvous = "attach": the peers learn the
// rendezvous only from rank zero's runtime, so before the join this admits
// that runtime (planes and their gate only: no store exists yet) and tells
// it `announce` in its HelloAccept. Waits up to cluster.connect_timeout for
// it (kUnavailable past that). ServeAttach later gives the server its store.
Result<std::unique_ptr<attach::AttachServer>> AdmitRuntimeBeforeJoin(
    const RankConfig& config, PlaneImporter& planes, GatedTransfers& gate,
    const attach::AttachRendezvous& announce);

// Serves `*config.attach.socket` over `driver`'s store and attach planes;
// returns the exit code (1 when the socket cannot be served).
int ServeAttach(RuntimeDriver& driver, const RankConfig& config, const StopRequest& stop,
                const PublishSnapshot& publish);

// A peer with attach.socket: serves rank zero's jobs as ServeAsPeer does,
// and its runtime's channel between them (planes only). Exit code as there,
// or 1 when the socket cannot be served.
int ServeAttachAsPeer(PeerRank& peer, const RankConfig& config, const StopRequest& stop,
                      const PublishSnapshot& publish);

}  // namespace strata

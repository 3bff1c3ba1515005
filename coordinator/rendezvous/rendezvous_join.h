// Adapts a rendezvous client to the join a RankAgent runs first
// (rank_agent/rank_agent.h): the agent module does not depend on the
// coordinator's rendezvous interface.
#pragma once

#include "coordinator/rendezvous/rendezvous.h"
#include "rank_agent/rank_agent.h"

namespace strata {

// Joins through `client` (which must outlive the agent's join) as `rank` of
// `world_size` and turns the ticket into the record link's address and nonce.
RankJoin JoinThroughRendezvous(RendezvousClient& client, RankId rank, uint32_t world_size);

}  // namespace strata

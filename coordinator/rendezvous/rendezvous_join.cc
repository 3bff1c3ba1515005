#include "coordinator/rendezvous/rendezvous_join.h"

namespace strata {

RankJoin JoinThroughRendezvous(RendezvousClient& client, RankId rank, uint32_t world_size) {
  return [&client, rank,
          world_size](std::chrono::steady_clock::time_point deadline) -> Result<RecordLinkTicket> {
    STRATA_ASSIGN_OR_RETURN(JoinTicket ticket, client.Join(rank, world_size, deadline));
    return RecordLinkTicket{
        {ticket.record_host, ticket.record_port}, ticket.nonce.bytes, ticket.world_size};
  };
}

}  // namespace strata

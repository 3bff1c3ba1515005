// ShardedTransport's sends to the peers: each peer's jobs in order, a
// host-data store's share paced ahead of its Job (docs/wire.md), and a send
// a peer's link refuses failing the job on that rank or stopping the
// transport.
#include "coordinator/sharded_transport.h"

#include <string>
#include <utility>

namespace strata {

void ShardedTransport::SendToPeers(const RecordJob& job, const std::vector<RankId>& ranks,
                                   std::span<const HostBuffers> shares) {
  if (!stopped_.ok()) return;
  {
    // Before the first send: an answer may arrive before the last send.
    MutexLock lock(gate_mu_);
    gate_.Expect(job.id, ranks);
  }
  const wire::Message message = wire::Job{job};
  for (RankId rank : ranks) {
    Peer* peer = PeerOf(rank);
    if (peer == nullptr) continue;  // rank zero
    if (!stopped_.ok()) return;
    Outgoing out{.id = job.id, .share = std::nullopt, .job = message};
    if (!shares.empty()) out.share.emplace(job.id, shares[rank.value]);
    peer->outgoing.push_back(std::move(out));
    SendOutgoing(*peer);
  }
}

void ShardedTransport::SendOutgoing(Peer& peer) {
  if (peer.sending) return;  // the running call sends what was queued meanwhile
  peer.sending = true;
  while (!peer.outgoing.empty() && stopped_.ok()) {
    Outgoing& out = peer.outgoing.front();
    Status sent;
    if (out.share) {
      Result<bool> paced = SendPaced(*peer.link, *out.share);
      if (paced.ok() && !*paced) break;  // the rest once the link drained (Pump)
      sent = paced.status();
    }
    if (sent.ok()) sent = peer.link->Send(out.job);
    const JobId id = out.id;
    peer.outgoing.pop_front();
    if (sent.ok()) {
      ++peer.jobs_sent;
    } else {
      OnSendRefused(peer, id, sent);
    }
  }
  peer.sending = false;
}

void ShardedTransport::OnSendRefused(Peer& peer, JobId id, const Status& sent) {
  if (sent.code() != StatusCode::kBusy) {
    Stop(&peer,
         "cannot send " + Describe(id) + " to " + RankName(peer.rank) + ": " + sent.message(),
         "link_lost");
    return;
  }
  // The peer is not reading: fail the job on that rank instead of waiting.
  // A store's bytes it got without their Job are dropped when the next Job
  // comes.
  ++peer.errors["send_queue_full"];
  bool settled = false;
  {
    MutexLock lock(gate_mu_);
    settled = gate_.Settle(id, peer.rank);
  }
  // Other peers' answers may be queued unannounced: look before sleeping.
  if (settled) signal_->Notify();
  HandleOutcome(id, {.rank = peer.rank,
                     .status = Status::Busy(RankName(peer.rank) +
                                            " is not reading its record link: " + sent.message())});
}

}  // namespace strata

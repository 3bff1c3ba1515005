// ShardedTransport's host-data jobs (wire protocol 3, docs/wire.md): each
// rank's share of a record travels beside its Job as JobData chunks, to the
// peers for a store and back from them for a fetch.
#include "coordinator/sharded_transport.h"

#include <string>

namespace strata {

Status ShardedTransport::SubmitShares(const RecordJob& job, std::span<const HostBuffers> shares) {
  STRATA_RETURN_IF_ERROR(Admit(job));
  if (shares.size() != world_size()) {
    return Status::InvalidArgument("host job of " + job.key.ToFileStem() + " has " +
                                   std::to_string(shares.size()) + " shares for " +
                                   std::to_string(world_size()) + " ranks");
  }
  if (!job.host_data && world_size() > 1) {
    return Status::InvalidArgument("SubmitShares of " + job.key.ToFileStem() +
                                   " without host data");
  }
  const uint64_t share = HostBytes(shares[0]);
  for (const HostBuffers& s : shares) {
    if (HostBytes(s) != share) {
      return Status::InvalidArgument("host job of " + job.key.ToFileStem() +
                                     " has shares of different sizes");
    }
  }
  if (share > kHostDataInFlightBytesMax) {
    return Status::InvalidArgument("host job of " + job.key.ToFileStem() + " moves " +
                                   std::to_string(share) + " bytes per rank, more than the " +
                                   std::to_string(kHostDataInFlightBytesMax) +
                                   " a host-data job may");
  }
  if (host_bytes_in_flight_ + share > kHostDataInFlightBytesMax ||
      host_jobs_.size() >= kHostDataJobsInFlightMax) {
    return Status::Busy(std::to_string(host_jobs_.size()) + " host-data jobs in flight hold " +
                        std::to_string(host_bytes_in_flight_) + " bytes per rank");
  }
  STRATA_RETURN_IF_ERROR(local_->SubmitHost(job, shares[0]));
  host_jobs_[job.id] = share;
  host_bytes_in_flight_ += share;
  Begin(job, shares);
  return Status::Ok();
}

bool ShardedTransport::TakeJobData(Peer& peer, const wire::JobData& data) {
  if (!stopped_.ok()) return false;  // the caller's buffers are no longer ours to fill
  auto f = host_fetches_.find(data.id);
  const uint32_t r = peer.rank.value;
  if (f == host_fetches_.end() || r >= f->second.size() || !f->second[r]) {
    Stop(&peer,
         RankName(peer.rank) + " sent bytes for " + Describe(data.id) + ", which awaits none",
         "protocol");
    return false;
  }
  Status added = f->second[r]->Add(data);
  if (added.ok()) return true;
  Stop(&peer,
       RankName(peer.rank) + " sent bad bytes for " + Describe(data.id) + ": " + added.message(),
       "protocol");
  return false;
}

bool ShardedTransport::CheckFetchDone(Peer& peer, const wire::JobDone& done) {
  auto f = host_fetches_.find(done.id);
  const uint32_t r = peer.rank.value;
  if (f == host_fetches_.end() || r >= f->second.size() || !f->second[r]) return true;
  if (done.status.ok() && !f->second[r]->complete()) {
    Stop(&peer,
         RankName(peer.rank) + " finished " + Describe(done.id) + " having sent " +
             std::to_string(f->second[r]->received()) + " of its " +
             std::to_string(f->second[r]->total()) + " bytes",
         "protocol");
    return false;
  }
  f->second[r].reset();  // nothing more is taken from that rank
  return true;
}

}  // namespace strata

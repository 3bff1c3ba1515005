#include "launch/rank/peer_rendezvous.h"

#include <spdlog/spdlog.h>

#include "coordinator/rendezvous/rendezvous_address.h"
#include "coordinator/rendezvous/rendezvous_join.h"

namespace strata {

namespace {
constexpr std::string_view kFromRuntime = "the attached runtime";
}  // namespace

std::unique_ptr<TcpRendezvousClient> PeerRendezvous::MakeClient(const std::string& host,
                                                                uint16_t port,
                                                                JobSecret secret) const {
  return std::make_unique<TcpRendezvousClient>(
      host, port, std::move(secret), TcpRendezvousLimits{},
      [](const Status& s) {
        spdlog::debug("rendezvous not reached yet, retrying: {}", s.ToString());
      },
      tls_);
}

void PeerRendezvous::DialAt(const std::string& host, uint16_t port, JobSecret secret) {
  MutexLock lock(mu_);
  client_ = MakeClient(host, port, std::move(secret));
}

Status PeerRendezvous::Take(const attach::AttachRendezvous& given) {
  MutexLock lock(mu_);
  if (given_) {
    if (given.empty() || given.address == given_->address) return Status::Ok();
    return Status::InvalidArgument("this rank already joins through " + given_->address + ", not " +
                                   given.address);
  }
  if (given.address.empty() || given.secret.empty()) {
    return Status::InvalidArgument(
        "this rank takes rank zero's rendezvous address and job secret from its runtime "
        "(cluster.rendezvous = \"attach\"); the Hello carries none");
  }
  STRATA_RETURN_IF_ERROR(ParseRendezvousAddress(given.address).status());
  STRATA_RETURN_IF_ERROR(JobSecret::FromText(given.secret, kFromRuntime).status());
  given_ = given;
  changed_.NotifyAll();
  return Status::Ok();
}

RankJoin PeerRendezvous::Join(RankId rank, uint32_t world_size) {
  return [this, rank,
          world_size](std::chrono::steady_clock::time_point deadline) -> Result<RecordLinkTicket> {
    TcpRendezvousClient* client = nullptr;
    {
      MutexLock lock(mu_);
      while (!client_ && !given_ && !cancelled_) {
        if (!changed_.WaitUntil(lock, deadline)) break;
      }
      if (cancelled_) return Status::Aborted("stopped before joining");
      if (!client_ && !given_) {
        return Status::Unavailable(
            "no runtime attached with rank zero's rendezvous address before the join deadline");
      }
      if (!client_) {
        STRATA_ASSIGN_OR_RETURN(RendezvousAddress at, ParseRendezvousAddress(given_->address));
        STRATA_ASSIGN_OR_RETURN(JobSecret secret,
                                JobSecret::FromText(given_->secret, kFromRuntime));
        spdlog::info("joining rank zero through {} (from the attached runtime)", given_->address);
        client_ = MakeClient(at.host, at.port, std::move(secret));
      }
      client = client_.get();
    }
    // client_ is never replaced once made, and outlives the agent's join.
    return JoinThroughRendezvous(*client, rank, world_size)(deadline);
  };
}

void PeerRendezvous::Cancel() {
  MutexLock lock(mu_);
  cancelled_ = true;
  if (client_) client_->Cancel();
  changed_.NotifyAll();
}

}  // namespace strata

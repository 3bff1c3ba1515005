// How a peer `strata rank` finds rank zero: the TCP rendezvous client it
// dials, made at once from cluster.master_addr:master_port and the job secret
// (cluster.rendezvous = "tcp"), or only once its attached runtime's Hello
// hands over rank zero's rendezvous address and the job secret
// (cluster.rendezvous = "attach", docs/embedding.md section 0).
//
// Thread: Take on the thread serving the attach channel, the join on the
// rank agent's thread, Cancel on any; one lock guards what they share.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "attach/client/attach_messages.h"
#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/tcp_rendezvous.h"
#include "rank_agent/rank_agent.h"
#include "store/base/mutex.h"
#include "wire/tls.h"

namespace strata {

class PeerRendezvous {
 public:
  // tls: the link TLS context the rendezvous client uses (null: plaintext).
  explicit PeerRendezvous(std::shared_ptr<const wire::TlsContext> tls) : tls_(std::move(tls)) {}

  // cluster.rendezvous = "tcp": the client dials host:port at the join.
  void DialAt(const std::string& host, uint16_t port, JobSecret secret);

  // cluster.rendezvous = "attach": what a Hello carried. The first must carry
  // a parseable address and a valid secret; a later one (a re-attached
  // runtime) may carry none or the same address. An error names what is
  // wrong (the attach is refused with it); the secret is never named.
  Status Take(const attach::AttachRendezvous& given);

  // The agent's join as `rank` of `world_size`: through the client made by
  // DialAt, or, with neither, once Take accepted a rendezvous (kUnavailable
  // when none came before the deadline, kAborted after Cancel).
  RankJoin Join(RankId rank, uint32_t world_size);

  // Ends a join waiting for a rendezvous or for rank zero.
  void Cancel();

 private:
  std::unique_ptr<TcpRendezvousClient> MakeClient(const std::string& host, uint16_t port,
                                                  JobSecret secret) const;

  const std::shared_ptr<const wire::TlsContext> tls_;
  Mutex mu_;
  CondVar changed_;
  std::optional<attach::AttachRendezvous> given_ GUARDED_BY(mu_);
  bool cancelled_ GUARDED_BY(mu_) = false;
  std::unique_ptr<TcpRendezvousClient> client_ GUARDED_BY(mu_);
};

}  // namespace strata

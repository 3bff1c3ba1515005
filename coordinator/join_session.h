// JoinSession: rank zero's side of the join (seed 2.14, docs/wire.md), run on
// the thread that starts the coordinator: every peer's Hello is checked
// (coordinator/hello_check.h), scan summaries are collected, the agreement
// (coordinator/agreement.h) is sent, applied to rank zero's own directory,
// and confirmed by every peer. Link I/O threads only feed the inbox.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/agreement.h"
#include "coordinator/hello_check.h"
#include "coordinator/rendezvous/rendezvous.h"
#include "coordinator/sharded_transport.h"
#include "store/base/mutex.h"
#include "store/tier/local_disk.h"
#include "wire/link/link.h"
#include "wire/link/link_inbox.h"

namespace strata {

// Links the listener accepted, each started with inbox handlers under its
// own tag (from 1). Add runs on the listener's thread; the rest on the
// owner's.
class AcceptedLinks {
 public:
  explicit AcceptedLinks(std::shared_ptr<wire::LinkInbox> inbox) : inbox_(std::move(inbox)) {}
  void Add(std::unique_ptr<wire::Link> link);
  // The link tagged `tag`, or null; valid until Take(tag).
  wire::Link* Find(uint64_t tag);
  std::unique_ptr<wire::Link> Take(uint64_t tag);
  // Closes and drops every link still held.
  void CloseAll();

 private:
  std::shared_ptr<wire::LinkInbox> inbox_;
  Mutex mu_;
  uint64_t next_tag_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::unique_ptr<wire::Link>> links_ GUARDED_BY(mu_);
};

// What the join saw, for logs and the status page.
struct JoinStats {
  uint64_t rejected_hellos = 0;  // links refused (wrong nonce, address, rank, ...)
  std::string last_rejection;    // the latest refusal's reason
  uint64_t dropped_links = 0;    // connections that closed before a Hello (garbage, probes)
  uint64_t tls_refused = 0;      // of those, the ones whose TLS handshake failed
  AgreementCounts agreement;
  uint64_t disk_limit_bytes = 0;  // the smallest limit among ranks
};

class JoinSession {
 public:
  JoinSession(const PeerTable& peers, RankZeroFacts self, uint64_t own_disk_limit_bytes,
              AcceptedLinks& links, wire::LinkInbox& inbox, uint64_t scan_records_max);

  // Until every peer's Hello is accepted and its scan summary complete, or
  // `deadline`. Errors: a Hello that fails startup, a joined peer that
  // leaves or breaks the protocol, the deadline (naming the ranks missing
  // and the last refusal).
  Status CollectScans(std::chrono::steady_clock::time_point deadline);
  // Sends every peer its verdicts, applies rank zero's to `own` and waits
  // for every peer's AgreementApplied. Errors name the rank that failed.
  Status Agree(LocalDisk& own, Durability durability,
               std::chrono::steady_clock::time_point deadline);
  // The joined peers' links, for the sharded transport. Once, after Agree.
  std::vector<ShardedPeer> TakePeers();
  // Tells every joined peer why the join failed (Close) and closes every
  // link.
  void FailAll(const Status& why);

  const JoinStats& stats() const { return stats_; }

 private:
  Status HandleStranger(wire::LinkEvent& event);
  Status HandleJoined(RankId rank, wire::LinkEvent& event);
  void RejectLink(uint64_t tag, const std::string& reason);
  std::string Missing() const;
  // Takes queued events, waiting up to `deadline` for some.
  bool NextEvents(std::vector<wire::LinkEvent>& out,
                  std::chrono::steady_clock::time_point deadline);

  const PeerTable& peers_;
  RankZeroFacts self_;
  AcceptedLinks& links_;
  wire::LinkInbox& inbox_;
  uint64_t scan_records_max_;
  std::vector<bool> joined_;            // by rank
  std::vector<uint64_t> tag_of_;        // by rank, once joined
  std::map<uint64_t, RankId> rank_of_;  // by tag
  std::set<uint64_t> refused_;          // tags whose link was rejected
  std::vector<RankScan> scans_;         // by rank
  std::vector<bool> scan_complete_;     // by rank
  std::vector<bool> applied_;           // by rank: AgreementApplied OK
  bool agreement_sent_ = false;
  JoinStats stats_;
};

}  // namespace strata

// AttachServer: the server side of the attach channel (docs/embedding.md).
// It listens on an owner-only (0600) Unix socket, admits one runtime at a
// time whose uid (SO_PEERCRED) is the allowed one and whose Hello matches
// this rank (hello_check.h), maps the runtime's memfd planes into the
// ImportedPlanes the store's transfers copy through, and carries its store
// calls and the store's events (store_dispatch.h).
//
// With ranks in separate processes every rank's `strata rank` serves its own
// runtime process: rank zero's runtime makes the store calls; a peer's runtime
// only shares its planes, which the peer's rank agent copies through (its
// transfers gated: open while attached, shut and drained on detach), and a
// store call on a peer's channel is refused.
//
// Lifetimes: when the runtime closes, detaches or dies (EOF), no copy is
// issued after that; the planes stay mapped until every copy in flight into
// or out of them has finished, then are released; the store and its tiers
// outlive the runtime, so a runtime that re-attaches finds its prefixes.
// "Finished" is the gate's count (AttachTargets::gate) plus the store jobs
// still to be reported, so a Close answers CloseDone once those events went
// out; jobs a stopped store abandoned are not waited for when a gate counts
// the copies, and CloseDone names them (StoreDispatch::DetachStatus).
//
// Thread: the store's owner thread calls everything (Step drives the store).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "attach/client/unix_channel.h"
#include "attach/hello_check.h"
#include "attach/imported_planes.h"
#include "store/tier/host_store.h"
#include "store/transfer/gated_transfers.h"
#include "store/transfer/plane_importer.h"

namespace strata::attach {

struct AttachServerOptions {
  std::string socket_path;        // created 0600; a stale socket file is replaced
  AttachExpectation expected;     // identity and geometry the runtime must declare
  std::optional<uid_t> peer_uid;  // default unset: this process's effective uid
  // A runtime that reads nothing for this long while strata writes is detached.
  std::chrono::milliseconds send_bound{5'000};
  // Copies into a departed runtime's planes must finish within this; past it
  // the planes stay mapped for good and no runtime is admitted again.
  uint64_t drain_bound_ms = 30'000;
  // cluster.rendezvous = "attach" on rank zero: its rendezvous address and
  // the job secret, given to every runtime in its HelloAccept. Default empty.
  AttachRendezvous announce{};
  // cluster.rendezvous = "attach" on a peer: takes the rendezvous a Hello
  // carries (empty when it carries none) before its planes are mapped; an
  // error refuses the attach with its message. Default unset: ignored.
  std::function<Status(const AttachRendezvous&)> take_rendezvous{};
};

// What an attached runtime reaches; everything must outlive the server.
struct AttachTargets {
  // The store its calls go to; null on a peer rank, whose runtime only
  // shares its planes.
  HostStore* store = nullptr;
  // The planes this rank's transfers address (required): memfd host memory
  // or CUDA VMM allocations (store/transfer/plane_importer.h).
  PlaneImporter* planes = nullptr;
  // The transfers over `planes`, counting every copy into or out of them:
  // opened when a runtime attaches, shut on detach, and the planes released
  // only once it has nothing in flight. Required when copies are issued by
  // something other than `store` (a peer's rank agent). With a store, it is
  // what lets a detach finish after the store stopped (kStopped: it reports
  // none of its outstanding jobs again); without one, those abandoned jobs
  // count as in flight until drain_bound_ms. Null: the store issues every
  // copy and its events are the only count.
  GatedTransfers* gate = nullptr;
};

class AttachServer {
 public:
  // Fails if another process serves the socket path, or `targets` has no planes.
  static Result<std::unique_ptr<AttachServer>> Listen(AttachServerOptions options,
                                                      AttachTargets targets);
  ~AttachServer();
  AttachServer(const AttachServer&) = delete;
  AttachServer& operator=(const AttachServer&) = delete;

  // One turn: polls the store (`now_ms` as HostStore::Poll takes it), sends
  // its events, then waits up to `wait` for socket activity or the store's
  // progress (HostStore::NotifyOnProgress, so a finished copy's event goes
  // out at the next turn at once) and handles what arrived (an attach,
  // requests, a detach). Never waits on the store.
  void Step(uint64_t now_ms, std::chrono::milliseconds wait);

  // Gives the runtime's store calls a store from now on (rank zero with
  // cluster.rendezvous = "attach" admits its runtime before the peers have
  // joined, so before its store exists). Only when Listen had none.
  void SetStore(HostStore& store);

  // A runtime is attached (its Hello accepted, not yet detached).
  bool attached() const;
  // Runtimes admitted so far (for logs and tests).
  uint64_t attach_count() const { return attach_count_; }
  // Empty while healthy; otherwise why no runtime can be admitted.
  const std::string& wedged_reason() const { return wedged_reason_; }

 private:
  struct Session;

  AttachServer(AttachServerOptions options, AttachTargets targets, UniqueFd listener);
  void Accept();
  void ReadSession(uint64_t now_ms);
  void HandleHello(Received hello);
  // Has the store wake Step when it progresses.
  void WatchStore();
  void Send(const AttachMessage& message);
  void BeginDetach(uint64_t now_ms, const std::string& why);
  void FinishDetachIfDrained(uint64_t now_ms);
  // What the detach waits for: copies into or out of the attached
  // runtime's planes not yet finished, and store jobs still to be reported.
  size_t InFlight() const;

  AttachServerOptions options_;
  HostStore* store_;  // null: planes only
  PlaneImporter& planes_;
  GatedTransfers* gate_;  // null: the store issues every copy
  UniqueFd listener_;
  UniqueFd progress_fd_;                  // eventfd the store's progress raises
  std::shared_ptr<WakeSignal> progress_;  // given to the store; raises progress_fd_
  std::unique_ptr<Session> session_;
  uint64_t attach_count_ = 0;
  std::string wedged_reason_;
};

}  // namespace strata::attach

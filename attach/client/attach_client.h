// AttachClient: what a runtime process links to use a running `strata rank`
// (docs/embedding.md). It attaches over the rank's Unix socket, shares its
// planes by memfd, and makes the HostStore calls as messages. Free of Asio
// and Cap'n Proto headers.
//
// Nothing here waits on Strata beyond a socket write (bounded by
// send_bound): Lookup, Store and Fetch return once the request is written;
// their results (LookupResult, StoreAnswer, StoreEvent) arrive through Poll.
// Only Attach and Close wait, each with its own bound.
//
// Thread: one thread at a time (the runtime's model thread).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attach/client/attach_messages.h"

namespace strata::attach {

struct AttachOptions {
  std::string socket_path;                                          // the rank's [attach] socket
  std::chrono::milliseconds hello_bound{std::chrono::seconds(10)};  // wait for HelloAccept
  std::chrono::milliseconds send_bound{std::chrono::seconds(5)};    // one socket write
  // A peer's rank started with cluster.rendezvous = "attach": rank zero's
  // rendezvous address and job secret (as rank zero's rendezvous() gave
  // them), handed over in the Hello. Empty otherwise.
  AttachRendezvous rendezvous{};
};

// One allocation the runtime shares: its sizing and the fd holding it (at
// least unit_bytes * count bytes; the caller keeps the fd): a memfd, or a CUDA
// VMM allocation exported as a POSIX file descriptor (AttachIdentity's
// plane_handle says which, for every allocation).
//
// With PlaneHandleKind::kCudaIpc no fd is passed: `ipc` holds the legacy
// CUDA IPC handle of the cudaMalloc block the plane lies in (the 64 bytes of
// cudaIpcGetMemHandle / cuIpcGetMemHandle, memcpy'd) and the plane's offset in
// that block (for PyTorch, a tensor's storage offset within the block that
// `torch.cuda.caching_allocator` / `storage._share_cuda_()` reports). The
// block must stay allocated (never freed back to the driver, and not reused
// for anything else) until Close returns OK or the runtime exits: strata
// copies into it until then and closes its mapping only after its copies end.
struct SharedAllocation {
  SizedAllocation allocation;
  int fd = -1;
  IpcPlane ipc{};  // kCudaIpc only
};

struct AttachIdentity {
  std::string runtime_id;      // for strata's logs
  std::string model_identity;  // must be the rank's
  StateMode state_mode = StateMode::kOrdinary;
  uint32_t page_tokens = 0;
  // How the allocations are shared: memfd host memory, or (a rank serving
  // planes on a GPU) CUDA VMM allocations on that GPU or cudaMalloc'd memory
  // by legacy IPC handle (kCudaIpc).
  PlaneHandleKind plane_handle = PlaneHandleKind::kMemfd;
};

// A result the runtime polls: the answer to a Lookup or a Store, or a store
// event (kStopped also when strata went away).
using AttachEvent = std::variant<LookupResult, StoreAnswer, StoreEvent, TicketStatusResult>;

class AttachClient {
 public:
  // Connects, sends the Hello with every allocation's memfd, and waits up to
  // hello_bound for the answer. Errors: kInvalidArgument with strata's reason
  // when refused (a geometry or identity mismatch names the first
  // difference, another uid is named); kUnavailable/kIoError when the socket
  // cannot be reached.
  static Result<std::unique_ptr<AttachClient>> Attach(
      const AttachOptions& options, const AttachIdentity& identity,
      const std::vector<std::vector<SharedAllocation>>& ranks);
  ~AttachClient();

  // From rank zero's rank started with cluster.rendezvous = "attach": its
  // rendezvous address and the job secret, for the runtime to hand to the
  // peers' runtimes (which pass them in AttachOptions::rendezvous). Empty
  // from any other rank.
  const AttachRendezvous& rendezvous() const;

  // Returns the request id its LookupResult will carry.
  Result<uint64_t> Lookup(std::span<const Token> tokens, uint64_t resident_tokens, uint64_t before);
  // Two-step lookups (docs/embedding.md section 3; worth it with a pool,
  // docs/pool.md "Lookups"): BeginLookup when the request arrives starts its
  // pool lookup and returns the ticket's id (no result follows); LookupFor
  // at admission, with the same history, returns the request id its
  // LookupResult will carry (the pool's answer only if it came, strata
  // waiting at most the rest of the grace, once; a later LookupFor of the
  // same ticket may take a late answer once); EndLookup when prefill starts
  // or the request went away. A ticket strata could not open (no pool, or
  // too many open) answers LookupFor as Lookup.
  Result<uint64_t> BeginLookup(std::span<const Token> tokens, uint64_t resident_tokens,
                               uint64_t before);
  Result<uint64_t> LookupFor(uint64_t ticket, std::span<const Token> tokens,
                             uint64_t resident_tokens, uint64_t before);
  // The state of a ticket BeginLookup returned (pending, ready with the
  // pool's endpoint, admissions so far, whether its answer came late):
  // returns the request id its TicketStatusResult will carry. A runtime asks
  // while an admitted request waits, and retries its admission once when
  // the answer came late and is longer (DecideLateAnswer, docs/pool.md).
  Result<uint64_t> TicketStatus(uint64_t ticket);
  Status EndLookup(uint64_t ticket);
  // Its StoreAnswer carries the checkpoint id; on kQueued, a kStored or
  // kStoreFailed event follows (keep the checkpoint pinned until then).
  Status Store(const PublishedCheckpoint& checkpoint);
  // A kFetched or kFetchFailed event for the ticket follows.
  Status Fetch(const HostHit& hit, const InboundTicket& ticket);
  // The checkpoints the runtime retired since its last call, oldest first
  // (docs/embedding.md section 5): sent before the next other store request,
  // in messages of at most kAttachNoticesMax. No answer follows.
  Status Evicted(std::span<const EvictionNotice> notices);
  // The runtime's bounded notice queue dropped notices. No answer follows.
  Status EvictionsLost();
  // The answers to a kExportRequested event (docs/embedding.md section 5):
  // the runtime pinned the export as `description` says (kExportEnded
  // follows: only then unpin it), or did not, for `reason`. No answer follows.
  Status ExportPinned(ExportId export_id, const ExportDescription& description);
  Status ExportRefused(ExportId export_id, ExportRefusal reason);
  // Appends what has arrived; never waits. Once strata is gone it appends
  // one kStopped event and returns kUnavailable from then on.
  Status Poll(std::vector<AttachEvent>& events);
  // Asks strata to detach and waits up to `bound` for its answer: every copy
  // into or out of the planes has finished and strata unmapped them. OK, or
  // kAborted when the store had stopped (kStopped) before reporting some
  // jobs, whose checkpoint ids and tickets the message names: the planes are
  // unmapped all the same. Any other error: copies may still run.
  Status Close(std::chrono::milliseconds bound);

  // Readable when Poll has something to return: for the runtime's own event
  // loop (poll/epoll). Never read from it directly.
  int fd() const;

 private:
  struct Impl;
  explicit AttachClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::attach

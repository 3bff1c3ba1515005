// PoolClient: an instance's connection to a manager — Hello, the way to the
// slots (the arena mapped from the fd or the file the manager names, on its
// host; or the TCP data channel, from any host: slot_access.h), and
// synchronous lookups, puts and claims. Puts copy the record into the granted slots, hashing as
// they copy, and commit with that checksum; a chain's puts are pipelined (the next record's grant
// is asked for before the current record is copied, and a commit's answer is read after the next
// record is copied), so the copies do not wait on the manager's thread; claims copy out, hashing as
// they copy, check each record against its checksum, and always release, after the last copy from
// the slots has ended. Lookups may also go out without waiting (SendLookup): their answers are
// kept, whenever they are read, for the instance's lookup tickets. So may a
// put's steps (SendPut, SendCommit, SendAbort: the instance's put queue,
// put_queue.h), whose answers are kept for TakeAnswer.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/hash_pipeline.h"
#include "coordinator/pool/pool_data_path.h"
#include "coordinator/pool/pool_messages.h"
#include "coordinator/pool/pool_socket.h"
#include "coordinator/pool/slot_access.h"
#include "store/record/checksum.h"

namespace strata::pool {

struct PoolClientOptions {
  // The manager's control address: a Unix socket path, or tcp://HOST:PORT
  // (ParsePoolAddress). Over TCP the Hello proves `job_secret` over the
  // manager's Challenge, and the arena is mapped from the file HelloAccept
  // names: the manager must run on this host.
  std::string socket_path;
  std::optional<JobSecret> job_secret;
  // Over TCP: mutual TLS with these files' rules (the manager's --tls-*);
  // null: plaintext.
  std::shared_ptr<const wire::TlsContext> tls;
  PoolHello hello;  // instance sources, model identity, layout, planes, page tokens
  std::chrono::milliseconds answer_bound{5'000};  // per request
  // Bound on all of Connect's steps together (connect, TLS, Challenge,
  // HelloAccept); unset: answer_bound. A reconnect from the model's thread
  // sets a short one (PoolLink), so a wedged manager or a process squatting
  // on its port stalls admission briefly.
  std::optional<std::chrono::milliseconds> connect_bound;
  // Bound on a lookup's answer (the lookup grace); unset: over TCP, the
  // network grace of the Hello's measured round trip (four round trips,
  // clamped to 2-250 ms, lookup_grace.h), else answer_bound. An answer that
  // misses it is skipped when it arrives later.
  std::optional<std::chrono::milliseconds> lookup_bound;
  // A mapping of this manager's arena kept from an earlier connection (a
  // registered one): used instead of mapping the fd again when the Hello
  // announces `reuse_generation` and the same slots, so that registrations
  // of that mapping stay valid.
  std::shared_ptr<Arena> reuse_arena;
  uint64_t reuse_generation = 0;
  // Over TCP: the arena's file or the data channel (a Unix socket always
  // passes the arena's fd).
  PoolDataPath data_path = PoolDataPath::kAuto;
};

// What a client copies records through: the mapped arena (both accesses are
// one MappedSlots), or two data connections (null arena).
struct PoolClientSlots {
  std::shared_ptr<Arena> arena;
  std::shared_ptr<SlotAccess> puts;    // the owner's thread's
  std::shared_ptr<SlotAccess> claims;  // the claim copier's (and ClaimInto's)
};

// Lookups a client keeps unanswered or untaken at once (the ticket table's
// bound, with room for the synchronous Lookup).
inline constexpr size_t kLookupsOutstandingMax = 320;

class PoolClient {
 public:
  // Connects and says Hello. kUnavailable: no manager there, or no answer in
  // time; kFailedPrecondition: the manager rejected the Hello (its reason).
  // Over TCP with PoolDataPath::kAuto, a manager on this host whose arena's
  // file cannot be had (it has none, or this user cannot open it) is asked
  // again for the data channel.
  static Result<std::unique_ptr<PoolClient>> Connect(const PoolClientOptions& options);

  const PoolHelloAccept& accepted() const { return accepted_; }
  // Whether this client mapped the manager's arena (else: the data channel).
  bool maps_arena() const { return arena_ != nullptr; }
  // The manager's arena as this client mapped it (tests corrupt slots
  // here); only when maps_arena().
  const Arena& arena() const;
  // The mapping, for a caller that keeps it past this connection (null over
  // the data channel).
  std::shared_ptr<Arena> shared_arena() const { return arena_; }
  // Where claims' copies go (ClaimCopyJob::slots): thread-safe.
  std::shared_ptr<SlotAccess> claim_slots() const { return claim_slots_; }
  // The lookup grace of this connection (PoolClientOptions::lookup_bound).
  uint64_t lookup_grace_us() const { return lookup_grace_us_; }
  // A measured control round trip: the smaller of how long the TCP connect
  // (the kernels' handshake) and the Hello took, so that one stall of the
  // manager's loop during the Hello does not inflate it; over the Unix
  // socket, the Hello's.
  uint64_t control_round_trip_us() const { return control_round_trip_us_; }

  // The pooled chain matching `tokens` (ascending keys), or nullopt. kBusy:
  // no answer within the lookup bound (the connection stays usable).
  Result<std::optional<std::vector<PrefixKey>>> Lookup(std::span<const Token> tokens,
                                                       uint64_t resident_tokens, uint64_t before);

  // Lookups without waiting (tickets, lookup_tickets.h). SendLookup sends the
  // request and returns its id; its answer is kept for TakeLookupAnswer
  // whenever this client reads it: in Pump (what has arrived, no wait),
  // WaitAnswer (at most `bound`), or while waiting for another request's
  // answer. At most kLookupsOutstandingMax are kept (kBusy beyond).
  Result<uint64_t> SendLookup(std::span<const Token> tokens, uint64_t resident_tokens,
                              uint64_t before);
  // Reads what has arrived for kept lookups and kept requests, without
  // waiting; an error only for the connection.
  Status Pump();
  // Reads until the answer to kept lookup or request `id` has come or
  // `bound` passed; OK either way (an error only for the connection).
  Status WaitAnswer(uint64_t id, std::chrono::microseconds bound);
  // The answer to lookup `id` once it came (then forgotten); nullopt before.
  std::optional<PoolLookupAnswer> TakeLookupAnswer(uint64_t id);
  // Lookups answered since the last call, in arrival order (their answers
  // stay for TakeLookupAnswer).
  std::vector<uint64_t> TakeAnsweredLookups();
  // Stops keeping lookup `id`: its answer, now or later, is dropped.
  void ForgetLookup(uint64_t id);

  // One record of a chain put. `bytes` must stay valid (and unchanged) until
  // PutChain returns: the caller keeps the source until the manager accepts.
  struct PutItem {
    PrefixKey key;
    std::optional<PrefixKey> parent;  // none: a root record
    Digest128 bucket_digest;
    std::span<const std::byte> bytes;
    PutKind kind = PutKind::kCascade;
  };

  // Puts `items` in order (parents first). Each record: slots from the
  // manager, the bytes copied in with their XXH3-64 computed in the same
  // pass, then a commit with it (or an abort if the granted slots do not fit
  // the record). Pipelined: the grant of record i+1 is asked for before
  // record i is copied, and the commit of record i is answered while record
  // i+1 is copied; a record is never committed before its parent's commit
  // was accepted. Returns one status per record tried, in order: OK
  // (committed), or what the manager answered (kBusy, kAlreadyExists,
  // kInvalidArgument, kNotFound), or the connection's error. It stops after
  // the first status other than OK and kAlreadyExists (the last one
  // returned); a later record already granted then is aborted.
  std::vector<Status> PutChain(std::span<const PutItem> items);
  // A put's steps without waiting. Each sends one request and returns its
  // id; the answer is kept for TakeAnswer whenever this client reads it
  // (Pump, or while it waits for another answer): a PoolPutAnswer for
  // SendPut (item.bytes need not stay valid: only the size is sent), a
  // PoolDone for SendCommit and SendAbort.
  Result<uint64_t> SendPut(const PutItem& item);
  Result<uint64_t> SendCommit(PutId put, uint64_t checksum);
  Result<uint64_t> SendAbort(PutId put);
  // A claim's steps without waiting (PooledStore's claims): SendClaim's
  // answer is a PoolClaimAnswer, SendRelease's a PoolDone, kept likewise.
  // Between the two, each granted record is copied out (CopyOutOfSlots,
  // slot_copies.h; PooledStore's ClaimCopier); the release goes only after
  // the last copy from the slots has ended.
  Result<uint64_t> SendClaim(std::span<const PrefixKey> chain);
  Result<uint64_t> SendRelease(ClaimId claim);
  // Exports (seed 2.15): tells the manager what this instance holds
  // (`announce.request_id` is set here); its answer is not kept.
  Status SendAnnounce(PoolAnnounce announce);
  // The manager's export asks read since the last call, in arrival order
  // (read whenever this client reads: Pump, or while it waits for an answer).
  std::vector<ExportRequest> TakeExportAsks();
  // The kept answer to request `id` once it came (then forgotten); nullopt before.
  std::optional<PoolMessage> TakeAnswer(uint64_t id);
  // Stops keeping request `id`: its answer, now or later, is skipped.
  void ForgetAnswer(uint64_t id) { kept_.erase(id); }
  // Copies `bytes` into put `put`'s granted `slots`, hashing as it copies:
  // the checksum a commit carries. kCorruption (nothing copied) when the
  // slots do not fit; over the data channel, kUnavailable when it failed,
  // or the manager's refusal of a window (kNotFound, kInvalidArgument:
  // windows before it may have landed; the put must be aborted).
  Result<uint64_t> CopyIntoSlots(PutId put, std::span<const SlotId> slots,
                                 std::span<const std::byte> bytes);
  // The connection's socket, for an owner's poll() (PooledStore::PollFd).
  int fd() const { return socket_.fd(); }
  // The highest progress count any answer carried (put_rules.h's epoch).
  uint64_t progress_epoch() const { return progress_epoch_; }

  // PutChain of one record: its status.
  Status Put(const PrefixKey& key, const std::optional<PrefixKey>& parent,
             const Digest128& bucket_digest, std::span<const std::byte> bytes, PutKind kind);

  // Claims `chain` and copies each record's bytes into `records[i]`, in
  // chain order, checking each against its checksum in the same pass; the
  // claim is released after the copies, whatever happens. `records` is
  // resized to the chain's length and each buffer to its record's size:
  // buffers reused from an earlier claim, already of that size, are neither
  // reallocated nor zero-filled (their pages stay faulted in). kCorruption
  // when a record's bytes do not match its checksum or its slots do not fit
  // it; then the buffers hold unchecked bytes and must not be used.
  Status ClaimInto(std::span<const PrefixKey> chain, std::vector<std::vector<std::byte>>& records);
  // ClaimInto fresh buffers.
  Result<std::vector<std::vector<std::byte>>> ClaimCopy(std::span<const PrefixKey> chain);

 private:
  // Connect, with options.data_path as it is; `no_arena` says whether it
  // failed for want of the arena's file over TCP (none, or not this user's).
  static Result<std::unique_ptr<PoolClient>> ConnectAs(const PoolClientOptions& options,
                                                       bool* no_arena);
  PoolClient(PoolSocket socket, PoolHelloAccept accepted, PoolClientSlots slots,
             const PoolClientOptions& options, uint64_t lookup_grace_us,
             uint64_t control_round_trip_us);
  // Sends a request and waits, at most `bound`, for the answer with its id.
  template <typename Answer>
  Result<Answer> Ask(const PoolMessage& request, uint64_t request_id,
                     std::chrono::milliseconds bound);
  // Waits, at most `bound`, for the answer to the request sent with `request_id`.
  template <typename Answer>
  Result<Answer> Await(uint64_t request_id, std::chrono::milliseconds bound);
  template <typename Answer>
  Result<Answer> Ask(const PoolMessage& request, uint64_t request_id) {
    return Ask<Answer>(request, request_id, answer_bound_);
  }

  // Sends the grant request of `item` under a fresh request id; that id.
  Result<uint64_t> SendPutRequest(const PutItem& item);
  // Sends `request` (built with `id`) and keeps its answer for TakeAnswer.
  Result<uint64_t> SendKept(const PoolMessage& request, uint64_t id);
  // Aborts a granted put and waits for the answer (whatever it is).
  void AbortPut(PutId put);

  // Files an answer this client still keeps (a lookup's or a kept
  // request's); false for anything else.
  bool FileAnswer(PoolMessage& message);
  // Keeps an export ask for TakeExportAsks; false for anything else.
  bool FileExportAsk(PoolMessage& message);
  // Raises progress_epoch_ to what `message` carries (every answer read).
  void NoteEpoch(const PoolMessage& message);

  PoolSocket socket_;
  PoolHelloAccept accepted_;
  std::shared_ptr<Arena> arena_;  // null over the data channel
  std::shared_ptr<SlotAccess> put_slots_;
  std::shared_ptr<SlotAccess> claim_slots_;
  std::chrono::milliseconds answer_bound_;
  uint64_t lookup_grace_us_;
  std::chrono::milliseconds lookup_bound_;  // lookup_grace_us_, rounded up
  uint64_t control_round_trip_us_;
  uint64_t next_request_ = 1;
  HashPipeline hash_;  // hashes every put's and claim's copy as it is written
  // Lookups sent and kept: nullopt until answered.
  std::map<uint64_t, std::optional<PoolLookupAnswer>> lookups_;
  std::vector<uint64_t> answered_;  // filed since TakeAnsweredLookups
  // Kept requests (SendPut, SendCommit, SendAbort): nullopt until answered.
  std::map<uint64_t, std::optional<PoolMessage>> kept_;
  uint64_t progress_epoch_ = 0;
  std::vector<ExportRequest> export_asks_;  // unasked, until taken
};

}  // namespace strata::pool

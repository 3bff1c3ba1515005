#include "coordinator/pool/pool_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "coordinator/pool/hashed_copy.h"
#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pool_hello_proof.h"
#include "coordinator/pool/slot_copies.h"
#include "store/base/assert.h"

namespace strata::pool {

PoolClient::PoolClient(PoolSocket socket, PoolHelloAccept accepted, PoolClientSlots slots,
                       const PoolClientOptions& options, uint64_t lookup_grace_us,
                       uint64_t control_round_trip_us)
    : socket_(std::move(socket)),
      accepted_(std::move(accepted)),
      arena_(std::move(slots.arena)),
      put_slots_(std::move(slots.puts)),
      claim_slots_(std::move(slots.claims)),
      answer_bound_(options.answer_bound),
      lookup_grace_us_(lookup_grace_us),
      lookup_bound_(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::microseconds(lookup_grace_us + 999))),
      control_round_trip_us_(control_round_trip_us) {}

template <typename Answer>
Result<Answer> PoolClient::Ask(const PoolMessage& request, uint64_t request_id,
                               std::chrono::milliseconds bound) {
  STRATA_RETURN_IF_ERROR(socket_.Send(request));
  return Await<Answer>(request_id, bound);
}

template <typename Answer>
Result<Answer> PoolClient::Await(uint64_t request_id, std::chrono::milliseconds bound) {
  // Answers to earlier requests that missed their bound (a late lookup) are
  // skipped; anything else out of turn is an error.
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(PoolReceived received, socket_.Receive(bound));
    NoteEpoch(received.message);  // answers given up on still carry the epoch
    if (FileExportAsk(received.message)) continue;
    const std::optional<uint64_t> answered = AnsweredRequest(received.message);
    if (answered && *answered < request_id) {
      (void)FileAnswer(received.message);  // kept if a ticket or the put queue waits for it
      continue;
    }
    auto* answer = std::get_if<Answer>(&received.message);
    if (answer == nullptr || answer->request_id != request_id) {
      return Status::Corruption("the pool answered request " + std::to_string(request_id) +
                                " out of turn");
    }
    return std::move(*answer);
  }
}

Result<std::optional<std::vector<PrefixKey>>> PoolClient::Lookup(std::span<const Token> tokens,
                                                                 uint64_t resident_tokens,
                                                                 uint64_t before) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t id, SendLookup(tokens, resident_tokens, before));
  if (Status s = WaitAnswer(id, lookup_bound_); !s.ok()) {
    ForgetLookup(id);
    return s;
  }
  std::optional<PoolLookupAnswer> answer = TakeLookupAnswer(id);
  if (!answer) {
    ForgetLookup(id);
    return Status::Busy("no pool lookup answer within " + std::to_string(lookup_bound_.count()) +
                        " ms");
  }
  STRATA_RETURN_IF_ERROR(answer->status);
  if (answer->chain.empty()) return std::optional<std::vector<PrefixKey>>();
  return std::optional<std::vector<PrefixKey>>(std::move(answer->chain));
}

Result<uint64_t> PoolClient::SendLookup(std::span<const Token> tokens, uint64_t resident_tokens,
                                        uint64_t before) {
  if (lookups_.size() >= kLookupsOutstandingMax) {
    return Status::Busy("pool lookups outstanding at the limit of " +
                        std::to_string(kLookupsOutstandingMax));
  }
  const uint64_t id = next_request_++;
  STRATA_RETURN_IF_ERROR(
      socket_.Send(PoolLookup{.request_id = id,
                              .tokens = std::vector<Token>(tokens.begin(), tokens.end()),
                              .resident_tokens = resident_tokens,
                              .before = before}));
  lookups_.emplace(id, std::nullopt);
  return id;
}

void PoolClient::NoteEpoch(const PoolMessage& message) {
  std::visit(
      [this](const auto& m) {
        if constexpr (requires { m.progress_epoch; }) {
          progress_epoch_ = std::max(progress_epoch_, m.progress_epoch);
        }
      },
      message);
}

bool PoolClient::FileExportAsk(PoolMessage& message) {
  auto* ask = std::get_if<PoolExportAsk>(&message);
  if (ask == nullptr) return false;
  export_asks_.push_back(std::move(ask->ask));
  return true;
}

std::vector<ExportRequest> PoolClient::TakeExportAsks() { return std::exchange(export_asks_, {}); }

bool PoolClient::FileAnswer(PoolMessage& message) {
  if (FileExportAsk(message)) return true;
  const std::optional<uint64_t> id = AnsweredRequest(message);
  if (!id) return false;
  if (auto* answer = std::get_if<PoolLookupAnswer>(&message)) {
    auto it = lookups_.find(*id);
    if (it == lookups_.end() || it->second.has_value()) return false;
    it->second = std::move(*answer);
    answered_.push_back(it->first);
    return true;
  }
  auto it = kept_.find(*id);
  if (it == kept_.end() || it->second.has_value()) return false;
  it->second = std::move(message);
  return true;
}

Status PoolClient::Pump() {
  // Only kept lookups and requests, and answers given up on (a forgotten
  // lookup, whose epoch still counts), may be owed here: every other
  // request waits for its answer.
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(std::optional<PoolReceived> received, socket_.TryReceive());
    if (!received) return Status::Ok();
    NoteEpoch(received->message);
    if (FileAnswer(received->message)) continue;
    // Answers to requests given up on (a late lookup) are skipped, as in Await.
    const std::optional<uint64_t> answered = AnsweredRequest(received->message);
    if (!answered || *answered >= next_request_) {
      return Status::Corruption("the pool sent a message no request of ours asked for");
    }
  }
}

Status PoolClient::WaitAnswer(uint64_t id, std::chrono::microseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  const auto owed = [&](const auto& kept) {
    auto it = kept.find(id);
    return it != kept.end() && !it->second.has_value();
  };
  for (;;) {
    STRATA_RETURN_IF_ERROR(Pump());
    if (!owed(lookups_) && !owed(kept_)) return Status::Ok();
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::Ok();
    pollfd p{socket_.fd(), POLLIN, 0};
    const timespec wait{.tv_sec = static_cast<time_t>(left.count() / 1'000'000),
                        .tv_nsec = static_cast<long>(left.count() % 1'000'000) * 1'000};
    (void)::ppoll(&p, 1, &wait, nullptr);
  }
}

std::optional<PoolLookupAnswer> PoolClient::TakeLookupAnswer(uint64_t id) {
  auto it = lookups_.find(id);
  if (it == lookups_.end() || !it->second.has_value()) return std::nullopt;
  std::optional<PoolLookupAnswer> out = std::move(it->second);
  lookups_.erase(it);
  return out;
}

std::vector<uint64_t> PoolClient::TakeAnsweredLookups() { return std::exchange(answered_, {}); }

void PoolClient::ForgetLookup(uint64_t id) { lookups_.erase(id); }

Status PoolClient::Put(const PrefixKey& key, const std::optional<PrefixKey>& parent,
                       const Digest128& bucket_digest, std::span<const std::byte> bytes,
                       PutKind kind) {
  const PutItem item{
      .key = key, .parent = parent, .bucket_digest = bucket_digest, .bytes = bytes, .kind = kind};
  std::vector<Status> outcomes = PutChain(std::span<const PutItem>(&item, 1));
  return outcomes.back();
}

// Chain puts are pipelined. The manager answers one connection's requests in
// the order they were sent, and PutChain always reads the oldest answer owed:
// the requests go out as grant(0), grant(1), commit(0), grant(2), commit(1),
// ..., so grant(i+1) is answered while record i is copied and commit(i)
// while record i+1 is copied.
Result<uint64_t> PoolClient::SendPutRequest(const PutItem& item) {
  const uint64_t id = next_request_++;
  STRATA_RETURN_IF_ERROR(socket_.Send(PoolPut{.request_id = id,
                                              .put = PutRequest{.key = item.key,
                                                                .parent = item.parent,
                                                                .bucket_digest = item.bucket_digest,
                                                                .bytes = item.bytes.size(),
                                                                .kind = item.kind}}));
  return id;
}

Result<uint64_t> PoolClient::SendKept(const PoolMessage& request, uint64_t id) {
  STRATA_RETURN_IF_ERROR(socket_.Send(request));
  kept_.emplace(id, std::nullopt);
  return id;
}

Result<uint64_t> PoolClient::SendPut(const PutItem& item) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t id, SendPutRequest(item));
  kept_.emplace(id, std::nullopt);
  return id;
}

Result<uint64_t> PoolClient::SendCommit(PutId put, uint64_t checksum) {
  const uint64_t id = next_request_++;
  return SendKept(PoolCommit{.request_id = id, .put = put, .checksum = checksum}, id);
}

Result<uint64_t> PoolClient::SendAbort(PutId put) {
  const uint64_t id = next_request_++;
  return SendKept(PoolAbort{.request_id = id, .put = put}, id);
}

Status PoolClient::SendAnnounce(PoolAnnounce announce) {
  announce.request_id = next_request_++;
  // Nothing waits for the answer: it is skipped when it comes (Pump).
  return socket_.Send(announce);
}

Result<uint64_t> PoolClient::SendClaim(std::span<const PrefixKey> chain) {
  const uint64_t id = next_request_++;
  return SendKept(
      PoolClaim{.request_id = id, .chain = std::vector<PrefixKey>(chain.begin(), chain.end())}, id);
}

Result<uint64_t> PoolClient::SendRelease(ClaimId claim) {
  const uint64_t id = next_request_++;
  return SendKept(PoolRelease{.request_id = id, .claim = claim}, id);
}

std::optional<PoolMessage> PoolClient::TakeAnswer(uint64_t id) {
  auto it = kept_.find(id);
  if (it == kept_.end() || !it->second.has_value()) return std::nullopt;
  std::optional<PoolMessage> out = std::move(it->second);
  kept_.erase(it);
  return out;
}

Result<uint64_t> PoolClient::CopyIntoSlots(PutId put, std::span<const SlotId> slots,
                                           std::span<const std::byte> bytes) {
  // The checksum the commit carries is over the bytes written into the
  // slots, hashed as they are written (hashed_copy.h).
  return put_slots_->CopyIn(put, slots, bytes, hash_);
}

const Arena& PoolClient::arena() const {
  STRATA_ASSERT(arena_ != nullptr,
                "PoolClient::arena: this client moves records over the data channel");
  return *arena_;
}

void PoolClient::AbortPut(PutId put) {
  const uint64_t id = next_request_++;
  // NotFound: it went with its parent's abort. A lost connection ends the
  // session, and with it every put still pending.
  (void)Ask<PoolDone>(PoolAbort{.request_id = id, .put = put}, id);
}

std::vector<Status> PoolClient::PutChain(std::span<const PutItem> items) {
  std::vector<Status> out;
  if (items.empty()) return out;
  Result<uint64_t> sent = SendPutRequest(items[0]);
  if (!sent.ok()) return {sent.status()};
  uint64_t grant_id = *sent;          // the grant owed for items[i]
  std::optional<uint64_t> commit_id;  // the commit owed for items[i - 1], sent after grant_id
  // Reads the commit owed (if any) into `out`.
  enum class Settled { kAccepted, kRefused, kLost };
  auto settle_commit = [&]() -> Settled {
    if (!commit_id) return Settled::kAccepted;
    Result<PoolDone> done = Await<PoolDone>(*commit_id, answer_bound_);
    commit_id.reset();
    out.push_back(done.ok() ? done->status : done.status());
    if (!done.ok()) return Settled::kLost;
    return done->status.ok() ? Settled::kAccepted : Settled::kRefused;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    Result<PoolPutAnswer> grant = Await<PoolPutAnswer>(grant_id, answer_bound_);
    if (!grant.ok()) {
      out.push_back(grant.status());  // the connection is gone: the oldest record unsettled fails
      return out;
    }
    const bool has_next = i + 1 < items.size();
    if (!grant->status.ok()) {
      if (settle_commit() != Settled::kAccepted) return out;
      out.push_back(grant->status);
      if (grant->status.code() != StatusCode::kAlreadyExists || !has_next) return out;
      if (sent = SendPutRequest(items[i + 1]); !sent.ok()) {
        out.push_back(sent.status());
        return out;
      }
      grant_id = *sent;
      continue;
    }
    const std::span<const std::byte> bytes = items[i].bytes;
    if (Status fit =
            CheckSlotsFit(grant->slots, bytes.size(), accepted_.slot_bytes, accepted_.slot_count);
        !fit.ok()) {
      const Settled parent = settle_commit();
      if (parent == Settled::kLost) return out;
      AbortPut(grant->put);
      if (parent == Settled::kAccepted) {
        out.push_back(Status::Corruption("the pool granted slots that do not fit the record: " +
                                         fit.message()));
      }
      return out;
    }
    std::optional<uint64_t> next_grant;
    if (has_next) {
      if (sent = SendPutRequest(items[i + 1]); !sent.ok()) {
        out.push_back(sent.status());
        return out;
      }
      next_grant = *sent;
    }
    const Result<uint64_t> checksum = CopyIntoSlots(grant->put, grant->slots, bytes);
    // The parent's commit, answered during the copy: a record is committed
    // only after its parent was. A copy that failed (the data channel's)
    // aborts the record and the next one.
    if (const Settled parent = settle_commit(); parent != Settled::kAccepted || !checksum.ok()) {
      if (parent == Settled::kLost) return out;
      if (next_grant) {
        Result<PoolPutAnswer> next = Await<PoolPutAnswer>(*next_grant, answer_bound_);
        if (next.ok() && next->status.ok()) AbortPut(next->put);
      }
      AbortPut(grant->put);
      if (parent == Settled::kAccepted) out.push_back(checksum.status());
      return out;
    }
    const uint64_t id = next_request_++;
    if (Status s =
            socket_.Send(PoolCommit{.request_id = id, .put = grant->put, .checksum = *checksum});
        !s.ok()) {
      out.push_back(s);
      return out;
    }
    commit_id = id;
    if (next_grant) grant_id = *next_grant;
  }
  (void)settle_commit();
  return out;
}

Status PoolClient::ClaimInto(std::span<const PrefixKey> chain,
                             std::vector<std::vector<std::byte>>& records) {
  const uint64_t id = next_request_++;
  PoolClaim request{.request_id = id, .chain = std::vector<PrefixKey>(chain.begin(), chain.end())};
  STRATA_ASSIGN_OR_RETURN(PoolClaimAnswer grant, Ask<PoolClaimAnswer>(request, id));
  STRATA_RETURN_IF_ERROR(grant.status);
  records.resize(grant.records.size());
  Status copied = Status::Ok();
  for (size_t i = 0; i < grant.records.size() && copied.ok(); ++i) {
    copied = claim_slots_->CopyOut(grant.claim, static_cast<uint32_t>(i), grant.records[i],
                                   records[i], hash_);
  }
  // Every copy from the slots has ended: only now may the manager reuse them.
  const uint64_t release_id = next_request_++;
  STRATA_ASSIGN_OR_RETURN(
      PoolDone done,
      Ask<PoolDone>(PoolRelease{.request_id = release_id, .claim = grant.claim}, release_id));
  STRATA_RETURN_IF_ERROR(copied);
  STRATA_RETURN_IF_ERROR(done.status);
  return Status::Ok();
}

Result<std::vector<std::vector<std::byte>>> PoolClient::ClaimCopy(
    std::span<const PrefixKey> chain) {
  std::vector<std::vector<std::byte>> out;
  STRATA_RETURN_IF_ERROR(ClaimInto(chain, out));
  return out;
}

}  // namespace strata::pool

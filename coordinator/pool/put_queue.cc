#include "coordinator/pool/put_queue.h"

#include <numeric>

#include "coordinator/pool/pool_traffic.h"

namespace strata::pool {

namespace {

uint64_t ImageBytes(const std::vector<ParkedRecord>& records, size_t from) {
  uint64_t n = 0;
  for (size_t i = from; i < records.size(); ++i) n += records[i].image.size();
  return n;
}

}  // namespace

uint64_t PutQueue::abandoned_total() const {
  return std::accumulate(stats_.abandoned.begin(), stats_.abandoned.end(), uint64_t{0},
                         [](uint64_t n, const auto& kv) { return n + kv.second; });
}

void PutQueue::Park(std::vector<ParkedRecord> chain, bool copy) {
  if (chain.empty()) return;
  Chain c{.records = std::move(chain), .copy = copy};
  c.bytes = ImageBytes(c.records, 0);
  if (c.bytes > budget_bytes_) {
    if (copy) {
      for (const ParkedRecord& r : c.records) copies_given_up_.push_back(r.key);
      stats_.copies_given_up += c.records.size();
    } else {
      ++stats_.abandoned["oversize"];
    }
    return;
  }
  // The front chain keeps its place while a request of it is out.
  const size_t first_droppable = step_ == Step::kIdle ? 0 : 1;
  while (stats_.parked_bytes + c.bytes > budget_bytes_ && chains_.size() > first_droppable) {
    Abandon(first_droppable, "queue");
  }
  stats_.parked_records += c.records.size();
  stats_.parked_bytes += c.bytes;
  chains_.push_back(std::move(c));
}

void PutQueue::TakeCopyOutcomes(std::vector<PrefixKey>& accepted,
                                std::vector<PrefixKey>& given_up) {
  accepted.insert(accepted.end(), copies_accepted_.begin(), copies_accepted_.end());
  given_up.insert(given_up.end(), copies_given_up_.begin(), copies_given_up_.end());
  copies_accepted_.clear();
  copies_given_up_.clear();
}

void PutQueue::Abandon(size_t i, const std::string& reason) {
  const Chain& c = chains_[i];
  if (c.copy) {
    // The tier still holds every record of a copy: nothing is dropped.
    for (size_t r = c.next; r < c.records.size(); ++r) copies_given_up_.push_back(c.records[r].key);
    stats_.copies_given_up += c.records.size() - c.next;
  } else {
    ++stats_.abandoned[reason];  // the evicted record; its ancestors are still held locally
  }
  stats_.parked_records -= c.records.size() - c.next;
  stats_.parked_bytes -= c.bytes;
  chains_.erase(chains_.begin() + static_cast<std::ptrdiff_t>(i));
}

void PutQueue::AbandonAll(const std::string& reason) {
  // A request of the front chain may be out: its answer is never taken.
  step_ = Step::kIdle;
  while (!chains_.empty()) Abandon(0, reason);
}

void PutQueue::Lost() {
  step_ = Step::kIdle;
  if (!chains_.empty()) chains_.front().gated = false;
}

Status PutQueue::Advance(PoolClient& client, uint64_t now_ms) {
  while (!chains_.empty()) {
    Chain& c = chains_.front();
    if (step_ == Step::kIdle) {
      bool sent = false;
      STRATA_RETURN_IF_ERROR(Start(client, c, now_ms, sent));
      if (!sent) return Status::Ok();
    }
    std::optional<PoolMessage> m = client.TakeAnswer(request_);
    if (!m) return Status::Ok();
    STRATA_RETURN_IF_ERROR(OnAnswer(client, c, *m, now_ms));
  }
  return Status::Ok();
}

Status PutQueue::Start(PoolClient& client, Chain& c, uint64_t now_ms, bool& sent) {
  if (c.gated && !MayRetry(c.gate, client.progress_epoch(), now_ms)) {
    if (now_ms >= c.next_probe_ms) {
      // The epoch comes only with answers: ask for one (an empty lookup,
      // whose answer is read and dropped, its epoch noted).
      c.next_probe_ms = now_ms + kPutBackoffMs;
      Result<uint64_t> probe = client.SendLookup({}, 0, 0);
      if (probe.ok()) {
        client.ForgetLookup(*probe);
        ++stats_.probes;
      } else if (probe.status().code() != StatusCode::kBusy) {
        return probe.status();
      }
    }
    return Status::Ok();
  }
  if (c.gated) {
    c.gated = false;
    ++stats_.retries;
  }
  const ParkedRecord& r = c.records[c.next];
  STRATA_ASSIGN_OR_RETURN(request_,
                          client.SendPut(PoolClient::PutItem{.key = r.key,
                                                             .parent = r.parent,
                                                             .bucket_digest = r.bucket_digest,
                                                             .bytes = r.image,
                                                             .kind = PutKind::kCascade}));
  step_ = Step::kAwaitGrant;
  sent = true;
  return Status::Ok();
}

Status PutQueue::OnAnswer(PoolClient& client, Chain& c, PoolMessage& m, uint64_t now_ms) {
  const Step step = std::exchange(step_, Step::kIdle);
  if (step == Step::kAwaitGrant) {
    auto* grant = std::get_if<PoolPutAnswer>(&m);
    if (grant == nullptr) return Status::Corruption("the pool answered a put with something else");
    if (grant->status.code() == StatusCode::kAlreadyExists) {
      Accept(c);
      return Status::Ok();
    }
    if (!grant->status.ok()) {
      // Busy (no room now) waits for progress; any other no is the
      // manager's for good: a record larger than its arena (oversize), or
      // a put it cannot take.
      const StatusCode code = grant->status.code();
      if (code != StatusCode::kBusy && code != StatusCode::kInvalidArgument) {
        ++stats_.refusals[ReasonLabel(grant->status)];
        Abandon(0, "refused");
        return Status::Ok();
      }
      Refuse(c, code == StatusCode::kBusy ? PutEvent::kRefused : PutEvent::kOversize, grant->status,
             grant->progress_epoch, now_ms);
      return Status::Ok();
    }
    Result<uint64_t> checksum =
        client.CopyIntoSlots(grant->put, grant->slots, c.records[c.next].image);
    if (!checksum.ok()) {
      abort_why_ = checksum.status();
      STRATA_ASSIGN_OR_RETURN(request_, client.SendAbort(grant->put));
      step_ = Step::kAwaitAbort;
      return Status::Ok();
    }
    STRATA_ASSIGN_OR_RETURN(request_, client.SendCommit(grant->put, *checksum));
    step_ = Step::kAwaitCommit;
    return Status::Ok();
  }
  auto* done = std::get_if<PoolDone>(&m);
  if (done == nullptr) return Status::Corruption("the pool answered a commit with something else");
  if (step == Step::kAwaitAbort) {
    Refuse(c, PutEvent::kTransferFailed, abort_why_, done->progress_epoch, now_ms);
  } else if (done->status.ok()) {
    Accept(c);
  } else {
    Refuse(c, PutEvent::kTransferFailed, done->status, done->progress_epoch, now_ms);
  }
  return Status::Ok();
}

void PutQueue::Accept(Chain& c) {
  std::vector<std::byte>& image = c.records[c.next].image;
  ++stats_.accepted;
  stats_.accepted_bytes += image.size();
  --stats_.parked_records;
  stats_.parked_bytes -= image.size();
  c.bytes -= image.size();
  std::vector<std::byte>().swap(image);  // the manager holds it now
  if (c.copy) copies_accepted_.push_back(c.records[c.next].key);
  c.failures = 0;
  if (++c.next == c.records.size()) chains_.pop_front();
}

void PutQueue::Refuse(Chain& c, PutEvent event, const Status& why, uint64_t epoch,
                      uint64_t now_ms) {
  ++stats_.refusals[ReasonLabel(why)];
  if (event == PutEvent::kTransferFailed) ++c.failures;
  const PutDecision d = DecidePut(event, c.failures);
  if (d.action == PutAction::kDiscard || ++c.refusals >= kPutRefusalsBeforeAbandon) {
    Abandon(0, d.drop == DropReason::kOversize ? "oversize" : "refused");
    return;
  }
  c.gated = true;
  c.gate = GateFor(d.action, epoch, now_ms);
  c.next_probe_ms = now_ms + kPutBackoffMs;
}

}  // namespace strata::pool

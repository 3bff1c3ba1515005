// PooledStore's exports and eviction hooks (seed 2.15, "Exports" and
// "Evictions"): the ExportLedger does the bookkeeping, HeldCheckpoints the
// announcements, the ExportCopier the copies out of the planes.
#include <spdlog/spdlog.h>

#include <thread>

#include "coordinator/pool/pool_record_image.h"
#include "coordinator/pool/pooled_store.h"

namespace strata::pool {

ExportId PooledStore::RequestExport(const ExportAsk& ask) { return exports_.Request(ask); }

Status PooledStore::FinishExport(ExportId export_id) { return exports_.Drained(export_id); }

void PooledStore::ExportPinned(ExportId export_id, const ExportDescription& description) {
  // A rejection already queued the end that hands the pin back.
  if (Status s = exports_.Pinned(export_id, description); !s.ok()) {
    spdlog::debug("prefix cache pool: export {} not taken: {}", export_id.value, s.ToString());
    // Rejected (no longer open): its put is aborted. A second pin of an
    // open export changes nothing.
    if (exports_.description(export_id) == nullptr) AbortRelayed(export_id);
    return;
  }
  if (!relayed_.contains(export_id)) return;
  if (exports_closed_) {  // closing: the pin goes straight back
    (void)exports_.Drained(export_id);
    AbortRelayed(export_id);
    return;
  }
  to_copy_.push_back(export_id);
}

void PooledStore::ExportRefused(ExportId export_id, ExportRefusal reason) {
  if (Status s = exports_.Refused(export_id, reason); !s.ok()) {
    spdlog::debug("prefix cache pool: refusal of export {} ({}): {}", export_id.value,
                  ExportRefusalName(reason), s.ToString());
    return;
  }
  AbortRelayed(export_id);
}

void PooledStore::Evicted(std::span<const EvictionNotice> notices) {
  stats_.eviction_notices += notices.size();
  for (const EvictionNotice& n : notices) held_.Retire(n.key, n.generation);
  // The tier Store offers to keeps the retry ledger (abandoned retries).
  HostStore* offered_to = tiers_.local != nullptr ? tiers_.local : tiers_.landing;
  if (offered_to != nullptr) offered_to->Evicted(notices);
}

void PooledStore::EvictionsLost() {
  ++stats_.evictions_lost;
  held_.AnnounceAll();
}

void PooledStore::AbortRelayed(ExportId id) {
  auto it = relayed_.find(id);
  if (it == relayed_.end()) return;
  PoolClient* client = link_->connected();
  if (client != nullptr && link_->connection() == it->second.connection) {
    // The answer is not awaited: a lost connection shows on the next read.
    Result<uint64_t> sent = client->SendAbort(it->second.ask.put);
    if (sent.ok()) client->ForgetAnswer(*sent);
  }
  ++stats_.exports_aborted;
  relayed_.erase(it);
}

void PooledStore::FinishRelayed(ExportId id, const Status& copied) {
  auto it = relayed_.find(id);
  if (it == relayed_.end()) return;
  const ExportRequest& ask = it->second.ask;
  PoolClient* client = link_->connected();
  if (!copied.ok() || client == nullptr || link_->connection() != it->second.connection) {
    if (!copied.ok()) {
      spdlog::warn("prefix cache pool: the export of {} failed: {}", ask.key.ToFileStem(),
                   copied.ToString());
    }
    AbortRelayed(id);
    return;
  }
  const std::vector<std::byte> image =
      tiers_.export_copier->Image(ask.key, ask.parent, ask.bucket_digest);
  if (image.size() != ask.bytes) {
    spdlog::warn("prefix cache pool: the export of {} is {} bytes, the manager reserved {}",
                 ask.key.ToFileStem(), image.size(), ask.bytes);
    AbortRelayed(id);
    return;
  }
  Result<uint64_t> checksum = client->CopyIntoSlots(ask.put, ask.slots, image);
  if (!checksum.ok()) {
    AbortRelayed(id);
    if (ConnectionLost(checksum.status())) LoseLink(checksum.status());
    return;
  }
  Result<uint64_t> sent = client->SendCommit(ask.put, *checksum);
  if (sent.ok()) client->ForgetAnswer(*sent);
  ++stats_.exports_served;
  relayed_.erase(it);
}

void PooledStore::AbortQueuedCopies() {
  while (!to_copy_.empty()) {
    const ExportId id = to_copy_.front();
    to_copy_.pop_front();
    (void)exports_.Drained(id);  // its end hands the pin back
    AbortRelayed(id);
  }
}

void PooledStore::AdvanceExports() {
  PoolClient* client = link_->connected();
  ExportCopier* copier = tiers_.export_copier;
  if (client != nullptr) {
    for (ExportRequest& ask : client->TakeExportAsks()) {
      if (exports_closed_) {  // closing: refused without asking the runtime
        Result<uint64_t> sent = client->SendAbort(ask.put);
        if (sent.ok()) client->ForgetAnswer(*sent);
        ++stats_.exports_aborted;
        continue;
      }
      const uint64_t header = kRecordImageHeaderBytes;
      const ExportId id =
          exports_.Request(ExportAsk{.key = ask.key,
                                     .generation = ask.generation,
                                     .start_page = ask.start_page,
                                     .staging_bytes = ask.bytes > header ? ask.bytes - header : 0});
      relayed_.emplace(id, RelayedExport{.connection = link_->connection(), .ask = std::move(ask)});
      // Without a copier nothing is announced, so no ask should come: the
      // runtime is still asked (its pin, if any, is handed back at once).
    }
    if (copier != nullptr && link_->sharing()) {
      if (announced_connection_ != link_->connection()) {
        held_.AnnounceAll();  // a new session starts with no holdings
        announced_connection_ = link_->connection();
      }
      while (std::optional<PoolAnnounce> a = held_.TakeAnnounce(copier->sizes())) {
        if (Status s = client->SendAnnounce(std::move(*a)); !s.ok()) {
          LoseLink(s);
          break;
        }
      }
    }
  }
  if (copier == nullptr) {
    AbortQueuedCopies();
    return;
  }
  while (true) {
    if (!copier->busy() && !to_copy_.empty()) {
      const ExportId id = to_copy_.front();
      to_copy_.pop_front();
      const ExportDescription* d = exports_.description(id);
      Status started = d != nullptr ? copier->Start(id.value, *d)
                                    : Status::NotFound("export " + std::to_string(id.value));
      if (!started.ok()) {
        (void)exports_.Drained(id);
        FinishRelayed(id, started);
        continue;
      }
    }
    std::optional<ExportCopier::Finished> done = copier->Poll();
    if (!done) return;
    const ExportId id(done->tag);
    // The copy left the planes: the pin goes back (kExportEnded).
    (void)exports_.Drained(id);
    FinishRelayed(id, done->status);
  }
}

Status PooledStore::DrainExports(std::chrono::milliseconds bound) {
  exports_closed_ = true;
  ExportCopier* copier = tiers_.export_copier;
  AbortQueuedCopies();
  if (copier == nullptr) return Status::Ok();
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (copier->busy()) {
    AdvanceExports();
    if (!copier->busy()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable("an export's copy out of the planes did not finish at close");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::Ok();
}

}  // namespace strata::pool

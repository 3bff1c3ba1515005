#include "store/tier/staged_transport.h"

#include <chrono>

#include "store/base/deliberate_leak.h"
#include "store/transfer/transfer_plan.h"

namespace strata {

StagedTransport::StagedTransport(const CacheGeometry& geometry, const NamespaceIdentity& identity,
                                 const LayoutFingerprint& fingerprint,
                                 std::shared_ptr<SlabPool> pool,
                                 std::unique_ptr<Transfers> transfers,
                                 std::unique_ptr<DiskThread> disk, StagedOptions options)
    : geometry_(geometry),
      layout_(geometry),
      identity_(identity),
      fingerprint_(fingerprint),
      shape_(ShapeOf(geometry)),
      pool_(std::move(pool)),
      transfers_(std::move(transfers)),
      disk_(std::move(disk)),
      signal_(std::make_shared<WakeSignal>()),
      tracker_(*transfers_),
      options_(std::move(options)),
      row_slots_(RowSlots(layout_.row_segment_bytes(), pool_->slot_bytes())),
      row_checksums_(options_.row_checksums ? options_.row_checksums
                                            : std::make_shared<RowChecksums>()) {
  STRATA_ASSERT(pool_->slot_bytes() >= layout_.page_record_bytes(),
                "staging slots must hold a page record");
  transfers_->NotifyOnCompletion(signal_);
  disk_->NotifyOnCompletion(signal_);
}

void StagedTransport::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  signal_ = signal ? std::move(signal) : std::make_shared<WakeSignal>();
  transfers_->NotifyOnCompletion(signal_);
  disk_->NotifyOnCompletion(signal_);
  if (!done_.empty()) signal_->Notify();
}

StagedTransport::~StagedTransport() {
  if (!closed_) (void)Close(std::chrono::milliseconds(30'000));
}

void StagedTransport::Seed(const ScanReport& report) { row_checksums_->Seed(report); }

RecordHeader StagedTransport::HeaderFor(const RecordJob& job) const {
  RecordHeader h;
  h.pages_replicated = job.replicated_pages;
  h.row_replicated = job.replicated_row;
  h.identity = identity_;
  h.fingerprint = fingerprint_;
  h.key = job.key;
  h.parent = job.parent;
  h.bucket = job.bucket;
  h.tail_page_count = job.tail_pages;
  h.shape = shape_;
  h.row_checksum = row_checksums_->Get(job.key);
  h.created_unix_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.clock.wall().time_since_epoch())
          .count());
  return h;
}

uint64_t StagedTransport::SlotsFor(const RecordJob& job) const {
  const bool row = job.row_slot.has_value();
  switch (job.kind) {
    case RecordJobKind::kStore: return job.tail_pages + (row ? row_slots_ : 0);
    case RecordJobKind::kFetch: return job.tail_pages - job.first_page + (row ? row_slots_ : 0);
    default: return 0;
  }
}

Status StagedTransport::Submit(RecordJob job) {
  if (closed_) return Status::Aborted("staged transport is closed");
  STRATA_RETURN_IF_ERROR(CheckDeviceRecordJob(job, geometry_.page_tokens));
  if (SlotsFor(job) > pool_->total_slots()) {
    return Status::InvalidArgument("record " + job.key.ToFileStem() + " needs " +
                                   std::to_string(SlotsFor(job)) + " staging slots; the pool has " +
                                   std::to_string(pool_->total_slots()));
  }
  return Accept(std::move(job), std::nullopt);
}

Status StagedTransport::SubmitHost(const RecordJob& job, const HostBuffers& buffers) {
  if (closed_) return Status::Aborted("staged transport is closed");
  if (job.kind != RecordJobKind::kStore && job.kind != RecordJobKind::kFetch) {
    return Status::InvalidArgument("host buffers serve store and fetch jobs only");
  }
  const uint64_t pt = geometry_.page_tokens;
  if (job.kind == RecordJobKind::kStore &&
      job.tail_pages != job.key.consumed / pt - (job.parent ? job.parent->consumed / pt : 0)) {
    return Status::InvalidArgument("host store of " + job.key.ToFileStem() +
                                   " names the wrong tail");
  }
  const uint64_t first = job.kind == RecordJobKind::kFetch ? job.first_page : 0;
  if (first > job.tail_pages || buffers.pages.size() != job.tail_pages - first) {
    return Status::InvalidArgument("host " + std::string(RecordJobKindName(job.kind)) + " of " +
                                   job.key.ToFileStem() + " has " +
                                   std::to_string(buffers.pages.size()) + " page buffers for " +
                                   std::to_string(job.tail_pages - first) + " pages");
  }
  return Accept(job, buffers);
}

Status StagedTransport::Accept(RecordJob job, std::optional<HostBuffers> host) {
  if (active_.size() >= options_.max_waiting_jobs) {
    return Status::Busy("staged transport has " + std::to_string(active_.size()) + " jobs");
  }
  const uint64_t id = job.id.value;
  if (active_.count(id) != 0) return Status::InvalidArgument("job id already active");
  Active a;
  a.job = std::move(job);
  a.host = std::move(host);
  active_.emplace(id, std::move(a));
  StartWaiting();
  if (!done_.empty()) signal_->Notify();  // a job failed while starting
  return Status::Ok();
}

std::vector<IoPiece> StagedTransport::PagePieces(const Active& a, uint64_t pages) const {
  std::vector<IoPiece> out;
  for (uint64_t i = 0; i < pages; ++i) {
    // A replicated file's page records are single shares (one per slot).
    out.push_back({reinterpret_cast<std::byte*>(pool_->address(a.slots[i])),
                   layout_.stored_page_record_bytes(a.job.replicated_pages)});
  }
  return out;
}

std::vector<IoPiece> StagedTransport::RowPieces(const Active& a, uint64_t first_slot,
                                                uint64_t bytes) const {
  std::vector<IoPiece> out;
  for (uint64_t i = first_slot; i < a.slots.size() && bytes > 0; ++i) {
    const uint64_t n = std::min(bytes, pool_->slot_bytes());
    out.push_back({reinterpret_cast<std::byte*>(pool_->address(a.slots[i])), n});
    bytes -= n;
  }
  return out;
}

namespace {

// Staging holds one share per rank (a copy from the device is never packed).
constexpr bool kPerRankShares = false;

std::vector<HostPageSource> Sources(const std::vector<IoPiece>& pieces, bool replicated) {
  std::vector<HostPageSource> out;
  out.reserve(pieces.size());
  for (const IoPiece& p : pieces) out.push_back({reinterpret_cast<uint8_t*>(p.data), replicated});
  return out;
}

HostRowSource RowSource(const std::vector<IoPiece>& pieces, bool replicated) {
  HostRowSource row;
  row.replicated = replicated;
  for (const IoPiece& p : pieces)
    row.pieces.push_back({reinterpret_cast<uint8_t*>(p.data), p.bytes});
  return row;
}

}  // namespace

void StagedTransport::SubmitDisk(Active& a, DiskJobBody body, Phase phase) {
  a.phase = phase;
  DiskJob job{a.job.id, std::move(body)};
  Status s = disk_->Submit(job);
  if (s.code() == StatusCode::kBusy) {
    disk_backlog_.emplace_back(a.job.id.value, std::move(job));
  } else if (!s.ok()) {
    Finish(a.job.id.value, s);
  }
}

void StagedTransport::BeginHost(Active& a) {
  a.header = HeaderFor(a.job);
  if (a.job.kind == RecordJobKind::kStore) {
    SubmitDisk(a, WriteRecordJob{a.header, a.host->pages, a.host->row, options_.durability},
               Phase::kWrite);
  } else {
    SubmitDisk(a, ReadRecordJob{a.header, a.job.first_page, a.host->pages, a.host->row},
               Phase::kRead);
  }
}

bool StagedTransport::Begin(Active& a) {
  const RecordJob& job = a.job;
  if (a.host) {
    BeginHost(a);
    return true;
  }
  switch (job.kind) {
    case RecordJobKind::kUnlink:
      SubmitDisk(a, UnlinkRecordJob{job.key, options_.durability}, Phase::kDisk);
      return true;
    case RecordJobKind::kTruncate:
      SubmitDisk(a, TruncateRecordJob{HeaderFor(job), options_.durability}, Phase::kDisk);
      return true;
    case RecordJobKind::kStore:
    case RecordJobKind::kFetch: break;
  }
  if (!pool_->Allocate(SlotsFor(job), 0, a.slots)) return false;
  const uint64_t pages =
      job.kind == RecordJobKind::kStore ? job.tail_pages : job.tail_pages - job.first_page;
  a.header = HeaderFor(job);
  std::vector<IoPiece> page_pieces = PagePieces(a, pages);
  std::vector<IoPiece> row_pieces;
  if (job.row_slot) {
    row_pieces = RowPieces(a, pages, layout_.stored_row_segment_bytes(job.replicated_row));
  }
  if (job.kind == RecordJobKind::kFetch) {
    SubmitDisk(a, ReadRecordJob{a.header, job.first_page, page_pieces, row_pieces}, Phase::kRead);
    return true;
  }
  std::optional<HostRowSource> row;
  if (job.row_slot) row = RowSource(row_pieces, kPerRankShares);
  std::vector<TransferJob> copies =
      PlanTransfers(TransferDirection::kDeviceToHost, Sources(page_pieces, kPerRankShares),
                    job.page_ids, row, job.row_slot);
  // Hash each page while the copy has it in cache; the disk write then skips
  // its own pass over the staging slots (Poll).
  for (TransferJob& t : copies) t.hash_records = true;
  Status s = tracker_.Start(job.id.value, std::move(copies));
  if (s.code() == StatusCode::kBusy) {
    pool_->Free(a.slots);
    a.slots.clear();
    return false;
  }
  a.phase = Phase::kCopyOut;
  if (!s.ok()) Finish(job.id.value, s);
  return true;
}

void StagedTransport::StartWaiting() {
  bool blocked = false;  // an older staging job is waiting for slots
  for (auto it = active_.begin(); it != active_.end();) {
    Active& a = it->second;
    ++it;  // Begin may finish (erase) the job
    if (a.phase == Phase::kCopyIn && !tracker_.Active(a.job.id.value)) {
      const uint64_t pages = a.job.tail_pages - a.job.first_page;
      std::vector<IoPiece> page_pieces = PagePieces(a, pages);
      std::optional<HostRowSource> row;
      if (a.job.row_slot) {
        row = RowSource(RowPieces(a, pages, layout_.stored_row_segment_bytes(a.job.replicated_row)),
                        a.job.replicated_row);
      }
      Status s =
          tracker_.Start(a.job.id.value, PlanTransfers(TransferDirection::kHostToDevice,
                                                       Sources(page_pieces, a.job.replicated_pages),
                                                       a.job.page_ids, row, a.job.row_slot));
      if (!s.ok() && s.code() != StatusCode::kBusy) Finish(a.job.id.value, s);
      continue;
    }
    if (a.phase != Phase::kWaiting) continue;
    // Jobs that stage keep their submission order; host jobs and unlinks or
    // truncates take no slots and never wait behind them.
    const bool stages =
        !a.host && (a.job.kind == RecordJobKind::kStore || a.job.kind == RecordJobKind::kFetch);
    if (stages && blocked) continue;
    if (!Begin(a)) blocked = true;
  }
}

void StagedTransport::Finish(uint64_t id, Status status) {
  auto it = active_.find(id);
  Active& a = it->second;
  pool_->Free(a.slots);
  const bool full = status.code() == StatusCode::kFsFull;
  ++(status.ok() ? stats_.jobs_done : stats_.jobs_failed);
  if (full) ++stats_.fs_full;
  done_.push_back({a.job.id, std::move(status), full, a.bytes});
  active_.erase(it);
}

void StagedTransport::Poll(std::vector<RecordJobDone>& out) {
  if (shut_down_) {
    for (RecordJobDone& d : done_) out.push_back(std::move(d));
    done_.clear();
    return;
  }
  finished_.clear();
  tracker_.Pump(finished_);
  for (const FinishedOperation& f : finished_) {
    Active& a = active_.at(f.op);
    if (!f.status.ok()) {
      Finish(f.op, f.status);
      continue;
    }
    if (a.phase == Phase::kCopyIn) {
      Finish(f.op, Status::Ok());
      continue;
    }
    // Copy-out landed: write the file from the staging slots, with the sums
    // the copy computed over them when it could (every page, and the row).
    a.bytes += f.bytes;
    WriteRecordJob write{a.header, PagePieces(a, a.job.tail_pages), {}, options_.durability};
    if (a.job.row_slot) write.row = RowPieces(a, a.job.tail_pages, layout_.row_segment_bytes());
    if (f.page_sums.size() == a.job.tail_pages && f.row_sum.has_value() == !write.row.empty()) {
      write.page_sums = f.page_sums;
      write.row_sum = f.row_sum;
    }
    SubmitDisk(a, std::move(write), Phase::kWrite);
  }
  while (!disk_backlog_.empty()) {
    Status s = disk_->Submit(disk_backlog_.front().second);
    if (s.code() == StatusCode::kBusy) break;
    const uint64_t id = disk_backlog_.front().first;
    disk_backlog_.pop_front();
    if (!s.ok()) Finish(id, s);
  }
  disk_done_.clear();
  disk_->Poll(disk_done_);
  for (DiskCompletion& c : disk_done_) {
    Active& a = active_.at(c.id.value);
    if (!c.status.ok()) {
      Finish(c.id.value, c.status);
      continue;
    }
    switch (a.phase) {
      case Phase::kWrite:
        if (c.header) row_checksums_->Set(a.job.key, c.header->row_checksum);
        stats_.bytes_written += c.payload_bytes;
        if (a.host) a.bytes += c.payload_bytes;
        Finish(c.id.value, Status::Ok());
        break;
      case Phase::kRead:
        stats_.bytes_read += c.payload_bytes;
        a.bytes += c.payload_bytes;
        if (a.host) {
          Finish(c.id.value, Status::Ok());
        } else {
          a.phase = Phase::kCopyIn;  // started by StartWaiting
        }
        break;
      default:
        if (a.job.kind == RecordJobKind::kUnlink) row_checksums_->Erase(a.job.key);
        Finish(c.id.value, Status::Ok());
        break;
    }
  }
  StartWaiting();
  for (RecordJobDone& d : done_) out.push_back(std::move(d));
  done_.clear();
}

bool StagedTransport::WaitForCompletion(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<RecordJobDone> got;
  for (;;) {
    Poll(got);
    if (!got.empty()) {
      // Keep them for the caller's next Poll.
      done_.insert(done_.begin(), std::make_move_iterator(got.begin()),
                   std::make_move_iterator(got.end()));
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline || active_.empty()) return false;
    (void)signal_->WaitUntil(deadline);
  }
}

Status StagedTransport::Close(std::chrono::milliseconds deadline) {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::vector<RecordJobDone> kept;  // for the owner's next Poll
  while (true) {
    Poll(kept);
    if (active_.empty() || std::chrono::steady_clock::now() >= until) break;
    (void)signal_->WaitUntil(until);
  }
  done_.insert(done_.begin(), std::make_move_iterator(kept.begin()),
               std::make_move_iterator(kept.end()));
  shut_down_ = true;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        until - std::chrono::steady_clock::now()));
  };
  Status t = transfers_->Close(left());
  Status d = disk_->Shutdown(left());
  if (!active_.empty() || !t.ok() || !d.ok()) {
    pool_->Leak();  // copies or kernel I/O may still use the staging slots
    LeakOnPurpose(std::move(transfers_));
    LeakOnPurpose(std::move(disk_));
    if (!t.ok()) return t;
    if (!d.ok()) return d;
    return Status::Aborted(std::to_string(active_.size()) + " disk jobs did not drain");
  }
  return Status::Ok();
}

}  // namespace strata

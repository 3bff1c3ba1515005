#include "store/transfer/threaded_transfers.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <thread>

#include "store/transfer/hashed_copy_out.h"
#include "store/transfer/transfer_pacer.h"

namespace strata {

namespace {

constexpr int kTransferNice = 10;

void LowerThreadPriority() {
  sched_param param{};
  (void)sched_setscheduler(0, SCHED_BATCH, &param);  // best effort
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kTransferNice);
}

// The longest one sleep of a paced batch, so Close lifts the bound promptly.
constexpr std::chrono::milliseconds kPaceSlice{10};

// Collects descriptors into batches within the per-call bounds and hands
// each full batch to the engine, each no sooner than its pacer admits it
// (until the transfers close). Stops at the first failed batch.
class Batcher {
 public:
  // `pacer` (may be unbounded) times each batch's issue until `unpaced`.
  Batcher(CopyEngine& engine, TransferDirection direction, TransferPacer& pacer,
          const std::atomic<bool>& unpaced)
      : engine_(engine), dir_(direction), pacer_(pacer), unpaced_(unpaced) {}

  void Add(uint64_t device, uint8_t* host, uint64_t bytes) {
    while (bytes > 0 && status_.ok()) {
      uint64_t n = std::min(bytes, kMaxBatchBytes);
      if (batch_.size() == kMaxBatchEntries || batch_bytes_ + n > kMaxBatchBytes) Flush();
      batch_.push_back({device, host, n});
      batch_bytes_ += n;
      moved_ += n;
      device += n;
      host += n;
      bytes -= n;
    }
  }
  // Issues what is left; the batches may still be in flight.
  Status Finish() {
    Flush();
    return status_;
  }
  uint64_t moved() const { return moved_; }
  uint64_t batches() const { return batches_; }

 private:
  void Flush() {
    if (batch_.empty() || !status_.ok()) return;
    if (pacer_.bounded() && !unpaced_.load()) {
      // In slices, so a Close lifts the bound within one.
      const auto until = pacer_.Admit(batch_bytes_, TransferPacer::Clock::now());
      for (auto now = TransferPacer::Clock::now(); now < until && !unpaced_.load();
           now = TransferPacer::Clock::now()) {
        std::this_thread::sleep_for(
            std::min<TransferPacer::Clock::duration>(until - now, kPaceSlice));
      }
    }
    status_ = engine_.CopyBatch(dir_, batch_);
    ++batches_;
    batch_.clear();
    batch_bytes_ = 0;
  }
  CopyEngine& engine_;
  TransferDirection dir_;
  TransferPacer& pacer_;
  const std::atomic<bool>& unpaced_;
  std::vector<CopyDescriptor> batch_;
  uint64_t batch_bytes_ = 0;
  uint64_t moved_ = 0;
  uint64_t batches_ = 0;
  Status status_;
};

// Visits [offset, offset+bytes) of the row stream laid over `pieces`, calling
// fn(host_ptr, stream_offset, length) for each contiguous part.
template <typename Fn>
void ForEachRowPart(const std::vector<HostPiece>& pieces, uint64_t offset, uint64_t bytes, Fn fn) {
  uint64_t piece_start = 0;
  for (const HostPiece& p : pieces) {
    uint64_t piece_end = piece_start + p.bytes;
    if (bytes == 0) return;
    if (offset < piece_end) {
      uint64_t n = std::min(bytes, piece_end - offset);
      fn(p.data + (offset - piece_start), offset, n);
      offset += n;
      bytes -= n;
    }
    piece_start = piece_end;
  }
}

}  // namespace

struct ThreadedTransfers::Rank {
  Rank(uint64_t copy_out_bytes_per_s, uint64_t restore_bytes_per_s)
      : copy_out(copy_out_bytes_per_s, kMaxBatchBytes),
        restore(restore_bytes_per_s, kMaxBatchBytes) {}
  std::unique_ptr<CopyEngine> engine;
  // Used on the rank's thread only.
  TransferPacer copy_out;
  TransferPacer restore;
  // Guarded by ThreadedTransfers::mu_ (a nested struct cannot name it in
  // GUARDED_BY; every access below holds it).
  std::deque<std::shared_ptr<const BoundJob>> queue;
  CondVar cv;
  std::thread thread;
  bool exited = false;
};

ThreadedTransfers::ThreadedTransfers(const CacheGeometry& geometry,
                                     ThreadedTransfersOptions options)
    : geometry_(geometry), layout_(geometry), options_(options) {}

Result<std::unique_ptr<ThreadedTransfers>> ThreadedTransfers::Create(
    const CacheGeometry& geometry, std::vector<RankPlanes> planes,
    std::vector<std::unique_ptr<CopyEngine>> engines, ThreadedTransfersOptions options) {
  auto fixed = std::make_shared<const PlaneBases>(std::move(planes));
  return Start(geometry, std::move(engines), options, std::move(fixed), nullptr);
}

Result<std::unique_ptr<ThreadedTransfers>> ThreadedTransfers::Create(
    const CacheGeometry& geometry, const PlaneBaseSource& source,
    std::vector<std::unique_ptr<CopyEngine>> engines, ThreadedTransfersOptions options) {
  return Start(geometry, std::move(engines), options, nullptr, &source);
}

Status ThreadedTransfers::CheckBases(const PlaneBases& bases) const {
  if (bases.size() != geometry_.ranks.size()) {
    return Status::InvalidArgument("transfers need one plane set per rank");
  }
  for (size_t r = 0; r < bases.size(); ++r) {
    if (bases[r].page_plane_base.size() != geometry_.ranks[r].page_planes.size()) {
      return Status::InvalidArgument("rank " + std::to_string(r) + ": plane count mismatch");
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<ThreadedTransfers>> ThreadedTransfers::Start(
    const CacheGeometry& geometry, std::vector<std::unique_ptr<CopyEngine>> engines,
    ThreadedTransfersOptions options, std::shared_ptr<const PlaneBases> fixed,
    const PlaneBaseSource* source) {
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry));
  const size_t n = geometry.ranks.size();
  if (engines.size() != n) return Status::InvalidArgument("transfers need one engine per rank");
  if (options.queue_depth == 0) return Status::InvalidArgument("transfer queue depth is zero");
  std::unique_ptr<ThreadedTransfers> t(new ThreadedTransfers(geometry, options));
  if (fixed != nullptr) STRATA_RETURN_IF_ERROR(t->CheckBases(*fixed));
  t->fixed_ = std::move(fixed);
  t->source_ = source;
  std::vector<std::future<Status>> started;
  for (size_t r = 0; r < n; ++r) {
    auto rank = std::make_unique<Rank>(options.copy_out_bytes_per_s, options.restore_bytes_per_s);
    rank->engine = std::move(engines[r]);
    t->ranks_.push_back(std::move(rank));
  }
  for (size_t r = 0; r < n; ++r) {
    auto promise = std::make_shared<std::promise<Status>>();
    started.push_back(promise->get_future());
    t->ranks_[r]->thread = std::thread([tp = t.get(), r, promise] {
      if (tp->options_.low_priority) LowerThreadPriority();
      Status s = tp->ranks_[r]->engine->Start();
      promise->set_value(s);
      if (s.ok()) {
        tp->RunRank(static_cast<uint32_t>(r));
        tp->ranks_[r]->engine->Stop();
      }
      MutexLock lock(tp->mu_);
      tp->ranks_[r]->exited = true;
      tp->done_cv_.NotifyAll();
    });
  }
  Status first;
  for (size_t r = 0; r < n; ++r) {
    Status s = started[r].get();
    if (!s.ok() && first.ok()) first = s.WithContext("starting rank " + std::to_string(r));
  }
  if (!first.ok()) {
    (void)t->Close(std::chrono::milliseconds(10'000));
    return first;
  }
  return t;
}

ThreadedTransfers::~ThreadedTransfers() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  unpaced_ = true;
  for (auto& r : ranks_) r->cv.NotifyAll();
  for (auto& r : ranks_) {
    if (r->thread.joinable()) r->thread.join();
  }
}

Status ThreadedTransfers::Submit(TransferJob job) {
  if (job.page_ids.size() != job.page_records.size()) {
    return Status::InvalidArgument("job has " + std::to_string(job.page_ids.size()) +
                                   " page ids but " + std::to_string(job.page_records.size()) +
                                   " host page records");
  }
  if (job.page_ids.size() > kMaxWindowPages) {
    return Status::InvalidArgument("job window of " + std::to_string(job.page_ids.size()) +
                                   " pages exceeds " + std::to_string(kMaxWindowPages));
  }
  if (job.page_ids.empty() && !job.row_slot) return Status::InvalidArgument("empty transfer job");
  if (job.direction == TransferDirection::kDeviceToHost &&
      (job.replicated_pages || job.replicated_row)) {
    return Status::InvalidArgument("copy-out always writes the per-rank layout");
  }
  if ((job.replicated_pages && !layout_.pages_can_replicate()) ||
      (job.replicated_row && !layout_.rows_can_replicate())) {
    return Status::InvalidArgument("replicated share requested for ranks of different geometry");
  }
  for (size_t r = 0; r < ranks_.size(); ++r) {
    for (PageId id : job.page_ids) {
      if (id.value >= geometry_.ranks[r].page_count) {
        return Status::InvalidArgument("page id " + std::to_string(id.value) + " out of range");
      }
    }
    if (job.row_slot && job.row_slot->value >= geometry_.ranks[r].row_count) {
      return Status::InvalidArgument("state slot " + std::to_string(job.row_slot->value) +
                                     " out of range");
    }
  }
  if (job.row_slot) {
    uint64_t have = 0;
    for (const HostPiece& p : job.row_pieces) have += p.bytes;
    if (have < layout_.stored_row_segment_bytes(job.replicated_row)) {
      return Status::InvalidArgument(
          "row pieces hold " + std::to_string(have) + " bytes, row needs " +
          std::to_string(layout_.stored_row_segment_bytes(job.replicated_row)));
    }
  }
  // The bases this job copies through on every rank, whatever a later
  // attachment maps (plane_bases.h).
  std::shared_ptr<const PlaneBases> bases = source_ != nullptr ? source_->current_bases() : fixed_;
  if (bases == nullptr) {
    return Status::Unavailable("no planes are mapped: the copy was not issued");
  }
  if (source_ != nullptr) STRATA_RETURN_IF_ERROR(CheckBases(*bases));
  auto shared = std::make_shared<const BoundJob>(BoundJob{std::move(job), std::move(bases)});
  {
    MutexLock lock(mu_);
    if (stopping_) return Status::Aborted("transfers are closed");
    for (auto& r : ranks_) {
      if (r->queue.size() >= options_.queue_depth) {
        return Status::Busy("transfer queue full (" + std::to_string(options_.queue_depth) + ")");
      }
    }
    if (pending_.count(shared->job.id) != 0) {
      return Status::InvalidArgument("job id " + std::to_string(shared->job.id.value) +
                                     " in flight");
    }
    pending_[shared->job.id] = Pending{static_cast<uint32_t>(ranks_.size()), Status::Ok(), 0};
    for (auto& r : ranks_) r->queue.push_back(shared);
  }
  for (auto& r : ranks_) r->cv.NotifyOne();
  return Status::Ok();
}

void ThreadedTransfers::Poll(std::vector<TransferCompletion>& out) {
  MutexLock lock(mu_);
  for (TransferCompletion& c : done_) out.push_back(std::move(c));
  done_.clear();
}

bool ThreadedTransfers::WaitForCompletion(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (done_.empty() && done_cv_.WaitUntil(lock, until)) {
  }
  return !done_.empty();
}

void ThreadedTransfers::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  std::shared_ptr<WakeSignal> raise;  // set when a completion already waits
  {
    MutexLock lock(mu_);
    signal_ = std::move(signal);
    if (!done_.empty()) raise = signal_;
  }
  if (raise) raise->Notify();
}

Status ThreadedTransfers::Close(std::chrono::milliseconds deadline) {
  unpaced_ = true;  // what is queued drains at full rate
  MutexLock lock(mu_);
  stopping_ = true;
  for (auto& r : ranks_) r->cv.NotifyAll();
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!AllRanksExited() && done_cv_.WaitUntil(lock, until)) {
  }
  if (!AllRanksExited()) {
    return Status::Aborted("transfer threads did not drain within " +
                           std::to_string(deadline.count()) + " ms; host memory must stay alive");
  }
  lock.Unlock();
  if (!closed_) {
    for (auto& r : ranks_) r->thread.join();
    closed_ = true;
  }
  return Status::Ok();
}

bool ThreadedTransfers::AllRanksExited() {
  for (auto& r : ranks_) {
    if (!r->exited) return false;
  }
  return true;
}

struct ThreadedTransfers::Issued {
  JobId id;
  RankResult result;
  uint64_t last_batch = 0;  // batches the rank had issued after this job's last
};

void ThreadedTransfers::RunRank(uint32_t rank) {
  Rank& r = *ranks_[rank];
  CopyEngine& engine = *r.engine;
  std::deque<Issued> issued;  // the queue's first jobs, oldest first
  uint64_t batches = 0;       // issued by this thread
  for (;;) {
    std::shared_ptr<const BoundJob> job;
    {
      MutexLock lock(mu_);
      while (r.queue.size() == issued.size() && issued.empty() && !stopping_) r.cv.Wait(lock);
      if (r.queue.size() > issued.size()) {
        job = r.queue[issued.size()];
      } else if (issued.empty()) {
        return;  // stopping, and every accepted job is done
      }
    }
    if (job == nullptr) {  // nothing more to issue: wait for what is in flight
      const Status drained = engine.Drain();
      CompleteIssued(r, issued, issued.size(), drained);
      continue;
    }
    RankResult result;
    const Status s = RunJob(rank, *job, result, batches);
    issued.push_back({job->job.id, std::move(result), batches});
    if (!s.ok()) {  // the engine drained: what it held in flight settles with the error
      CompleteIssued(r, issued, issued.size(), s);
      continue;
    }
    const uint64_t finished = batches - engine.batches_in_flight();
    size_t landed = 0;
    while (landed < issued.size() && issued[landed].last_batch <= finished) ++landed;
    CompleteIssued(r, issued, landed, Status::Ok());
  }
}

void ThreadedTransfers::CompleteIssued(Rank& r, std::deque<Issued>& issued, size_t count,
                                       const Status& status) {
  for (size_t i = 0; i < count; ++i) {
    Issued done = std::move(issued.front());
    issued.pop_front();
    {
      MutexLock lock(mu_);
      r.queue.pop_front();
    }
    Finish(done.id, status, std::move(done.result));
  }
}

Status ThreadedTransfers::RunJob(uint32_t rank, const BoundJob& bound, RankResult& result,
                                 uint64_t& batches) {
  const TransferJob& job = bound.job;
  const RankGeometry& g = geometry_.ranks[rank];
  const RankPlanes& planes = (*bound.bases)[rank];
  const bool out = job.direction == TransferDirection::kDeviceToHost;
  CopyEngine& engine = *ranks_[rank]->engine;
  if (out && job.hash_records && engine.copies_on_calling_thread() && CanHashCopyOut(layout_)) {
    HashedCopyOut h = CopyOutHashed(engine, g, planes, layout_, job);
    result.bytes = h.bytes;
    result.page_sums = std::move(h.page_sums);
    result.row_sum = h.row_sum;
    batches += h.batches;
    return h.status;
  }
  const uint32_t page_share_rank = job.replicated_pages ? 0 : rank;
  Rank& r = *ranks_[rank];
  Batcher batch(engine, job.direction, out ? r.copy_out : r.restore, unpaced_);
  for (size_t i = 0; i < job.page_ids.size(); ++i) {
    for (uint32_t p = 0; p < g.page_planes.size(); ++p) {
      const uint64_t unit = g.page_planes[p].unit_bytes;
      uint8_t* host = job.page_records[i] + layout_.plane_offset(page_share_rank, p);
      // Zero the padding so files never carry stale bytes of another record.
      if (out) std::memset(host + unit, 0, AlignUp(unit) - unit);
      batch.Add(planes.page_plane_base[p] + job.page_ids[i].value * unit, host, unit);
    }
  }
  if (job.row_slot) {
    const uint64_t unit = g.row.unit_bytes;
    const uint64_t at = job.replicated_row ? 0 : layout_.row_offset(rank);
    const uint64_t device = planes.row_base + job.row_slot->value * unit;
    ForEachRowPart(job.row_pieces, at, unit, [&](uint8_t* host, uint64_t off, uint64_t n) {
      batch.Add(device + (off - at), host, n);
    });
    if (out) {
      ForEachRowPart(job.row_pieces, at + unit, AlignUp(unit) - unit,
                     [](uint8_t* host, uint64_t, uint64_t n) { std::memset(host, 0, n); });
    }
  }
  Status s = batch.Finish();
  result.bytes = batch.moved();
  batches += batch.batches();
  return s;
}

void ThreadedTransfers::Finish(JobId id, const Status& status, RankResult result) {
  std::shared_ptr<WakeSignal> owner;
  {
    MutexLock lock(mu_);
    auto it = pending_.find(id);
    STRATA_ASSERT(it != pending_.end(), "completion for an unknown transfer job");
    Pending& p = it->second;
    if (!status.ok() && p.status.ok()) p.status = status;
    p.bytes += result.bytes;
    if (--p.ranks_left != 0) return;
    TransferCompletion c{id, p.status, p.bytes};
    // Sums come only from a single rank (CanHashCopyOut), so this rank's are the job's.
    if (p.status.ok() && (!result.page_sums.empty() || result.row_sum)) {
      c.page_sums = std::move(result.page_sums);
      c.row_sum = result.row_sum;
    }
    done_.push_back(std::move(c));
    pending_.erase(it);
    done_cv_.NotifyAll();
    owner = signal_;
  }
  if (owner) owner->Notify();
}

Status HostCopyEngine::CopyBatch(TransferDirection direction,
                                 std::span<const CopyDescriptor> batch) {
  for (const CopyDescriptor& d : batch) {
    auto* device = reinterpret_cast<uint8_t*>(d.device);
    if (direction == TransferDirection::kDeviceToHost) {
      std::memcpy(d.host, device, d.bytes);
    } else {
      std::memcpy(device, d.host, d.bytes);
    }
  }
  return Status::Ok();
}

}  // namespace strata

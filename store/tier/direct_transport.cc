#include "store/tier/direct_transport.h"

#include <chrono>

#include "store/base/aligned_buffer.h"
#include "store/base/assert.h"

namespace strata {

// Everything the worker thread touches; shared so that a worker left running
// by a Close that timed out keeps it alive.
struct DirectTransport::Worker {
  Worker(const CacheGeometry& geometry, RecordHeaderBasis header_basis, FileSystem& file_system,
         int directory, std::shared_ptr<const PlaneBaseSource> rank_planes,
         std::unique_ptr<DirectFileIo> file_io, std::unique_ptr<DeviceRecordChecksums> sums,
         DirectOptions opts)
      : layout(geometry),
        basis(std::move(header_basis)),
        fs(file_system),
        dir_fd(directory),
        plane_source(std::move(rank_planes)),
        io(std::move(file_io)),
        checksums(std::move(sums)),
        options(std::move(opts)),
        row_checksums(options.row_checksums ? options.row_checksums
                                            : std::make_shared<RowChecksums>()) {}

  // Runs jobs until stopped and drained (or abandoned), then releases the
  // seams: their cuFile registrations end with the worker, not with the
  // last reference to it (a transport whose Close failed is leaked on
  // purpose by its owner, DiskFiles::Close).
  void Loop();
  void RunJobs();
  // `planes`: the snapshot Submit took (stores and fetches; null otherwise).
  RecordJobDone Run(const RecordJob& job, const PlaneBases* planes);
  Status Store(const RecordJob& job, const PlaneBases& planes, uint64_t& bytes);
  Status Fetch(const RecordJob& job, const PlaneBases& planes, uint64_t& bytes);
  RecordHeader HeaderFor(const RecordJob& job);
  uint64_t CreatedNs() const;
  Status RunEntries(int fd, TransferDirection direction, const RecordJob& job,
                    const PlaneBases& planes, const RecordExtents& extents, uint64_t& bytes);
  void Count(uint64_t DirectStats::*counter, uint64_t n = 1) {
    MutexLock lock(mu);
    stats.*counter += n;
  }

  // Fixed at construction; read by the worker only.
  const RecordLayout layout;
  const RecordHeaderBasis basis;
  FileSystem& fs;
  const int dir_fd;
  const std::shared_ptr<const PlaneBaseSource> plane_source;
  // Reset by Loop when it ends (worker only).
  std::unique_ptr<DirectFileIo> io;
  std::unique_ptr<DeviceRecordChecksums> checksums;
  const DirectOptions options;
  const std::shared_ptr<RowChecksums> row_checksums;  // synchronises itself

  Mutex mu;
  CondVar work;     // a job queued or stop set
  CondVar drained;  // queue empty and nothing running
  // A job and the planes' snapshot it runs on (null: no planes touched).
  struct Queued {
    RecordJob job;
    std::shared_ptr<const PlaneBases> planes;
  };
  std::deque<Queued> queue GUARDED_BY(mu);
  bool running GUARDED_BY(mu) = false;
  bool stop GUARDED_BY(mu) = false;
  // Close's deadline passed: queued jobs fail with kAborted, unrun.
  bool abandon GUARDED_BY(mu) = false;
  std::vector<RecordJobDone> done GUARDED_BY(mu);
  std::shared_ptr<WakeSignal> signal GUARDED_BY(mu) = std::make_shared<WakeSignal>();
  DirectStats stats GUARDED_BY(mu);
};

DirectTransport::DirectTransport(const CacheGeometry& geometry, const NamespaceIdentity& identity,
                                 const LayoutFingerprint& fingerprint, FileSystem& fs, int dir_fd,
                                 std::shared_ptr<const PlaneBaseSource> planes,
                                 std::unique_ptr<DirectFileIo> io,
                                 std::unique_ptr<DeviceRecordChecksums> checksums,
                                 DirectOptions options)
    : worker_(std::make_shared<Worker>(
          geometry, RecordHeaderBasis{identity, fingerprint, ShapeOf(geometry)}, fs, dir_fd,
          std::move(planes), std::move(io), std::move(checksums), std::move(options))) {
  STRATA_ASSERT(worker_->plane_source != nullptr, "a direct transport needs its planes' source");
  thread_ = std::thread([w = worker_] { w->Loop(); });
}

DirectTransport::~DirectTransport() {
  if (!closed_) (void)Close(std::chrono::milliseconds(30'000));
}

void DirectTransport::Seed(const ScanReport& report) { worker_->row_checksums->Seed(report); }

Status DirectTransport::Submit(RecordJob job) {
  if (closed_) return Status::Aborted("direct transport is closed");
  STRATA_RETURN_IF_ERROR(CheckDeviceRecordJob(job, worker_->basis.shape.page_tokens));
  Worker& w = *worker_;
  std::shared_ptr<const PlaneBases> planes;
  if (job.kind == RecordJobKind::kStore || job.kind == RecordJobKind::kFetch) {
    planes = w.plane_source->current_bases();
    if (planes == nullptr) {
      return Status::Unavailable("no planes are mapped here: the record job was not issued");
    }
    if (planes->size() != w.layout.rank_count()) {
      return Status::Internal("the planes name " + std::to_string(planes->size()) +
                              " ranks; the geometry has " + std::to_string(w.layout.rank_count()));
    }
  }
  MutexLock lock(w.mu);
  const size_t waiting = w.queue.size() + (w.running ? 1 : 0);
  if (waiting >= w.options.max_waiting_jobs) {
    return Status::Busy("direct transport has " + std::to_string(waiting) + " jobs");
  }
  w.queue.push_back({std::move(job), std::move(planes)});
  w.work.NotifyOne();
  return Status::Ok();
}

void DirectTransport::Poll(std::vector<RecordJobDone>& out) {
  MutexLock lock(worker_->mu);
  for (RecordJobDone& d : worker_->done) out.push_back(std::move(d));
  worker_->done.clear();
}

bool DirectTransport::WaitForCompletion(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::shared_ptr<WakeSignal> signal;
    {
      MutexLock lock(worker_->mu);
      if (!worker_->done.empty()) return true;
      if (worker_->queue.empty() && !worker_->running) return false;
      signal = worker_->signal;
    }
    if (!signal->WaitUntil(deadline)) {
      MutexLock lock(worker_->mu);
      return !worker_->done.empty();
    }
  }
}

void DirectTransport::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  std::shared_ptr<WakeSignal> now = signal ? std::move(signal) : std::make_shared<WakeSignal>();
  bool waiting = false;
  {
    MutexLock lock(worker_->mu);
    worker_->signal = now;
    waiting = !worker_->done.empty();
  }
  if (waiting) now->Notify();
}

Status DirectTransport::Close(std::chrono::milliseconds deadline) {
  if (closed_) return Status::Ok();
  closed_ = true;
  const auto until = std::chrono::steady_clock::now() + deadline;
  Worker& w = *worker_;
  {
    MutexLock lock(w.mu);
    w.stop = true;
    w.work.NotifyAll();
    while (!w.queue.empty() || w.running) {
      if (!w.drained.WaitUntil(lock, until) && std::chrono::steady_clock::now() >= until) break;
    }
    if (!w.queue.empty() || w.running) {
      const size_t left = w.queue.size() + (w.running ? 1 : 0);
      // Jobs never started fail now, so a Poll after this Close reports them
      // (and an attach gate counting them is left); only the running job
      // keeps its planes in use.
      for (Worker::Queued& q : w.queue) {
        w.done.push_back({.id = q.job.id,
                          .status = Status::Aborted("the direct transport closed before it ran")});
        ++w.stats.jobs_failed;
      }
      w.queue.clear();
      w.abandon = true;  // the worker ends after its current job
      lock.Unlock();
      thread_.detach();  // keeps worker_'s state alive through its own reference
      return Status::Aborted(std::to_string(left) + " direct jobs did not drain");
    }
  }
  thread_.join();
  return Status::Ok();
}

DirectStats DirectTransport::stats() const {
  MutexLock lock(worker_->mu);
  return worker_->stats;
}

void DirectTransport::Worker::Loop() {
  RunJobs();
  checksums.reset();
  io.reset();  // deregisters the planes (CuFileDirectIo)
}

void DirectTransport::Worker::RunJobs() {
  for (;;) {
    Queued next;
    bool abandoned = false;
    {
      MutexLock lock(mu);
      while (queue.empty() && !stop) work.Wait(lock);
      if (queue.empty()) return;
      next = std::move(queue.front());
      queue.pop_front();
      running = true;
      abandoned = abandon;
    }
    const RecordJob& job = next.job;
    RecordJobDone d =
        abandoned
            ? RecordJobDone{.id = job.id,
                            .status = Status::Aborted("the direct transport closed before it ran")}
            : Run(job, next.planes.get());
    std::shared_ptr<WakeSignal> wake;
    {
      MutexLock lock(mu);
      ++(d.status.ok() ? stats.jobs_done : stats.jobs_failed);
      done.push_back(std::move(d));
      running = false;
      if (queue.empty()) drained.NotifyAll();
      wake = signal;
    }
    wake->Notify();
  }
}

RecordJobDone DirectTransport::Worker::Run(const RecordJob& job, const PlaneBases* planes) {
  uint64_t bytes = 0;
  Status s;
  switch (job.kind) {
    case RecordJobKind::kStore: s = Store(job, *planes, bytes); break;
    case RecordJobKind::kFetch: s = Fetch(job, *planes, bytes); break;
    case RecordJobKind::kTruncate:
      s = TruncateRecordRow(fs, dir_fd, HeaderFor(job), options.durability);
      break;
    case RecordJobKind::kUnlink:
      s = UnlinkRecord(fs, dir_fd, job.key, options.durability);
      if (s.ok()) row_checksums->Erase(job.key);
      break;
  }
  const bool full = s.code() == StatusCode::kFsFull;
  return RecordJobDone{job.id, std::move(s), full, bytes};
}

uint64_t DirectTransport::Worker::CreatedNs() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options.clock.wall().time_since_epoch())
          .count());
}

RecordHeader DirectTransport::Worker::HeaderFor(const RecordJob& job) {
  return DirectRecordHeader(basis, job, row_checksums->Get(job.key), CreatedNs());
}

Status DirectTransport::Worker::RunEntries(int fd, TransferDirection direction,
                                           const RecordJob& job, const PlaneBases& planes,
                                           const RecordExtents& extents, uint64_t& bytes) {
  const std::vector<std::vector<DirectIoEntry>> batches =
      PlanDirectJob(layout, extents, planes, job, direction, options.batch);
  const std::vector<Status> results = io->Run(fd, direction, batches);
  size_t i = 0;
  for (const std::vector<DirectIoEntry>& batch : batches) {
    for (const DirectIoEntry& e : batch) {
      if (i >= results.size()) return Status::Internal("direct I/O reported too few entries");
      if (!results[i].ok()) {
        return results[i].WithContext("entry " + std::to_string(i) + " (file offset " +
                                      std::to_string(e.file_offset) + ")");
      }
      bytes += e.bytes;
      ++i;
    }
  }
  return Status::Ok();
}

Status DirectTransport::Worker::Store(const RecordJob& job, const PlaneBases& planes,
                                      uint64_t& bytes) {
  const std::string name = RecordFileName(job.key);
  Result<std::vector<uint64_t>> sums = checksums->Compute(DirectChecksumRecords(
      layout, planes, job.page_ids, job.replicated_pages, job.row_slot, job.replicated_row));
  if (!sums.ok()) return sums.status().WithContext("checksum " + name);
  const uint64_t row_sum = job.row_slot ? sums->back() : 0;
  const RecordHeader header = DirectRecordHeader(basis, job, row_sum, CreatedNs());
  Result<RecordExtents> extents = ComputeExtents(header);
  if (!extents.ok()) return extents.status().WithContext("write " + name);
  const uint64_t file_bytes =
      job.row_slot ? extents->file_bytes_with_row() : extents->file_bytes_without_row();
  Result<int> fd = BeginRecordWrite(fs, dir_fd, job.key, file_bytes);
  if (!fd.ok()) return fd.status().WithContext("write " + name);
  // Header and checksum segment from the host; the payload from the device.
  AlignedBuffer head(extents->page_segment_offset);
  Status s = EncodeRecordHeader(header, head.span().first(kRecordHeaderBytes));
  if (s.ok()) {
    EncodePageChecksums(std::span(*sums).first(job.page_ids.size()),
                        head.span().subspan(extents->checksum_segment_offset));
    s = fs.WriteAt(*fd, head.span(), 0);
  }
  if (s.ok()) s = RunEntries(*fd, TransferDirection::kDeviceToHost, job, planes, *extents, bytes);
  if (s.ok() && options.durability == Durability::kSync) s = fs.SyncData(*fd);
  fs.Close(*fd);
  if (s.ok()) s = CommitRecordWrite(fs, dir_fd, job.key);
  if (!s.ok()) {
    (void)AbortRecordWrite(fs, dir_fd, job.key);
    bytes = 0;
    return s.WithContext("write " + name);
  }
  if (options.durability == Durability::kSync) {
    s = fs.Sync(dir_fd);
    if (!s.ok()) {
      // Never leave a record the caller is told did not commit.
      (void)UnlinkRecord(fs, dir_fd, job.key, Durability::kNone);
      bytes = 0;
      return s.WithContext("fsync directory").WithContext("write " + name);
    }
  }
  row_checksums->Set(job.key, row_sum);
  MutexLock lock(mu);
  stats.bytes_written += bytes;
  return Status::Ok();
}

Status DirectTransport::Worker::Fetch(const RecordJob& job, const PlaneBases& planes,
                                      uint64_t& bytes) {
  const std::string name = RecordFileName(job.key);
  const RecordHeader expected = HeaderFor(job);
  Result<RecordExtents> extents = ComputeExtents(expected);
  if (!extents.ok()) return extents.status().WithContext("read " + name);
  Result<int> fd = fs.OpenAt(dir_fd, name, OpenFor::kDirectRead);
  if (!fd.ok()) return fd.status().WithContext("read " + name);
  struct Closer {
    FileSystem& fs;
    int fd;
    ~Closer() { fs.Close(fd); }
  } closer{fs, *fd};
  Result<RecordHeader> actual = ReadRecordHeader(fs, *fd);
  if (!actual.ok()) {
    Count(&DirectStats::header_mismatches);
    return actual.status().WithContext("read " + name);
  }
  if (std::optional<std::string> field = FirstHeaderDifference(expected, *actual)) {
    Count(&DirectStats::header_mismatches);
    return Status::FailedPrecondition(*field + " in the file differs from the expected record")
        .WithContext("read " + name);
  }
  Result<FileInfo> info = fs.Stat(*fd);
  if (!info.ok()) return info.status().WithContext("read " + name);
  const uint64_t need =
      job.row_slot ? extents->file_bytes_with_row() : extents->file_bytes_without_row();
  if (info->bytes < need) {
    Count(&DirectStats::header_mismatches);
    return (info->bytes >= extents->file_bytes_without_row()
                ? Status::NotFound("the row is not in the file")
                : Status::Corruption("file of " + std::to_string(info->bytes) +
                                     " bytes is shorter than its header's " + std::to_string(need)))
        .WithContext("read " + name);
  }
  AlignedBuffer segment(extents->checksum_segment_bytes);
  if (segment.size() > 0) {
    Result<uint64_t> got = fs.ReadAt(*fd, segment.span(), extents->checksum_segment_offset);
    if (!got.ok()) return got.status().WithContext("read checksums").WithContext("read " + name);
    if (*got != segment.size()) {
      return Status::Corruption("short checksum segment").WithContext("read " + name);
    }
  }
  Status s = RunEntries(*fd, TransferDirection::kHostToDevice, job, planes, *extents, bytes);
  if (!s.ok()) return s.WithContext("read " + name);
  Result<std::vector<uint64_t>> sums = checksums->Compute(DirectChecksumRecords(
      layout, planes, job.page_ids, job.replicated_pages, job.row_slot, job.replicated_row));
  if (!sums.ok()) return sums.status().WithContext("checksum " + name);
  const std::optional<uint64_t> row_sum =
      job.row_slot ? std::optional<uint64_t>(sums->back()) : std::nullopt;
  if (std::optional<ChecksumMismatch> bad = CompareDirectChecksums(
          segment.span(), job.first_page, job.tail_pages,
          std::span(*sums).first(job.page_ids.size()), row_sum, expected.row_checksum)) {
    Count(&DirectStats::checksum_failures);
    return bad->status.WithContext("read " + name);
  }
  Count(&DirectStats::bytes_read, bytes);
  return Status::Ok();
}

}  // namespace strata

#include "store/disk/disk_thread.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <thread>

#include "store/base/deliberate_leak.h"
#include "store/base/mutex.h"
#include "store/disk/disk_job_run.h"

namespace strata {

using disk_internal::JobRun;
using disk_internal::RequestSink;
using disk_internal::RunContext;
using disk_internal::SharedCounters;

namespace {

// Longest single wait for completions; Submit and Shutdown cut it short.
constexpr std::chrono::milliseconds kIdleWait{1'000};
// How long Start waits for the thread to report its id.
constexpr std::chrono::milliseconds kStartDeadline{5'000};
// Resubmissions of one request after short reads or writes.
constexpr uint32_t kShortIoRetryLimit = 16;
// Consecutive Reap failures after which the ring counts as broken.
constexpr uint32_t kReapFailureLimit = 64;
constexpr size_t kReapBatch = 64;

const char* OpName(BlockOp op) {
  switch (op) {
    case BlockOp::kRead: return "read";
    case BlockOp::kWrite: return "write";
    case BlockOp::kSyncData: return "fdatasync";
    case BlockOp::kSync: return "fsync";
  }
  return "io";
}

}  // namespace

struct DiskThread::State final : RequestSink, std::enable_shared_from_this<DiskThread::State> {
  State(FileSystem& fs_in, std::unique_ptr<BlockIo> io_in, int dir_fd_in, std::string path,
        DiskThreadOptions options_in)
      : fs(fs_in),
        io(std::move(io_in)),
        dir_fd(dir_fd_in),
        dir_path(std::move(path)),
        options(options_in),
        slots(options.max_inflight_requests) {
    for (uint32_t i = 0; i < slots.size(); ++i)
      free_slots.push_back(static_cast<uint32_t>(slots.size()) - 1 - i);
  }

  // Fixed at Start.
  FileSystem& fs;
  std::unique_ptr<BlockIo> io;
  const int dir_fd;
  const std::string dir_path;
  const DiskThreadOptions options;
  std::thread thread;

  // Any thread.
  SharedCounters counters;
  std::atomic<uint64_t> jobs_completed{0};
  std::atomic<uint64_t> jobs_failed{0};
  std::atomic<int> tid{0};
  std::atomic<bool> scheduling_applied{false};
  std::atomic<uint64_t> busy_ns{0};       // wall time outside waits for completions
  std::atomic<uint64_t> idle_spin_ns{0};  // wall time spinning for a new job
  // Raised by every Submit and by Shutdown (what an idle spin watches).
  std::atomic<uint64_t> pokes{0};

  // Shared between the owner and the disk thread, under mu.
  Mutex mu;
  CondVar cv;  // a completion arrived, the thread started or exited
  std::deque<DiskJob> queued GUARDED_BY(mu);
  std::deque<DiskCompletion> done GUARDED_BY(mu);
  std::shared_ptr<WakeSignal> signal GUARDED_BY(mu);  // the owner's, notified with cv
  uint32_t outstanding GUARDED_BY(mu) = 0;            // submitted, not yet polled
  bool stop GUARDED_BY(mu) = false;
  bool exited GUARDED_BY(mu) = false;
  bool stuck GUARDED_BY(mu) = false;  // exited with requests still in the kernel

  // Disk thread only.
  struct Slot {
    JobRun* run = nullptr;
    uint32_t part = 0;
    BlockOp op = BlockOp::kRead;
    int fd = -1;
    uint64_t offset = 0;
    std::vector<iovec> iov;
    uint32_t retries = 0;
  };
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;
  std::vector<BlockRequest> batch;
  std::vector<std::unique_ptr<JobRun>> active;

  bool HasRoom() const override { return !free_slots.empty(); }

  void Issue(JobRun& run, uint32_t part, BlockOp op, int fd, uint64_t offset,
             std::vector<iovec> iov) override {
    STRATA_ASSERT(!free_slots.empty(), "Issue without room");
    const uint32_t index = free_slots.back();
    free_slots.pop_back();
    slots[index] = Slot{&run, part, op, fd, offset, std::move(iov), 0};
    ++run.inflight;
    Queue(index);
  }

  void Queue(uint32_t index) {
    const Slot& s = slots[index];
    batch.push_back(
        {index, s.op, s.fd, s.offset, s.iov.data(), static_cast<uint32_t>(s.iov.size())});
  }

  void Flush() {
    if (batch.empty()) return;
    Status submitted = io->Submit(batch);
    if (!submitted.ok()) {
      // The requests still complete later; their jobs stop and report this.
      for (const BlockRequest& r : batch) slots[r.tag].run->Abort(submitted.WithContext("submit"));
    }
    batch.clear();
  }

  void Finish(uint32_t index, const Status& status) {
    Slot& s = slots[index];
    JobRun* run = s.run;
    const uint32_t part = s.part;
    s = Slot{};
    free_slots.push_back(index);
    --run->inflight;
    run->OnDone(part, status);
  }

  void OnCompletion(const BlockCompletion& c) {
    const auto index = static_cast<uint32_t>(c.tag);
    Slot& s = slots[index];
    // Built only for errors: a successful completion allocates nothing.
    auto where = [&s] {
      return std::string(OpName(s.op)) + " at offset " + std::to_string(s.offset);
    };
    if (c.result < 0) {
      Finish(index, Status::FromErrno(static_cast<int>(-c.result), where()));
      return;
    }
    if (s.op == BlockOp::kSyncData || s.op == BlockOp::kSync) {
      Finish(index, Status::Ok());
      return;
    }
    uint64_t expected = 0;
    for (const iovec& v : s.iov) expected += v.iov_len;
    auto moved = static_cast<uint64_t>(c.result);
    if (moved >= expected) {
      Finish(index, Status::Ok());
      return;
    }
    if (moved == 0) {
      Finish(index, s.op == BlockOp::kRead
                        ? Status::Corruption("file ends before offset " + std::to_string(s.offset))
                        : Status::IoError(where() + " made no progress"));
      return;
    }
    if (++s.retries > kShortIoRetryLimit) {
      Finish(index, Status::IoError(where() + ": still short after " +
                                    std::to_string(kShortIoRetryLimit) + " resubmissions"));
      return;
    }
    // Resubmit the rest of a short transfer.
    s.offset += moved;
    while (moved > 0) {
      iovec& v = s.iov.front();
      if (moved >= v.iov_len) {
        moved -= v.iov_len;
        s.iov.erase(s.iov.begin());
        continue;
      }
      v.iov_base = static_cast<std::byte*>(v.iov_base) + moved;
      v.iov_len -= moved;
      moved = 0;
    }
    Queue(index);
  }

  std::unique_ptr<JobRun> MakeRun(DiskJob job) {
    RunContext ctx{fs, dir_fd, options.max_request_bytes, counters};
    if (auto* w = std::get_if<WriteRecordJob>(&job.body)) {
      return disk_internal::MakeWriteRun(job.id, std::move(*w), ctx);
    }
    if (auto* r = std::get_if<ReadRecordJob>(&job.body)) {
      return disk_internal::MakeReadRun(job.id, std::move(*r), ctx);
    }
    if (auto* t = std::get_if<TruncateRecordJob>(&job.body)) {
      return disk_internal::MakeSyncRun(job.id, [this, header = t->expected, d = t->durability] {
        return TruncateRecordRow(fs, dir_fd, header, d)
            .WithContext("truncate " + RecordFileName(header.key));
      });
    }
    const auto& u = std::get<UnlinkRecordJob>(job.body);
    return disk_internal::MakeSyncRun(job.id, [this, key = u.key, d = u.durability] {
      return UnlinkRecord(fs, dir_fd, key, d).WithContext("unlink " + RecordFileName(key));
    });
  }

  void Complete(DiskCompletion c) {
    (c.status.ok() ? jobs_completed : jobs_failed) += 1;
    std::shared_ptr<WakeSignal> owner;
    {
      MutexLock lock(mu);
      done.push_back(std::move(c));
      owner = signal;
    }
    cv.NotifyAll();
    if (owner) owner->Notify();
  }

  void ApplyScheduling() {
    sched_param param{};
    bool ok = pthread_setschedparam(pthread_self(), SCHED_BATCH, &param) == 0;
    ok = setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), options.nice) == 0 && ok;
    scheduling_applied = ok;
    {
      MutexLock lock(mu);
      tid = gettid();
    }
    cv.NotifyAll();
  }

  void Run() {
    ApplyScheduling();
    std::vector<BlockCompletion> reaped(kReapBatch);
    bool aborted_active = false;
    uint32_t reap_failures = 0;
    uint64_t taken = 0;               // `pokes` when `queued` and `stop` were last read
    uint64_t spun_at = ~uint64_t{0};  // `taken` when the thread last spun
    auto busy_start = std::chrono::steady_clock::now();
    while (true) {
      std::deque<DiskJob> refused;
      bool stopping;
      {
        MutexLock lock(mu);
        taken = pokes.load(std::memory_order_relaxed);
        stopping = stop;
        if (stopping) {
          refused.swap(queued);
        } else {
          while (active.size() < options.max_active_jobs && !queued.empty()) {
            active.push_back(MakeRun(std::move(queued.front())));
            queued.pop_front();
          }
        }
      }
      for (DiskJob& job : refused) {
        Complete({job.id, Status::Aborted("disk thread shut down before the job started"), 0,
                  std::nullopt, std::nullopt});
      }
      if (stopping && !aborted_active) {
        for (auto& run : active) run->Abort(Status::Aborted("disk thread shut down"));
        aborted_active = true;
      }
      for (auto& run : active) run->Advance(*this);
      Flush();
      for (auto it = active.begin(); it != active.end();) {
        if ((*it)->Finished()) {
          Complete((*it)->TakeCompletion());
          it = active.erase(it);
        } else {
          ++it;
        }
      }
      if (stopping && active.empty()) break;
      // Deferred checksums, one unit per turn, oldest run first; between
      // units the ring is checked without waiting, and the loop's top
      // refills the slots that completions freed.
      JobRun* hashing = nullptr;
      for (auto& run : active) {
        if (run->HashPending()) {
          hashing = run.get();
          break;
        }
      }
      if (hashing != nullptr) hashing->HashSome();
      // Idle: a job (or Shutdown) that comes within the spin budget is taken
      // without the ring's wake-up. Once per idle period: that Wake still
      // completes the ring's poll later, which is no news.
      if (active.empty() && spun_at != taken && options.idle_spin.count() > 0) {
        spun_at = taken;
        const auto spin_start = std::chrono::steady_clock::now();
        busy_ns += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(spin_start - busy_start).count());
        const bool poked = SpinUntil(
            options.idle_spin, [&] { return pokes.load(std::memory_order_acquire) != taken; });
        busy_start = std::chrono::steady_clock::now();
        idle_spin_ns += static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(busy_start - spin_start).count());
        if (poked) continue;
      }
      const auto wait_start = std::chrono::steady_clock::now();
      busy_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(wait_start - busy_start).count());
      Result<size_t> n =
          io->Reap(reaped, hashing != nullptr ? std::chrono::nanoseconds(0) : kIdleWait);
      busy_start = std::chrono::steady_clock::now();
      if (!n.ok()) {
        if (++reap_failures < kReapFailureLimit) continue;
        // The ring is broken: requests may never complete, so their buffers
        // stay owned by the kernel and the jobs are never reported.
        // Keep this state (ring, runs, iovecs) alive for good rather than
        // unmap memory the kernel may still use.
        LeakOnPurpose(std::make_unique<std::shared_ptr<State>>(shared_from_this()));
        MutexLock lock(mu);
        stuck = true;
        break;
      }
      reap_failures = 0;
      for (size_t i = 0; i < *n; ++i) OnCompletion(reaped[i]);
    }
    {
      MutexLock lock(mu);
      exited = true;
    }
    cv.NotifyAll();
  }
};

DiskThread::DiskThread(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<DiskThread>> DiskThread::Start(FileSystem& fs, std::unique_ptr<BlockIo> io,
                                                      int dir_fd, std::string dir_path,
                                                      DiskThreadOptions options) {
  if (io == nullptr) return Status::InvalidArgument("disk thread needs a BlockIo");
  if (options.max_outstanding_jobs == 0 || options.max_active_jobs == 0 ||
      options.max_inflight_requests == 0) {
    return Status::InvalidArgument("disk thread queue bounds must be positive");
  }
  if (options.max_inflight_requests > io->capacity()) {
    return Status::InvalidArgument(
        "max_inflight_requests " + std::to_string(options.max_inflight_requests) +
        " exceeds the BlockIo capacity " + std::to_string(io->capacity()));
  }
  if (options.max_request_bytes == 0 || options.max_request_bytes % kRecordAlign != 0) {
    return Status::InvalidArgument("max_request_bytes must be a positive multiple of 4 KiB");
  }
  if (options.nice < 0) return Status::InvalidArgument("the disk thread's nice value must be >= 0");
  STRATA_RETURN_IF_ERROR(ProbeDirectIo(fs, dir_fd, dir_path));
  auto state = std::make_shared<State>(fs, std::move(io), dir_fd, std::move(dir_path), options);
  state->thread = std::thread([state] { state->Run(); });
  std::unique_ptr<DiskThread> thread(new DiskThread(state));
  MutexLock lock(state->mu);
  const auto start_deadline = std::chrono::steady_clock::now() + kStartDeadline;
  while (state->tid == 0 && state->cv.WaitUntil(lock, start_deadline)) {
  }
  if (state->tid == 0) {
    lock.Unlock();
    (void)thread->Shutdown(kDefaultShutdownDeadline);
    return Status::Internal("disk thread did not start within 5 s");
  }
  return thread;
}

DiskThread::~DiskThread() {
  if (shutdown_result_) return;
  if (Shutdown(kDefaultShutdownDeadline).ok()) return;
  // The thread keeps its state (and the caller's buffers' I/O) alive.
  if (state_->thread.joinable()) state_->thread.detach();
}

Status DiskThread::Submit(DiskJob job) {
  STRATA_RETURN_IF_ERROR(disk_internal::ValidateJob(job.body));
  {
    MutexLock lock(state_->mu);
    if (state_->stop) return Status::Aborted("disk thread is shut down");
    if (state_->outstanding >= state_->options.max_outstanding_jobs) {
      return Status::Busy("disk thread has " + std::to_string(state_->outstanding) +
                          " jobs outstanding (max_outstanding_jobs)");
    }
    ++state_->outstanding;
    state_->queued.push_back(std::move(job));
  }
  state_->pokes.fetch_add(1, std::memory_order_release);
  state_->io->Wake();
  return Status::Ok();
}

size_t DiskThread::Poll(std::vector<DiskCompletion>& out) {
  MutexLock lock(state_->mu);
  const size_t n = state_->done.size();
  for (DiskCompletion& c : state_->done) out.push_back(std::move(c));
  state_->done.clear();
  state_->outstanding -= static_cast<uint32_t>(n);
  return n;
}

bool DiskThread::WaitForCompletion(std::chrono::milliseconds bound) {
  MutexLock lock(state_->mu);
  const auto until = std::chrono::steady_clock::now() + bound;
  while (state_->done.empty() && state_->cv.WaitUntil(lock, until)) {
  }
  return !state_->done.empty();
}

void DiskThread::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  std::shared_ptr<WakeSignal> raise;  // set when a completion already waits
  {
    MutexLock lock(state_->mu);
    state_->signal = std::move(signal);
    if (!state_->done.empty()) raise = state_->signal;
  }
  if (raise) raise->Notify();
}

Status DiskThread::Shutdown(std::chrono::milliseconds deadline) {
  if (shutdown_result_) return *shutdown_result_;
  {
    MutexLock lock(state_->mu);
    state_->stop = true;
  }
  state_->pokes.fetch_add(1, std::memory_order_release);
  state_->io->Wake();
  MutexLock lock(state_->mu);
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!state_->exited && state_->cv.WaitUntil(lock, until)) {
  }
  const bool exited = state_->exited;
  const bool stuck = state_->stuck;
  lock.Unlock();
  if (!exited) {
    return Status::Aborted("disk thread of '" + state_->dir_path + "' did not drain within " +
                           std::to_string(deadline.count()) +
                           " ms; the kernel may still use its buffers, which must stay allocated");
  }
  state_->thread.join();
  shutdown_result_ = Status::Ok();
  if (stuck) {
    shutdown_result_ = Status::Aborted("disk thread of '" + state_->dir_path +
                                       "' stopped with I/O still in the kernel; its buffers "
                                       "must stay allocated");
  }
  return *shutdown_result_;
}

DiskThreadStats DiskThread::stats() const {
  const SharedCounters& c = state_->counters;
  DiskThreadStats s;
  s.jobs_completed = state_->jobs_completed;
  s.jobs_failed = state_->jobs_failed;
  s.bytes_written = c.bytes_written;
  s.bytes_read = c.bytes_read;
  s.checksum_failures = c.checksum_failures;
  s.header_mismatches = c.header_mismatches;
  s.write_hash_ns = c.write_hash_ns;
  s.read_hash_ns = c.read_hash_ns;
  s.scheduling_applied = state_->scheduling_applied;
  s.busy_ns = state_->busy_ns;
  s.idle_spin_ns = state_->idle_spin_ns;
  return s;
}

int DiskThread::thread_id() const { return state_->tid; }

}  // namespace strata

#include "cuda/cufile_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace strata {

namespace {

// After a batch's timeout and cancel, each status wait until its entries end.
constexpr uint32_t kCancelWaitSliceMs = 1'000;

// cuFileHandleRegister refuses descriptors opened with O_NOFOLLOW (error
// 5019, CU_FILE_INVALID_FILE_OPEN_FLAG), which every record file is opened
// with (symlinks refused). The same file, already opened safely, is opened
// again through /proc/self/fd without it and checked to be the same inode.
Result<int> ReopenForCuFile(int fd, TransferDirection direction) {
  struct stat want {};
  if (::fstat(fd, &want) != 0) return Status::FromErrno(errno, "fstat of a record file");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const int flags =
      (direction == TransferDirection::kDeviceToHost ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC;
  const int again = ::open(path.c_str(), flags);
  if (again < 0) return Status::FromErrno(errno, "reopening a record file for cuFile");
  struct stat got {};
  if (::fstat(again, &got) != 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
    ::close(again);
    return Status::Internal("reopening a record file for cuFile reached another file");
  }
  return again;
}

}  // namespace

Result<std::unique_ptr<CuFileDirectIo>> CuFileDirectIo::Create(
    std::shared_ptr<CuFileLibrary> library, std::shared_ptr<const PrimaryContext> context,
    const std::vector<CuFileBuffer>& buffers, CuFileDirectIoOptions options) {
  std::unique_ptr<CuFileDirectIo> io(
      new CuFileDirectIo(std::move(library), std::move(context), options));
  ContextGuard guard(io->context_->driver(), io->context_->get());
  if (!guard.status().ok()) return guard.status();
  Result<CuFileProperties> properties = io->library_->Properties();
  if (properties.ok() && properties->max_batch_io_entries > 0) {
    io->max_batch_entries_ = std::min(properties->max_batch_io_entries, kCuFileMaxBatchEntries);
  }
  STRATA_RETURN_IF_ERROR(io->Register(buffers));
  return io;
}

CuFileDirectIo::~CuFileDirectIo() { DeregisterAll(); }

Status CuFileDirectIo::Register(const std::vector<CuFileBuffer>& buffers) {
  if (buffers.empty()) return Status::Ok();
  ContextGuard guard(context_->driver(), context_->get());
  if (!guard.status().ok()) return guard.status();
  Buffers added;
  for (const CuFileBuffer& b : buffers) {
    Status s = library_->BufRegister(b.device, b.bytes);
    if (!s.ok()) {
      for (const CuFileBuffer& undo : added) (void)library_->BufDeregister(undo.device);
      return s.WithContext("register " + std::to_string(b.bytes) + " device bytes for GPUDirect");
    }
    added.push_back(b);
  }
  MutexLock lock(mu_);
  auto now = std::make_shared<Buffers>(*registered_);
  now->insert(now->end(), added.begin(), added.end());
  registered_ = std::move(now);
  return Status::Ok();
}

void CuFileDirectIo::DeregisterAll() {
  std::shared_ptr<const Buffers> gone;
  {
    MutexLock lock(mu_);
    gone = std::exchange(registered_, std::make_shared<const Buffers>());
  }
  if (gone->empty()) return;
  ContextGuard guard(context_->driver(), context_->get());
  for (const CuFileBuffer& b : *gone) (void)library_->BufDeregister(b.device);
}

size_t CuFileDirectIo::registered() const { return Registered()->size(); }

std::shared_ptr<const CuFileDirectIo::Buffers> CuFileDirectIo::Registered() const {
  MutexLock lock(mu_);
  return registered_;
}

std::vector<Status> CuFileDirectIo::Run(int fd, TransferDirection direction,
                                        std::span<const std::vector<DirectIoEntry>> batches) {
  std::vector<Status> out;
  size_t total = 0;
  for (const std::vector<DirectIoEntry>& b : batches) total += b.size();
  out.reserve(total);
  auto fail_all = [&](const Status& why) {
    while (out.size() < total) out.push_back(why);
    return out;
  };
  ContextGuard guard(context_->driver(), context_->get());
  if (!guard.status().ok()) return fail_all(guard.status());
  Result<int> own = ReopenForCuFile(fd, direction);
  if (!own.ok()) return fail_all(own.status());
  Result<CuFileHandle> file = library_->HandleRegister(*own);
  if (!file.ok()) {
    ::close(*own);
    return fail_all(file.status());
  }
  const CuFileOp op =
      direction == TransferDirection::kDeviceToHost ? CuFileOp::kWrite : CuFileOp::kRead;
  const std::shared_ptr<const Buffers> registered = Registered();
  if (options_.mode == CuFileIoMode::kSynchronous) {
    out = RunSynchronous(*registered, *file, op, batches);
  } else {
    for (const std::vector<DirectIoEntry>& b : batches) {
      for (size_t first = 0; first < b.size(); first += max_batch_entries_) {
        const size_t n = std::min<size_t>(max_batch_entries_, b.size() - first);
        RunBatch(*registered, *file, op, std::span<const DirectIoEntry>(b).subspan(first, n), out);
      }
    }
  }
  library_->HandleDeregister(*file);
  ::close(*own);
  return out;
}

CuFileIo CuFileDirectIo::IoOf(const Buffers& registered, CuFileHandle file, CuFileOp op,
                              const DirectIoEntry& e) const {
  const CuFileBuffer* b = nullptr;
  for (const CuFileBuffer& r : registered) {
    if (e.device >= r.device && e.device + e.bytes <= r.device + r.bytes) {
      b = &r;
      break;
    }
  }
  return {.op = op,
          .file = file,
          .device_base = b != nullptr ? b->device : e.device,
          .device_offset = b != nullptr ? e.device - b->device : 0,
          .file_offset = e.file_offset,
          .bytes = e.bytes};
}

std::vector<Status> CuFileDirectIo::RunSynchronous(
    const Buffers& registered, CuFileHandle file, CuFileOp op,
    std::span<const std::vector<DirectIoEntry>> batches) const {
  std::vector<DirectIoEntry> entries;
  for (const std::vector<DirectIoEntry>& b : batches) {
    entries.insert(entries.end(), b.begin(), b.end());
  }
  std::vector<Status> out(entries.size());
  // Each share writes only its own elements of `out`.
  auto run_share = [&](DirectIoShare share) {
    for (size_t i = share.first; i < share.end; ++i) {
      out[i] = library_->SyncIo(IoOf(registered, file, op, entries[i]));
    }
  };
  auto run_share_on_worker = [&](DirectIoShare share) {
    ContextGuard guard(context_->driver(), context_->get());
    if (!guard.status().ok()) {
      for (size_t i = share.first; i < share.end; ++i) out[i] = guard.status();
      return;
    }
    run_share(share);
  };
  const std::vector<DirectIoShare> shares = SplitAmongWorkers(entries, options_.sync_workers);
  std::vector<std::thread> workers;
  std::vector<DirectIoShare> unstarted;  // a thread could not be started: run here
  for (size_t w = 1; w < shares.size(); ++w) {
    try {
      workers.emplace_back(run_share_on_worker, shares[w]);
    } catch (const std::system_error&) {
      unstarted.push_back(shares[w]);
    }
  }
  if (!shares.empty()) run_share(shares.front());  // Run made the context current here
  for (const DirectIoShare& share : unstarted) run_share(share);
  for (std::thread& t : workers) t.join();
  return out;
}

void CuFileDirectIo::RunBatch(const Buffers& registered, CuFileHandle file, CuFileOp op,
                              std::span<const DirectIoEntry> batch,
                              std::vector<Status>& out) const {
  if (batch.empty()) return;
  const size_t first = out.size();
  auto fail_batch = [&](const Status& why) { out.resize(first + batch.size(), why); };
  std::vector<CuFileIo> ios;
  ios.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    ios.push_back(IoOf(registered, file, op, batch[i]));
    ios.back().cookie = i;
  }
  Result<CuFileBatch> handle = library_->BatchSetUp(static_cast<uint32_t>(batch.size()));
  if (!handle.ok()) {
    fail_batch(handle.status());
    return;
  }
  Status submitted = library_->BatchSubmit(*handle, ios);
  if (!submitted.ok()) {
    library_->BatchDestroy(*handle);
    fail_batch(submitted);
    return;
  }
  std::vector<std::optional<Status>> results(batch.size());
  size_t finished = 0;
  std::vector<CuFileIoEvent> events(batch.size());
  // One status call: files each entry that reached a terminal state. False
  // when cuFile failed to report: the entries left are then failed with it.
  auto collect = [&](uint32_t timeout_ms) {
    Result<size_t> got = library_->BatchGetStatus(
        *handle, static_cast<uint32_t>(batch.size() - finished), events, timeout_ms);
    if (!got.ok()) {
      for (std::optional<Status>& r : results) {
        if (!r) r = got.status();
      }
      finished = batch.size();
      return false;
    }
    for (size_t k = 0; k < *got; ++k) {
      const CuFileIoEvent& ev = events[k];
      if (ev.cookie >= batch.size() || results[ev.cookie] || ev.state == CuFileIoState::kPending) {
        continue;
      }
      const uint64_t want = batch[ev.cookie].bytes;
      if (ev.state == CuFileIoState::kFailed || ev.result < 0) {
        results[ev.cookie] =
            Status::IoError("cuFile entry failed: error " + std::to_string(ev.result));
      } else if (static_cast<uint64_t>(ev.result) != want) {
        results[ev.cookie] = Status::IoError("cuFile moved " + std::to_string(ev.result) + " of " +
                                             std::to_string(want) + " bytes");
      } else {
        results[ev.cookie] = Status::Ok();
      }
      ++finished;
    }
    return true;
  };
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.batch_timeout_ms);
  bool reporting = true;
  while (finished < batch.size() && reporting) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    reporting = collect(static_cast<uint32_t>(left.count()));
  }
  if (finished < batch.size() && reporting) {
    // Past the timeout: cancel, then wait for every entry to end. Destroying
    // the batch (and reporting the job) while an entry still runs would let
    // its DMA land in pages the runtime has reused, or in planes a detach
    // unmaps; a stalled job is safe, a late write is not.
    const std::vector<bool> before_cancel = [&] {
      std::vector<bool> done(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) done[i] = results[i].has_value();
      return done;
    }();
    (void)library_->BatchCancel(*handle);  // without it, the entries run to their end
    while (finished < batch.size() && collect(kCancelWaitSliceMs)) {
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!before_cancel[i] && results[i] && !results[i]->ok()) {
        results[i] = Status::Aborted("cuFile entry did not finish within " +
                                     std::to_string(options_.batch_timeout_ms) + " ms (canceled)");
      }
    }
  }
  library_->BatchDestroy(*handle);
  for (std::optional<Status>& r : results) {
    out.push_back(r ? std::move(*r) : Status::Internal("cuFile entry never reported"));
  }
}

}  // namespace strata

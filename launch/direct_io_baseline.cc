#include "launch/direct_io_baseline.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "store/uring_block_io.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;
// The bound on one wait for a completion; a baseline that sees none stops.
constexpr std::chrono::milliseconds kCompletionWait{60'000};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Status Run(FileSystem& fs, int dir_fd, const std::string& name, BlockOp op, uint64_t total,
           std::span<std::byte> memory, const DirectIoBaseline& o, DirectIoResult& r) {
  const uint64_t block = o.request_bytes;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(o.requests));
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  int fd = -1;
  if (op == BlockOp::kWrite) {
    STRATA_ASSIGN_OR_RETURN(fd, fs.OpenAt(dir_fd, name, OpenFor::kDirectWriteNew));
    if (Status allocated = fs.Allocate(fd, total); !allocated.ok()) {
      fs.Close(fd);
      return allocated;
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(fd, fs.OpenAt(dir_fd, name, OpenFor::kDirectRead));
  }
  const uint64_t blocks_in_memory = std::max<uint64_t>(1, memory.size() / block);
  std::vector<iovec> iov(o.requests);
  std::vector<BlockRequest> batch;
  std::vector<BlockCompletion> reaped(o.requests);
  std::vector<Clock::time_point> started(o.requests);
  std::vector<uint32_t> free_slots(o.requests);
  std::iota(free_slots.begin(), free_slots.end(), 0);
  uint64_t offset = 0, done = 0, issued = 0;
  Status status;
  while (done < total && status.ok()) {
    batch.clear();
    while (offset < total && !free_slots.empty()) {
      const uint32_t s = free_slots.back();
      free_slots.pop_back();
      const uint64_t len = std::min(block, total - offset);
      iov[s] = {memory.data() + (issued++ % blocks_in_memory) * block, len};
      batch.push_back({s, op, fd, offset, &iov[s], 1});
      started[s] = Clock::now();
      offset += len;
    }
    if (!batch.empty()) status = io->Submit(batch);
    Result<size_t> n = io->Reap(reaped, kCompletionWait);
    if (!n.ok()) status = n.status();
    for (size_t i = 0; n.ok() && i < *n; ++i) {
      const BlockCompletion& c = reaped[i];
      const auto s = static_cast<uint32_t>(c.tag);
      if (c.result < 0 && status.ok()) {
        status = Status::FromErrno(static_cast<int>(-c.result), "baseline I/O");
      }
      if (c.result >= 0 && static_cast<uint64_t>(c.result) != iov[s].iov_len && status.ok()) {
        status = Status::IoError("short baseline I/O");
      }
      done += iov[s].iov_len;
      r.latency_ms.push_back(Seconds(Clock::now() - started[s]) * 1e3);
      free_slots.push_back(s);
    }
    if (n.ok() && *n == 0 && batch.empty() && status.ok()) {
      status = Status::Unavailable("baseline I/O stalled");
    }
  }
  r.seconds = Seconds(Clock::now() - start);
  r.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  r.bytes = total;
  // Requests still in flight after an error land before the file closes.
  while (free_slots.size() < o.requests) {
    Result<size_t> n = io->Reap(reaped, kCompletionWait);
    if (!n.ok() || *n == 0) break;
    for (size_t i = 0; i < *n; ++i) free_slots.push_back(static_cast<uint32_t>(reaped[i].tag));
  }
  fs.Close(fd);
  return status;
}

}  // namespace

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

void RunLikeWorkerThreads(int nice, const std::function<void()>& work) {
  std::thread worker([&] {
    sched_param param{};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
    work();
  });
  worker.join();
}

Result<DirectIoResult> RunDirectIoBaseline(FileSystem& fs, int dir_fd, const std::string& name,
                                           BlockOp op, uint64_t bytes, std::span<std::byte> memory,
                                           const DirectIoBaseline& options) {
  if (memory.size() < options.request_bytes) {
    return Status::InvalidArgument("baseline memory is smaller than one request");
  }
  DirectIoResult r;
  Status status;
  // Scheduled like the disk thread, so CPU contention treats both paths alike.
  RunLikeWorkerThreads(options.nice,
                       [&] { status = Run(fs, dir_fd, name, op, bytes, memory, options, r); });
  if (!status.ok()) return status;
  return r;
}

}  // namespace strata

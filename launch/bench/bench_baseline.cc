#include "launch/bench/bench_baseline.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "store/io/uring_block_io.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;
// The bound on one wait for a completion; a loop that sees none gives up.
constexpr std::chrono::milliseconds kCompletionWait{60'000};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Result<int> OpenTarget(FileSystem& fs, int dir_fd, const SequentialIoSpec& spec) {
  if (spec.op == BlockOp::kRead) return fs.OpenAt(dir_fd, spec.name, OpenFor::kDirectRead);
  STRATA_ASSIGN_OR_RETURN(int fd, fs.OpenAt(dir_fd, spec.name, OpenFor::kDirectWriteNew));
  Status allocated = fs.Allocate(fd, spec.total_bytes);
  if (!allocated.ok()) {
    fs.Close(fd);
    return allocated;
  }
  return fd;
}

Status Loop(FileSystem& fs, int dir_fd, const SequentialIoSpec& spec, SequentialIoResult& r) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(spec.requests));
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(int fd, OpenTarget(fs, dir_fd, spec));
  const uint64_t block = spec.request_bytes;
  const uint64_t blocks_in_memory = std::max<uint64_t>(1, spec.memory.size() / block);
  std::vector<iovec> iov(spec.requests);
  std::vector<BlockRequest> batch;
  std::vector<BlockCompletion> reaped(spec.requests);
  std::vector<Clock::time_point> started(spec.requests);
  std::vector<uint32_t> free_slots(spec.requests);
  std::iota(free_slots.begin(), free_slots.end(), 0);
  uint64_t offset = 0, done = 0, issued = 0;
  Status status;
  auto land = [&](const BlockCompletion& c) {
    const auto s = static_cast<uint32_t>(c.tag);
    if (status.ok() && c.result < 0) {
      status = Status::FromErrno(static_cast<int>(-c.result), "baseline I/O");
    } else if (status.ok() && static_cast<uint64_t>(c.result) != iov[s].iov_len) {
      status = Status::IoError("short baseline I/O");
    }
    done += iov[s].iov_len;
    r.latency_ms.push_back(Seconds(Clock::now() - started[s]) * 1e3);
    free_slots.push_back(s);
  };
  while (done < spec.total_bytes && status.ok()) {
    batch.clear();
    while (offset < spec.total_bytes && !free_slots.empty()) {
      const uint32_t s = free_slots.back();
      free_slots.pop_back();
      const uint64_t len = std::min(block, spec.total_bytes - offset);
      iov[s] = {spec.memory.data() + (issued++ % blocks_in_memory) * block, len};
      batch.push_back({s, spec.op, fd, offset, &iov[s], 1});
      started[s] = Clock::now();
      offset += len;
    }
    if (!batch.empty()) status = io->Submit(batch);
    Result<size_t> n = io->Reap(reaped, kCompletionWait);
    if (!n.ok()) {
      status = n.status();
      break;
    }
    if (*n == 0 && batch.empty()) status = Status::Unavailable("baseline I/O stalled for 60 s");
    for (size_t i = 0; i < *n; ++i) land(reaped[i]);
  }
  if (status.ok() && spec.op == BlockOp::kWrite && spec.durability == Durability::kSync) {
    status = fs.SyncData(fd);
  }
  r.seconds = Seconds(Clock::now() - start);
  r.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  r.bytes = spec.total_bytes;
  // After an error, let what is still in flight land before closing.
  while (free_slots.size() < spec.requests) {
    Result<size_t> n = io->Reap(reaped, kCompletionWait);
    if (!n.ok() || *n == 0) break;
    for (size_t i = 0; i < *n; ++i) land(reaped[i]);
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

double ReadPassCpuSecondsPerGb(std::span<const std::byte> memory, int nice) {
  if (memory.empty()) return 0;
  double seconds = 0;
  RunLikeWorkerThreads(nice, [&] {
    timespec before{}, after{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before);
    // Eight independent sums, and each next 4 KiB prefetched while this one
    // is summed: as fast as one core reads memory it has no copy of.
    uint64_t sums[8] = {};
    const auto* words = reinterpret_cast<const uint64_t*>(memory.data());
    const size_t count = memory.size() / sizeof(uint64_t);
    constexpr size_t kStepWords = 4096 / sizeof(uint64_t);
    for (size_t step = 0; step < count; step += kStepWords) {
      for (size_t line = step + kStepWords; line < std::min(count, step + 2 * kStepWords);
           line += 8) {
        __builtin_prefetch(words + line, 0, 3);
      }
      for (size_t i = step; i < std::min(count, step + kStepWords); i += 8) {
        for (size_t k = 0; k < 8; ++k) sums[k] += words[i + k];
      }
    }
    uint64_t sum = 0;
    for (uint64_t v : sums) sum += v;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after);
    // Keeps the loop: the sum is otherwise dead.
    asm volatile("" : : "r"(sum));
    seconds = static_cast<double>(after.tv_sec - before.tv_sec) +
              static_cast<double>(after.tv_nsec - before.tv_nsec) * 1e-9;
  });
  return seconds / (static_cast<double>(memory.size()) / 1e9);
}

Status CheckDirectIo(int dir_fd, const std::string& dir) {
  constexpr const char* kProbe = ".strata-bench-odirect-probe";
  (void)::unlinkat(dir_fd, kProbe, 0);
  const int fd = ::openat(dir_fd, kProbe, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == EINVAL) {
      return Status::FailedPrecondition(
          "--dir " + dir +
          " does not support O_DIRECT (tmpfs before Linux 6.6, or a FUSE or network "
          "filesystem?): the benchmark measures direct I/O; choose a directory on a local "
          "disk, e.g. /var/tmp");
    }
    return Status::FromErrno(err, "create an O_DIRECT file in " + dir);
  }
  ::close(fd);
  (void)::unlinkat(dir_fd, kProbe, 0);
  return Status::Ok();
}

Result<SequentialIoResult> RunSequentialIo(FileSystem& fs, int dir_fd,
                                           const SequentialIoSpec& spec) {
  if (spec.requests == 0 || spec.request_bytes == 0 || spec.request_bytes % 4096 != 0 ||
      spec.memory.size() < spec.request_bytes) {
    return Status::InvalidArgument("baseline needs requests, 4 KiB-multiple requests and memory");
  }
  SequentialIoResult result;
  Status status;
  // Its own thread, with the disk thread's scheduling, so CPU contention
  // treats the baseline and the store alike.
  RunLikeWorkerThreads(spec.nice, [&] { status = Loop(fs, dir_fd, spec, result); });
  if (!status.ok()) return status;
  return result;
}

}  // namespace strata

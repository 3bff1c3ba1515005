// `strata bench disk --dir DIR [--json]`: record write and read throughput
// through the disk thread (temporary file, fallocate, O_DIRECT, xxh3 per page
// and row, rename; reads check the header and verify every checksum), next to
// a plain O_DIRECT sequential write and read of the same number of bytes in
// the same directory, through io_uring with the same request size and queue
// depth, measured in the same run.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>

#include "launch/bench/bench.h"
#include "launch/bench/bench_baseline.h"
#include "launch/bench/disk_bench_report.h"
#include "launch/bench/disk_bench_slots.h"
#include "launch/config/human_units.h"
#include "store/base/aligned_buffer.h"
#include "store/base/idle_spin.h"
#include "store/disk/disk_thread.h"
#include "store/io/uring_block_io.h"
#include "store/record/record_dir.h"

namespace strata {

namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
// The bound on one wait for a completion; a bench that sees none gives up.
constexpr std::chrono::milliseconds kCompletionWait{60'000};
constexpr std::string_view kBaselineName = ".strata-bench-baseline.tmp";

struct BenchOptions {
  std::string dir;
  bool json = false;
  uint32_t records = 16;
  uint32_t rounds = 3;  // baseline and store alternate; medians are reported
  uint32_t pages = 64;
  uint32_t planes = 36;
  uint64_t plane_kib = 16;
  uint64_t row_kib = 4 * 1024;
  uint32_t depth = 4;                   // records in flight
  uint32_t requests = 8;                // I/O requests in flight (both paths)
  uint64_t request_mib = 8;             // bytes per request (both paths)
  bool sync = false;                    // fdatasync + directory fsync per record
  int nice = DiskThreadOptions{}.nice;  // the disk thread's, and the baseline loop's
  // The disk thread's idle spin: the production default unless set.
  uint32_t idle_spin_us = static_cast<uint32_t>(DefaultIdleSpin().count());
  bool keep = false;  // leave the last round's records (for fsck / inspect)
};

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

struct PhaseResult {
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  std::vector<double> latency_ms;
  uint64_t hash_ns = 0;
  uint64_t busy_ns = 0;  // store only: the disk thread's time outside waits
  uint64_t spin_ns = 0;  // store only: the disk thread's idle spin (in cpu_seconds too)
  double busy_share() const {
    return seconds > 0 ? static_cast<double>(busy_ns) / 1e9 / seconds : 0;
  }
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
  double cpu_s_per_gb() const {
    return bytes > 0 ? cpu_seconds / (static_cast<double>(bytes) / 1e9) : 0;
  }
  double hash_share() const {
    return seconds > 0 ? static_cast<double>(hash_ns) / 1e9 / seconds : 0;
  }
  // The disk thread's CPU time in checksums per GB moved: the part of
  // cpu_s_per_gb() that is XXH3 (on cold memory, bound by DRAM reads).
  double hash_cpu_s_per_gb() const {
    return bytes > 0 ? static_cast<double>(hash_ns) / 1e9 / (static_cast<double>(bytes) / 1e9) : 0;
  }
  // The part of cpu_s_per_gb() the disk thread spent in its idle spin.
  double spin_cpu_s_per_gb() const {
    return bytes > 0 ? static_cast<double>(spin_ns) / 1e9 / (static_cast<double>(bytes) / 1e9) : 0;
  }
};

struct RecordSet {
  std::vector<IoPiece> pages;
  std::vector<IoPiece> row;
};

class DiskBench {
 public:
  explicit DiskBench(const BenchOptions& o) : o_(o) {}

  Status Run(nlohmann::json& out);

 private:
  Status RemoveFiles();
  Status Settle();
  Status Setup();
  Status StoreWrite(PhaseResult& r);
  Status StoreRead(PhaseResult& r);
  Status BaselineWrite(PhaseResult& r);
  Status BaselineRead(PhaseResult& r);
  Status Baseline(BlockOp op, PhaseResult& r);
  Status Drain(std::deque<std::pair<JobId, Clock::time_point>>& inflight, PhaseResult& r,
               size_t keep);
  void Cleanup();

  const BenchOptions& o_;
  PosixFileSystem fs_;
  CacheGeometry geometry_;
  RecordHeader header_;
  RecordExtents extents_;
  std::unique_ptr<RecordDir> dir_;
  // Declared before the thread: the thread, destroyed first, may still have
  // requests into the slots.
  std::unique_ptr<SlotPool> pool_;
  std::unique_ptr<DiskThread> thread_;
  std::vector<RecordSet> sets_;
  std::vector<RecordHeader> written_;
  uint64_t next_job_ = 1;
};

Status DiskBench::Setup() {
  geometry_.page_tokens = 64;
  RankGeometry rank;
  rank.row = {"row", o_.row_kib * kKiB};
  for (uint32_t p = 0; p < o_.planes; ++p) {
    rank.page_planes.push_back({"plane" + std::to_string(1000 + p), o_.plane_kib * kKiB});
  }
  geometry_.ranks.push_back(rank);
  STRATA_RETURN_IF_ERROR(ValidateGeometry(geometry_));
  const NamespaceIdentity id = ComputeNamespaceIdentity("strata-bench/disk", StateMode::kOrdinary);
  const LayoutFingerprint fp = ComputeLayoutFingerprint(geometry_);
  header_.identity = id;
  header_.fingerprint = fp;
  header_.tail_page_count = o_.pages;
  header_.shape = ShapeOf(geometry_);
  // The first record's key (StoreWrite gives each its own); the header check
  // refuses a key that consumed no tokens.
  header_.key.consumed = uint64_t{o_.pages} * geometry_.page_tokens;
  STRATA_ASSIGN_OR_RETURN(extents_, ComputeExtents(header_));

  const std::string path = RecordDirPath(o_.dir, id, fp);
  STRATA_ASSIGN_OR_RETURN(dir_, RecordDir::Open(fs_, path, RecordDir::Create::kYes));
  STRATA_RETURN_IF_ERROR(CheckDirectIo(dir_->fd(), o_.dir));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(o_.requests));
  DiskThreadOptions options;
  options.max_inflight_requests = o_.requests;
  options.max_request_bytes = o_.request_mib * kMiB;
  options.max_active_jobs = o_.depth;
  options.nice = o_.nice;
  options.idle_spin = std::chrono::microseconds(o_.idle_spin_us);
  STRATA_ASSIGN_OR_RETURN(thread_,
                          DiskThread::Start(fs_, std::move(io), dir_->fd(), path, options));

  const uint64_t slot = extents_.page_record_bytes;
  const uint64_t row_slots = (extents_.row_segment_bytes + slot - 1) / slot;
  STRATA_ASSIGN_OR_RETURN(pool_, SlotPool::Create(slot, o_.depth * (o_.pages + row_slots)));
  if (pool_->memory().size() < o_.request_mib * kMiB) {
    return Status::InvalidArgument(
        "--request-mib " + std::to_string(o_.request_mib) + " exceeds the " +
        HumanBytes(pool_->memory().size()) +
        " of records in flight the baseline reads into: raise --depth, --pages or --planes");
  }
  uint64_t next = 0;
  for (uint32_t d = 0; d < o_.depth; ++d) {
    RecordSet set;
    for (uint32_t p = 0; p < o_.pages; ++p) set.pages.push_back({pool_->slot(next++), slot});
    for (uint64_t left = extents_.row_segment_bytes; left > 0;) {
      const uint64_t take = std::min(left, slot);
      set.row.push_back({pool_->slot(next++), take});
      left -= take;
    }
    sets_.push_back(std::move(set));
  }
  return Status::Ok();
}

Status DiskBench::Drain(std::deque<std::pair<JobId, Clock::time_point>>& inflight, PhaseResult& r,
                        size_t keep) {
  std::vector<DiskCompletion> done;
  while (inflight.size() > keep) {
    if (!thread_->WaitForCompletion(kCompletionWait)) {
      return Status::Unavailable("no disk completion within 60 s");
    }
    done.clear();
    thread_->Poll(done);
    const auto now = Clock::now();
    for (const DiskCompletion& c : done) {
      STRATA_RETURN_IF_ERROR(c.status);
      if (c.header) written_.push_back(*c.header);
      auto it = std::find_if(inflight.begin(), inflight.end(),
                             [&](const auto& e) { return e.first == c.id; });
      if (it == inflight.end()) return Status::Internal("completion for an unknown job");
      r.latency_ms.push_back(Seconds(now - it->second) * 1e3);
      inflight.erase(it);
    }
  }
  return Status::Ok();
}

Status DiskBench::StoreWrite(PhaseResult& r) {
  written_.clear();
  std::deque<std::pair<JobId, Clock::time_point>> inflight;
  const uint64_t hash_before = thread_->stats().write_hash_ns;
  const uint64_t busy_before = thread_->stats().busy_ns;
  const uint64_t spin_before = thread_->stats().idle_spin_ns;
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  for (uint32_t i = 0; i < o_.records; ++i) {
    STRATA_RETURN_IF_ERROR(Drain(inflight, r, o_.depth - 1));
    RecordHeader h = header_;
    h.key.consumed = uint64_t{o_.pages} * geometry_.page_tokens * (i + 1);
    h.key.digest[0] = static_cast<uint8_t>(i);
    h.key.digest[1] = static_cast<uint8_t>(i >> 8);
    h.bucket = h.key.digest;
    const RecordSet& set = sets_[i % sets_.size()];
    const JobId id(next_job_++);
    inflight.emplace_back(id, Clock::now());
    STRATA_RETURN_IF_ERROR(
        thread_->Submit({id, WriteRecordJob{h, set.pages, set.row,
                                            o_.sync ? Durability::kSync : Durability::kNone}}));
  }
  STRATA_RETURN_IF_ERROR(Drain(inflight, r, 0));
  r.seconds = Seconds(Clock::now() - start);
  r.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  r.bytes = uint64_t{o_.records} * extents_.file_bytes_with_row();
  r.hash_ns = thread_->stats().write_hash_ns - hash_before;
  r.busy_ns = thread_->stats().busy_ns - busy_before;
  r.spin_ns = thread_->stats().idle_spin_ns - spin_before;
  return Status::Ok();
}

Status DiskBench::StoreRead(PhaseResult& r) {
  std::deque<std::pair<JobId, Clock::time_point>> inflight;
  const uint64_t hash_before = thread_->stats().read_hash_ns;
  const uint64_t busy_before = thread_->stats().busy_ns;
  const uint64_t spin_before = thread_->stats().idle_spin_ns;
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  for (size_t i = 0; i < written_.size(); ++i) {
    STRATA_RETURN_IF_ERROR(Drain(inflight, r, o_.depth - 1));
    const RecordSet& set = sets_[i % sets_.size()];
    const JobId id(next_job_++);
    inflight.emplace_back(id, Clock::now());
    STRATA_RETURN_IF_ERROR(
        thread_->Submit({id, ReadRecordJob{written_[i], 0, set.pages, set.row}}));
  }
  std::vector<RecordHeader> keep = written_;
  STRATA_RETURN_IF_ERROR(Drain(inflight, r, 0));
  written_ = std::move(keep);
  r.seconds = Seconds(Clock::now() - start);
  r.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  r.bytes = uint64_t{o_.records} * extents_.file_bytes_with_row();
  r.hash_ns = thread_->stats().read_hash_ns - hash_before;
  r.busy_ns = thread_->stats().busy_ns - busy_before;
  r.spin_ns = thread_->stats().idle_spin_ns - spin_before;
  return Status::Ok();
}

// Plain sequential O_DIRECT I/O over one preallocated file of the same size
// with the same request size and depth (launch/bench/bench_baseline.h).
Status DiskBench::Baseline(BlockOp op, PhaseResult& r) {
  SequentialIoSpec spec;
  spec.op = op;
  spec.name = std::string(kBaselineName);
  spec.total_bytes = uint64_t{o_.records} * extents_.file_bytes_with_row();
  spec.request_bytes = o_.request_mib * kMiB;
  spec.requests = o_.requests;
  spec.memory = pool_->memory();
  spec.durability = o_.sync ? Durability::kSync : Durability::kNone;
  spec.nice = o_.nice;
  STRATA_ASSIGN_OR_RETURN(SequentialIoResult run, RunSequentialIo(fs_, dir_->fd(), spec));
  r.bytes = run.bytes;
  r.seconds = run.seconds;
  r.cpu_seconds = run.cpu_seconds;
  r.latency_ms = std::move(run.latency_ms);
  return Status::Ok();
}

Status DiskBench::BaselineWrite(PhaseResult& r) { return Baseline(BlockOp::kWrite, r); }
Status DiskBench::BaselineRead(PhaseResult& r) { return Baseline(BlockOp::kRead, r); }

void DiskBench::Cleanup() {
  // A thread that did not drain may still have the kernel write into the
  // slots: they stay mapped.
  if (thread_ && !thread_->Shutdown(DiskThread::kDefaultShutdownDeadline).ok() && pool_) {
    pool_->Leak();
  }
  if (!dir_) return;
  (void)fs_.Unlink(dir_->fd(), kBaselineName);
  if (!o_.keep) {
    for (const RecordHeader& h : written_)
      (void)UnlinkRecord(fs_, dir_->fd(), h.key, Durability::kNone);
  }
  Result<std::vector<std::string>> left = fs_.List(dir_->fd());
  const std::string path = dir_->path();
  const bool empty = left.ok() && left->empty();
  dir_.reset();
  if (empty) {
    Result<int> base = fs_.OpenDirectory(o_.dir, DirectoryMissing::kFail);
    if (base.ok()) {
      (void)fs_.RemoveDirectory(*base, path.substr(path.rfind('/') + 1));
      fs_.Close(*base);
    }
  }
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

// One phase (write or read) over every round: medians of the per-round
// figures, the ratio as the median of per-round ratios (each round measures
// baseline and store back to back, so slow drift of a shared disk cancels).
// `read_pass` is the median ReadPassCpuSecondsPerGb over the rounds.
nlohmann::json PhaseJson(const std::vector<PhaseResult>& store,
                         const std::vector<PhaseResult>& base, double read_pass) {
  std::vector<double> store_gbps, base_gbps, ratio, share, busy, store_cpu, hash_cpu, spin_cpu,
      base_cpu, store_lat, base_lat;
  for (size_t i = 0; i < store.size(); ++i) {
    store_gbps.push_back(store[i].gbps());
    base_gbps.push_back(base[i].gbps());
    ratio.push_back(base[i].gbps() > 0 ? store[i].gbps() / base[i].gbps() : 0);
    share.push_back(store[i].hash_share());
    busy.push_back(store[i].busy_share());
    store_cpu.push_back(store[i].cpu_s_per_gb());
    hash_cpu.push_back(store[i].hash_cpu_s_per_gb());
    spin_cpu.push_back(store[i].spin_cpu_s_per_gb());
    base_cpu.push_back(base[i].cpu_s_per_gb());
    store_lat.insert(store_lat.end(), store[i].latency_ms.begin(), store[i].latency_ms.end());
    base_lat.insert(base_lat.end(), base[i].latency_ms.begin(), base[i].latency_ms.end());
  }
  return {{"store_gbps", Median(store_gbps)},
          {"baseline_gbps", Median(base_gbps)},
          {"ratio", Median(ratio)},
          {"round_ratios", ratio},
          {"store_p50_ms", Percentile(store_lat, 0.5)},
          {"store_p99_ms", Percentile(store_lat, 0.99)},
          {"baseline_p50_ms", Percentile(base_lat, 0.5)},
          {"baseline_p99_ms", Percentile(base_lat, 0.99)},
          {"store_cpu_s_per_gb", Median(store_cpu)},
          {"checksum_cpu_s_per_gb", Median(hash_cpu)},
          {"idle_spin_cpu_s_per_gb", Median(spin_cpu)},
          {"baseline_cpu_s_per_gb", Median(base_cpu)},
          // The least a checksummed path can cost: the plain I/O's CPU plus
          // one read of every byte from memory.
          {"floor_cpu_s_per_gb", Median(base_cpu) + read_pass},
          {"cpu_vs_floor", Median(store_cpu) / (Median(base_cpu) + read_pass)},
          {"checksum_share", Median(share)},
          {"disk_thread_busy_share", Median(busy)}};
}

// Removes the previous round's files so both paths write into free space.
Status DiskBench::RemoveFiles() {
  Status s = fs_.Unlink(dir_->fd(), kBaselineName);
  if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  for (const RecordHeader& h : written_) {
    STRATA_RETURN_IF_ERROR(UnlinkRecord(fs_, dir_->fd(), h.key, Durability::kNone));
  }
  written_.clear();
  return Status::Ok();
}

// Commits the filesystem (journal, and the discards of freed blocks on a
// filesystem mounted with `discard`) before a timed phase, so that neither
// path pays for what the other left behind.
Status DiskBench::Settle() { return fs_.SyncFilesystem(dir_->fd()); }

Status DiskBench::Run(nlohmann::json& out) {
  Status s = Setup();
  std::vector<PhaseResult> bw(o_.rounds), sw(o_.rounds), br(o_.rounds), sr(o_.rounds);
  std::vector<double> read_pass(o_.rounds);
  for (uint32_t round = 0; round < o_.rounds && s.ok(); ++round) {
    if (s.ok()) s = RemoveFiles();
    if (s.ok()) s = Settle();
    if (s.ok()) s = BaselineWrite(bw[round]);
    if (s.ok()) s = Settle();
    if (s.ok()) s = StoreWrite(sw[round]);
    if (s.ok()) s = Settle();
    if (s.ok()) s = BaselineRead(br[round]);
    if (s.ok()) read_pass[round] = ReadPassCpuSecondsPerGb(pool_->memory(), o_.nice);
    if (s.ok()) s = Settle();
    if (s.ok()) s = StoreRead(sr[round]);
  }
  Cleanup();
  STRATA_RETURN_IF_ERROR(s);
  const double pass = Median(read_pass);
  const nlohmann::json write = PhaseJson(sw, bw, pass);
  const nlohmann::json read = PhaseJson(sr, br, pass);
  out = {{"benchmark", "disk"},
         {"dir", o_.dir},
         {"records", o_.records},
         {"rounds", o_.rounds},
         {"record_bytes", extents_.file_bytes_with_row()},
         {"pages", o_.pages},
         {"planes", o_.planes},
         {"plane_bytes", o_.plane_kib * kKiB},
         {"row_bytes", o_.row_kib * kKiB},
         {"request_bytes", o_.request_mib * kMiB},
         {"requests_in_flight", o_.requests},
         {"records_in_flight", o_.depth},
         {"durability", o_.sync ? "fdatasync" : "none"},
         {"nice", o_.nice},
         {"idle_spin_us", o_.idle_spin_us},
         {"write_gbps", write["store_gbps"]},
         {"read_gbps", read["store_gbps"]},
         {"baseline_write_gbps", write["baseline_gbps"]},
         {"baseline_read_gbps", read["baseline_gbps"]},
         {"write_ratio", write["ratio"]},
         {"read_ratio", read["ratio"]},
         {"checksum_share", write["checksum_share"]},
         {"read_checksum_share", read["checksum_share"]},
         {"read_pass_cpu_s_per_gb", pass},
         {"write", write},
         {"read", read}};
  return Status::Ok();
}

}  // namespace

void AddDiskBenchmark(CLI::App& bench) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "disk", "Record write/read throughput through the disk thread vs plain O_DIRECT io_uring");
  cmd->add_option("--dir", o->dir,
                  "Directory on the disk to measure (a record directory is made under it)")
      ->required();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--rounds", o->rounds, "Rounds of baseline and store, alternating")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100u));
  cmd->add_option("--records", o->records, "Records written then read per round")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--pages", o->pages, "Pages per record")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65536u));
  cmd->add_option("--planes", o->planes, "Page planes")
      ->capture_default_str()
      ->check(CLI::Range(1u, 400u));
  cmd->add_option("--plane-kib", o->plane_kib, "KiB per page plane")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{65536}));
  cmd->add_option("--row-kib", o->row_kib, "KiB of the row")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--depth", o->depth, "Records in flight")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  cmd->add_option("--requests", o->requests, "I/O requests in flight (both paths)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  cmd->add_option("--request-mib", o->request_mib, "MiB per I/O request (both paths)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{64}));
  cmd->add_option("--nice", o->nice, "Nice value of the disk thread and the baseline loop")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  cmd->add_option("--idle-spin-us", o->idle_spin_us,
                  "How long the idle disk thread checks for a job before sleeping; the default "
                  "is the production one (100 with 8 or more usable CPUs, else 0)")
      ->capture_default_str()
      ->check(CLI::Range(0u, kIdleSpinMaxUs));
  cmd->add_flag("--keep", o->keep,
                "Leave the last round's records in place (try `strata inspect` on them)");
  cmd->add_flag("--sync", o->sync,
                "fdatasync each record and fsync the directory (baseline: one fdatasync)");
  cmd->callback([o] {
    nlohmann::json result;
    DiskBench bench_run(*o);
    const Status s = bench_run.Run(result);
    PrintBenchResult("disk", s, result, o->json, PrintDiskBenchTable);
  });
}

}  // namespace strata

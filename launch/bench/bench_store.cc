// `strata bench store [--json] [--dir DIR] [--gpu N [--transport staged|direct]]`:
// store and restore throughput of
// the memory, disk and composite stores with host transfers ("device" planes
// in host memory), each next to its baseline measured in the same run:
//
//   memory     copy-out / restore through MemoryStore
//   disk       DiskStore over the staged transport (copy into staging,
//              checksum, write the record; read, verify, copy out), or with
//              --transport direct the one `strata rank` opens for "direct"
//              (store_bench_transport.h; the composite's disk too)
//   composite  publish into memory and restore from it; the shutdown drain
//              writing every record from its slabs; after a restart, restores
//              read through memory from disk
//
// With host planes each baseline is the same work done by hand, one step
// after another (store_bench_hand_work.h): memcpy, plus XXH3 where the store
// checksums, plus plain sequential O_DIRECT I/O of the record files' bytes
// where it writes or reads (kHandSteps). With --gpu the baselines are the
// hardware's limits: pinned contiguous cuMemcpyAsync of the same bytes for
// the memory paths, the O_DIRECT I/O alone for the disk paths.
//
// Before every fetch phase the restore windows are zeroed; after it every
// window it filled is compared with the published bytes, and an untimed
// second pass restores and compares every record.
//
// Rounds alternate baseline and store; medians are reported, and each ratio
// is the median of per-round ratios.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "launch/bench/bench.h"
#include "launch/bench/bench_baseline.h"
#include "launch/bench/gpu_copy_baseline.h"
#include "launch/bench/store_bench_driver.h"
#include "launch/bench/store_bench_hand_work.h"
#include "launch/bench/store_bench_phases.h"
#include "launch/bench/store_bench_report.h"
#include "launch/bench/store_bench_transport.h"
#include "launch/presets.h"
#include "launch/runtime/process_planes.h"
#include "store/base/aligned_buffer.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/tier/memory_store.h"

namespace strata {

namespace {

constexpr std::string_view kBaselineName = ".strata-bench-baseline.tmp";
constexpr uint64_t kBaselineMemoryBytes = 64ull << 20;
// The transfer threads' nice value (ThreadedTransfersOptions::low_priority).
constexpr int kWorkerNice = 10;

struct StoreBenchOptions {
  std::string dir = "/var/tmp";
  bool json = false;
  std::string preset = "qwen-like";
  uint32_t records = 16;
  uint32_t pages = 64;
  uint32_t rounds = 3;
  uint32_t depth = 4;                // restores in flight
  int gpu = -1;                      // CUDA device for the planes; -1: host memory
  std::string transport = "staged";  // the disk transport (BenchTransport)
};

Sample FromDrive(const DriveResult& d, uint64_t bytes) {
  return {bytes, d.seconds, d.cpu_seconds, d.latency_ms};
}
Sample FromIo(const SequentialIoResult& d) {
  return {d.bytes, d.seconds, d.cpu_seconds, d.latency_ms};
}

class StoreBench {
 public:
  explicit StoreBench(const StoreBenchOptions& o) : o_(o) {}
  Status Run(nlohmann::json& out);

 private:
  Status Setup();
  Status Round(uint32_t round);
  Status Memory(uint32_t round);
  Status Disk(uint32_t round);
  Status Composite(uint32_t round);
  // Phase `p`'s baseline: kHandSteps[p] by hand with host planes; with
  // --gpu the PCIe limit (memory phases) or the O_DIRECT I/O alone.
  Result<Sample> Baseline(Phase p);
  Result<Sample> GpuBaseline(Phase p);
  std::string BaselineName(size_t phase) const;
  // A fetch phase: zeroes the windows, restores every record (timed), checks
  // every window filled, then restores and checks each record again, untimed.
  Result<DriveResult> FetchChecked(HostStore& store);
  Result<Sample> DirectIo(BlockOp op);
  Result<std::unique_ptr<LocalDisk>> OpenDisk(uint64_t warm_slots);
  Status RemoveRecords();
  // The composite fans out on store (the direct transport, seed 2.6): its
  // store phase writes every file beside the memory copy, and the drain has
  // nothing left to write.
  bool FanOut() const { return transport_->decision().kind != TransportKind::kStaged; }
  void Record(Phase p, uint32_t round, Sample store, Sample base) {
    store_[p][round] = std::move(store);
    base_[p][round] = std::move(base);
  }

  const StoreBenchOptions& o_;
  CacheGeometry geometry_;
  NamespaceIdentity identity_{};
  LayoutFingerprint fingerprint_{};
  std::unique_ptr<ProcessPlanes> planes_;
  std::vector<BenchRecord> records_;
  uint64_t payload_bytes_ = 0;  // unpadded page and row bytes of every record
  uint64_t file_bytes_ = 0;     // record file bytes of every record
  uint64_t record_slots_ = 0;
  AlignedBuffer io_memory_;
  std::unique_ptr<HandWork> hand_;                 // with host planes
  std::unique_ptr<GpuCopyBaseline> gpu_baseline_;  // with --gpu
  std::string record_dir_;
  std::optional<StoreBenchTransport> transport_;  // what the disk phases run over
  std::vector<std::vector<Sample>> store_, base_;
};

Status StoreBench::Setup() {
  STRATA_ASSIGN_OR_RETURN(
      geometry_, PresetGeometry(o_.preset, 1, uint64_t{o_.pages} * (1 + o_.depth), 1 + o_.depth));
  identity_ = ComputeNamespaceIdentity("strata-bench/store", StateMode::kOrdinary);
  fingerprint_ = ComputeLayoutFingerprint(geometry_);
  record_dir_ = RecordDirPath(o_.dir, identity_, fingerprint_);
  {
    PosixFileSystem fs;
    STRATA_ASSIGN_OR_RETURN(int dir_fd, fs.OpenDirectory(o_.dir, DirectoryMissing::kCreate));
    const Status direct = CheckDirectIo(dir_fd, o_.dir);
    fs.Close(dir_fd);
    STRATA_RETURN_IF_ERROR(direct);
  }
  STRATA_ASSIGN_OR_RETURN(
      planes_,
      ProcessPlanes::Open(geometry_, o_.gpu >= 0 ? std::vector<int>{o_.gpu} : std::vector<int>{}));
  // After the planes, as `strata rank` probes (the CUDA context exists).
  STRATA_ASSIGN_OR_RETURN(BenchTransport requested, ParseBenchTransport(o_.transport));
  STRATA_ASSIGN_OR_RETURN(
      transport_,
      StoreBenchTransport::Choose(
          requested, o_.gpu >= 0 ? PlanesPlacement::kGpu : PlanesPlacement::kHost, record_dir_));
  const RankGeometry& g = geometry_.ranks[0];
  uint64_t x = 0x2545f4914f6cdd1dULL;
  std::vector<uint8_t> unit;
  auto fill = [&](uint64_t n) -> std::span<const uint8_t> {
    unit.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      unit[i] = static_cast<uint8_t>(x);
    }
    return unit;
  };
  DevicePlanes& planes = planes_->planes();
  for (uint32_t plane = 0; plane < g.page_planes.size(); ++plane) {
    for (uint32_t p = 0; p < o_.pages; ++p) {
      STRATA_RETURN_IF_ERROR(
          planes.WritePage(0, plane, PageId(p), fill(g.page_planes[plane].unit_bytes)));
    }
  }
  STRATA_RETURN_IF_ERROR(planes.WriteRow(0, StateSlot(0), fill(g.row.unit_bytes)));
  records_ = MakeBenchRecords(o_.records, o_.pages, geometry_.page_tokens);
  const RecordLayout layout(geometry_);
  payload_bytes_ = uint64_t{o_.records} * (o_.pages * g.page_bytes() + g.row.unit_bytes);
  file_bytes_ = uint64_t{o_.records} * RecordFileBytes(layout, {.tail_pages = o_.pages});
  record_slots_ = o_.pages + RowSlots(layout.row_segment_bytes(), layout.page_record_bytes());
  // memcpy and XXH3 go over buffers the size of the restore windows,
  // wrapping around, so caches hold no more than for the stores.
  const uint64_t window =
      std::min<uint64_t>(payload_bytes_, uint64_t{o_.depth} * payload_bytes_ / o_.records);
  if (o_.gpu < 0) {
    hand_ = std::make_unique<HandWork>(window, layout.page_record_bytes(), kWorkerNice);
  } else {
    STRATA_ASSIGN_OR_RETURN(
        gpu_baseline_,
        GpuCopyBaseline::Open(o_.gpu, std::min<uint64_t>(payload_bytes_, 256ull << 20)));
  }
  io_memory_ = AlignedBuffer(kBaselineMemoryBytes);
  std::memset(io_memory_.data(), 7, io_memory_.size());
  store_.assign(kPhases, std::vector<Sample>(o_.rounds));
  base_.assign(kPhases, std::vector<Sample>(o_.rounds));
  return Status::Ok();
}

Result<Sample> StoreBench::Baseline(Phase p) {
  if (gpu_baseline_ != nullptr) return GpuBaseline(p);
  std::vector<Sample> parts;
  for (HandStep step : kHandSteps[p]) {
    switch (step) {
      case HandStep::kMemcpy: parts.push_back(hand_->Memcpy(payload_bytes_)); break;
      case HandStep::kXxh3: parts.push_back(hand_->Xxh3(payload_bytes_)); break;
      case HandStep::kDirectWrite:
      case HandStep::kDirectRead: {
        STRATA_ASSIGN_OR_RETURN(
            Sample io, DirectIo(step == HandStep::kDirectWrite ? BlockOp::kWrite : BlockOp::kRead));
        parts.push_back(std::move(io));
        break;
      }
    }
  }
  return Serial(IsDiskPhase(p) ? file_bytes_ : payload_bytes_, parts);
}

Result<Sample> StoreBench::GpuBaseline(Phase p) {
  switch (p) {
    case kDiskStore:
    case kCompositeDrain: return DirectIo(BlockOp::kWrite);
    case kDiskFetch:
    case kCompositeDiskFetch: return DirectIo(BlockOp::kRead);
    default: break;
  }
  const TransferDirection direction = p == kMemoryStore || p == kCompositeStore
                                          ? TransferDirection::kDeviceToHost
                                          : TransferDirection::kHostToDevice;
  const double cpu_before = ProcessCpuSeconds();
  STRATA_ASSIGN_OR_RETURN(double seconds, gpu_baseline_->Copy(direction, payload_bytes_));
  return Sample{payload_bytes_, seconds, ProcessCpuSeconds() - cpu_before, {}};
}

std::string StoreBench::BaselineName(size_t phase) const {
  if (gpu_baseline_ == nullptr) return HandWorkName(kHandSteps[phase]);
  switch (phase) {
    case kCompositeStore: return FanOut() ? "O_DIRECT write (fan-out)" : "pinned D2H";
    case kMemoryStore: return "pinned D2H";
    case kMemoryFetch:
    case kCompositeFetch: return "pinned H2D";
    case kDiskStore:
    case kCompositeDrain: return "O_DIRECT write";
    default: return "O_DIRECT read";
  }
}

Result<DriveResult> StoreBench::FetchChecked(HostStore& store) {
  DevicePlanes& planes = planes_->planes();
  for (uint32_t w = 0; w < o_.depth; ++w) STRATA_RETURN_IF_ERROR(ClearWindow(planes, o_.pages, w));
  STRATA_ASSIGN_OR_RETURN(DriveResult timed, FetchAll(store, records_, o_.depth));
  for (uint32_t w = 0; w < std::min(o_.depth, o_.records); ++w) {
    STRATA_RETURN_IF_ERROR(CheckRestored(planes, o_.pages, w).WithContext("timed restores"));
    STRATA_RETURN_IF_ERROR(ClearWindow(planes, o_.pages, w));
  }
  // Each record alone: a window is checked, then zeroed, before its reuse.
  auto check = [&](uint32_t w) -> Status {
    STRATA_RETURN_IF_ERROR(CheckRestored(planes, o_.pages, w).WithContext("restore check"));
    return ClearWindow(planes, o_.pages, w);
  };
  STRATA_RETURN_IF_ERROR(FetchAll(store, records_, o_.depth, check).status());
  return timed;
}

Result<std::unique_ptr<LocalDisk>> StoreBench::OpenDisk(uint64_t warm_slots) {
  LocalDiskOptions d;
  d.base_dir = o_.dir;
  d.warm_slots = warm_slots;
  d.registrar = planes_->registrar();
  return LocalDisk::Open(geometry_, identity_, fingerprint_, d);
}

Result<Sample> StoreBench::DirectIo(BlockOp op) {
  PosixFileSystem fs;
  // In --dir itself: a record directory's scan would remove a foreign file.
  STRATA_ASSIGN_OR_RETURN(int dir_fd, fs.OpenDirectory(o_.dir, DirectoryMissing::kCreate));
  if (op == BlockOp::kWrite) (void)fs.Unlink(dir_fd, kBaselineName);
  ::syncfs(dir_fd);  // neither path pays for what the other left behind
  // The disk thread's request size and requests in flight.
  SequentialIoSpec spec;
  spec.op = op;
  spec.name = std::string(kBaselineName);
  spec.total_bytes = file_bytes_;
  spec.requests = DiskThreadOptions{}.max_inflight_requests;
  spec.request_bytes = DiskThreadOptions{}.max_request_bytes;
  spec.memory = io_memory_.span();
  spec.nice = DiskThreadOptions{}.nice;
  Result<SequentialIoResult> r = RunSequentialIo(fs, dir_fd, spec);
  if (op == BlockOp::kRead) (void)fs.Unlink(dir_fd, kBaselineName);
  ::syncfs(dir_fd);
  fs.Close(dir_fd);
  if (!r.ok()) return r.status();
  return FromIo(*r);
}

Status StoreBench::RemoveRecords() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(record_dir_, ec)) {
    if (e.path().extension() == ".ckpt") std::filesystem::remove(e.path(), ec);
  }
  return Status::Ok();
}

Status StoreBench::Memory(uint32_t round) {
  const RecordLayout layout(geometry_);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> p,
                          SlabPool::Create(layout.page_record_bytes(), record_slots_ * o_.records,
                                           0, planes_->registrar()));
  std::shared_ptr<SlabPool> pool = std::move(p);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> transfers, planes_->MakeTransfers());
  MemoryStore store(geometry_, pool, std::move(transfers));
  STRATA_ASSIGN_OR_RETURN(const Sample copy_in, Baseline(kMemoryStore));
  STRATA_ASSIGN_OR_RETURN(DriveResult stored, StoreAll(store, records_));
  Record(kMemoryStore, round, FromDrive(stored, payload_bytes_), copy_in);
  STRATA_ASSIGN_OR_RETURN(const Sample copy_out, Baseline(kMemoryFetch));
  STRATA_ASSIGN_OR_RETURN(DriveResult fetched, FetchChecked(store));
  Record(kMemoryFetch, round, FromDrive(fetched, payload_bytes_), copy_out);
  return store.Close();
}

Status StoreBench::Disk(uint32_t round) {
  STRATA_RETURN_IF_ERROR(RemoveRecords());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalDisk> disk, OpenDisk(0));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> transfers, planes_->MakeTransfers());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskTransport> transport,
                          transport_->Open(*disk, planes_->planes(), std::move(transfers)));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskStore> store,
                          DiskStore::Open(geometry_, std::move(transport), disk->scan().records,
                                          {.disk_limit_bytes = 4 * file_bytes_}));
  STRATA_ASSIGN_OR_RETURN(Sample write, Baseline(kDiskStore));
  STRATA_ASSIGN_OR_RETURN(DriveResult stored, StoreAll(*store, records_));
  Record(kDiskStore, round, FromDrive(stored, file_bytes_), write);
  ::syncfs(disk->dir().fd());
  STRATA_ASSIGN_OR_RETURN(Sample read, Baseline(kDiskFetch));
  STRATA_ASSIGN_OR_RETURN(DriveResult fetched, FetchChecked(*store));
  Record(kDiskFetch, round, FromDrive(fetched, file_bytes_), read);
  return store->Close();
}

Status StoreBench::Composite(uint32_t round) {
  STRATA_RETURN_IF_ERROR(RemoveRecords());
  CompositeStoreOptions co;
  co.disk_limit_bytes = 4 * file_bytes_;
  co.drain.mode = ShutdownDrain::Mode::kUntilDone;
  co.close_deadline = std::chrono::minutes(5);
  co.direct = FanOut();
  Sample write;
  for (int life = 0; life < 2; ++life) {
    // Warm retention for every record, and twice the intake free besides:
    // nothing is written ahead of need.
    const RecordLayout layout(geometry_);
    const IntakePlan intake =
        PlanIntake(LocalDiskOptions{}.max_active,
                   RowSlots(layout.row_segment_bytes(), layout.page_record_bytes()),
                   layout.page_record_bytes(), LocalDiskOptions{}.host_headroom_bytes);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<LocalDisk> disk,
                            OpenDisk(record_slots_ * o_.records + 2 * intake.slots));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> staged, planes_->MakeTransfers());
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskTransport> transport,
                            transport_->Open(*disk, planes_->planes(), std::move(staged)));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> memory, planes_->MakeTransfers());
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CompositeStore> store,
                            CompositeStore::Open(geometry_, disk->pool(), std::move(memory),
                                                 std::move(transport), disk->scan().records, co));
    if (life == 0) {
      // With the fan-out the store is bound by its file writes: against the
      // O_DIRECT write of the same file bytes.
      STRATA_ASSIGN_OR_RETURN(const Sample copy_in,
                              Baseline(FanOut() ? kCompositeDrain : kCompositeStore));
      STRATA_ASSIGN_OR_RETURN(DriveResult stored, StoreAll(*store, records_));
      Record(kCompositeStore, round, FromDrive(stored, FanOut() ? file_bytes_ : payload_bytes_),
             copy_in);
      STRATA_ASSIGN_OR_RETURN(const Sample copy_out, Baseline(kCompositeFetch));
      STRATA_ASSIGN_OR_RETURN(DriveResult fetched, FetchChecked(*store));
      Record(kCompositeFetch, round, FromDrive(fetched, payload_bytes_), copy_out);
      if (!FanOut()) {
        STRATA_ASSIGN_OR_RETURN(write, Baseline(kCompositeDrain));
      }
      const double cpu_before = ProcessCpuSeconds();
      const auto start = std::chrono::steady_clock::now();
      STRATA_RETURN_IF_ERROR(store->Close());  // the drain writes every record
      Sample drain;
      drain.bytes = file_bytes_;
      drain.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      drain.cpu_seconds = ProcessCpuSeconds() - cpu_before;
      if (store->Stats().disk.stored_total != o_.records) {
        return Status::Internal("the store and its drain wrote " +
                                std::to_string(store->Stats().disk.stored_total) + " of " +
                                std::to_string(o_.records) + " records");
      }
      if (!FanOut()) Record(kCompositeDrain, round, drain, write);
    } else {
      STRATA_ASSIGN_OR_RETURN(Sample read, Baseline(kCompositeDiskFetch));
      STRATA_ASSIGN_OR_RETURN(DriveResult fetched, FetchChecked(*store));
      Record(kCompositeDiskFetch, round, FromDrive(fetched, file_bytes_), read);
      co.drain.mode = ShutdownDrain::Mode::kOff;
      STRATA_RETURN_IF_ERROR(store->Close());
    }
    co.drain.mode = ShutdownDrain::Mode::kOff;
  }
  return RemoveRecords();
}

Status StoreBench::Round(uint32_t round) {
  STRATA_RETURN_IF_ERROR(Memory(round));
  STRATA_RETURN_IF_ERROR(Disk(round));
  return Composite(round);
}

Status StoreBench::Run(nlohmann::json& out) {
  STRATA_RETURN_IF_ERROR(Setup());
  Status s;
  for (uint32_t round = 0; round < o_.rounds && s.ok(); ++round) s = Round(round);
  std::error_code ec;
  std::filesystem::remove_all(record_dir_, ec);  // the bench's own namespace directory
  STRATA_RETURN_IF_ERROR(s);
  out = {{"benchmark", "store"},
         {"dir", o_.dir},
         {"preset", o_.preset},
         {"planes", planes_->Describe()},
         {"records", o_.records},
         {"pages", o_.pages},
         {"rounds", o_.rounds},
         {"restores_in_flight", o_.depth},
         {"payload_bytes", payload_bytes_},
         {"file_bytes", file_bytes_},
         {"baseline_work",
          gpu_baseline_ == nullptr
              ? "by hand: the store's own work (memcpy, XXH3 where it checksums, O_DIRECT I/O "
                "where it writes or reads), one step after another on worker-like threads"
              : "hardware limits: pinned contiguous copies over PCIe (memory paths), plain "
                "O_DIRECT I/O alone (disk paths)"},
         {"byte_check",
          "restore windows zeroed before every fetch phase; every window it filled, then every "
          "record restored alone (untimed), compared with the published bytes"}};
  transport_->Describe(out);
  for (size_t p = 0; p < kPhases; ++p) {
    if (p == kCompositeDrain && FanOut()) {
      out[kPhaseNames[p]] = {{"skipped", "the fan-out on store wrote every record's file"}};
      out[std::string(kPhaseNames[p]) + "_ratio"] = nullptr;
      continue;
    }
    nlohmann::json j = StorePhaseJson(store_[p], base_[p]);
    j["baseline"] = BaselineName(p);
    out[kPhaseNames[p]] = j;
    out[std::string(kPhaseNames[p]) + "_ratio"] = j["ratio"];
  }
  return Status::Ok();
}

}  // namespace

void AddStoreBenchmark(CLI::App& bench) {
  auto o = std::make_shared<StoreBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "store",
      "Memory, disk and composite store throughput vs the same work by hand (memcpy, XXH3, "
      "plain O_DIRECT I/O)");
  cmd->add_option(
         "--dir", o->dir,
         "Directory on the disk to measure (a record directory is made and removed under it)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--preset", o->preset, "Geometry preset (strata layout --list)")
      ->capture_default_str();
  cmd->add_option("--records", o->records, "Records per phase")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--pages", o->pages, "Pages per record")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--rounds", o->rounds, "Rounds of baseline and store")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100u));
  cmd->add_option("--depth", o->depth, "Restores in flight")
      ->capture_default_str()
      ->check(CLI::Range(1u, 16u));
  cmd->add_option("--gpu", o->gpu,
                  "CUDA device whose memory holds the planes (CudaTransfers under every store, "
                  "registered slabs); -1: host memory")
      ->capture_default_str();
  cmd->add_option("--transport", o->transport,
                  "Disk transport of the disk and composite stores: staged, or direct (with "
                  "--gpu; as `strata rank` with transport = \"direct\": fails with the "
                  "GPUDirect probe's reason where it refuses; reported as direct-compat under "
                  "STRATA_TEST_CUFILE_COMPAT=1)")
      ->capture_default_str()
      ->check(CLI::IsMember({"staged", "direct"}));
  cmd->callback([o] {
    nlohmann::json result;
    StoreBench run(*o);
    const Status s = run.Run(result);
    PrintBenchResult("store", s, result, o->json,
                     [](const nlohmann::json& j) { PrintStoreTable(j, kPhaseNames); });
  });
}

}  // namespace strata

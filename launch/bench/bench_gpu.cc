// `strata bench gpu`: copy-out and restore GB/s through CudaTransfers with the
// slab pool registered, for a large-unit geometry (deepseek-like: 288 KiB
// planes) and small-unit ones (qwen-like 16 KiB, small-planes 4 KiB), for
// every copy method and two page-id patterns, next to one pinned contiguous
// cuMemcpyAsync of the same bytes measured in the same run (the PCIe limit).
// Pages only: the state row is one large contiguous piece per rank and never
// the limit.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "launch/bench/batch_order_probe.h"
#include "launch/bench/bench.h"
#include "launch/bench/bench_prefill.h"
#include "launch/bench/gpu_bench_report.h"
#include "launch/bench/gpu_jobs.h"
#include "launch/bench/staged_cli.h"
#include "launch/bench/staged_path_probe.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "store/transfer/slab_pool.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kLatencyWindows = 32;
constexpr uint64_t kIdSeed = 20261129;

struct GpuBenchOptions {
  bool json = false;
  int device = 0;
  double gib = 1.0;  // bytes per measurement
  int repetitions = 5;
  std::string driver = kCudaDriverLibrary;
  std::vector<std::string> presets = {"deepseek-like", "qwen-like", "small-planes"};
  std::vector<std::string> methods = {"batched", "strided", "kernel", "staged"};
  std::vector<uint32_t> in_flight = {1, 2, 3};
  StagedCli staged;
  bool staged_probe = false;
};

// SMs the copy kernel of `method` may hold at once for `rank`'s planes (0:
// copy engines only, as for staged copies whose every unit goes direct).
uint32_t CopySms(CopyMethod method, const CudaTransfersOptions& o, int device_sms,
                 const RankGeometry& rank) {
  const uint64_t direct = o.staged.direct_piece_bytes;
  const bool all_direct =
      direct != 0 && std::ranges::all_of(rank.page_planes, [&](const PlaneSpec& p) {
        return p.unit_bytes >= direct;
      });
  switch (method) {
    case CopyMethod::kKernel: return std::min<uint32_t>(o.kernel_blocks, device_sms);
    case CopyMethod::kStaged: return all_direct ? 0 : o.staged.blocks;
    case CopyMethod::kBatched:
    case CopyMethod::kStrided: return 0;
  }
  return 0;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

// One window at a time: submit-to-completion milliseconds of each.
Result<std::vector<double>> WindowLatencies(Transfers& t, std::vector<TransferJob> jobs,
                                            uint64_t& next_id) {
  std::vector<double> ms;
  for (size_t i = 0; i < jobs.size() && i < kLatencyWindows; ++i) {
    std::vector<TransferJob> one = {jobs[i]};
    STRATA_ASSIGN_OR_RETURN(double s, RunJobs(t, one, next_id));
    ms.push_back(s * 1e3);
  }
  return ms;
}

struct Direction {
  double gbps = 0;
  double cpu_s_per_gb = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

Result<Direction> Measure(Transfers& t, std::vector<TransferJob> jobs, uint64_t bytes,
                          int repetitions, uint64_t& next_id) {
  STRATA_RETURN_IF_ERROR(RunJobs(t, jobs, next_id).status());  // warm-up
  std::vector<double> rates;
  std::vector<double> cpu;
  for (int r = 0; r < repetitions; ++r) {
    const double cpu0 = CpuSeconds();
    STRATA_ASSIGN_OR_RETURN(double s, RunJobs(t, jobs, next_id));
    rates.push_back(static_cast<double>(bytes) / s / 1e9);
    cpu.push_back((CpuSeconds() - cpu0) / (static_cast<double>(bytes) / 1e9));
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<double> ms, WindowLatencies(t, jobs, next_id));
  return Direction{Median(rates), Median(cpu), Percentile(ms, 50), Percentile(ms, 99)};
}

// One cuMemcpyAsync of `bytes` between `device` and pinned `host`, timed
// from issue to the event's completion.
Result<double> MeasureContiguous(const CudaDriver& d, const PrimaryContext& ctx,
                                 TransferDirection dir, uint64_t device, void* host, uint64_t bytes,
                                 int repetitions) {
  ContextGuard guard(d, ctx.get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(CudaStream stream, d.CreateLowestPriorityStream());
  Result<CudaEvent> event = d.CreateBlockingEvent();
  std::vector<double> rates;
  Status s = event.status();
  for (int r = 0; s.ok() && r <= repetitions; ++r) {  // r == 0 warms up
    const auto start = Clock::now();
    s = d.CopyAsync(dir, device, host, bytes, stream);
    if (s.ok()) s = d.RecordEvent(*event, stream);
    if (s.ok()) s = d.SynchronizeEvent(*event);
    if (r > 0) rates.push_back(static_cast<double>(bytes) / Seconds(start, Clock::now()) / 1e9);
  }
  if (event.ok()) (void)d.DestroyEvent(*event);
  (void)d.DestroyStream(stream);
  STRATA_RETURN_IF_ERROR(s);
  return Median(rates);
}

// Every (method, batches in flight) pair to measure.
std::vector<std::pair<std::string, uint32_t>> Configs(const GpuBenchOptions& o) {
  std::vector<std::pair<std::string, uint32_t>> out;
  for (const std::string& m : o.methods) {
    for (uint32_t n : o.in_flight) out.emplace_back(m, n);
  }
  return out;
}

// Every configuration and id pattern of one preset.
Status BenchPreset(const std::shared_ptr<const CudaDriver>& driver, const PrimaryContext& ctx,
                   CudaHostRegistrar& registrar, const GpuBenchOptions& o,
                   const std::string& preset, GpuBenchRun& run) {
  std::vector<GpuBenchCase>& out = run.cases;
  STRATA_ASSIGN_OR_RETURN(CacheGeometry probe, PresetGeometry(preset, 1, 1, 1));
  const uint64_t page_bytes = probe.ranks[0].page_bytes();
  const auto target = static_cast<uint64_t>(o.gib * static_cast<double>(1ull << 30));
  const uint64_t pages = std::max<uint64_t>(1, (target / page_bytes + 63) / 64) * 64;
  const uint64_t bytes = pages * page_bytes;
  STRATA_ASSIGN_OR_RETURN(CacheGeometry g, PresetGeometry(preset, 1, pages, 1));
  STRATA_ASSIGN_OR_RETURN(auto planes, CudaPlanes::Create(driver, g, {o.device}));
  STRATA_RETURN_IF_ERROR(planes->Fill(0x5a));
  RecordLayout layout(g);
  STRATA_ASSIGN_OR_RETURN(auto pool,
                          SlabPool::Create(layout.page_record_bytes(), pages, 0, &registrar));
  std::vector<SlotId> slots;
  if (!pool->Allocate(pages, 0, slots)) return Status::Internal("slab pool too small");
  std::vector<uint8_t*> records;
  records.reserve(slots.size());
  for (SlotId s : slots) records.push_back(pool->address(s));

  // Baseline: the same bytes, one contiguous copy, pinned host memory (the pool).
  double base_d2h = 0;
  double base_h2d = 0;
  {
    const CudaDriver& d = *driver;
    uint64_t device = 0;
    {
      ContextGuard guard(d, ctx.get());
      STRATA_RETURN_IF_ERROR(guard.status());
      STRATA_ASSIGN_OR_RETURN(device, d.MemAlloc(bytes));
    }
    Result<double> d2h = MeasureContiguous(d, ctx, TransferDirection::kDeviceToHost, device,
                                           records[0], bytes, o.repetitions);
    Result<double> h2d = MeasureContiguous(d, ctx, TransferDirection::kHostToDevice, device,
                                           records[0], bytes, o.repetitions);
    ContextGuard guard(d, ctx.get());
    (void)d.MemFree(device);
    STRATA_RETURN_IF_ERROR(d2h.status());
    STRATA_RETURN_IF_ERROR(h2d.status());
    base_d2h = *d2h;
    base_h2d = *h2d;
  }

  STRATA_ASSIGN_OR_RETURN(
      int device_sms, driver->DeviceAttribute(o.device, CudaDeviceAttribute::kMultiprocessorCount));
  std::vector<PageId> sequential(pages);
  for (uint64_t i = 0; i < pages; ++i) sequential[i] = PageId(static_cast<uint32_t>(i));
  std::vector<PageId> scattered = sequential;
  std::shuffle(scattered.begin(), scattered.end(), std::mt19937_64(kIdSeed));
  if (ClassifyUnits(g.ranks[0]) == UnitClass::kSmall) {
    std::vector<uint64_t> offsets;
    for (uint32_t p = 0; p < g.ranks[0].page_planes.size(); ++p) {
      offsets.push_back(layout.plane_offset(0, p));
    }
    Result<nlohmann::json> probe = ProbeBatchOrder(*driver, ctx, o.device, g, planes->planes(0),
                                                   offsets, scattered, records, o.repetitions);
    run.batch_order_probes[preset] =
        probe.ok() ? *probe : nlohmann::json{{"error", probe.status().ToString()}};
  }
  if (o.staged_probe) {
    std::vector<uint64_t> offsets;
    for (uint32_t p = 0; p < g.ranks[0].page_planes.size(); ++p) {
      offsets.push_back(layout.plane_offset(0, p));
    }
    const RankPlanes rank_planes = planes->planes(0);
    StagedProbeInput in;
    in.driver = driver;
    in.context = &ctx;
    in.ordinal = o.device;
    in.rank = &g.ranks[0];
    in.planes = &rank_planes;
    in.record_plane_offsets = &offsets;
    in.ids = &scattered;
    in.records = &records;
    in.staged = ToStagedOptions(o.staged);
    in.repetitions = o.repetitions;
    Result<nlohmann::json> probe = ProbeStagedPath(in);
    run.staged_probes[preset] =
        probe.ok() ? *probe : nlohmann::json{{"error", probe.status().ToString()}};
  }
  uint64_t next_id = 1;
  for (const auto& [method_name, in_flight] : Configs(o)) {
    STRATA_ASSIGN_OR_RETURN(CopyMethod method, ParseCopyMethod(method_name));
    CudaTransfersOptions options;
    options.method = method;
    options.batches_in_flight = in_flight;
    options.staged = ToStagedOptions(o.staged);
    Result<std::unique_ptr<Transfers>> t = MakeCudaTransfers(*planes, options);
    for (const auto& [ids_name, ids] :
         {std::pair{"sequential", &sequential}, std::pair{"scattered", &scattered}}) {
      GpuBenchCase c;
      c.preset = preset;
      c.unit_class = ClassifyUnits(g.ranks[0]);
      c.method = method_name;
      c.in_flight = in_flight;
      c.ids = ids_name;
      c.pages = pages;
      c.bytes = bytes;
      c.baseline_d2h_gbps = base_d2h;
      c.baseline_h2d_gbps = base_h2d;
      c.copy_sms = CopySms(method, options, device_sms, g.ranks[0]);
      Result<Direction> co =
          t.ok() ? Measure(**t, Windows(TransferDirection::kDeviceToHost, *ids, records), bytes,
                           o.repetitions, next_id)
                 : Result<Direction>(t.status());
      Result<Direction> re =
          co.ok() ? Measure(**t, Windows(TransferDirection::kHostToDevice, *ids, records), bytes,
                            o.repetitions, next_id)
                  : Result<Direction>(co.status());
      if (!re.ok()) {
        c.error = re.status().ToString();
      } else {
        c.copy_out_gbps = co->gbps;
        c.copy_out_cpu_s_per_gb = co->cpu_s_per_gb;
        c.copy_out_window_ms_p50 = co->p50_ms;
        c.copy_out_window_ms_p99 = co->p99_ms;
        c.restore_gbps = re->gbps;
        c.restore_cpu_s_per_gb = re->cpu_s_per_gb;
        c.restore_window_ms_p50 = re->p50_ms;
        c.restore_window_ms_p99 = re->p99_ms;
      }
      out.push_back(std::move(c));
      if (!o.json) {
        std::fprintf(stderr, "  %s %s %s done\n", preset.c_str(), out.back().config().c_str(),
                     ids_name);
      }
    }
    if (t.ok()) STRATA_RETURN_IF_ERROR((*t)->Close(std::chrono::seconds(60)));
  }
  return Status::Ok();
}

int RunGpuBench(const GpuBenchOptions& o) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "strata bench gpu: %s\n", s.message().c_str());
    return 1;
  };
  Result<std::shared_ptr<const CudaDriver>> driver = CudaDriver::Load(o.driver);
  if (!driver.ok()) return fail(driver.status());
  Result<int> count = (*driver)->DeviceCount();
  if (!count.ok()) return fail(count.status());
  if (o.device < 0 || o.device >= *count) {
    return fail(Status::InvalidArgument("no CUDA device " + std::to_string(o.device) + " (" +
                                        std::to_string(*count) + " present)"));
  }
  for (const std::string& m : o.methods) {
    if (Result<CopyMethod> p = ParseCopyMethod(m); !p.ok()) return fail(p.status());
  }
  auto ctx = PrimaryContext::Retain(*driver, o.device);
  if (!ctx.ok()) return fail(ctx.status());
  auto registrar = CudaHostRegistrar::Create(*driver, o.device);
  if (!registrar.ok()) return fail(registrar.status());
  GpuBenchRun run;
  run.device = o.device;
  run.device_name = (*driver)->DeviceName(o.device).ok() ? *(*driver)->DeviceName(o.device) : "?";
  run.driver_version = (*driver)->version();
  run.repetitions = o.repetitions;
  run.staged = StagedJson(o.staged);
  run.default_config = std::string(CopyMethodName(DefaultCopyMethod())) + "_x" +
                       std::to_string(CudaTransfersOptions{}.batches_in_flight);
  for (const std::string& preset : o.presets) {
    Status s = BenchPreset(*driver, **ctx, **registrar, o, preset, run);
    if (!s.ok()) return fail(s.WithContext(preset));
  }
  if (o.json) {
    std::printf("%s\n", GpuBenchJson(run).dump(2).c_str());
  } else {
    std::printf("%s", GpuBenchTable(run).c_str());
  }
  // The report names each failed case; a run with one is a failed run.
  if (const size_t failed = FailedCases(run.cases); failed > 0) {
    return fail(Status::Internal(std::to_string(failed) + " of " +
                                 std::to_string(run.cases.size()) + " cases failed"));
  }
  return 0;
}

}  // namespace

void AddGpuBench(CLI::App& bench) {
  auto o = std::make_shared<GpuBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "gpu",
      "Copy-out and restore GB/s through CudaTransfers (registered slabs) for large- and "
      "small-unit geometries, beside a pinned contiguous cuMemcpyAsync of the same bytes");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--device", o->device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--gib", o->gib, "GiB moved per measurement and direction")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 64.0));
  cmd->add_option("--repetitions", o->repetitions, "Repetitions per measurement (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--preset", o->presets, "Geometry presets (repeatable)")->capture_default_str();
  AddStagedCli(*cmd, o->staged);
  cmd->add_flag("--staged-probe", o->staged_probe,
                "Also time the staged path's DMAs and kernel apart, per preset");
  cmd->add_option("--method", o->methods,
                  "Copy methods: batched, strided, kernel, staged (repeatable)")
      ->capture_default_str();
  cmd->add_option("--in-flight", o->in_flight, "Batches in flight per rank: 1 to 3 (repeatable)")
      ->capture_default_str()
      ->check(CLI::Range(1u, kMaxBatchesInFlight));
  cmd->add_option("--driver", o->driver, "CUDA driver library to load")->capture_default_str();
  cmd->callback([o] {
    int rc = RunGpuBench(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
  AddPrefillBench(bench);
}

}  // namespace strata

// `strata bench interference`: the seed's isolation measurement (section 4),
// synthetic form. Two stand-ins for the model run on a stream of their own:
//
//   compute  prefill-like: one llama70b-tp8 rank's layer GEMMs (QKV, output,
//            gate/up, down) over --compute-tokens tokens, bf16 cuBLAS;
//   memory   decode-like: the same GEMMs over --memory-tokens tokens, which
//            stream the layer's 214 MB of weights (four buffers, more than
//            the L2) from HBM, so they are bandwidth-bound.
//
// Each stand-in runs alone, then while copy-out and restore of --preset
// pages run back to back at full rate through the default transfers (the
// offload path), then while plain contiguous pinned copies run at full rate
// (the same bus without the offload path), then alone again. Reported per
// stand-in: its rate alone (the mean of the two alone runs) and under each
// load, its slowdown, and the copies' GB/s under that load; and the offload
// copies' GB/s over the plain copies' GB/s under the same stand-in.
//
// With --model-sm-margin N (default: the copy kernel's SMs), each stand-in
// then runs again with its GEMMs sized for all SMs but N
// (cublasSetSmCountTarget), alone and beside offload: what a runtime that
// leaves the copy kernel its SMs gets. Its slowdowns are against the
// stand-in alone on every SM, so the SMs given up are counted.
//
// cuBLAS is loaded at run time; without it the benchmark says so and
// measures nothing (exit 0, "skipped" in the JSON).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "cuda/cublas_gemm.h"
#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "launch/bench/bench.h"
#include "launch/bench/dense_model.h"
#include "launch/bench/gpu_copy_baseline.h"
#include "launch/bench/gpu_jobs.h"
#include "launch/bench/gpu_pages.h"
#include "launch/bench/staged_cli.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "store/transfer/slab_pool.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

struct InterferenceOptions {
  bool json = false;
  int device = 0;
  std::string preset = "small-planes";
  uint32_t pages = 1024;
  double seconds = 2.0;  // each stand-in measurement
  int compute_tokens = 4096;
  int memory_tokens = 16;
  std::string cublas;
  std::string driver = kCudaDriverLibrary;
  StagedCli staged;
  // SMs the model leaves to the copy kernel through cublasSetSmCountTarget in
  // the second set of measurements (0: none, one set only).
  int model_sm_margin = static_cast<int>(StagedCopierOptions{}.blocks);
  // A bound on the offload's copies, GB/s each way per GPU
  // (ThreadedTransfersOptions::copy_out_bytes_per_s, restore_bytes_per_s);
  // 0: full rate. The plain DMA beside it stays at full rate.
  double pace_gbps = 0;
};

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A stand-in: one layer's GEMMs over `tokens` tokens, repeated.
class StandIn {
 public:
  StandIn(const CudaDriver& d, CublasGemm& blas, CudaStream stream, std::vector<Gemm> gemms,
          std::vector<uint64_t> weights, uint64_t x, uint64_t y)
      : d_(d),
        blas_(blas),
        stream_(stream),
        gemms_(std::move(gemms)),
        weights_(std::move(weights)),
        x_(x),
        y_(y) {}

  // Layers per second over `seconds` of back-to-back layers.
  Result<double> Rate(int tokens, double seconds) {
    STRATA_RETURN_IF_ERROR(blas_.SetStream(stream_));
    uint64_t layers = 0;
    const auto start = Clock::now();
    while (Since(start) < seconds) {
      for (int burst = 0; burst < 8; ++burst, ++layers) {
        for (size_t g = 0; g < gemms_.size(); ++g) {
          STRATA_RETURN_IF_ERROR(blas_.GemmBf16(weights_[g], x_, y_, static_cast<int>(gemms_[g].n),
                                                tokens, static_cast<int>(gemms_[g].k)));
        }
      }
      STRATA_RETURN_IF_ERROR(d_.SynchronizeStream(stream_));
    }
    return static_cast<double>(layers) / Since(start);
  }

 private:
  const CudaDriver& d_;
  CublasGemm& blas_;
  CudaStream stream_;
  std::vector<Gemm> gemms_;
  std::vector<uint64_t> weights_;
  uint64_t x_, y_;
};

// A load on the bus, run on a thread of its own until stopped: returns the
// GB/s it moved while it ran.
class Load {
 public:
  explicit Load(std::function<Result<uint64_t>()> round) : round_(std::move(round)) {
    thread_ = std::thread([this] {
      const auto start = Clock::now();
      while (!stop_.load()) {
        Result<uint64_t> moved = round_();
        if (!moved.ok()) {
          status_ = moved.status();
          break;
        }
        bytes_ += *moved;
      }
      seconds_ = Since(start);
    });
  }
  Result<double> Stop() {
    stop_.store(true);
    thread_.join();
    STRATA_RETURN_IF_ERROR(status_);
    return static_cast<double>(bytes_) / seconds_ / 1e9;
  }

 private:
  std::function<Result<uint64_t>()> round_;
  std::atomic<bool> stop_{false};
  Status status_;
  uint64_t bytes_ = 0;
  double seconds_ = 0;
  std::thread thread_;
};

// Copy-out and restore jobs of every page, back to back.
struct Copies {
  std::unique_ptr<GpuPages> pages;
  std::vector<TransferJob> out, in;
  uint64_t bytes = 0;  // one direction
  uint64_t next_id = 1;
};

Result<std::unique_ptr<Copies>> OpenCopies(const std::shared_ptr<const CudaDriver>& driver,
                                           const InterferenceOptions& o) {
  auto c = std::make_unique<Copies>();
  CudaTransfersOptions transfers;
  transfers.staged = ToStagedOptions(o.staged);
  const auto pace = static_cast<uint64_t>(o.pace_gbps * 1e9);
  transfers.threads.copy_out_bytes_per_s = pace;
  transfers.threads.restore_bytes_per_s = pace;
  STRATA_ASSIGN_OR_RETURN(c->pages, OpenGpuPages(driver, o.preset, o.pages, o.device, transfers));
  c->out = Windows(TransferDirection::kDeviceToHost, c->pages->ids, c->pages->records);
  c->in = Windows(TransferDirection::kHostToDevice, c->pages->ids, c->pages->records);
  c->bytes = uint64_t{o.pages} * c->pages->geometry.ranks[0].page_bytes();
  return c;
}

struct Measured {
  double rate = 0;
  double copy_gbps = 0;
};

// The stand-in's rate while `load` runs (after a 200 ms ramp).
Result<Measured> UnderLoad(StandIn& s, int tokens, double seconds,
                           std::function<Result<uint64_t>()> round) {
  Load load(std::move(round));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Result<double> rate = s.Rate(tokens, seconds);
  Result<double> gbps = load.Stop();
  STRATA_RETURN_IF_ERROR(rate.status());
  STRATA_RETURN_IF_ERROR(gbps.status());
  return Measured{*rate, *gbps};
}

Status RunInterference(const InterferenceOptions& o, nlohmann::json& out) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> driver, CudaDriver::Load(o.driver));
  STRATA_ASSIGN_OR_RETURN(auto ctx, PrimaryContext::Retain(driver, o.device));
  const CudaDriver& d = *driver;
  ContextGuard guard(d, ctx->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  out = {{"bench", "interference"},
         {"preset", o.preset},
         {"model", "llama70b-tp8 layer"},
         {"staged", StagedJson(o.staged)},
         {"pace_gbps", o.pace_gbps}};
  Result<std::unique_ptr<CublasGemm>> blas = CublasGemm::Load(o.cublas);
  if (!blas.ok()) {
    out["skipped"] = blas.status().ToString();
    return Status::Ok();
  }
  const std::vector<Gemm> gemms = LayerGemms(kLlama70bTp8);
  std::vector<uint64_t> weights;
  uint64_t max_k = 0, max_n = 0;
  auto free_all = [&](uint64_t x, uint64_t y) {
    for (uint64_t w : weights) (void)d.MemFree(w);
    if (x != 0) (void)d.MemFree(x);
    if (y != 0) (void)d.MemFree(y);
  };
  for (const Gemm& g : gemms) {
    STRATA_ASSIGN_OR_RETURN(uint64_t w, d.MemAlloc(g.n * g.k * 2));
    weights.push_back(w);
    STRATA_RETURN_IF_ERROR(FillRandomBf16(d, w, g.n * g.k));
    max_k = std::max(max_k, g.k);
    max_n = std::max(max_n, g.n);
  }
  const auto tokens = static_cast<uint64_t>(std::max(o.compute_tokens, o.memory_tokens));
  STRATA_ASSIGN_OR_RETURN(uint64_t x, d.MemAlloc(tokens * max_k * 2));
  STRATA_ASSIGN_OR_RETURN(uint64_t y, d.MemAlloc(tokens * max_n * 2));
  STRATA_RETURN_IF_ERROR(FillRandomBf16(d, x, tokens * max_k));
  // CUDA's default stream priority is also its lowest: a runtime's streams
  // usually share it with the offload streams, as this stand-in's does.
  STRATA_ASSIGN_OR_RETURN(CudaStream stream, d.CreateLowestPriorityStream());
  StandIn stand_in(d, **blas, stream, gemms, weights, x, y);

  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Copies> copies, OpenCopies(driver, o));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GpuCopyBaseline> dma,
                          GpuCopyBaseline::Open(o.device, 64ull << 20));
  auto offload_round = [&]() -> Result<uint64_t> {
    STRATA_RETURN_IF_ERROR(
        RunJobs(*copies->pages->transfers, copies->out, copies->next_id).status());
    STRATA_RETURN_IF_ERROR(
        RunJobs(*copies->pages->transfers, copies->in, copies->next_id).status());
    return 2 * copies->bytes;
  };
  auto dma_round = [&]() -> Result<uint64_t> {
    STRATA_RETURN_IF_ERROR(dma->Copy(TransferDirection::kDeviceToHost, copies->bytes).status());
    STRATA_RETURN_IF_ERROR(dma->Copy(TransferDirection::kHostToDevice, copies->bytes).status());
    return 2 * copies->bytes;
  };

  out["stand_ins"] = nlohmann::json::array();
  STRATA_ASSIGN_OR_RETURN(int device_sms,
                          d.DeviceAttribute(o.device, CudaDeviceAttribute::kMultiprocessorCount));
  double worst_slowdown = 0;
  double worst_copy_ratio = 1e9;
  double worst_margin_slowdown = 0;
  double worst_margin_ratio = 1e9;
  for (const auto& [name, tokens_of] :
       {std::pair<const char*, int>{"compute", o.compute_tokens}, {"memory", o.memory_tokens}}) {
    STRATA_RETURN_IF_ERROR(stand_in.Rate(tokens_of, 0.3).status());  // warm-up
    STRATA_ASSIGN_OR_RETURN(double alone1, stand_in.Rate(tokens_of, o.seconds));
    STRATA_ASSIGN_OR_RETURN(Measured offload,
                            UnderLoad(stand_in, tokens_of, o.seconds, offload_round));
    STRATA_ASSIGN_OR_RETURN(Measured plain, UnderLoad(stand_in, tokens_of, o.seconds, dma_round));
    STRATA_ASSIGN_OR_RETURN(double alone2, stand_in.Rate(tokens_of, o.seconds));
    const double alone = (alone1 + alone2) / 2;
    const double slowdown = 1 - offload.rate / alone;
    const double copy_ratio = offload.copy_gbps / plain.copy_gbps;
    worst_slowdown = std::max(worst_slowdown, slowdown);
    worst_copy_ratio = std::min(worst_copy_ratio, copy_ratio);
    nlohmann::json margin = nullptr;
    if (o.model_sm_margin > 0) {
      // The runtime sizes its GEMMs for the SMs the copy kernel leaves it;
      // every slowdown is still against the model alone on every SM.
      STRATA_RETURN_IF_ERROR((*blas)->SetSmCountTarget(device_sms - o.model_sm_margin));
      STRATA_ASSIGN_OR_RETURN(double reserved, stand_in.Rate(tokens_of, o.seconds));
      STRATA_ASSIGN_OR_RETURN(Measured beside,
                              UnderLoad(stand_in, tokens_of, o.seconds, offload_round));
      STRATA_RETURN_IF_ERROR((*blas)->SetSmCountTarget(0));
      const double margin_slowdown = 1 - beside.rate / alone;
      worst_margin_slowdown = std::max(worst_margin_slowdown, margin_slowdown);
      worst_margin_ratio = std::min(worst_margin_ratio, beside.copy_gbps / plain.copy_gbps);
      margin = {
          {"sms_left_to_copies", o.model_sm_margin},
          {"alone_rate", reserved},
          {"alone_slowdown", 1 - reserved / alone},
          {"offload",
           {{"rate", beside.rate}, {"slowdown", margin_slowdown}, {"copy_gbps", beside.copy_gbps}}},
          {"offload_vs_dma_copy_ratio", beside.copy_gbps / plain.copy_gbps}};
    }
    out["stand_ins"].push_back(
        {{"name", name},
         {"tokens", tokens_of},
         {"unit", "layers/s"},
         {"alone", alone},
         {"alone_runs", {alone1, alone2}},
         {"offload",
          {{"rate", offload.rate}, {"slowdown", slowdown}, {"copy_gbps", offload.copy_gbps}}},
         {"contiguous_dma",
          {{"rate", plain.rate},
           {"slowdown", 1 - plain.rate / alone},
           {"copy_gbps", plain.copy_gbps}}},
         {"offload_vs_dma_copy_ratio", copy_ratio},
         {"sm_margin", margin}});
  }
  out["offload"] = "copy-out then restore of every page, back to back, default transfers (" +
                   std::string(CopyMethodName(DefaultCopyMethod())) +
                   (o.pace_gbps > 0 ? ", paced at " + std::to_string(o.pace_gbps) + " GB/s" : "") +
                   ")";
  out["max_slowdown"] = worst_slowdown;
  out["min_offload_vs_dma_copy_ratio"] = worst_copy_ratio;
  if (o.model_sm_margin > 0) {
    out["with_sm_margin"] = {{"sms_left_to_copies", o.model_sm_margin},
                             {"max_slowdown", worst_margin_slowdown},
                             {"min_offload_vs_dma_copy_ratio", worst_margin_ratio}};
  }
  STRATA_RETURN_IF_ERROR(copies->pages->transfers->Close(std::chrono::seconds(60)));
  (void)d.SynchronizeStream(stream);
  blas->reset();
  (void)d.DestroyStream(stream);
  free_all(x, y);
  return Status::Ok();
}

void PrintInterferenceTable(const nlohmann::json& j) {
  if (j.contains("skipped")) {
    std::printf("strata bench interference: skipped: %s\n",
                j["skipped"].get<std::string>().c_str());
    return;
  }
  std::printf("strata bench interference: %s copies beside a %s (%s)\n",
              j["preset"].get<std::string>().c_str(), j["model"].get<std::string>().c_str(),
              j["offload"].get<std::string>().c_str());
  for (const nlohmann::json& s : j["stand_ins"]) {
    std::printf(
        "%-8s alone %8.1f layers/s | offload: %8.1f (slowdown %5.1f%%), copies %5.1f GB/s | "
        "contiguous DMA: %8.1f (slowdown %5.1f%%), copies %5.1f GB/s | copy ratio %.3f\n",
        s["name"].get<std::string>().c_str(), s["alone"].get<double>(),
        s["offload"]["rate"].get<double>(), 100 * s["offload"]["slowdown"].get<double>(),
        s["offload"]["copy_gbps"].get<double>(), s["contiguous_dma"]["rate"].get<double>(),
        100 * s["contiguous_dma"]["slowdown"].get<double>(),
        s["contiguous_dma"]["copy_gbps"].get<double>(),
        s["offload_vs_dma_copy_ratio"].get<double>());
    if (!s["sm_margin"].is_null()) {
      const nlohmann::json& m = s["sm_margin"];
      std::printf(
          "%-8s model leaving %d SMs: alone %8.1f (%5.1f%%) | offload: %8.1f (slowdown %5.1f%%), "
          "copies %5.1f GB/s | copy ratio %.3f\n",
          "", m["sms_left_to_copies"].get<int>(), m["alone_rate"].get<double>(),
          100 * m["alone_slowdown"].get<double>(), m["offload"]["rate"].get<double>(),
          100 * m["offload"]["slowdown"].get<double>(), m["offload"]["copy_gbps"].get<double>(),
          m["offload_vs_dma_copy_ratio"].get<double>());
    }
  }
}

}  // namespace

void AddInterferenceBench(CLI::App& bench) {
  auto o = std::make_shared<InterferenceOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "interference",
      "The model's slowdown while offload copies run at full rate (seed section 4): a "
      "compute-bound and a bandwidth-bound cuBLAS stand-in, alone, beside the default "
      "transfers, and beside plain contiguous DMA");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--device", o->device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--preset", o->preset, "Geometry preset of the copies")->capture_default_str();
  cmd->add_option("--pages", o->pages, "Pages copied out and restored per round")
      ->capture_default_str()
      ->check(CLI::Range(64, 1 << 20));
  cmd->add_option("--seconds", o->seconds, "Seconds per stand-in measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  cmd->add_option("--compute-tokens", o->compute_tokens, "Tokens of the compute-bound stand-in")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--memory-tokens", o->memory_tokens, "Tokens of the bandwidth-bound stand-in")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--cublas", o->cublas, "cuBLAS library to load (default: the usual names)");
  cmd->add_option("--driver", o->driver, "CUDA driver library to load")->capture_default_str();
  AddStagedCli(*cmd, o->staged);
  cmd->add_option("--model-sm-margin", o->model_sm_margin,
                  "Also measure with the stand-in's GEMMs sized to leave this many SMs to the "
                  "copy kernel (cublasSetSmCountTarget); 0: not")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd->add_option("--pace-gbps", o->pace_gbps,
                  "Bound the offload's copies to this many GB/s each way (the transfers' "
                  "copy_out/restore rates); 0: full rate. Plain DMA stays at full rate")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  cmd->callback([o] {
    nlohmann::json result;
    const Status s = RunInterference(*o, result);
    PrintBenchResult("interference", s, result, o->json, PrintInterferenceTable);
  });
}

}  // namespace strata

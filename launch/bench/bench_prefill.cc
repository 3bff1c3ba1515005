// `strata bench prefill`: restore versus recompute. For a prefix of 8K, 32K
// and 100K tokens of one rank of a dense model (default llama70b-tp8), times
//
//   restore  the prefix's pages from registered host slabs into GPU planes
//            through CudaTransfers in the default configuration (the byte
//            path of a memory-tier restore), into scattered page ids;
//   prefill  the rank's share of the prefill's GEMMs for the same tokens
//            (QKV, output, gate/up and down projections of every layer, bf16
//            through cuBLAS, 8K-token chunks), attention left out, so the
//            prefill time is a lower bound and the ratio conservative;
//
// and reports restore_vs_prefill = prefill seconds / restore seconds. cuBLAS
// is loaded at run time; without it the prefill part is skipped with a note.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "cuda/cublas_gemm.h"
#include "cuda/cuda_registrar.h"
#include "cuda/cuda_transfers.h"
#include "launch/bench/bench.h"
#include "launch/bench/bench_prefill.h"
#include "launch/bench/dense_model.h"
#include "launch/bench/gpu_bench_report.h"
#include "launch/bench/gpu_jobs.h"
#include "launch/bench/gpu_pages.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "store/transfer/slab_pool.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

struct PrefillOptions {
  bool json = false;
  int device = 0;
  std::string preset = "llama70b-tp8";
  std::vector<uint32_t> tokens = {8192, 32768, 102400};
  int repetitions = 3;
  uint32_t chunk_tokens = 8192;
  std::string cublas;  // empty: the usual names
  std::string driver = kCudaDriverLibrary;
};

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

// Restore seconds (median) of each prefix size, through the default transfers.
Result<std::vector<double>> TimeRestores(const std::shared_ptr<const CudaDriver>& driver,
                                         const PrefillOptions& o, uint32_t page_tokens) {
  const uint32_t most = *std::max_element(o.tokens.begin(), o.tokens.end());
  const uint64_t pages = (most + page_tokens - 1) / page_tokens;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GpuPages> gp,
                          OpenGpuPages(driver, o.preset, pages, o.device));
  const std::vector<PageId>& ids = gp->ids;
  const std::vector<uint8_t*>& records = gp->records;
  Transfers* t = gp->transfers.get();
  std::vector<double> out;
  uint64_t next_id = 1;
  for (uint32_t tokens : o.tokens) {
    const size_t n = (tokens + page_tokens - 1) / page_tokens;
    std::vector<PageId> some(ids.begin(), ids.begin() + static_cast<long>(n));
    std::vector<uint8_t*> recs(records.begin(), records.begin() + static_cast<long>(n));
    std::vector<TransferJob> jobs = Windows(TransferDirection::kHostToDevice, some, recs);
    STRATA_RETURN_IF_ERROR(RunJobs(*t, jobs, next_id).status());  // warm-up
    std::vector<double> s;
    for (int r = 0; r < o.repetitions; ++r) {
      STRATA_ASSIGN_OR_RETURN(double sec, RunJobs(*t, jobs, next_id));
      s.push_back(sec);
    }
    out.push_back(Median(s));
  }
  STRATA_RETURN_IF_ERROR(t->Close(std::chrono::seconds(60)));
  return out;
}

// Prefill seconds (median) of each prefix size: every layer's GEMMs over
// chunks of chunk_tokens. kUnavailable when cuBLAS does not load.
Result<std::vector<double>> TimePrefills(const std::shared_ptr<const CudaDriver>& driver,
                                         const PrefillOptions& o, const DenseModel& model) {
  STRATA_ASSIGN_OR_RETURN(auto ctx, PrimaryContext::Retain(driver, o.device));
  const CudaDriver& d = *driver;
  ContextGuard guard(d, ctx->get());
  STRATA_RETURN_IF_ERROR(guard.status());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CublasGemm> blas, CublasGemm::Load(o.cublas));
  const std::vector<Gemm> gemms = LayerGemms(model);
  uint64_t max_w = 0, max_k = 0, max_n = 0;
  for (const Gemm& g : gemms) {
    max_w = std::max(max_w, g.n * g.k);
    max_k = std::max(max_k, g.k);
    max_n = std::max(max_n, g.n);
  }
  const uint64_t chunk = o.chunk_tokens;
  uint64_t w = 0, x = 0, y = 0;
  CudaStream stream = nullptr;
  auto run = [&]() -> Result<std::vector<double>> {
    STRATA_ASSIGN_OR_RETURN(w, d.MemAlloc(max_w * 2));
    STRATA_ASSIGN_OR_RETURN(x, d.MemAlloc(chunk * max_k * 2));
    STRATA_ASSIGN_OR_RETURN(y, d.MemAlloc(chunk * max_n * 2));
    STRATA_RETURN_IF_ERROR(FillRandomBf16(d, w, max_w));
    STRATA_RETURN_IF_ERROR(FillRandomBf16(d, x, chunk * max_k));
    STRATA_ASSIGN_OR_RETURN(stream, d.CreateLowestPriorityStream());
    STRATA_RETURN_IF_ERROR(blas->SetStream(stream));
    auto prefill = [&](uint32_t tokens) -> Result<double> {
      const auto start = Clock::now();
      for (uint64_t done = 0; done < tokens; done += chunk) {
        const int m_tokens = static_cast<int>(std::min<uint64_t>(chunk, tokens - done));
        for (uint32_t l = 0; l < model.layers; ++l) {
          for (const Gemm& g : gemms) {
            STRATA_RETURN_IF_ERROR(
                blas->GemmBf16(w, x, y, static_cast<int>(g.n), m_tokens, static_cast<int>(g.k)));
          }
        }
      }
      STRATA_RETURN_IF_ERROR(d.SynchronizeStream(stream));
      return std::chrono::duration<double>(Clock::now() - start).count();
    };
    std::vector<double> out;
    for (uint32_t tokens : o.tokens) {
      STRATA_RETURN_IF_ERROR(prefill(tokens).status());  // warm-up
      std::vector<double> s;
      for (int r = 0; r < o.repetitions; ++r) {
        STRATA_ASSIGN_OR_RETURN(double sec, prefill(tokens));
        s.push_back(sec);
      }
      out.push_back(Median(s));
    }
    return out;
  };
  Result<std::vector<double>> out = run();
  if (stream != nullptr) (void)d.SynchronizeStream(stream);
  blas.reset();
  if (stream != nullptr) (void)d.DestroyStream(stream);
  for (uint64_t p : {w, x, y}) {
    if (p != 0) (void)d.MemFree(p);
  }
  return out;
}

double FlopsPerToken(const DenseModel& m) {
  double f = 0;
  for (const Gemm& g : LayerGemms(m)) f += 2.0 * static_cast<double>(g.n * g.k);
  return f * m.layers;
}

Status RunPrefillBench(const PrefillOptions& o, nlohmann::json& out) {
  if (o.preset != "llama70b-tp8") {
    return Status::InvalidArgument("prefill GEMM shapes are known for llama70b-tp8 only");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> driver, CudaDriver::Load(o.driver));
  STRATA_ASSIGN_OR_RETURN(uint32_t page_tokens, PresetPageTokens(o.preset));
  STRATA_ASSIGN_OR_RETURN(CacheGeometry probe, PresetGeometry(o.preset, 1, 1, 1));
  const uint64_t page_bytes = probe.ranks[0].page_bytes();
  STRATA_ASSIGN_OR_RETURN(std::vector<double> restore, TimeRestores(driver, o, page_tokens));
  Result<std::vector<double>> prefill = TimePrefills(driver, o, kLlama70bTp8);
  out = {{"bench", "prefill"},
         {"preset", o.preset},
         {"restore", "memory tier byte path: registered slabs -> GPU planes, default transfers"},
         {"prefill",
          "rank's share of every layer's GEMMs, bf16 cuBLAS, no attention (lower "
          "bound)"},
         {"repetitions", o.repetitions},
         {"statistic", "median"}};
  if (!prefill.ok()) out["prefill_skipped"] = prefill.status().ToString();
  out["cases"] = nlohmann::json::array();
  for (size_t i = 0; i < o.tokens.size(); ++i) {
    const uint64_t pages = (o.tokens[i] + page_tokens - 1) / page_tokens;
    nlohmann::json c = {
        {"tokens", o.tokens[i]},
        {"tier", "memory"},
        {"bytes", pages * page_bytes},
        {"restore_ms", restore[i] * 1e3},
        {"restore_gbps", static_cast<double>(pages * page_bytes) / restore[i] / 1e9}};
    if (prefill.ok()) {
      const double s = (*prefill)[i];
      c["prefill_gemm_ms"] = s * 1e3;
      c["prefill_tflops"] = FlopsPerToken(kLlama70bTp8) * o.tokens[i] / s / 1e12;
      c["restore_vs_prefill"] = s / restore[i];
    }
    out["cases"].push_back(std::move(c));
  }
  return Status::Ok();
}

void PrintPrefillTable(const nlohmann::json& j) {
  std::printf("strata bench prefill: %s, restore (memory tier) vs GEMM-only prefill\n",
              j["preset"].get<std::string>().c_str());
  if (j.contains("prefill_skipped")) {
    std::printf("prefill skipped: %s\n", j["prefill_skipped"].get<std::string>().c_str());
  }
  for (const nlohmann::json& c : j["cases"]) {
    std::printf("%7u tokens  %8.1f MiB  restore %8.2f ms (%6.2f GB/s)", c["tokens"].get<uint32_t>(),
                c["bytes"].get<double>() / (1 << 20), c["restore_ms"].get<double>(),
                c["restore_gbps"].get<double>());
    if (c.contains("restore_vs_prefill")) {
      std::printf("  prefill %9.2f ms (%5.0f TFLOP/s)  restore_vs_prefill %6.1f",
                  c["prefill_gemm_ms"].get<double>(), c["prefill_tflops"].get<double>(),
                  c["restore_vs_prefill"].get<double>());
    }
    std::printf("\n");
  }
}

}  // namespace

void AddPrefillBench(CLI::App& bench) {
  auto o = std::make_shared<PrefillOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "prefill",
      "Restore of 8K/32K/100K-token prefixes from host slabs into GPU planes vs the rank's share "
      "of the GEMM-only prefill of the same tokens (cuBLAS bf16)");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--device", o->device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "Prefix sizes in tokens (repeatable)")
      ->capture_default_str();
  cmd->add_option("--repetitions", o->repetitions, "Repetitions (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--cublas", o->cublas, "cuBLAS library to load (default: the usual names)");
  cmd->add_option("--driver", o->driver, "CUDA driver library to load")->capture_default_str();
  cmd->callback([o] {
    nlohmann::json result;
    const Status s = RunPrefillBench(*o, result);
    PrintBenchResult("prefill", s, result, o->json, PrintPrefillTable);
  });
}

}  // namespace strata

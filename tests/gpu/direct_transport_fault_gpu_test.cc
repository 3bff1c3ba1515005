// A fault in one cuFile entry fails that job cleanly (issue 25): the store's
// transport as `strata rank` builds it (OpenRankDiskTransport with the real
// CuFileSeams over CudaPlanes), its DirectFileIo wrapped so one entry of one
// Run reports failure. The failed store leaves no file behind, the directory
// is as before, and the next store of the same record succeeds and fetches
// back byte-exact. Opt-in: STRATA_GPU_TESTS=1; cuFile runs in compatibility
// mode (allowed here as in every GPU test of the direct transport), through
// synchronous cuFileRead / cuFileWrite as `strata rank` runs it there; skips
// naming error 5027 where cuFile cannot register this host's files.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>

#include "cuda/cuda_planes.h"
#include "cuda/cuda_transfers.h"
#include "launch/presets.h"
#include "launch/rank/rank_disk_transport.h"
#include "store/record/fingerprint.h"
#include "tests/gpu/cufile_gpu_support.h"
#include "tests/support/record_jobs.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

constexpr uint64_t kPageCount = 160;
constexpr uint32_t kPages = 70;  // two windows
constexpr uint32_t kFetchBase = 80;
constexpr size_t kFailedEntry = 3;
constexpr std::chrono::seconds kBound{60};

// Runs the real DirectFileIo, then reports entry `kFailedEntry` of the next
// Run as failed (its bytes did move: the job must still fail and clean up).
class FailOneEntry final : public DirectFileIo {
 public:
  explicit FailOneEntry(std::unique_ptr<DirectFileIo> inner) : inner_(std::move(inner)) {}
  void Arm() { armed_ = true; }  // before the job is submitted
  std::vector<Status> Run(int fd, TransferDirection direction,
                          std::span<const std::vector<DirectIoEntry>> batches) override {
    std::vector<Status> out = inner_->Run(fd, direction, batches);
    if (armed_.exchange(false) && out.size() > kFailedEntry) {
      out[kFailedEntry] = Status::IoError("injected entry failure");
    }
    return out;
  }

 private:
  std::unique_ptr<DirectFileIo> inner_;
  std::atomic<bool> armed_{false};
};

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().filename());
  return out;
}

Status RunJob(DiskTransport& t, const RecordJob& job) { return test::RunRecordJob(t, job, kBound); }

TEST(GpuDirectTransportFaultTest, AFailedEntryFailsItsJobOnlyAndLeavesNoFile) {
  const char* opt_in = std::getenv("STRATA_GPU_TESTS");
  if (opt_in == nullptr || std::string(opt_in) != "1") GTEST_SKIP() << "GPU tests are opt-in";
  testing::ScratchDir dir;
  if (auto why = testing::CuFileCannotRegisterFiles(dir.path())) {
    ASSERT_EQ(why->rfind("cuFile failed:", 0), std::string::npos) << *why;
    GTEST_SKIP() << *why;
  }
  auto driver = CudaDriver::Load();
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  const char* device = std::getenv("STRATA_GPU_DEVICE");
  const int ordinal = device != nullptr ? static_cast<int>(std::strtol(device, nullptr, 10)) : 0;
  Result<CacheGeometry> g = PresetGeometry("tiny", 1, kPageCount, 8);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto planes = CudaPlanes::Create(*driver, *g, {ordinal});
  ASSERT_TRUE(planes.ok()) << planes.status().ToString();
  std::mt19937_64 rng(11);
  const RankGeometry& rank = g->ranks[0];
  for (uint32_t k = 0; k < rank.page_planes.size(); ++k) {
    for (uint32_t p = 0; p < kPages; ++p) {
      std::vector<uint8_t> bytes(rank.page_planes[k].unit_bytes);
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      ASSERT_TRUE((*planes)->WritePage(0, k, PageId(p), bytes).ok());
    }
  }

  CuFilePolicy policy;
  policy.compat = CompatMode::kAllowedForTests;
  ASSERT_TRUE(InstallCuFilePolicy(policy).ok());
  auto library = CuFileLibrary::Load();
  ASSERT_TRUE(library.ok()) << library.status().ToString();
  ASSERT_TRUE((*library)->DriverOpen().ok());
  LocalDiskOptions options;
  options.base_dir = dir.path();
  options.host_headroom_bytes = uint64_t{64} << 20;
  auto disk = LocalDisk::Open(*g, testing::TestIdentity(), ComputeLayoutFingerprint(*g), options);
  ASSERT_TRUE(disk.ok()) << disk.status().ToString();
  auto transfers = MakeCudaTransfers(**planes);
  ASSERT_TRUE(transfers.ok()) << transfers.status().ToString();
  FailOneEntry* fault = nullptr;
  DirectSeamsFactory real = CuFileSeams(*library, CuFileIoModeFor(TransportKind::kDirectCompat));
  auto t = OpenRankDiskTransport(
      {.kind = TransportKind::kDirectCompat, .reason = "test"}, **disk, **planes,
      std::move(*transfers), [&](const DevicePlanes& p) -> Result<DirectSeams> {
        STRATA_ASSIGN_OR_RETURN(DirectSeams seams, real(p));
        auto wrapped = std::make_unique<FailOneEntry>(std::move(seams.io));
        fault = wrapped.get();
        seams.io = std::move(wrapped);
        return seams;
      });
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_NE(fault, nullptr);

  const std::set<std::string> before = Entries((*disk)->path());
  RecordJob store;
  store.id = JobId(1);
  store.key = testing::KeyOf(uint64_t{kPages} * g->page_tokens, 1);
  store.tail_pages = kPages;
  for (uint32_t p = 0; p < kPages; ++p) store.page_ids.emplace_back(p);
  store.row_slot = StateSlot(0);
  fault->Arm();
  Status failed = RunJob(**t, store);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("injected entry failure"), std::string::npos)
      << failed.ToString();
  EXPECT_EQ(Entries((*disk)->path()), before) << "the failed store left a file behind";

  store.id = JobId(2);
  Status stored = RunJob(**t, store);
  ASSERT_TRUE(stored.ok()) << stored.ToString();
  RecordJob fetch = store;
  fetch.id = JobId(3);
  fetch.kind = RecordJobKind::kFetch;
  fetch.page_ids.clear();
  for (uint32_t p = 0; p < kPages; ++p) fetch.page_ids.emplace_back(kFetchBase + p);
  fetch.row_slot = StateSlot(1);
  Status fetched = RunJob(**t, fetch);
  ASSERT_TRUE(fetched.ok()) << fetched.ToString();
  for (uint32_t k = 0; k < rank.page_planes.size(); ++k) {
    for (uint32_t p = 0; p < kPages; ++p) {
      std::vector<uint8_t> want(rank.page_planes[k].unit_bytes);
      std::vector<uint8_t> got(want.size());
      ASSERT_TRUE((*planes)->ReadPage(0, k, PageId(p), want).ok());
      ASSERT_TRUE((*planes)->ReadPage(0, k, PageId(kFetchBase + p), got).ok());
      ASSERT_EQ(want, got) << "plane " << k << " page " << p;
    }
  }
  EXPECT_TRUE((*t)->Close(kBound).ok());
}

}  // namespace
}  // namespace strata

// The record checksum kernel on a GPU against the host's libxxhash checksum
// of the same bytes (store/record/checksum.h). Opt-in like every GPU test:
// STRATA_GPU_TESTS=1 (STRATA_GPU_DEVICE picks the device, default 0).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/driver_api.h"
#include "cuda/record_checksum_kernel.h"
#include "store/record/checksum.h"
#include "store/record/geometry.h"
#include "store/record/record_layout.h"

namespace strata {
namespace {

class GpuRecordChecksumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* opt_in = std::getenv("STRATA_GPU_TESTS");
    if (opt_in == nullptr || std::string(opt_in) != "1") {
      GTEST_SKIP() << "GPU tests are opt-in: set STRATA_GPU_TESTS=1 on a machine with an NVIDIA "
                      "driver";
    }
    if (!RecordChecksumKernelBuilt()) GTEST_SKIP() << "no record checksum kernel (no nvcc)";
    auto d = CudaDriver::Load();
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    driver_ = *d;
    const char* device = std::getenv("STRATA_GPU_DEVICE");
    ordinal_ = device != nullptr ? static_cast<int>(std::strtol(device, nullptr, 10)) : 0;
    auto ctx = PrimaryContext::Retain(driver_, ordinal_);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    context_ = std::move(*ctx);
    guard_ = std::make_unique<ContextGuard>(*driver_, context_->get());
    ASSERT_TRUE(guard_->status().ok()) << guard_->status().ToString();
    auto k = RecordChecksumKernel::Load(driver_, ordinal_);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kernel_ = std::move(*k);
  }

  void TearDown() override {
    kernel_.reset();
    for (uint64_t p : allocations_) (void)driver_->MemFree(p);
    guard_.reset();
  }

  // Device memory holding `bytes`, freed at the end of the test.
  uint64_t Upload(const std::vector<unsigned char>& bytes) {
    auto p = driver_->MemAlloc(bytes.size());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return 0;
    allocations_.push_back(*p);
    Status copied = driver_->CopySync(TransferDirection::kHostToDevice, *p,
                                      const_cast<unsigned char*>(bytes.data()), bytes.size());
    EXPECT_TRUE(copied.ok()) << copied.ToString();
    return *p;
  }

  std::shared_ptr<const CudaDriver> driver_;
  int ordinal_ = 0;
  std::unique_ptr<PrimaryContext> context_;
  std::unique_ptr<ContextGuard> guard_;
  std::unique_ptr<RecordChecksumKernel> kernel_;
  std::vector<uint64_t> allocations_;
};

std::vector<unsigned char> RandomBytes(std::mt19937_64& rng, uint64_t bytes) {
  std::vector<unsigned char> out(bytes);
  for (unsigned char& b : out) b = static_cast<unsigned char>(rng());
  return out;
}

// Pieces at `host` offsets of one uploaded buffer, and the host concatenation
// (padding as zeros) each record stands for.
struct Batch {
  std::vector<ChecksumPiece> pieces;
  std::vector<ChecksumRecord> records;
  std::vector<std::vector<unsigned char>> expected_bytes;
};

uint64_t HostChecksum(const std::vector<unsigned char>& bytes) {
  return Xxh3(std::as_bytes(std::span(bytes)));
}

// Random records: 1-6 pieces each, any sizes (short records of every XXH3
// length class included), some pieces misaligned, some padded, some not.
TEST_F(GpuRecordChecksumTest, RandomPieceListsMatchTheHostChecksum) {
  std::mt19937_64 rng(11);
  const std::vector<unsigned char> buffer = RandomBytes(rng, 32ull << 20);
  const uint64_t device = Upload(buffer);
  ASSERT_NE(device, 0u);
  Batch batch;
  for (int r = 0; r < 600; ++r) {
    batch.records.push_back({batch.pieces.size(), 1 + rng() % 6});
    std::vector<unsigned char> logical;
    const uint64_t cap = std::array<uint64_t, 4>{20, 250, 6000, 70000}[r % 4];
    for (uint64_t p = 0; p < batch.records.back().piece_count; ++p) {
      const uint64_t data = rng() % cap;
      const uint64_t stored =
          rng() % 3 == 0 ? data : (rng() % 2 == 0 ? AlignUp(data) : data + rng() % 300);
      const uint64_t at = (rng() % (buffer.size() - data)) & (rng() % 4 == 0 ? ~0ull : ~255ull);
      batch.pieces.push_back({device + at, data, stored});
      logical.insert(logical.end(), buffer.begin() + static_cast<int64_t>(at),
                     buffer.begin() + static_cast<int64_t>(at + data));
      logical.resize(logical.size() + (stored - data), 0);
    }
    batch.expected_bytes.push_back(std::move(logical));
  }
  auto sums = kernel_->ChecksumsSync(batch.pieces, batch.records);
  ASSERT_TRUE(sums.ok()) << sums.status().ToString();
  ASSERT_EQ(sums->size(), batch.records.size());
  for (size_t r = 0; r < batch.records.size(); ++r) {
    ASSERT_EQ((*sums)[r], HostChecksum(batch.expected_bytes[r]))
        << "record " << r << " of " << batch.expected_bytes[r].size() << " bytes";
  }
}

// Device planes like CudaPlanes hold them (page i of a plane at i * unit_bytes,
// unpadded), hashed as stored page records of a two-rank layout.
TEST_F(GpuRecordChecksumTest, PageRecordsOfUnpaddedPlanesMatchTheStoredRecord) {
  CacheGeometry geometry;
  geometry.page_tokens = 16;
  for (uint32_t r = 0; r < 2; ++r) {
    RankGeometry g;
    g.row = {"row", 777};
    g.page_planes = {{"k", 100}, {"v", 4096}, {"w", 5000}, {"x", 24}};
    g.page_count = 64;
    geometry.ranks.push_back(g);
  }
  const RecordLayout layout(geometry);
  std::mt19937_64 rng(12);
  std::vector<std::vector<unsigned char>> planes;  // [rank * planes + plane]
  std::vector<uint64_t> device_planes;
  for (uint32_t r = 0; r < layout.rank_count(); ++r) {
    for (uint32_t p = 0; p < layout.plane_count(r); ++p) {
      planes.push_back(RandomBytes(rng, layout.plane_bytes(r, p) * 64));
      device_planes.push_back(Upload(planes.back()));
    }
  }
  Batch batch;
  std::vector<uint64_t> expected;
  for (uint32_t page = 0; page < 64; ++page) {
    std::vector<unsigned char> record(layout.page_record_bytes(), 0);
    batch.records.push_back({batch.pieces.size(), 0});
    for (uint32_t r = 0, i = 0; r < layout.rank_count(); ++r) {
      for (uint32_t p = 0; p < layout.plane_count(r); ++p, ++i) {
        const uint64_t unit = layout.plane_bytes(r, p);
        std::copy_n(planes[i].begin() + static_cast<int64_t>(page * unit), unit,
                    record.begin() + static_cast<int64_t>(layout.plane_offset(r, p)));
        batch.pieces.push_back({device_planes[i] + page * unit, unit, AlignUp(unit)});
        ++batch.records.back().piece_count;
      }
    }
    expected.push_back(HostChecksum(record));
  }
  auto sums = kernel_->ChecksumsSync(batch.pieces, batch.records);
  ASSERT_TRUE(sums.ok()) << sums.status().ToString();
  EXPECT_EQ(*sums, expected);
}

// 4096 page records of 64 KiB (four 16 KiB planes): checks every checksum and
// prints the kernel's rate (information only, nothing asserted on time).
TEST_F(GpuRecordChecksumTest, ChecksumKernelThroughput) {
  constexpr uint64_t kRecords = 4096;
  constexpr uint64_t kPlaneBytes = 16384;
  constexpr uint64_t kPlanes = 4;
  std::mt19937_64 rng(13);
  const std::vector<unsigned char> bytes = RandomBytes(rng, kRecords * kPlanes * kPlaneBytes);
  const uint64_t device = Upload(bytes);
  ASSERT_NE(device, 0u);
  std::vector<ChecksumPiece> pieces;
  std::vector<ChecksumRecord> records;
  for (uint64_t r = 0; r < kRecords; ++r) {
    records.push_back({pieces.size(), kPlanes});
    for (uint64_t p = 0; p < kPlanes; ++p) {
      // Plane-major, as device planes are: plane p of page r.
      pieces.push_back({device + (p * kRecords + r) * kPlaneBytes, kPlaneBytes, kPlaneBytes});
    }
  }
  auto sums = kernel_->ChecksumsSync(pieces, records);  // also uploads the lists
  ASSERT_TRUE(sums.ok()) << sums.status().ToString();
  std::vector<unsigned char> record(kPlanes * kPlaneBytes);
  for (uint64_t r = 0; r < kRecords; ++r) {
    for (uint64_t p = 0; p < kPlanes; ++p) {
      std::copy_n(bytes.begin() + static_cast<int64_t>((p * kRecords + r) * kPlaneBytes),
                  kPlaneBytes, record.begin() + static_cast<int64_t>(p * kPlaneBytes));
    }
    ASSERT_EQ((*sums)[r], HostChecksum(record)) << "record " << r;
  }

  // Timed launches over lists already in device memory.
  std::vector<unsigned char> lists(pieces.size() * sizeof(ChecksumPiece));
  std::memcpy(lists.data(), pieces.data(), lists.size());
  const uint64_t device_pieces = Upload(lists);
  lists.resize(records.size() * sizeof(ChecksumRecord));
  std::memcpy(lists.data(), records.data(), lists.size());
  const uint64_t device_records = Upload(lists);
  const uint64_t device_out = Upload(std::vector<unsigned char>(kRecords * 8));
  auto stream = driver_->CreateLowestPriorityStream();
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  const ChecksumBatch batch{.pieces = device_pieces,
                            .records = device_records,
                            .record_count = static_cast<uint32_t>(kRecords)};
  constexpr int kRuns = 10;
  ASSERT_TRUE(kernel_->Launch(*stream, batch, device_out).ok());  // warm-up
  ASSERT_TRUE(driver_->SynchronizeStream(*stream).ok());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) ASSERT_TRUE(kernel_->Launch(*stream, batch, device_out).ok());
  ASSERT_TRUE(driver_->SynchronizeStream(*stream).ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (void)driver_->DestroyStream(*stream);
  std::vector<uint64_t> timed(kRecords);
  ASSERT_TRUE(
      driver_
          ->CopySync(TransferDirection::kDeviceToHost, device_out, timed.data(), timed.size() * 8)
          .ok());
  EXPECT_EQ(timed, *sums);
  const double gb = static_cast<double>(kRuns * bytes.size()) / 1e9;
  std::printf("[ checksum ] %llu records of %llu KiB: %.1f GB/s (%.3f ms per launch)\n",
              static_cast<unsigned long long>(kRecords),
              static_cast<unsigned long long>(kPlanes * kPlaneBytes / 1024), gb / seconds,
              1e3 * seconds / kRuns);
}

}  // namespace
}  // namespace strata

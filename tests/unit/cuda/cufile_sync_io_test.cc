// CuFileDirectIo in synchronous mode (cuda/cufile_io.h: one cuFileRead /
// cuFileWrite per entry, on a few threads), the mode compatibility mode runs
// in, against the fake cuFile library (tests/fake_cufile), whose synchronous
// calls move real bytes with pread / pwrite ("device" memory is host memory)
// and refuse a registered buffer named by anything but its base (-5022):
// entries store and read back byte-exact, wherever they sit in a registered
// buffer or outside every one; a failed, short or refused call fails its
// entry only; and a direct transport built as `strata rank` builds it in
// compatibility mode stores and fetches a record through it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "cuda/cufile_io.h"
#include "cuda/cufile_table.h"
#include "launch/presets.h"
#include "launch/rank/rank_disk_transport.h"
#include "store/record/fingerprint.h"
#include "store/record/record_verify.h"
#include "store/tier/direct_transport_host_doubles.h"
#include "store/transfer/host_planes.h"
#include "tests/support/record_jobs.h"
#include "tests/unit/cuda/fake_cuda.h"
#include "tests/unit/cuda/fake_cufile.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

constexpr uint64_t kEntryStride = 4096;   // each entry's file slot (entries are 4 KiB aligned)
constexpr uint64_t kRegion = 128 * 1024;  // more than kEntries slots
constexpr size_t kEntries = 20;
constexpr uint32_t kWorkers = 4;
constexpr uint8_t kUntouched = 0xee;

// A byte count by name, for the entries' sizes.
uint64_t EntryBytes(size_t i) { return i % 2 == 0 ? 3000 : 4096; }

// "Device" memory (host memory, as the fake treats it): source regions A and
// B registered, U not registered, destination D registered; and a record
// file opened O_DIRECT in a scratch directory.
struct SyncRig {
  explicit SyncRig(const FakeCuda& cuda)
      : a(kRegion), b(kRegion), u(kRegion), d(kRegion, kUntouched) {
    Result<std::unique_ptr<PrimaryContext>> retained = PrimaryContext::Retain(cuda.driver(), 0);
    EXPECT_TRUE(retained.ok()) << retained.status().ToString();
    if (retained.ok()) context = std::move(*retained);
    std::mt19937_64 rng(11);
    for (auto* region : {&a, &b, &u}) {
      for (uint8_t& byte : *region) byte = static_cast<uint8_t>(rng());
    }
    path = dir.path() + "/record";
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      EXPECT_EQ(::ftruncate(fd, kEntries * kEntryStride), 0);
    }
  }
  ~SyncRig() {
    if (fd >= 0) ::close(fd);
  }
  SyncRig(const SyncRig&) = delete;
  SyncRig& operator=(const SyncRig&) = delete;

  static uint64_t Address(const std::vector<uint8_t>& region) {
    return reinterpret_cast<uint64_t>(region.data());
  }
  Result<std::unique_ptr<CuFileDirectIo>> Create(CuFileIoMode mode) const {
    return CuFileDirectIo::Create(
        cufile.library(), context,
        {{Address(a), kRegion}, {Address(b), kRegion}, {Address(d), kRegion}},
        {.mode = mode, .sync_workers = kWorkers});
  }
  // Entry i's source: A, B or U by turn, at an unaligned offset inside it.
  const uint8_t* Source(size_t i) const {
    const std::vector<uint8_t>& region = i % 3 == 0 ? a : i % 3 == 1 ? b : u;
    return region.data() + (i * 1237) % (kRegion - kEntryStride);
  }
  // Entry i's destination in D: 100 bytes past its 4 KiB slot.
  uint8_t* Destination(size_t i) { return d.data() + 100 + i * kEntryStride; }
  // Every entry to or from `device(i)`, in two batches.
  template <typename Device>
  std::vector<std::vector<DirectIoEntry>> Batches(Device device) const {
    std::vector<std::vector<DirectIoEntry>> batches(2);
    for (size_t i = 0; i < kEntries; ++i) {
      batches[i < 7 ? 0 : 1].push_back({.device = reinterpret_cast<uint64_t>(device(i)),
                                        .file_offset = i * kEntryStride,
                                        .bytes = EntryBytes(i)});
    }
    return batches;
  }
  std::vector<std::vector<DirectIoEntry>> Stores() const {
    return Batches([this](size_t i) { return Source(i); });
  }
  std::vector<std::vector<DirectIoEntry>> Fetches() {
    return Batches([this](size_t i) { return Destination(i); });
  }
  // The file's slot of entry i, read through the page cache.
  std::vector<uint8_t> Slot(size_t i) const {
    std::vector<uint8_t> out(kEntryStride);
    const int plain = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(plain, 0);
    EXPECT_EQ(::pread(plain, out.data(), out.size(), static_cast<off_t>(i * kEntryStride)),
              static_cast<ssize_t>(out.size()));
    ::close(plain);
    return out;
  }
  bool SlotHoldsEntry(size_t i) const {
    const std::vector<uint8_t> slot = Slot(i);
    for (size_t k = EntryBytes(i); k < slot.size(); ++k) {
      if (slot[k] != 0) return false;  // padding is zeros
    }
    return std::memcmp(slot.data(), Source(i), EntryBytes(i)) == 0;
  }

  FakeCuFile cufile;
  std::shared_ptr<const PrimaryContext> context;
  std::vector<uint8_t> a, b, u, d;
  testing::ScratchDir dir;
  std::string path;
  int fd = -1;
};

#define STRATA_USE_SYNC_RIG(rig)                                                            \
  STRATA_USE_FAKE_CUDA(cuda);                                                               \
  SyncRig rig(cuda);                                                                        \
  ASSERT_NE(rig.cufile.library(), nullptr);                                                 \
  ASSERT_NE(rig.context, nullptr);                                                          \
  if (rig.fd < 0 && errno == EINVAL) GTEST_SKIP() << rig.dir.path() << " refuses O_DIRECT"; \
  ASSERT_GE(rig.fd, 0) << std::strerror(errno)

TEST(CuFileSyncIoTest, StoresAndReadsBackByteExactOnSeveralThreads) {
  STRATA_USE_SYNC_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> io = rig.Create(CuFileIoMode::kSynchronous);
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  const uint64_t pushes_before = cuda.Calls("cuCtxPushCurrent");

  const std::vector<Status> stored =
      (*io)->Run(rig.fd, TransferDirection::kDeviceToHost, rig.Stores());
  ASSERT_EQ(stored.size(), kEntries);
  for (size_t i = 0; i < kEntries; ++i) {
    EXPECT_TRUE(stored[i].ok()) << i << ": " << stored[i].ToString();
    EXPECT_TRUE(rig.SlotHoldsEntry(i)) << "entry " << i;
  }
  EXPECT_EQ(rig.cufile.SyncCalls(), kEntries);  // one cuFileWrite per entry, no batch
  // Run's own context, then one per worker thread beside the caller's.
  EXPECT_EQ(cuda.Calls("cuCtxPushCurrent") - pushes_before, kWorkers);

  const std::vector<Status> fetched =
      (*io)->Run(rig.fd, TransferDirection::kHostToDevice, rig.Fetches());
  ASSERT_EQ(fetched.size(), kEntries);
  for (size_t i = 0; i < kEntries; ++i) {
    EXPECT_TRUE(fetched[i].ok()) << i << ": " << fetched[i].ToString();
    EXPECT_EQ(std::memcmp(rig.Destination(i), rig.Source(i), EntryBytes(i)), 0) << "entry " << i;
    // Only the entry's bytes land: the file's padding stays in the file.
    if (EntryBytes(i) < kEntryStride) {
      EXPECT_EQ(rig.Destination(i)[EntryBytes(i)], kUntouched) << "entry " << i;
    }
  }
  EXPECT_EQ(rig.d[99], kUntouched);
  EXPECT_EQ(rig.cufile.SyncCalls(), 2 * kEntries);
  EXPECT_EQ(rig.cufile.HandlesRegistered(), 2u);
}

TEST(CuFileSyncIoTest, BatchModeMakesNoSynchronousCalls) {
  STRATA_USE_SYNC_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> io = rig.Create(CuFileIoMode::kBatch);
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  const std::vector<Status> stored =
      (*io)->Run(rig.fd, TransferDirection::kDeviceToHost, rig.Stores());
  ASSERT_EQ(stored.size(), kEntries);
  for (const Status& s : stored) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rig.cufile.SyncCalls(), 0u);
}

TEST(CuFileSyncIoTest, AFailedShortOrRefusedCallFailsOnlyItsEntry) {
  STRATA_USE_SYNC_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> io = rig.Create(CuFileIoMode::kSynchronous);
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  struct Fault {
    size_t entry;
    int64_t result;
    const char* store_error;
    const char* fetch_error;
  };
  const Fault faults[] = {
      {5, -1, "cuFileWrite: Input/output error", "cuFileRead: Input/output error"},
      {9, 1000, "cuFileWrite moved 1000 of 4096 bytes", "cuFileRead moved 1000 of 4096 bytes"},
      {12, -5011, "cuFileWrite: cuFile error 5011", "cuFileRead: cuFile error 5011"},
      {16, -ENOSPC, "cuFileWrite: No space left on device", "cuFileRead: No space left on device"},
  };
  auto fault_of = [&](size_t i) -> const Fault* {
    for (const Fault& f : faults) {
      if (f.entry == i) return &f;
    }
    return nullptr;
  };
  for (const Fault& f : faults) rig.cufile.FailIoAt(f.entry * kEntryStride, f.result);

  const std::vector<Status> stored =
      (*io)->Run(rig.fd, TransferDirection::kDeviceToHost, rig.Stores());
  ASSERT_EQ(stored.size(), kEntries);
  for (size_t i = 0; i < kEntries; ++i) {
    if (const Fault* f = fault_of(i)) {
      EXPECT_FALSE(stored[i].ok()) << i;
      EXPECT_NE(stored[i].message().find(f->store_error), std::string::npos)
          << stored[i].ToString();
      continue;
    }
    EXPECT_TRUE(stored[i].ok()) << i << ": " << stored[i].ToString();
    EXPECT_TRUE(rig.SlotHoldsEntry(i)) << "entry " << i;
  }
  EXPECT_EQ(stored[16].code(), StatusCode::kFsFull);  // ENOSPC stays retryable

  const std::vector<Status> fetched =
      (*io)->Run(rig.fd, TransferDirection::kHostToDevice, rig.Fetches());
  ASSERT_EQ(fetched.size(), kEntries);
  for (size_t i = 0; i < kEntries; ++i) {
    if (const Fault* f = fault_of(i)) {
      EXPECT_NE(fetched[i].message().find(f->fetch_error), std::string::npos)
          << fetched[i].ToString();
      EXPECT_EQ(rig.Destination(i)[0], kUntouched) << "entry " << i;
      continue;
    }
    EXPECT_TRUE(fetched[i].ok()) << i << ": " << fetched[i].ToString();
    EXPECT_EQ(std::memcmp(rig.Destination(i), rig.Source(i), EntryBytes(i)), 0) << "entry " << i;
  }
}

TEST(CuFileSyncIoTest, StatusOfEachKindOfReturn) {
  using enum CuFileOp;
  EXPECT_TRUE(CuFileSyncIoStatus(kRead, 4096, 0, 4096).ok());
  EXPECT_TRUE(CuFileSyncIoStatus(kWrite, 0, 0, 0).ok());
  struct Row {
    CuFileOp op;
    int64_t returned;
    int errno_value;
    StatusCode code;
    const char* message;
  };
  const Row rows[] = {
      {kRead, 4095, 0, StatusCode::kIoError, "cuFileRead moved 4095 of 4096 bytes"},
      {kWrite, 0, 0, StatusCode::kIoError, "cuFileWrite moved 0 of 4096 bytes"},
      {kRead, -1, EIO, StatusCode::kIoError, "cuFileRead: Input/output error"},
      {kWrite, -1, ENOSPC, StatusCode::kFsFull, "cuFileWrite: No space left on device"},
      {kRead, -1, 0, StatusCode::kIoError, "cuFileRead failed (-1) without an errno"},
      {kRead, -EINVAL, 0, StatusCode::kIoError, "cuFileRead: Invalid argument"},
      {kWrite, -5011, 0, StatusCode::kIoError, "cuFileWrite: cuFile error 5011"},
      {kRead, -5022, EIO, StatusCode::kIoError, "cuFileRead: cuFile error 5022"},
  };
  for (const Row& row : rows) {
    const Status s = CuFileSyncIoStatus(row.op, row.returned, row.errno_value, 4096);
    EXPECT_EQ(s.code(), row.code) << s.ToString();
    EXPECT_EQ(s.message(), row.message);
  }
}

// cuFile wants a registered buffer named by its registered base and the
// offset within it; the fake refuses anything else as the driver may.
TEST(CuFileSyncIoTest, EntriesInsideARegisteredBufferAreNamedByItsBase) {
  STRATA_USE_SYNC_RIG(rig);
  Result<std::unique_ptr<CuFileDirectIo>> io = rig.Create(CuFileIoMode::kSynchronous);
  ASSERT_TRUE(io.ok()) << io.status().ToString();

  // The fake's rule, called directly: an interior pointer as the base is refused.
  using Register = StrataCuFileError (*)(StrataCuFileHandle*, StrataCuFileDescr*);
  using Deregister = void (*)(StrataCuFileHandle);
  StrataCuFileDescr descr{};
  descr.type = kStrataCuFileHandleTypeOpaqueFd;
  descr.handle.fd = rig.fd;
  StrataCuFileHandle handle = nullptr;
  ASSERT_EQ(rig.cufile.Fn<Register>("cuFileHandleRegister")(&handle, &descr).err, 0);
  auto write = rig.cufile.Fn<StrataCuFileWriteFn>("cuFileWrite");
  EXPECT_EQ(write(handle, rig.a.data() + 8192, 4096, 0, 0), -5022);
  EXPECT_EQ(write(handle, rig.a.data(), 4096, 0, kRegion - 4095), -5022);  // past its end
  EXPECT_EQ(write(handle, rig.a.data(), 4096, 0, 8192), 4096);
  rig.cufile.Fn<Deregister>("cuFileHandleDeregister")(handle);

  // Entries deep inside A and B, at the last byte of B, and outside every buffer.
  const std::vector<std::vector<DirectIoEntry>> batches = {{
      {.device = SyncRig::Address(rig.a) + 8192, .file_offset = 0, .bytes = 4096},
      {.device = SyncRig::Address(rig.b) + 777, .file_offset = 4096, .bytes = 3000},
      {.device = SyncRig::Address(rig.b) + kRegion - 4096, .file_offset = 8192, .bytes = 4096},
      {.device = SyncRig::Address(rig.u) + 5, .file_offset = 12288, .bytes = 4096},
  }};
  const std::vector<Status> stored = (*io)->Run(rig.fd, TransferDirection::kDeviceToHost, batches);
  ASSERT_EQ(stored.size(), 4u);
  for (const Status& s : stored) EXPECT_TRUE(s.ok()) << s.ToString();
  const std::vector<const uint8_t*> sources = {rig.a.data() + 8192, rig.b.data() + 777,
                                               rig.b.data() + kRegion - 4096, rig.u.data() + 5};
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(std::memcmp(rig.Slot(i).data(), sources[i], batches[0][i].bytes), 0) << i;
  }
}

// A direct transport as `strata rank` opens it in compatibility mode
// (OpenRankDiskTransport, CuFileIoModeFor(kDirectCompat)), its DirectFileIo a
// synchronous CuFileDirectIo over the fake registering the host planes: a
// two-window record stores as the record format says and fetches back
// byte-exact into other pages.
TEST(CuFileSyncIoTest, ACompatibilityModeTransportStoresAndFetchesARecord) {
  STRATA_USE_FAKE_CUDA(cuda);
  FakeCuFile cufile;
  ASSERT_NE(cufile.library(), nullptr);
  Result<std::unique_ptr<PrimaryContext>> retained = PrimaryContext::Retain(cuda.driver(), 0);
  ASSERT_TRUE(retained.ok()) << retained.status().ToString();
  std::shared_ptr<const PrimaryContext> context = std::move(*retained);
  constexpr uint32_t kPageCount = 160;
  constexpr uint32_t kPages = 70;  // two windows
  constexpr uint32_t kFetchBase = 80;
  const CacheGeometry geometry = *PresetGeometry("tiny", 1, kPageCount, 4);
  HostPlanes planes(geometry);
  const RankGeometry& rank = geometry.ranks[0];
  std::mt19937_64 rng(5);
  for (uint32_t k = 0; k < rank.page_planes.size(); ++k) {
    for (uint32_t p = 0; p < kPages; ++p) {
      std::vector<uint8_t> bytes(rank.page_planes[k].unit_bytes);
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      ASSERT_TRUE(planes.WritePage(0, k, PageId(p), bytes).ok());
    }
  }
  std::vector<uint8_t> row(rank.row.unit_bytes);
  for (uint8_t& b : row) b = static_cast<uint8_t>(rng());
  ASSERT_TRUE(planes.WriteRow(0, StateSlot(0), row).ok());

  testing::ScratchDir dir;
  LocalDiskOptions options;
  options.base_dir = dir.path();
  options.host_headroom_bytes = uint64_t{64} << 20;
  options.durability = Durability::kNone;
  Result<std::unique_ptr<LocalDisk>> disk = LocalDisk::Open(
      geometry, testing::TestIdentity(), ComputeLayoutFingerprint(geometry), options);
  ASSERT_TRUE(disk.ok()) << disk.status().ToString();
  std::vector<CuFileBuffer> buffers;
  const RankPlanes p = planes.planes(0);
  for (size_t k = 0; k < p.page_plane_base.size(); ++k) {
    buffers.push_back({p.page_plane_base[k], rank.page_planes[k].unit_bytes * kPageCount});
  }
  buffers.push_back({p.row_base, rank.row.unit_bytes * rank.row_count});
  auto seams = [&](const DevicePlanes&) -> Result<DirectSeams> {
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<CuFileDirectIo> io,
        CuFileDirectIo::Create(cufile.library(), context, buffers,
                               {.mode = CuFileIoModeFor(TransportKind::kDirectCompat)}));
    return DirectSeams{.io = std::move(io),
                       .checksums = std::make_unique<HostRecordChecksums>(),
                       .keep_alive = {}};
  };
  Result<std::unique_ptr<Transfers>> transfers = MakeHostTransfers(planes);
  ASSERT_TRUE(transfers.ok());
  Result<std::unique_ptr<DiskTransport>> t =
      OpenRankDiskTransport({.kind = TransportKind::kDirectCompat, .reason = "test"}, **disk,
                            planes, std::move(*transfers), seams);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto run = [&](const RecordJob& job) { return test::RunRecordJob(**t, job); };

  RecordJob store;
  store.id = JobId(1);
  store.key = testing::KeyOf(uint64_t{kPages} * geometry.page_tokens, 1);
  store.tail_pages = kPages;
  for (uint32_t page = 0; page < kPages; ++page) store.page_ids.emplace_back(page);
  store.row_slot = StateSlot(0);
  Status stored = run(store);
  ASSERT_TRUE(stored.ok()) << stored.ToString();
  EXPECT_GE(cufile.SyncCalls(), uint64_t{kPages} * rank.page_planes.size());

  // The host's check of the file (the fsck check).
  Result<int> fd =
      (*disk)->fs().OpenAt((*disk)->dir().fd(), RecordFileName(store.key), OpenFor::kRead);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  Result<RecordHeader> header = ReadRecordHeader((*disk)->fs(), *fd);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  Result<RecordExtents> extents = ComputeExtents(*header);
  ASSERT_TRUE(extents.ok());
  std::vector<std::byte> scratch(kVerifyScratchBytes);
  Status verified = VerifyRecordFile((*disk)->fs(), *fd, *header, *extents,
                                     /*row_present=*/true, scratch);
  (*disk)->fs().Close(*fd);
  EXPECT_TRUE(verified.ok()) << verified.ToString();

  RecordJob fetch = store;
  fetch.id = JobId(2);
  fetch.kind = RecordJobKind::kFetch;
  fetch.page_ids.clear();
  for (uint32_t page = 0; page < kPages; ++page) fetch.page_ids.emplace_back(kFetchBase + page);
  fetch.row_slot = StateSlot(1);
  Status fetched = run(fetch);
  ASSERT_TRUE(fetched.ok()) << fetched.ToString();
  for (uint32_t k = 0; k < rank.page_planes.size(); ++k) {
    for (uint32_t page = 0; page < kPages; ++page) {
      std::vector<uint8_t> want(rank.page_planes[k].unit_bytes);
      std::vector<uint8_t> got(want.size());
      ASSERT_TRUE(planes.ReadPage(0, k, PageId(page), want).ok());
      ASSERT_TRUE(planes.ReadPage(0, k, PageId(kFetchBase + page), got).ok());
      ASSERT_EQ(got, want) << "plane " << k << " page " << page;
    }
  }
  std::vector<uint8_t> row_back(row.size());
  ASSERT_TRUE(planes.ReadRow(0, StateSlot(1), row_back).ok());
  EXPECT_EQ(row_back, row);
  EXPECT_TRUE((*t)->Close(std::chrono::seconds(30)).ok());
}

}  // namespace
}  // namespace strata

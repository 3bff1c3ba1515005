// A runtime whose planes live in GPU memory attaches to a real `strata rank
// --attach-socket --gpus N`, in both forms a runtime shares them:
//  - vmm: each page and row plane a CUDA VMM allocation (cuMemCreate with
//    POSIX-fd handles) that it exports, and strata imports and maps at
//    addresses reserved at startup (cuda/imported_device_planes.h);
//  - ipc: every plane in one cudaMalloc block at its own offset, shared by a
//    legacy IPC handle that strata opens where the driver picks
//    (cuda/imported_ipc_planes.h).
// Stores and restores into other page ids are byte-exact; a runtime killed
// right after asking for a restore is drained and unmapped, and the next
// runtime restores byte-exact.
//
// Opt-in like the other GPU tests (STRATA_GPU_TESTS=1, STRATA_GPU_DEVICE).
// STRATA_BIN names the strata binary (default: next to this binary, or one
// folder up in a build tree).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "attach/client/attach_client.h"
#include "cuda/driver_api.h"
#include "launch/presets.h"
#include "tests/support/attach_conversations.h"
#include "tests/support/attach_events.h"
#include "tests/support/child_process.h"
#include "tests/support/wait_for_file.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr auto kBound = 60s;
constexpr uint64_t kPages = 256;
constexpr uint64_t kRows = 8;
constexpr uint64_t kConversationPages = 64;  // 36 planes x 16 KiB: 36 MiB per conversation
constexpr char kPreset[] = "qwen-like";

int Device() {
  const char* d = std::getenv("STRATA_GPU_DEVICE");
  return d != nullptr ? static_cast<int>(std::strtol(d, nullptr, 10)) : 0;
}

CacheGeometry Geometry() { return *PresetGeometry(kPreset, 1, kPages, kRows); }

std::string StrataBin() {
  if (const char* b = std::getenv("STRATA_BIN")) return b;
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  return fs::exists(self / "strata") ? (self / "strata").string()
                                     : (self / ".." / "strata").string();
}

uint8_t Byte(uint64_t conversation, size_t allocation, uint64_t unit, uint64_t offset) {
  return static_cast<uint8_t>((conversation * 131 + allocation * 31 + unit * 7 + offset * 13) ^
                              (offset >> 8));
}

// How the test runtime allocates and shares its planes.
enum class Form {
  kVmm,  // one exportable VMM allocation per plane (cuMemCreate), by fd
  kIpc,  // every plane in one cudaMalloc block, as a caching allocator
         // hands them out, by legacy IPC handle and offset
};

Form FormOf(const std::string& name) { return name == "ipc" ? Form::kIpc : Form::kVmm; }
const char* NameOf(Form f) { return f == Form::kIpc ? "ipc" : "vmm"; }

// A runtime's planes on the GPU, mapped into this process too.
class RuntimePlanes {
 public:
  static Result<std::unique_ptr<RuntimePlanes>> Create(int ordinal, Form form) {
    auto p = std::unique_ptr<RuntimePlanes>(new RuntimePlanes());
    p->form_ = form;
    STRATA_ASSIGN_OR_RETURN(p->driver_, CudaDriver::Load());
    STRATA_ASSIGN_OR_RETURN(p->context_, PrimaryContext::Retain(p->driver_, ordinal));
    ContextGuard guard(*p->driver_, p->context_->get());
    STRATA_RETURN_IF_ERROR(guard.status());
    STRATA_ASSIGN_OR_RETURN(uint64_t gran, p->driver_->DeviceGranularity(ordinal));
    const CacheGeometry geometry = Geometry();
    const RankGeometry& g = geometry.ranks[0];
    std::vector<SizedAllocation> allocations;
    for (const PlaneSpec& s : g.page_planes) {
      allocations.push_back({s.name, AllocationGroup::kKvPages, s.unit_bytes, g.page_count});
    }
    allocations.push_back({g.row.name, AllocationGroup::kStateRows, g.row.unit_bytes, g.row_count});
    if (form == Form::kIpc) {
      // One block; planes back to back from a 4 KiB offset, so no plane
      // starts at the block's base.
      uint64_t total = 4096;
      for (const SizedAllocation& a : allocations) total += a.unit_bytes * a.count;
      STRATA_ASSIGN_OR_RETURN(p->block_, p->driver_->MemAlloc(total));
      STRATA_RETURN_IF_ERROR(p->driver_->MemsetD8(p->block_, 0, total));
      STRATA_ASSIGN_OR_RETURN(CudaIpcHandle handle, p->driver_->IpcHandleOf(p->block_));
      uint64_t offset = 4096;
      for (const SizedAllocation& a : allocations) {
        Plane plane{.allocation = a, .address = p->block_ + offset};
        plane.ipc = {.handle = handle, .offset = offset};
        offset += a.unit_bytes * a.count;
        p->planes_.push_back(plane);
      }
      return p;
    }
    for (const SizedAllocation& a : allocations) {
      Plane plane{.allocation = a};
      plane.bytes = (a.unit_bytes * a.count + gran - 1) / gran * gran;
      Result<CudaAllocationHandle> handle =
          p->driver_->CreateShareableDeviceAllocation(ordinal, plane.bytes);
      if (!handle.ok()) {
        return handle.status().WithContext(a.name + ", " + std::to_string(plane.bytes) +
                                           " bytes (granularity " + std::to_string(gran) + ")");
      }
      plane.handle = *handle;
      STRATA_ASSIGN_OR_RETURN(plane.address, p->driver_->ReserveAddress(plane.bytes, gran));
      STRATA_RETURN_IF_ERROR(p->driver_->MapAllocation(plane.address, plane.bytes, plane.handle));
      STRATA_RETURN_IF_ERROR(p->driver_->SetDeviceAccess(plane.address, plane.bytes, ordinal));
      STRATA_ASSIGN_OR_RETURN(plane.fd, p->driver_->ExportToFd(plane.handle));
      STRATA_RETURN_IF_ERROR(p->driver_->MemsetD8(plane.address, 0, plane.bytes));
      p->planes_.push_back(plane);
    }
    return p;
  }
  ~RuntimePlanes() {
    ContextGuard guard(*driver_, context_->get());
    if (block_ != 0) (void)driver_->MemFree(block_);
    for (const Plane& p : planes_) {
      if (form_ == Form::kIpc) continue;
      (void)driver_->Unmap(p.address, p.bytes);
      (void)driver_->ReleaseAllocation(p.handle);
      (void)driver_->FreeAddress(p.address, p.bytes);
      ::close(p.fd);
    }
  }

  PlaneHandleKind handle_kind() const {
    return form_ == Form::kIpc ? PlaneHandleKind::kCudaIpc : PlaneHandleKind::kCudaVmmFd;
  }
  std::vector<std::vector<SharedAllocation>> Shared() const {
    std::vector<SharedAllocation> rank;
    for (const Plane& p : planes_) rank.push_back({p.allocation, p.fd, p.ipc});
    return {rank};
  }

  // Writes conversation c's pattern into units `first`.. (pages) and row `row`.
  Status Fill(uint64_t c, uint32_t first, uint32_t row) { return Visit(c, first, row, nullptr); }
  // Bytes of conversation c at units `first`.. and row `row` that differ.
  Result<uint64_t> Mismatches(uint64_t c, uint32_t first, uint32_t row) {
    uint64_t n = 0;
    STRATA_RETURN_IF_ERROR(Visit(c, first, row, &n));
    return n;
  }

 private:
  struct Plane {
    SizedAllocation allocation;
    uint64_t address = 0;
    CudaAllocationHandle handle = 0;  // kVmm: the allocation, its mapped
    uint64_t bytes = 0;               // bytes and exported fd
    int fd = -1;
    IpcPlane ipc{};  // kIpc: the block's handle and the plane's offset
  };
  RuntimePlanes() = default;

  Status Visit(uint64_t c, uint32_t first, uint32_t row, uint64_t* mismatches) {
    ContextGuard guard(*driver_, context_->get());
    STRATA_RETURN_IF_ERROR(guard.status());
    for (size_t a = 0; a < planes_.size(); ++a) {
      const Plane& p = planes_[a];
      const bool is_row = p.allocation.group == AllocationGroup::kStateRows;
      const uint64_t units = is_row ? 1 : kConversationPages;
      const uint64_t unit_bytes = p.allocation.unit_bytes;
      std::vector<uint8_t> want(units * unit_bytes);
      for (uint64_t u = 0; u < units; ++u) {
        for (uint64_t o = 0; o < unit_bytes; ++o) want[u * unit_bytes + o] = Byte(c, a, u, o);
      }
      const uint64_t at = p.address + (is_row ? row : first) * unit_bytes;
      if (mismatches == nullptr) {
        STRATA_RETURN_IF_ERROR(
            driver_->CopySync(TransferDirection::kHostToDevice, at, want.data(), want.size()));
        STRATA_RETURN_IF_ERROR(driver_->SynchronizeStream(nullptr));
        continue;
      }
      std::vector<uint8_t> got(want.size());
      STRATA_RETURN_IF_ERROR(
          driver_->CopySync(TransferDirection::kDeviceToHost, at, got.data(), got.size()));
      for (size_t i = 0; i < got.size(); ++i) *mismatches += got[i] != want[i] ? 1 : 0;
    }
    return Status::Ok();
  }

  Form form_ = Form::kVmm;
  std::shared_ptr<const CudaDriver> driver_;
  std::unique_ptr<PrimaryContext> context_;
  uint64_t block_ = 0;  // kIpc: the cudaMalloc block every plane lies in
  std::vector<Plane> planes_;
};

AttachIdentity Identity(const RuntimePlanes& planes) {
  return {.runtime_id = "gpu runtime",
          .model_identity = std::string("synthetic/") + kPreset,
          .state_mode = StateMode::kOrdinary,
          .page_tokens = Geometry().page_tokens,
          .plane_handle = planes.handle_kind()};
}

std::vector<Token> Tokens(uint64_t c) {
  return strata::testing::ConversationTokens(c * 1'000'000,
                                             kConversationPages * Geometry().page_tokens);
}

// Publishes conversation c from pages c*64.. and row c; waits for kStored.
::testing::AssertionResult Publish(AttachClient& client, uint64_t c) {
  const strata::testing::ConversationUnits from = {
      .first_page = static_cast<uint32_t>(c * kConversationPages),
      .pages = kConversationPages,
      .row = static_cast<uint32_t>(c)};
  return strata::testing::StoreAndAwait(
      client, strata::testing::ConversationCheckpoint(Tokens(c), c + 1, from), kBound);
}

using Await = strata::testing::AwaitRestore;

// Looks conversation c up and asks for its restore into pages `first`.. and
// row `row`; with kFetched, waits for the event.
::testing::AssertionResult Restore(AttachClient& client, uint64_t c, uint32_t first, uint32_t row,
                                   Await await) {
  const InboundTicket ticket = strata::testing::ConversationTicket(
      JobId(100 + c), {.first_page = first, .pages = kConversationPages, .row = row});
  return strata::testing::LookupAndRestore(client, Tokens(c), ticket, kBound, await)
         << " (conversation " << c << ")";
}

bool OptedIn() {
  const char* opt_in = std::getenv("STRATA_GPU_TESTS");
  return opt_in != nullptr && std::string(opt_in) == "1";
}

// Run only as the child of the test below (STRATA_ATTACH_GPU_CHILD_SOCKET
// set): attaches, asks for conversation 0's restore, says so on fd 3, and
// waits to be killed.
TEST(GpuAttachChildTest, AsksForARestoreThenWaitsToBeKilled) {
  const char* socket = std::getenv("STRATA_ATTACH_GPU_CHILD_SOCKET");
  if (socket == nullptr || !OptedIn()) GTEST_SKIP() << "the child of GpuAttachTest only";
  const char* form = std::getenv("STRATA_ATTACH_GPU_CHILD_FORM");
  auto planes = RuntimePlanes::Create(Device(), FormOf(form != nullptr ? form : "vmm"));
  ASSERT_TRUE(planes.ok()) << planes.status().ToString();
  auto client =
      AttachClient::Attach({.socket_path = socket}, Identity(**planes), (*planes)->Shared());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE(Restore(**client, 0, 128, 4, Await::kRequestOnly));
  ASSERT_EQ(::write(3, "f", 1), 1);
  while (true) ::pause();
}

class StrataRank {
 public:
  explicit StrataRank(const fs::path& dir)
      : socket_(dir / "rank.sock"),
        process_({StrataBin(), "rank", "--attach-socket", socket_.string(), "--gpus",
                  std::to_string(Device()), "--prefix-cache-memory", "512MiB", "--preset", kPreset,
                  "--pages", std::to_string(kPages), "--rows", std::to_string(kRows),
                  "--metrics-port", "0"},
                 (dir / "rank.log").string()) {}
  const fs::path& socket() const { return socket_; }
  // SIGTERM, then the exit code within the bound (-1: it did not end).
  int Stop() { return process_.Stop(kBound); }
  std::string Log() const { return process_.Log(); }

 private:
  fs::path socket_;
  strata::testing::ChildProcess process_;
};

class GpuAttachTest : public ::testing::TestWithParam<Form> {};

TEST_P(GpuAttachTest, PlanesRestoreByteExactAndAKilledRuntimeIsDrainedBeforeTheNext) {
  if (!OptedIn()) GTEST_SKIP() << "GPU tests are opt-in: set STRATA_GPU_TESTS=1";
  const Form form = GetParam();
  const fs::path dir =
      fs::temp_directory_path() /
      ("strata-attach-gpu-" + std::string(NameOf(form)) + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  StrataRank rank(dir);
  ASSERT_TRUE(strata::testing::WaitForFile(rank.socket(), kBound)) << rank.Log();
  {
    auto planes = RuntimePlanes::Create(Device(), form);
    ASSERT_TRUE(planes.ok()) << planes.status().ToString();
    auto client = AttachClient::Attach({.socket_path = rank.socket().string()}, Identity(**planes),
                                       (*planes)->Shared());
    ASSERT_TRUE(client.ok()) << client.status().ToString() << "\n" << rank.Log();
    for (uint64_t c = 0; c < 2; ++c) {
      ASSERT_TRUE(
          (*planes)
              ->Fill(c, static_cast<uint32_t>(c * kConversationPages), static_cast<uint32_t>(c))
              .ok());
      ASSERT_TRUE(Publish(**client, c)) << rank.Log();
    }
    ASSERT_TRUE(Restore(**client, 1, 128, 5, Await::kFetched)) << rank.Log();
    Result<uint64_t> bad = (*planes)->Mismatches(1, 128, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u);
    EXPECT_TRUE((*client)->Close(kBound).ok());
  }
  // A runtime killed right after asking for a restore into its planes.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(ready[1], 3);
    ::setenv("STRATA_ATTACH_GPU_CHILD_SOCKET", rank.socket().c_str(), 1);
    ::setenv("STRATA_ATTACH_GPU_CHILD_FORM", NameOf(form), 1);
    ::execl(self.c_str(), self.c_str(),
            "--gtest_filter=GpuAttachChildTest.AsksForARestoreThenWaitsToBeKilled", nullptr);
    ::_exit(127);
  }
  ::close(ready[1]);
  char byte = 0;
  const bool asked = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(asked) << rank.Log();
  // The next runtime waits until the killed one's planes are drained and
  // unmapped, then restores byte-exact into fresh planes.
  auto planes = RuntimePlanes::Create(Device(), form);
  ASSERT_TRUE(planes.ok()) << planes.status().ToString();
  auto client = AttachClient::Attach({.socket_path = rank.socket().string()}, Identity(**planes),
                                     (*planes)->Shared());
  ASSERT_TRUE(client.ok()) << client.status().ToString() << "\n" << rank.Log();
  ASSERT_TRUE(Restore(**client, 0, 64, 6, Await::kFetched)) << rank.Log();
  Result<uint64_t> bad = (*planes)->Mismatches(0, 64, 6);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
  EXPECT_TRUE((*client)->Close(kBound).ok());
  EXPECT_EQ(rank.Stop(), 0) << rank.Log();
  const std::string log = rank.Log();
  EXPECT_NE(log.find("its planes are unmapped"), std::string::npos) << log;
  std::fprintf(stderr, "%s\n", log.c_str());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Forms, GpuAttachTest, ::testing::Values(Form::kVmm, Form::kIpc),
                         [](const auto& info) { return std::string(NameOf(info.param)); });

}  // namespace
}  // namespace strata::attach

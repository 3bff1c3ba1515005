// The disk thread's drain guarantees, driven through a scripted BlockIo that
// does real preadv/pwritev/fdatasync but lets the test hold completions (as a
// slow or stuck device would) and fail a Submit call (as a refused ring
// entry would).
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>

#include "store/disk/disk_thread.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::KeyOf;
using testing::MakeGeometry;
using testing::MakeRecord;
using testing::TestRecord;

class ScriptedBlockIo final : public BlockIo {
 public:
  explicit ScriptedBlockIo(uint32_t capacity) : capacity_(capacity) {}

  uint32_t capacity() const override { return capacity_; }

  Status Submit(std::span<const BlockRequest> requests) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++submit_calls_;
    for (const BlockRequest& r : requests) {
      Pending p{r, std::vector<iovec>(r.iov, r.iov + r.iov_count)};
      pending_.push_back(std::move(p));
    }
    in_kernel_ += requests.size();
    cv_.notify_all();
    if (failing_calls_.contains(submit_calls_)) return Status::IoError("scripted submit failure");
    return Status::Ok();
  }

  Result<size_t> Reap(std::span<BlockCompletion> out, std::chrono::nanoseconds max_wait) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (holding_) {
      ++reaps_while_holding_;
      cv_.notify_all();
    }
    cv_.wait_for(lock, max_wait, [&] { return woken_ || (!holding_ && !pending_.empty()); });
    woken_ = false;
    size_t n = 0;
    while (!holding_ && !pending_.empty() && n < out.size()) {
      out[n++] = Perform(pending_.front());
      pending_.pop_front();
      --in_kernel_;
    }
    cv_.notify_all();
    return n;
  }

  void Wake() override {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }

  // Test side.
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    holding_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    holding_ = false;
    cv_.notify_all();
  }
  void FailSubmitCall(uint32_t call) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_calls_.insert(call);
  }
  // Waits (bounded) until the disk thread has handed over requests and come
  // back to wait for completions at least `reaps` times while they are held.
  bool WaitUntilThreadWaitsOnHeldRequests(uint64_t reaps) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = reaps_while_holding_ + reaps;
    return cv_.wait_for(lock, testing::kJobWait,
                        [&] { return in_kernel_ > 0 && reaps_while_holding_ >= target; });
  }
  uint64_t in_kernel() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_kernel_;
  }

 private:
  struct Pending {
    BlockRequest request;
    std::vector<iovec> iov;
  };

  static BlockCompletion Perform(const Pending& p) {
    const BlockRequest& r = p.request;
    ssize_t rc = 0;
    switch (r.op) {
      case BlockOp::kRead:
        rc = ::preadv(r.fd, p.iov.data(), static_cast<int>(p.iov.size()),
                      static_cast<off_t>(r.offset));
        break;
      case BlockOp::kWrite:
        rc = ::pwritev(r.fd, p.iov.data(), static_cast<int>(p.iov.size()),
                       static_cast<off_t>(r.offset));
        break;
      case BlockOp::kSyncData: rc = ::fdatasync(r.fd); break;
      case BlockOp::kSync: rc = ::fsync(r.fd); break;
    }
    return {r.tag, rc < 0 ? -errno : rc};
  }

  const uint32_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;
  std::set<uint32_t> failing_calls_;
  uint32_t submit_calls_ = 0;
  uint64_t in_kernel_ = 0;
  uint64_t reaps_while_holding_ = 0;
  bool holding_ = false;
  bool woken_ = false;
};

// A record directory and a disk thread over a ScriptedBlockIo the test keeps
// a pointer to.
struct ScriptedFixture {
  PosixFileSystem fs;
  testing::ScratchDir scratch;
  std::unique_ptr<RecordDir> dir;
  ScriptedBlockIo* io = nullptr;
  std::unique_ptr<DiskThread> thread;
  Status status;

  ScriptedFixture(const CacheGeometry& g, DiskThreadOptions options) {
    const std::string path =
        RecordDirPath(scratch.path(), testing::TestIdentity(), ComputeLayoutFingerprint(g));
    Result<std::unique_ptr<RecordDir>> d = RecordDir::Open(fs, path, RecordDir::Create::kYes);
    if (!d.ok()) {
      status = d.status();
      return;
    }
    dir = std::move(*d);
    auto scripted = std::make_unique<ScriptedBlockIo>(options.max_inflight_requests);
    io = scripted.get();
    Result<std::unique_ptr<DiskThread>> t =
        DiskThread::Start(fs, std::move(scripted), dir->fd(), path, options);
    if (!t.ok()) {
      status = t.status();
      return;
    }
    thread = std::move(*t);
  }
  bool HasTemporaryFile() {
    Result<std::vector<std::string>> names = fs.List(dir->fd());
    for (const std::string& n : names.ok() ? *names : std::vector<std::string>{}) {
      if (n.ends_with(".tmp")) return true;
    }
    return false;
  }
};

DiskThreadOptions SmallRequests() {
  DiskThreadOptions o;
  o.max_request_bytes = 8192;
  o.max_inflight_requests = 4;
  o.max_active_jobs = 1;
  return o;
}

TEST(DiskThreadDrainTest, AFailedSubmissionReportsOnlyAfterEveryRequestReturns) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  ScriptedFixture f(g, SmallRequests());
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  TestRecord r = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  f.io->Hold();
  f.io->FailSubmitCall(1);
  ASSERT_TRUE(f.thread->Submit({JobId(1), WriteRecordJob{r.header, r.pages(), r.row(), {}}}).ok());
  ASSERT_TRUE(f.io->WaitUntilThreadWaitsOnHeldRequests(1));
  std::vector<DiskCompletion> done;
  EXPECT_EQ(f.thread->Poll(done), 0u) << "reported while the kernel held its buffers";
  EXPECT_GT(f.io->in_kernel(), 0u);

  f.io->Release();
  ASSERT_TRUE(f.thread->WaitForCompletion(testing::kJobWait));
  EXPECT_EQ(f.io->in_kernel(), 0u);
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status.code(), StatusCode::kIoError);
  EXPECT_NE(done[0].status.message().find("scripted submit failure"), std::string::npos);
  EXPECT_FALSE(f.HasTemporaryFile());
}

TEST(DiskThreadDrainTest, ShutdownPastItsDeadlineKeepsBuffersAndCanWaitAgain) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  ScriptedFixture f(g, SmallRequests());
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  TestRecord first = MakeRecord(g, KeyOf(256), std::nullopt, 4);
  TestRecord second = MakeRecord(g, KeyOf(320), std::nullopt, 2);
  f.io->Hold();
  ASSERT_TRUE(
      f.thread->Submit({JobId(1), WriteRecordJob{first.header, first.pages(), first.row(), {}}})
          .ok());
  ASSERT_TRUE(
      f.thread->Submit({JobId(2), WriteRecordJob{second.header, second.pages(), second.row(), {}}})
          .ok());
  ASSERT_TRUE(f.io->WaitUntilThreadWaitsOnHeldRequests(1));

  Status missed = f.thread->Shutdown(std::chrono::milliseconds(50));
  EXPECT_EQ(missed.code(), StatusCode::kAborted);
  EXPECT_NE(missed.message().find("must stay allocated"), std::string::npos);
  EXPECT_GT(f.io->in_kernel(), 0u);

  f.io->Release();
  ASSERT_TRUE(f.thread->Shutdown(testing::kJobWait).ok());
  EXPECT_EQ(f.io->in_kernel(), 0u);
  std::vector<DiskCompletion> done;
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), 2u);
  for (const DiskCompletion& c : done) EXPECT_EQ(c.status.code(), StatusCode::kAborted);
  const DiskCompletion& queued = done[0].id == JobId(2) ? done[0] : done[1];
  EXPECT_NE(queued.status.message().find("before the job started"), std::string::npos);
  EXPECT_FALSE(f.HasTemporaryFile());
  EXPECT_FALSE(std::filesystem::exists(f.dir->path() + "/" + RecordFileName(first.header.key)));
}

TEST(DiskThreadDrainTest, ShutdownReportsEveryJobExactlyOnce) {
  CacheGeometry g = MakeGeometry(64, {16384}, 16384);
  DiskThreadOptions o = SmallRequests();
  o.max_active_jobs = 2;
  ScriptedFixture f(g, o);
  STRATA_DISK_FIXTURE_OR_SKIP(f);
  std::vector<TestRecord> records;
  for (uint32_t i = 0; i < 6; ++i)
    records.push_back(MakeRecord(g, KeyOf(64 * (i + 1)), std::nullopt, 2));
  for (uint32_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(
        f.thread
            ->Submit({JobId(i),
                      WriteRecordJob{records[i].header, records[i].pages(), records[i].row(), {}}})
            .ok());
  }
  ASSERT_TRUE(f.thread->Shutdown(testing::kJobWait).ok());
  std::vector<DiskCompletion> done;
  f.thread->Poll(done);
  ASSERT_EQ(done.size(), records.size());
  std::set<uint64_t> ids;
  for (const DiskCompletion& c : done) {
    ids.insert(c.id.value);
    EXPECT_TRUE(c.status.ok() || c.status.code() == StatusCode::kAborted) << c.status.ToString();
    const bool on_disk = std::filesystem::exists(f.dir->path() + "/" +
                                                 RecordFileName(records[c.id.value].header.key));
    EXPECT_EQ(on_disk, c.status.ok()) << c.id.value;
  }
  EXPECT_EQ(ids.size(), records.size());
  EXPECT_FALSE(f.HasTemporaryFile());
}

}  // namespace
}  // namespace strata

// A BlockIo test double for disk thread tests: it does real
// preadv/pwritev/fdatasync but lets the test hold completions, all or one
// kind's (as a slow or stuck device would), fail a Submit call (as a refused ring entry would), and
// watch each Submit as the disk thread makes it.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include "store/disk/disk_thread.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata::testing {

class ScriptedBlockIo final : public BlockIo {
 public:
  explicit ScriptedBlockIo(uint32_t capacity) : capacity_(capacity) {}

  uint32_t capacity() const override { return capacity_; }

  Status Submit(std::span<const BlockRequest> requests) override {
    if (on_submit) on_submit(requests);  // on the disk thread, before the requests are held
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
    if (max_wait.count() > 0) ++waiting_reaps_;
    if (holding_ || HeldPending()) {
      ++reaps_while_holding_;
      cv_.notify_all();
    }
    cv_.wait_for(lock, max_wait, [&] { return woken_ || Performable(); });
    woken_ = false;
    size_t n = 0;
    for (auto it = pending_.begin(); it != pending_.end() && n < out.size();) {
      if (Held(it->request.op)) {
        ++it;
        continue;
      }
      out[n++] = Perform(*it);
      it = pending_.erase(it);
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

  // Test side. Set before the disk thread starts.
  std::function<void(std::span<const BlockRequest>)> on_submit;
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    holding_ = true;
  }
  // Holds only the completions of requests of `op` (others complete).
  void HoldOnly(BlockOp op) {
    std::lock_guard<std::mutex> lock(mu_);
    held_op_ = op;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    holding_ = false;
    held_op_.reset();
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
    return cv_.wait_for(lock, kJobWait,
                        [&] { return in_kernel_ > 0 && reaps_while_holding_ >= target; });
  }
  // Reap calls that could sleep (a positive max_wait): the thread going idle.
  uint64_t waiting_reaps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_reaps_;
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

  bool Held(BlockOp op) const { return holding_ || held_op_ == op; }
  bool HeldPending() const {
    for (const Pending& p : pending_) {
      if (Held(p.request.op)) return true;
    }
    return false;
  }
  bool Performable() const {
    for (const Pending& p : pending_) {
      if (!Held(p.request.op)) return true;
    }
    return false;
  }

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
  uint64_t waiting_reaps_ = 0;
  bool holding_ = false;
  std::optional<BlockOp> held_op_;
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

  // `on_submit` (optional) watches every Submit (ScriptedBlockIo::on_submit).
  ScriptedFixture(const CacheGeometry& g, DiskThreadOptions options,
                  std::function<void(std::span<const BlockRequest>)> on_submit = {}) {
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
    scripted->on_submit = std::move(on_submit);
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

}  // namespace strata::testing

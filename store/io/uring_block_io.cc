#include "store/io/uring_block_io.h"

#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace strata {

namespace {

constexpr uint64_t kWakeTag = ~uint64_t{0};
// Attempts at entering the kernel when it reports EINTR before giving up for
// this call (the requests stay queued for the next one).
constexpr int kEnterRetryLimit = 8;

class UringBlockIo final : public BlockIo {
 public:
  UringBlockIo(uint32_t capacity, int wake_fd) : capacity_(capacity), wake_fd_(wake_fd) {}
  ~UringBlockIo() override {
    if (ring_ready_) io_uring_queue_exit(&ring_);
    ::close(wake_fd_);
  }
  UringBlockIo(const UringBlockIo&) = delete;
  UringBlockIo& operator=(const UringBlockIo&) = delete;

  Status Init() {
    // One extra entry for the wake poll.
    int rc = io_uring_queue_init(capacity_ + 1, &ring_, 0);
    if (rc < 0) return Status::FromErrno(-rc, "io_uring_queue_init");
    ring_ready_ = true;
    ArmWakePoll();
    return Enter();
  }

  uint32_t capacity() const override { return capacity_; }

  Status Submit(std::span<const BlockRequest> requests) override {
    for (const BlockRequest& r : requests) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      STRATA_ASSERT(sqe != nullptr, "BlockIo capacity exceeded");
      switch (r.op) {
        case BlockOp::kRead: io_uring_prep_readv(sqe, r.fd, r.iov, r.iov_count, r.offset); break;
        case BlockOp::kWrite: io_uring_prep_writev(sqe, r.fd, r.iov, r.iov_count, r.offset); break;
        case BlockOp::kSyncData: io_uring_prep_fsync(sqe, r.fd, IORING_FSYNC_DATASYNC); break;
        case BlockOp::kSync: io_uring_prep_fsync(sqe, r.fd, 0); break;
      }
      io_uring_sqe_set_data64(sqe, r.tag);
    }
    return Enter();
  }

  Result<size_t> Reap(std::span<BlockCompletion> out, std::chrono::nanoseconds max_wait) override {
    if (io_uring_cq_ready(&ring_) == 0) {
      if (max_wait.count() > 0) {
        __kernel_timespec ts{};
        ts.tv_sec = max_wait.count() / 1'000'000'000;
        ts.tv_nsec = max_wait.count() % 1'000'000'000;
        io_uring_cqe* cqe = nullptr;
        int rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
        if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
          return Status::FromErrno(-rc, "io_uring wait");
        }
      } else {
        // A look without waiting (the disk thread's, between checksum
        // units): what the kernel does not take now (EAGAIN, EBUSY, a
        // signal) stays queued for the next call, as when waiting.
        int rc = io_uring_submit(&ring_);
        if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
          return Status::FromErrno(-rc, "io_uring_submit");
        }
      }
    }
    size_t n = 0;
    bool rearm = false;
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      if (n == out.size()) break;
      ++seen;
      if (cqe->user_data == kWakeTag) {
        rearm = true;
        continue;
      }
      out[n++] = {cqe->user_data, cqe->res};
    }
    io_uring_cq_advance(&ring_, seen);
    if (rearm) {
      uint64_t count;
      while (::read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
      }
      ArmWakePoll();
      STRATA_RETURN_IF_ERROR(Enter());
    }
    return n;
  }

  void Wake() override {
    const uint64_t one = 1;
    while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }

 private:
  void ArmWakePoll() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    STRATA_ASSERT(sqe != nullptr, "no submission entry for the wake poll");
    io_uring_prep_poll_add(sqe, wake_fd_, POLLIN);
    io_uring_sqe_set_data64(sqe, kWakeTag);
  }

  // Passes queued entries to the kernel. Entries the kernel does not take
  // stay queued for the next call.
  Status Enter() {
    for (int attempt = 0; attempt < kEnterRetryLimit; ++attempt) {
      int rc = io_uring_submit(&ring_);
      if (rc >= 0) return Status::Ok();
      if (rc != -EINTR) return Status::FromErrno(-rc, "io_uring_submit");
    }
    return Status::Busy("io_uring_submit interrupted " + std::to_string(kEnterRetryLimit) +
                        " times");
  }

  io_uring ring_{};
  bool ring_ready_ = false;
  uint32_t capacity_;
  int wake_fd_;
};

}  // namespace

Result<std::unique_ptr<BlockIo>> OpenUringBlockIo(uint32_t capacity) {
  if (capacity == 0) return Status::InvalidArgument("io_uring capacity must be positive");
  int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) return Status::FromErrno(errno, "eventfd");
  auto io = std::make_unique<UringBlockIo>(capacity, wake_fd);
  STRATA_RETURN_IF_ERROR(io->Init());
  return std::unique_ptr<BlockIo>(std::move(io));
}

}  // namespace strata

#include "wire/link/link_io_thread.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/post.hpp>
#include <exception>

#include "store/base/assert.h"
#include "store/base/idle_spin.h"

namespace strata::wire {

LinkIoThread::LinkIoThread(std::string name, std::chrono::microseconds idle_spin, OnThrow on_throw)
    : name_(std::move(name)),
      idle_spin_(idle_spin),
      on_throw_(std::move(on_throw)),
      work_(io_.get_executor()),
      thread_([this] { Run(); }) {}

LinkIoThread::~LinkIoThread() {
  STRATA_ASSERT(!OnThread(), "a LinkIoThread destroyed on itself");
  ReleaseWork();
  Join();
}

LinkIoStats LinkIoThread::stats() const {
  MutexLock lock(mutex_);
  return stats_;
}

void LinkIoThread::ReleaseWork() {
  if (OnThread()) {
    work_.reset();
    return;
  }
  asio::post(io_, [this] { work_.reset(); });
}

void LinkIoThread::Join() {
  if (thread_.joinable()) thread_.join();
}

void LinkIoThread::Run() {
  thread_id_ = std::this_thread::get_id();
  for (;;) {
    Status thrown;
    try {
      if (idle_spin_.count() > 0) {
        RunSpinning();
      } else {
        io_.run();
      }
      return;
    } catch (const std::exception& e) {
      thrown = Status::Internal(fmt::format("a link handler threw: {}", e.what()));
    } catch (...) {
      thrown = Status::Internal("a link handler threw");
    }
    {
      MutexLock lock(mutex_);
      ++stats_.handler_throws;
    }
    if (on_throw_) {
      on_throw_(thrown);
    } else {
      spdlog::error("{}: {}", name_, thrown.ToString());
    }
  }
}

void LinkIoThread::RunSpinning() {
  for (;;) {
    // The first check runs every ready handler; the later ones are the spin
    // (only with a free spin slot), each an epoll_wait with no timeout (a
    // syscall), so the clock is read after every one. The spin's time and
    // finds are counted only when it spun: ready work costs no clock read.
    size_t ran = 0;
    uint32_t checks = 0;
    std::chrono::steady_clock::time_point spin_began;
    const bool found = SpinUntil(
        idle_spin_,
        [&] {
          if (++checks == 2) spin_began = std::chrono::steady_clock::now();
          ran = io_.poll();
          return ran > 0 || io_.stopped();
        },
        1);
    if (checks > 1) {
      MutexLock lock(mutex_);
      stats_.idle_spin_ns +=
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - spin_began)
                                    .count());
      if (ran > 0) ++stats_.idle_spin_hits;
    }
    if (io_.stopped()) return;       // out of work
    if (found) continue;             // ran work: look again before sleeping
    if (io_.run_one() == 0) return;  // sleeps until one handler ran; 0: stopped
  }
}

}  // namespace strata::wire

#include "wire/link/link_io_thread.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <exception>
#include <thread>

#include "store/base/assert.h"
#include "store/base/idle_spin.h"
#include "store/base/mutex.h"

namespace strata::wire {

struct LinkIoThread::State {
  State(std::string n, std::chrono::microseconds spin, OnThrow t)
      : name(std::move(n)), idle_spin(spin), on_throw(std::move(t)), work(io.get_executor()) {}

  void Run();
  // The loop with idle_spin: poll, spin-poll, then sleep.
  void RunSpinning();
  bool OnThread() const { return std::this_thread::get_id() == thread_id.load(); }

  const std::string name;
  const std::chrono::microseconds idle_spin;
  const OnThrow on_throw;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;  // reset on the thread
  mutable Mutex mutex;
  LinkIoStats stats GUARDED_BY(mutex);
  std::atomic<std::thread::id> thread_id{};
  std::thread thread;  // started once every member exists
};

LinkIoThread::LinkIoThread(std::string name, std::chrono::microseconds idle_spin, OnThrow on_throw)
    : state_(std::make_unique<State>(std::move(name), idle_spin, std::move(on_throw))) {
  state_->thread = std::thread([s = state_.get()] { s->Run(); });
}

LinkIoThread::~LinkIoThread() {
  STRATA_ASSERT(!OnThread(), "a LinkIoThread destroyed on itself");
  ReleaseWork();
  Join();
}

asio::io_context& LinkIoThread::context() { return state_->io; }

bool LinkIoThread::OnThread() const { return state_->OnThread(); }

LinkIoStats LinkIoThread::stats() const {
  MutexLock lock(state_->mutex);
  return state_->stats;
}

void LinkIoThread::ReleaseWork() {
  State* s = state_.get();
  if (s->OnThread()) {
    s->work.reset();
    return;
  }
  asio::post(s->io, [s] { s->work.reset(); });
}

void LinkIoThread::Join() {
  if (state_->thread.joinable()) state_->thread.join();
}

void LinkIoThread::State::Run() {
  thread_id = std::this_thread::get_id();
  for (;;) {
    Status thrown;
    try {
      if (idle_spin.count() > 0) {
        RunSpinning();
      } else {
        io.run();
      }
      return;
    } catch (const std::exception& e) {
      thrown = Status::Internal(fmt::format("a link handler threw: {}", e.what()));
    } catch (...) {
      thrown = Status::Internal("a link handler threw");
    }
    {
      MutexLock lock(mutex);
      ++stats.handler_throws;
    }
    if (on_throw) {
      on_throw(thrown);
    } else {
      spdlog::error("{}: {}", name, thrown.ToString());
    }
  }
}

void LinkIoThread::State::RunSpinning() {
  for (;;) {
    // The first check runs every ready handler; the later ones are the spin
    // (only with a free spin slot), each an epoll_wait with no timeout (a
    // syscall), so the clock is read after every one. The spin's time and
    // finds are counted only when it spun: ready work costs no clock read.
    size_t ran = 0;
    uint32_t checks = 0;
    std::chrono::steady_clock::time_point spin_began;
    const bool found = SpinUntil(
        idle_spin,
        [&] {
          if (++checks == 2) spin_began = std::chrono::steady_clock::now();
          ran = io.poll();
          return ran > 0 || io.stopped();
        },
        1);
    if (checks > 1) {
      MutexLock lock(mutex);
      stats.idle_spin_ns +=
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - spin_began)
                                    .count());
      if (ran > 0) ++stats.idle_spin_hits;
    }
    if (io.stopped()) return;       // out of work
    if (found) continue;            // ran work: look again before sleeping
    if (io.run_one() == 0) return;  // sleeps until one handler ran; 0: stopped
  }
}

}  // namespace strata::wire

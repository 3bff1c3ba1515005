// LinkIoThread: one thread running one Asio io_context for links' I/O.
//
// A Link makes its own by default (one I/O thread per link). A process that
// fans a job out to many peers and waits for all of their answers (rank
// zero's record links) may give every such link one LinkIoThread
// (LinkOptions::io_thread): a job's answers then wake one thread, or none
// while it spins, whatever the number of peers, instead of one thread per
// answer. Their handlers then run one at a time across all those links.
//
// Idle spin: after the loop runs out of ready work it keeps polling its
// sockets and timers without sleeping, for up to idle_spin, before it
// sleeps in the kernel (within the process's spin slots,
// store/base/idle_spin.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "store/base/status.h"

namespace asio {
class io_context;
}

namespace strata::wire {

struct LinkIoStats {
  // Polls during a spin that found work (a frame, a posted function or a
  // timer) the thread would otherwise have slept for, each a wake-up saved;
  // and the time spent polling. Recorded when the spin ends, just after that
  // work ran.
  uint64_t idle_spin_hits = 0;
  uint64_t idle_spin_ns = 0;
  // Handlers that threw out of the loop (each reported to on_throw).
  uint64_t handler_throws = 0;
};

class LinkIoThread {
 public:
  // Runs on the thread when a handler throws, with what it threw; the loop
  // then goes on. Null: the error is logged.
  using OnThrow = std::function<void(const Status&)>;

  // Starts the thread. `name` names it in logs.
  LinkIoThread(std::string name, std::chrono::microseconds idle_spin, OnThrow on_throw = nullptr);
  // ReleaseWork(), then Join(). Every Link on this thread must have been
  // destroyed (each closes first), so nothing is left to wait for; not on
  // this thread.
  ~LinkIoThread();
  LinkIoThread(const LinkIoThread&) = delete;
  LinkIoThread& operator=(const LinkIoThread&) = delete;

  // Links bind their sockets and timers to it (wire/link/link_impl.h).
  asio::io_context& context();
  bool OnThread() const;
  LinkIoStats stats() const;

  // Lets the loop end once no handler or operation is left. Any thread.
  void ReleaseWork();
  // Waits for the loop to end. Not on this thread.
  void Join();

 private:
  struct State;  // the io_context and the thread (Asio stays in the .cc)
  std::unique_ptr<State> state_;
};

}  // namespace strata::wire

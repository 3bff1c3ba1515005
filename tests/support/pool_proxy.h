// PoolProxy: for process tests, a relay between pool instances and their
// manager that can stop the protocol at a chosen message. Instances connect
// to its `front` socket; each connection is relayed, message by message (the
// arena fd passed on beside the HelloAccept), to a new connection to the
// manager's `back` socket. A connection the manager refuses is closed.
//
// A trap names a message by direction and kind: the next such message is not
// relayed; the trap's action runs in the proxy's thread (a test SIGKILLs the
// manager there), and only then does that connection close both ways. So the
// event a test stages (the manager dying with a claim granted and not
// released) lands exactly between two protocol messages, never by timing.
//
// A hold delays messages instead: from Hold on, messages of its direction and
// kind are kept, in order, until ReleaseHeld relays them (a lookup answer
// that comes after its admission, without any timing).
//
// Thread: the proxy runs its own thread; Arm and fired from the test's.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coordinator/pool/pool_socket.h"

namespace strata::testing {

enum class PoolHop : unsigned char { kToManager, kToInstance };

// Whether `m` is a message of kind M (a trap's kind).
template <typename M>
bool IsPoolMessage(const pool::PoolMessage& m) {
  return std::holds_alternative<M>(m);
}

struct PoolTrap {
  PoolHop hop = PoolHop::kToManager;
  bool (*kind)(const pool::PoolMessage&) = nullptr;
  std::function<void()> action;  // runs in the proxy's thread
};

class PoolProxy {
 public:
  static constexpr std::chrono::milliseconds kSendBound{5'000};

  static Result<std::unique_ptr<PoolProxy>> Start(const std::string& front, std::string back) {
    STRATA_ASSIGN_OR_RETURN(wire::UniqueFd listener, pool::ListenUnix(front));
    wire::UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop.valid()) return Status::FromErrno(errno, "proxy eventfd");
    return std::unique_ptr<PoolProxy>(
        new PoolProxy(std::move(listener), std::move(stop), std::move(back)));
  }
  PoolProxy(const PoolProxy&) = delete;
  PoolProxy& operator=(const PoolProxy&) = delete;
  ~PoolProxy() {
    const uint64_t one = 1;
    (void)::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }

  // Arms `trap` (replacing one not fired yet).
  void Arm(PoolTrap trap) {
    std::lock_guard<std::mutex> lock(mu_);
    trap_ = std::move(trap);
  }
  // Keeps every later message `hop` of `kind` until ReleaseHeld.
  void Hold(PoolHop hop, bool (*kind)(const pool::PoolMessage&)) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = Holding{hop, kind};
  }
  // Stops holding and relays what was held, before anything relayed later.
  void ReleaseHeld() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_.reset();
      release_ = true;
    }
    const uint64_t one = 1;
    (void)::write(wake_.get(), &one, sizeof one);
  }
  // Traps fired so far; a trap's action happened before its count.
  uint64_t fired() const { return fired_.load(std::memory_order_acquire); }

 private:
  struct Pair {
    pool::PoolSocket instance;
    pool::PoolSocket manager;
    std::vector<pool::PoolMessage> held_to_manager{};
    std::vector<pool::PoolMessage> held_to_instance{};
  };
  struct Holding {
    PoolHop hop;
    bool (*kind)(const pool::PoolMessage&);
  };

  PoolProxy(wire::UniqueFd listener, wire::UniqueFd stop, std::string back)
      : listener_(std::move(listener)),
        stop_(std::move(stop)),
        wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
        back_(std::move(back)) {
    thread_ = std::thread([this] { Run(); });
  }

  void Run() {
    std::list<Pair> pairs;
    for (;;) {
      std::vector<pollfd> fds{
          {listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
      for (Pair& p : pairs) {
        fds.push_back({p.instance.fd(), POLLIN, 0});
        fds.push_back({p.manager.fd(), POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0) return;
      if (fds[2].revents != 0) Flush(pairs);
      size_t at = 3;
      for (auto p = pairs.begin(); p != pairs.end(); at += 2) {
        const bool open =
            (fds[at].revents == 0 ||
             Relay(p->instance, p->manager, PoolHop::kToManager, p->held_to_manager)) &&
            (fds[at + 1].revents == 0 ||
             Relay(p->manager, p->instance, PoolHop::kToInstance, p->held_to_instance));
        p = open ? std::next(p) : pairs.erase(p);
      }
      if (fds[0].revents != 0) Accept(pairs);
    }
  }

  void Accept(std::list<Pair>& pairs) {
    for (;;) {
      wire::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) return;
      Result<wire::UniqueFd> back = pool::ConnectUnix(back_, kSendBound);
      if (!back.ok() || !wire::SetSendTimeout(fd.get(), kSendBound).ok()) continue;
      pairs.push_back(Pair{pool::PoolSocket(std::move(fd)), pool::PoolSocket(std::move(*back))});
    }
  }

  // After ReleaseHeld: relays every held message.
  void Flush(std::list<Pair>& pairs) {
    uint64_t count = 0;
    (void)::read(wake_.get(), &count, sizeof count);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!std::exchange(release_, false)) return;
    }
    for (Pair& p : pairs) {
      for (const pool::PoolMessage& m : p.held_to_manager) (void)p.manager.Send(m);
      for (const pool::PoolMessage& m : p.held_to_instance) (void)p.instance.Send(m);
      p.held_to_manager.clear();
      p.held_to_instance.clear();
    }
  }

  bool Held(PoolHop hop, const pool::PoolMessage& m) {
    std::lock_guard<std::mutex> lock(mu_);
    return hold_ && hold_->hop == hop && hold_->kind(m);
  }

  // Relays every whole message `from` holds (keeping held ones in `held`);
  // false when the pair must close (a peer gone, or a trap fired).
  bool Relay(pool::PoolSocket& from, pool::PoolSocket& to, PoolHop hop,
             std::vector<pool::PoolMessage>& held) {
    for (;;) {
      Result<std::optional<pool::PoolReceived>> got = from.TryReceive();
      if (!got.ok()) return false;
      if (!got->has_value()) return true;
      const pool::PoolReceived& m = **got;
      if (m.fds.empty() && Held(hop, m.message)) {
        held.push_back(m.message);
        continue;
      }
      if (std::optional<PoolTrap> trap = Take(hop, m.message)) {
        trap->action();
        fired_.fetch_add(1, std::memory_order_release);
        return false;
      }
      std::vector<int> fds;
      for (const wire::UniqueFd& fd : m.fds) fds.push_back(fd.get());
      if (!to.Send(m.message, fds).ok()) return false;
    }
  }

  // The armed trap, disarmed, when it matches.
  std::optional<PoolTrap> Take(PoolHop hop, const pool::PoolMessage& m) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!trap_ || trap_->hop != hop || !trap_->kind(m)) return std::nullopt;
    return std::exchange(trap_, std::nullopt);
  }

  wire::UniqueFd listener_;
  wire::UniqueFd stop_;
  wire::UniqueFd wake_;  // ReleaseHeld's
  std::string back_;
  std::mutex mu_;
  std::optional<PoolTrap> trap_;  // guarded by mu_
  std::optional<Holding> hold_;   // guarded by mu_
  bool release_ = false;          // guarded by mu_
  std::atomic<uint64_t> fired_{0};
  std::thread thread_;
};

}  // namespace strata::testing

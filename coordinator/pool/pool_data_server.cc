#include "coordinator/pool/pool_data_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <system_error>
#include <vector>

namespace strata::pool {
namespace {

DataDeadline WindowDeadline() {
  return std::chrono::steady_clock::now() +
         std::chrono::milliseconds(PoolDataServer::kWindowBoundMs);
}

}  // namespace

PoolDataServer::~PoolDataServer() {
  for (Connection& c : connections_) c.stream->Shutdown();
  for (Connection& c : connections_) c.thread.join();
}

size_t PoolDataServer::Live(SessionId session) const {
  return static_cast<size_t>(
      std::count_if(connections_.begin(), connections_.end(), [&](const Connection& c) {
        return c.session == session && !c.finished.load(std::memory_order_acquire);
      }));
}

bool PoolDataServer::Serve(SessionId session, std::unique_ptr<DataStream> stream) {
  Reap();
  if (Live(session) >= kConnectionsPerSessionMax) return false;
  Connection& c = connections_.emplace_back();
  c.session = session;
  c.stream = std::move(stream);
  try {
    c.thread = std::thread([this, &c] {
      Run(c.session, *c.stream);
      c.finished.store(true, std::memory_order_release);
    });
  } catch (const std::system_error& e) {
    spdlog::warn("pool: no thread for a data connection: {}", e.what());
    connections_.pop_back();
    return false;
  }
  MutexLock lock(mu_);
  ++counts_.connections;
  return true;
}

void PoolDataServer::EndSession(SessionId session) {
  for (Connection& c : connections_) {
    if (c.session == session) c.stream->Shutdown();
  }
  Reap();
}

void PoolDataServer::Reap() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->finished.load(std::memory_order_acquire)) {
      ++it;
      continue;
    }
    it->thread.join();
    it = connections_.erase(it);
  }
}

PoolDataCounts PoolDataServer::Counts() const {
  MutexLock lock(mu_);
  return counts_;
}

void PoolDataServer::Run(SessionId session, DataStream& stream) {
  std::vector<std::byte> window;  // a SlotWrite's bytes, read whole before they land
  const auto drop = [&](const Status& why) {
    // A peer that closed is no drop; a stalled one, or a bad frame, is.
    if (why.code() != StatusCode::kUnavailable || stream.timed_out()) {
      spdlog::warn("pool: dropping a data connection of session {}: {}", session.value,
                   why.ToString());
      MutexLock lock(mu_);
      ++counts_.connections_dropped;
    }
  };
  for (;;) {
    // Idle between windows for as long as the session lasts (EndSession wakes it).
    Result<PoolMessage> message = stream.Receive(DataDeadline::max());
    if (!message.ok()) return drop(message.status());
    if (const auto* w = std::get_if<PoolSlotWrite>(&*message)) {
      window.resize(w->bytes);
      if (Status s = stream.ReadBytes(window, WindowDeadline()); !s.ok()) return drop(s);
      const Status wrote = grants_.Write(session, *w, window);
      {
        MutexLock lock(mu_);
        ++(wrote.ok() ? counts_.windows_written : counts_.windows_refused);
        if (wrote.ok()) counts_.bytes_written += w->bytes;
      }
      if (Status s = stream.Send(PoolDone{.request_id = w->request_id, .status = wrote}, {},
                                 WindowDeadline());
          !s.ok()) {
        return drop(s);
      }
    } else if (const auto* r = std::get_if<PoolSlotRead>(&*message)) {
      Result<std::span<const std::byte>> bytes = grants_.Read(session, *r);
      PoolSlotData answer{.request_id = r->request_id,
                          .status = bytes.status(),
                          .bytes = bytes.ok() ? bytes->size() : 0};
      {
        MutexLock lock(mu_);
        ++(bytes.ok() ? counts_.windows_read : counts_.windows_refused);
        if (bytes.ok()) counts_.bytes_read += bytes->size();
      }
      if (Status s = stream.Send(answer, bytes.ok() ? *bytes : std::span<const std::byte>(),
                                 WindowDeadline());
          !s.ok()) {
        return drop(s);
      }
    } else {
      return drop(Status::InvalidArgument("a data connection sent what is not a window"));
    }
  }
}

}  // namespace strata::pool

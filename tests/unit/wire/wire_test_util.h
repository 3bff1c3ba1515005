// Helpers shared by the wire tests: sample messages, a bounded event queue,
// and a loopback listener + dialer pair.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "wire/link/link.h"
#include "wire/listener.h"
#include "wire/messages.h"

namespace strata::wire::testing {

// How long a test waits for an event before it fails. Only a bound: nothing
// is timed, and a passing test never waits this long.
inline constexpr std::chrono::seconds kEventWait{30};

inline PrefixKey Key(uint64_t consumed, uint8_t seed) {
  PrefixKey key;
  key.consumed = consumed;
  for (size_t i = 0; i < key.digest.size(); ++i) key.digest[i] = static_cast<uint8_t>(seed + i);
  return key;
}

template <size_t N>
std::array<uint8_t, N> Bytes(uint8_t seed) {
  std::array<uint8_t, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = static_cast<uint8_t>(seed * 7 + i);
  return out;
}

inline Hello SampleHello() {
  Hello m;
  m.nonce = Bytes<16>(1);
  m.rank = RankId(3);
  m.world_size = 4;
  m.layout_fingerprint = Bytes<16>(2);
  m.disk_limit_bytes = uint64_t{1} << 40;
  m.has_disk_store = true;
  return m;
}

// A fetch of pages [2, 6) of a record and its row, every field set.
inline Job SampleJob() {
  Job m;
  RecordJob& j = m.record;
  j.id = JobId(0x1234'5678'9abcULL);
  j.kind = RecordJobKind::kFetch;
  j.key = Key(128, 9);
  j.parent = Key(64, 4);
  j.bucket = Bytes<16>(6);
  j.tail_pages = 6;
  j.first_page = 2;
  j.page_ids = {PageId(7), PageId(0), PageId(0xffffffffU), PageId(42)};
  j.row_slot = StateSlot(5);
  j.replicated_pages = true;
  return m;
}

// A host-data job's middle chunk.
inline JobData SampleJobData() {
  JobData d{.id = JobId(11), .offset = 8192, .total = 20480, .data = {}};
  for (int i = 0; i < 4096; ++i) d.data.push_back(static_cast<std::byte>(i * 7));
  return d;
}

// One of every message type, with fields away from their defaults.
inline std::vector<Message> SampleMessages() {
  ScanSummary summary;
  summary.records.push_back({Key(64, 1), std::nullopt, Bytes<16>(3), true, 8192});
  summary.records.push_back({Key(100, 2), Key(64, 1), Bytes<16>(4), false, 12288});
  summary.last = false;
  Agreement agreement;
  agreement.entries = {{Key(64, 1), Verdict::kKeep},
                       {Key(100, 2), Verdict::kTruncate},
                       {Key(200, 3), Verdict::kDelete}};
  Job unlink;
  unlink.record.id = JobId(9);
  unlink.record.kind = RecordJobKind::kUnlink;
  unlink.record.key = Key(4096, 8);
  JobDone done;
  done.id = JobId(9);
  done.rank = RankId(2);
  done.status = Status::FsFull("no space left on /nvme");
  done.filesystem_full = true;
  done.bytes = 4096;
  return {SampleHello(),
          HelloAccept{7},
          HelloReject{"wrong layout fingerprint"},
          summary,
          agreement,
          AgreementApplied{Status::IoError("unlink failed")},
          SampleJob(),
          unlink,
          done,
          JobDone{JobId(10), RankId(1), Status::Ok(), false, 65536},
          Drain{},
          Drained{Status::Ok()},
          Close{"rank zero is stopping"},
          Heartbeat{0xfeedULL},
          SampleJobData()};
}

// A queue filled by one thread (a link's) and drained by the test, which
// waits on it with a bound.
template <typename T>
class EventQueue {
 public:
  void Push(T value) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(value));
    }
    ready_.notify_all();
  }
  // The next item, or nullopt when none arrives within `bound`.
  std::optional<T> Pop(std::chrono::milliseconds bound = kEventWait) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, bound, [&] { return !items_.empty(); })) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    return value;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
};

// Handlers that record every event of one link.
struct Recorder {
  EventQueue<Message> messages;
  EventQueue<LinkState> closed;
  EventQueue<bool> opened;
  EventQueue<bool> drained;

  LinkHandlers Handlers() {
    return LinkHandlers{
        .on_open = [this] { opened.Push(true); },
        .on_message = [this](Message m) { messages.Push(std::move(m)); },
        .on_closed = [this](const LinkState& s) { closed.Push(s); },
        .on_drained = [this] { drained.Push(true); },
    };
  }
};

// Link options for tests that are not about liveness: no heartbeats and no
// silence timeout, so frame counts are exact and a slow machine closes
// nothing.
inline LinkOptions QuietLinkOptions(LinkOptions options = {}) {
  options.liveness = LivenessOptions{.heartbeat_interval = std::chrono::milliseconds(0),
                                     .silence_timeout = std::chrono::milliseconds(0)};
  return options;
}

// Listener options for tests that are not about admission or liveness:
// accepted links are admitted at once and quiet.
inline ListenerOptions QuietListening(ListenerOptions options = {}) {
  options.admission = LinkAdmission::kAdmitted;
  options.link_options = QuietLinkOptions(std::move(options.link_options));
  return options;
}

// A listener on 127.0.0.1 that queues accepted links; by default they are
// admitted and quiet (QuietListening).
class LoopbackListener {
 public:
  explicit LoopbackListener(ListenerOptions options = QuietListening()) {
    options.bind = Endpoint{"127.0.0.1", 0};
    auto listener = Listener::Open(std::move(options), [this](std::unique_ptr<Link> link) {
      accepted_.Push(std::move(link));
    });
    EXPECT_TRUE(listener.ok()) << listener.status().ToString();
    if (listener.ok()) listener_ = std::move(*listener);
  }

  Endpoint endpoint() const { return listener_->local_endpoint(); }
  Listener& listener() { return *listener_; }
  // The next accepted link (not started), or null when none arrives in time.
  std::unique_ptr<Link> NextLink() {
    auto link = accepted_.Pop();
    return link ? std::move(*link) : nullptr;
  }

 private:
  EventQueue<std::unique_ptr<Link>> accepted_;
  std::unique_ptr<Listener> listener_;
};

}  // namespace strata::wire::testing

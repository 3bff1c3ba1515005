// Shared by the process tests of instances sharing through a `strata pool`:
// the command line of a `strata rank` instance with the pool and an attach
// socket, attaching a runtime to it, a lookup that only asks whether anything
// is found, and reading an endpoint's /metrics. Every wait is bounded.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "attach/client/attach_client.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "tests/support/attach_conversations.h"
#include "tests/support/attach_events.h"
#include "tests/support/wait_for_file.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata::testing {

// One instance: `strata rank` serving `preset` with `pages` page ids and
// `rows` state rows, a memory tier of `memory_slots` page records, the pool
// at `pool_socket`, its attach socket at dir/NAME.sock and its log at
// dir/NAME.log.
struct PoolInstanceSpec {
  std::filesystem::path dir;
  std::string name;
  std::string preset = "tiny";
  uint64_t pages = 0;
  uint64_t rows = 0;
  uint64_t memory_slots = 0;
  std::filesystem::path pool_socket;
  uint16_t metrics_port = 0;

  CacheGeometry geometry() const { return *PresetGeometry(preset, 1, pages, rows); }
  std::filesystem::path attach_socket() const { return dir / (name + ".sock"); }
  std::filesystem::path log() const { return dir / (name + ".log"); }
};

// The bytes instance A publishes for conversation c in the pool process
// tests (attach::testing::Pattern), and where they lie in its planes:
// conversations `pages` apart from page 0, conversation c's row c.
inline UnitByte PublishedBytes(uint64_t c) {
  return [=](size_t a, uint64_t unit, uint64_t offset) {
    return attach::testing::Pattern(c, a, unit, offset);
  };
}
inline ConversationUnits PublishedUnits(uint64_t c, uint64_t pages) {
  return NthConversationUnits(c, pages, 0, static_cast<uint32_t>(c));
}

// The command line running `spec` with the `strata` binary `bin`.
inline std::vector<std::string> PoolInstanceArgs(const std::string& bin,
                                                 const PoolInstanceSpec& spec) {
  const uint64_t memory = spec.memory_slots * RecordLayout(spec.geometry()).page_record_bytes();
  return {bin,
          "rank",
          "--prefix-cache-memory",
          std::to_string(memory),
          "--prefix-cache-pool",
          spec.pool_socket.string(),
          "--prefix-cache-pool-instance",
          spec.name,
          "--preset",
          spec.preset,
          "--pages",
          std::to_string(spec.pages),
          "--rows",
          std::to_string(spec.rows),
          "--metrics-port",
          std::to_string(spec.metrics_port),
          "--attach-socket",
          spec.attach_socket().string()};
}

// Attaches a runtime with `planes` to the instance of `spec`, once its
// attach socket appears (within `bound`).
inline Result<std::unique_ptr<attach::AttachClient>> AttachRuntime(
    const PoolInstanceSpec& spec, const attach::testing::RuntimePlanes& planes,
    std::chrono::milliseconds bound) {
  const std::filesystem::path socket = spec.attach_socket();
  if (!WaitForFile(socket, bound)) return Status::Unavailable(socket.string() + " did not appear");
  return attach::AttachClient::Attach({.socket_path = socket.string()},
                                      {.runtime_id = "runtime at " + socket.string(),
                                       .model_identity = "synthetic/" + spec.preset,
                                       .state_mode = StateMode::kOrdinary,
                                       .page_tokens = spec.geometry().page_tokens},
                                      planes.Shared());
}

// Whether a lookup of `tokens` over `client` finds anything (a hit, within
// `bound`).
inline ::testing::AssertionResult Finds(attach::AttachClient& client,
                                        const std::vector<Token>& tokens,
                                        std::chrono::milliseconds bound) {
  if (!client.Lookup(tokens, 0, tokens.size()).ok()) {
    return ::testing::AssertionFailure() << "lookup not sent";
  }
  std::vector<attach::AttachEvent> events;
  if (!WaitAttachEvents(client, events, bound, [](const auto& e) { return !e.empty(); })) {
    return ::testing::AssertionFailure() << "no lookup result";
  }
  const auto* result = std::get_if<attach::LookupResult>(&events[0]);
  return result != nullptr && result->hit ? ::testing::AssertionSuccess()
                                          : ::testing::AssertionFailure() << "not found";
}

// The body of GET `path` on 127.0.0.1:`port` (empty on any failure).
inline std::string HttpGet(uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n = 0;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

// The value of the sample line starting with `sample` in a /metrics body
// (all ones when there is none).
inline uint64_t MetricSample(const std::string& metrics, const std::string& sample) {
  const size_t at = metrics.find("\n" + sample + " ");
  if (at == std::string::npos) return ~0ull;
  return std::stoull(metrics.substr(at + sample.size() + 2));
}

// That sample of the /metrics served on `port` now.
inline uint64_t ScrapeSample(uint16_t port, const std::string& sample) {
  return MetricSample(HttpGet(port, "/metrics"), sample);
}

// Whether that sample reaches at least `value` within `bound` (an instance's
// evictions reach the manager on its answers, after the store that evicted
// them has returned: docs/pool.md, "Puts never wait for the manager").
inline ::testing::AssertionResult SampleAtLeast(uint16_t port, const std::string& sample,
                                                uint64_t value, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  uint64_t seen = 0;
  while ((seen = ScrapeSample(port, sample)) == ~0ull || seen < value) {
    if (std::chrono::steady_clock::now() > deadline) {
      return ::testing::AssertionFailure() << sample << " is " << seen << ", below " << value;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ::testing::AssertionSuccess();
}

}  // namespace strata::testing

// Real processes over a real socket: a `strata rank`-like server process
// (attach_test_support.h), runtimes that attach to it with memfd planes, one
// of them killed with SIGKILL while attached.
#include <gtest/gtest.h>
#include <poll.h>
#include <pwd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "tests/support/attach_events.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;
using testing::AllocationsOf;
using testing::Pattern;
using testing::RuntimePlanes;
using testing::ServerProcess;

constexpr auto kEventBound = 10s;
constexpr uint64_t kPagesPerConversation = 4;
constexpr size_t kConversations = 2;

AttachServerOptions Options(std::optional<uid_t> peer_uid = std::nullopt) {
  AttachServerOptions o;
  o.socket_path = testing::TempSocketPath();
  o.expected = testing::Expectation();
  o.peer_uid = peer_uid;
  return o;
}

AttachIdentity Identity() {
  return {.runtime_id = "runtime",
          .model_identity = testing::kModel,
          .state_mode = StateMode::kOrdinary,
          .page_tokens = testing::TinyGeometry().page_tokens};
}

std::vector<Token> Tokens(uint64_t conversation) {
  std::vector<Token> t(kPagesPerConversation * testing::TinyGeometry().page_tokens);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<Token>(conversation * 100'000 + i);
  return t;
}

template <typename Done>
bool WaitEvents(AttachClient& client, std::vector<AttachEvent>& events, Done done) {
  return strata::testing::WaitAttachEvents(client, events, kEventBound, done);
}

size_t CountKind(const std::vector<AttachEvent>& events, StoreEvent::Kind kind) {
  return strata::testing::CountStoreEvents(events, kind);
}

// The publishing runtime (a child process): fills conversation c's pages
// (ids c*4 ..) and row (slot c) with Pattern, stores each, waits until every
// store is reported, tells the parent, then waits to be killed. Exit codes
// name the step that failed.
int PublishThenWait(const std::string& socket, int ready_fd) {
  RuntimePlanes planes(AllocationsOf(testing::TinyGeometry().ranks[0]));
  auto client = AttachClient::Attach({.socket_path = socket}, Identity(), planes.Shared());
  if (!client.ok()) return 20;
  for (uint64_t c = 0; c < kConversations; ++c) {
    const std::vector<Token> tokens = Tokens(c);
    const PrefixHistory history(tokens);
    PublishedCheckpoint cp;
    cp.checkpoint_id = c + 1;
    cp.key = history.key_at(tokens.size());
    cp.bucket = history.bucket_digest(tokens.size());
    for (uint64_t p = 0; p < kPagesPerConversation; ++p)
      cp.chain.emplace_back(static_cast<uint32_t>(c * 4 + p));
    cp.tail_pages = kPagesPerConversation;
    cp.row_slot = StateSlot(static_cast<uint32_t>(c));
    for (size_t a = 0; a < planes.allocations.size(); ++a) {
      const bool row = planes.allocations[a].group == AllocationGroup::kStateRows;
      for (uint64_t i = 0; i < (row ? 1 : kPagesPerConversation); ++i) {
        const uint64_t unit = row ? c : c * 4 + i;
        for (uint64_t o = 0; o < planes.allocations[a].unit_bytes; ++o) {
          planes.Unit(a, unit)[o] = Pattern(c, a, i, o);
        }
      }
    }
    if (!(*client)->Store(cp).ok()) return 21;
  }
  std::vector<AttachEvent> events;
  if (!WaitEvents(**client, events, [](const auto& e) {
        return CountKind(e, StoreEvent::Kind::kStored) == kConversations;
      })) {
    return 22;
  }
  if (::write(ready_fd, "s", 1) != 1) return 23;
  while (true) ::pause();  // killed by the parent while attached
}

TEST(AttachProcessTest, KilledRuntimeRestartsAndRestoresByteExactFromMemoryIntoOtherIds) {
  const AttachServerOptions options = Options();
  ServerProcess server(options);
  ASSERT_TRUE(server.ready());

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t publisher = ::fork();
  if (publisher == 0) ::_exit(PublishThenWait(options.socket_path, ready[1]));
  ::close(ready[1]);
  char byte = 0;
  const bool published = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  ::kill(publisher, SIGKILL);
  int status = 0;
  ::waitpid(publisher, &status, 0);
  ASSERT_TRUE(published) << "publisher exit code " << WEXITSTATUS(status);
  ASSERT_TRUE(WIFSIGNALED(status));

  // The restarted runtime: fresh planes (zeros), a new process image's view.
  RuntimePlanes planes(AllocationsOf(testing::TinyGeometry().ranks[0]));
  auto client =
      AttachClient::Attach({.socket_path = options.socket_path}, Identity(), planes.Shared());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (uint64_t c = 0; c < kConversations; ++c) {
    const std::vector<Token> tokens = Tokens(c);
    auto id = (*client)->Lookup(tokens, 0, tokens.size());
    ASSERT_TRUE(id.ok());
    std::vector<AttachEvent> events;
    ASSERT_TRUE(WaitEvents(**client, events, [](const auto& e) { return !e.empty(); }));
    const auto* result = std::get_if<LookupResult>(&events[0]);
    ASSERT_NE(result, nullptr);
    EXPECT_EQ(result->request_id, *id);
    ASSERT_TRUE(result->hit.has_value()) << "conversation " << c << " not found after restart";
    EXPECT_EQ(result->hit->pages, kPagesPerConversation);
    EXPECT_EQ(result->hit->tier, Tier::kMemory);
    // Different ids: pages 40 + 4c .., row slot 10 + c.
    InboundTicket ticket;
    ticket.ticket = JobId(100 + c);
    ticket.row_slot = StateSlot(static_cast<uint32_t>(10 + c));
    for (uint64_t p = 0; p < kPagesPerConversation; ++p)
      ticket.page_ids.emplace_back(static_cast<uint32_t>(40 + c * 4 + p));
    ASSERT_TRUE((*client)->Fetch(*result->hit, ticket).ok());
    events.clear();
    ASSERT_TRUE(WaitEvents(**client, events, [](const auto& e) {
      return CountKind(e, StoreEvent::Kind::kFetched) +
                 CountKind(e, StoreEvent::Kind::kFetchFailed) >
             0;
    }));
    ASSERT_EQ(CountKind(events, StoreEvent::Kind::kFetched), 1u);
    uint64_t mismatches = 0;
    for (size_t a = 0; a < planes.allocations.size(); ++a) {
      const bool row = planes.allocations[a].group == AllocationGroup::kStateRows;
      for (uint64_t i = 0; i < (row ? 1 : kPagesPerConversation); ++i) {
        const uint64_t unit = row ? ticket.row_slot.value : ticket.page_ids[i].value;
        for (uint64_t o = 0; o < planes.allocations[a].unit_bytes; ++o) {
          mismatches += planes.Unit(a, unit)[o] != Pattern(c, a, i, o) ? 1 : 0;
        }
      }
    }
    EXPECT_EQ(mismatches, 0u) << "conversation " << c;
  }
  EXPECT_TRUE((*client)->Close(kEventBound).ok());
  EXPECT_EQ(server.Stop(), 0);
}

TEST(AttachProcessTest, WrongGeometryIsRefusedNamingTheFirstDifference) {
  const AttachServerOptions options = Options();
  ServerProcess server(options);
  ASSERT_TRUE(server.ready());
  std::vector<SizedAllocation> allocs = AllocationsOf(testing::TinyGeometry().ranks[0]);
  allocs.back().count = 17;  // the row plane: 16 rows served
  RuntimePlanes planes(allocs);
  auto client =
      AttachClient::Attach({.socket_path = options.socket_path}, Identity(), planes.Shared());
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      client.status().message().find("row count: the runtime declares 17, this rank serves 16"),
      std::string::npos)
      << client.status().ToString();
  // The server keeps serving: a correct runtime attaches next.
  RuntimePlanes good(AllocationsOf(testing::TinyGeometry().ranks[0]));
  EXPECT_TRUE(
      AttachClient::Attach({.socket_path = options.socket_path}, Identity(), good.Shared()).ok());
  EXPECT_EQ(server.Stop(), 0);
}

// A runtime of another uid is refused: by SO_PEERCRED (a server admitting
// another uid than ours), and, when the test runs as root (CI does), a child
// that setuid()s to nobody is refused by the socket itself (0600).
TEST(AttachProcessTest, AnotherUidIsRefused) {
  const uid_t other = ::geteuid() + 1;
  const AttachServerOptions options = Options(other);
  ServerProcess server(options);
  ASSERT_TRUE(server.ready());
  RuntimePlanes planes(AllocationsOf(testing::TinyGeometry().ranks[0]));
  auto client =
      AttachClient::Attach({.socket_path = options.socket_path}, Identity(), planes.Shared());
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("peer uid " + std::to_string(::geteuid())),
            std::string::npos)
      << client.status().ToString();
  EXPECT_EQ(server.Stop(), 0);

  if (::geteuid() != 0) return;
  const AttachServerOptions root_only = Options();
  ServerProcess root_server(root_only);
  ASSERT_TRUE(root_server.ready());
  const passwd* nobody = ::getpwnam("nobody");
  const uid_t nobody_uid = nobody != nullptr ? nobody->pw_uid : 65534;
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(nobody_uid) != 0 || ::setuid(nobody_uid) != 0) ::_exit(30);
    RuntimePlanes p(AllocationsOf(testing::TinyGeometry().ranks[0]));
    auto c = AttachClient::Attach({.socket_path = root_only.socket_path}, Identity(), p.Shared());
    ::_exit(c.ok() ? 31 : 0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(root_server.Stop(), 0);
}

}  // namespace
}  // namespace strata::attach

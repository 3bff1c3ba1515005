// The attach server's detach after the store stopped (issue 20): a sharded
// store that lost a peer never reports its outstanding jobs, so the detach
// must wait for the copies over the planes (the gate) and nothing else.
// Driven in the test's thread: a raw channel plays the runtime, the store,
// transfers and planes are doubles (attach_doubles.h), and the clock is a
// number the test holds still, so nothing here waits on the drain bound.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "attach/attach_server.h"
#include "tests/unit/attach/attach_doubles.h"
#include "tests/unit/attach/attach_test_support.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kNowMs = 1'000'000;  // the server's clock: never advanced unless said
constexpr uint64_t kDrainBoundMs = 30'000;
constexpr auto kStepWait = 100ms;  // one Step's bound on socket activity
constexpr int kStepsMax = 50;      // bound on Steps until an expected event
constexpr auto kReceiveBound = 5s;

enum class WithGate : unsigned char { kNo, kYes };

using testing::EventFor;
constexpr auto Stopped = testing::StoppedEvent;

TransferJob Copy(uint64_t id) {
  TransferJob j;
  j.id = JobId(id);
  return j;
}

// A server over the doubles, and a runtime attached to it by a raw channel
// with checkpoints 1, 2 and fetch ticket 7 accepted by the store.
class Rig {
 public:
  explicit Rig(WithGate with_gate) : importer_(testing::TinyGeometry()) {
    auto manual = std::make_unique<testing::ManualTransfers>();
    manual_ = manual.get();
    gate_ = std::make_unique<GatedTransfers>(std::move(manual));
    // The store's copies: through the gate, or straight (no gate to count them).
    store_.copies = with_gate == WithGate::kYes ? static_cast<Transfers*>(gate_.get()) : manual_;
    AttachServerOptions o;
    o.socket_path = testing::TempSocketPath();
    o.expected = testing::Expectation();
    o.drain_bound_ms = kDrainBoundMs;
    Result<std::unique_ptr<AttachServer>> server =
        AttachServer::Listen(o, {.store = &store_,
                                 .planes = &importer_,
                                 .gate = with_gate == WithGate::kYes ? gate_.get() : nullptr});
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return;
    server_ = std::move(*server);
    if (with_gate == WithGate::kNo) gate_->Open();  // the store copies regardless
    Attach(o.socket_path);
  }

  // Steps the server until `done` holds (at most kStepsMax turns); the clock stays at `now_ms`.
  template <typename Done>
  bool StepUntil(Done done, uint64_t now_ms = kNowMs) {
    for (int i = 0; i < kStepsMax && !done(); ++i) server_->Step(now_ms, kStepWait);
    return done();
  }
  void Send(const AttachMessage& m) { ASSERT_TRUE(runtime_->Send(m).ok()); }
  // Messages the server sent so far, without waiting.
  std::vector<AttachMessage> Drain() {
    std::vector<AttachMessage> out;
    for (;;) {
      Result<std::optional<Received>> got = runtime_->TryReceive();
      if (!got.ok() || !got->has_value()) return out;
      out.push_back(std::move((*got)->message));
    }
  }
  Result<Received> Receive() { return runtime_->Receive(kReceiveBound); }
  // Attached, with its three jobs accepted.
  bool ready() const { return ready_; }

  testing::ManualTransfers* manual_;
  std::unique_ptr<GatedTransfers> gate_;
  testing::ScriptedStore store_;
  testing::RecordingImporter importer_;
  std::unique_ptr<AttachServer> server_;

 private:
  void Attach(const std::string& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    ASSERT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    runtime_.emplace(std::move(fd));
    std::vector<int> fds;
    const std::vector<std::vector<SharedAllocation>> shared = planes_.Shared();
    for (const SharedAllocation& a : shared.front()) fds.push_back(a.fd);
    ASSERT_TRUE(runtime_->Send(testing::HelloFor(testing::TinyGeometry()), fds).ok());
    ASSERT_TRUE(StepUntil([this] { return server_->attached(); }));
    Result<Received> accept = Receive();
    ASSERT_TRUE(accept.ok() && std::holds_alternative<HelloAccept>(accept->message));
    StoreRequest s;
    for (uint64_t id : {1, 2}) {
      s.checkpoint.checkpoint_id = id;
      Send(s);
    }
    FetchRequest f;
    f.ticket.ticket = JobId(7);
    Send(f);
    ASSERT_TRUE(StepUntil([this] { return store_.stores == 2 && store_.fetches == 1; }));
    ready_ = true;
  }

  testing::RuntimePlanes planes_{testing::AllocationsOf(testing::TinyGeometry().ranks[0])};
  std::optional<UnixChannel> runtime_;
  bool ready_ = false;
};

TEST(AttachServerWakeTest, AReadableStoreDescriptorEndsTheTurnAndTheNextPollsTheStore) {
  Rig rig(WithGate::kNo);
  ASSERT_TRUE(rig.ready());
  UniqueFd answers(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(answers.valid());
  rig.store_.poll_fd = answers.get();
  const uint64_t one = 1;
  ASSERT_EQ(::write(answers.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  // A turn that would otherwise sleep two minutes: the store's readable
  // descriptor (a pool manager's answer, which this double leaves unread)
  // ends it, and the next turn polls the store.
  const auto long_wait = std::chrono::minutes(2);
  const auto start = std::chrono::steady_clock::now();
  rig.server_->Step(kNowMs, long_wait);
  EXPECT_LT(std::chrono::steady_clock::now() - start, long_wait);
  const int polls = rig.store_.polls;
  rig.server_->Step(kNowMs, long_wait);
  EXPECT_EQ(rig.store_.polls, polls + 1);
  rig.store_.poll_fd = -1;
}

bool HasCloseDone(const std::vector<AttachMessage>& messages) {
  for (const AttachMessage& m : messages) {
    if (std::holds_alternative<CloseDone>(m)) return true;
  }
  return false;
}

TEST(AttachServerDetachTest, StoppedStoreDetachWaitsForTheGateAloneThenAnswersCloseDone) {
  Rig rig(WithGate::kYes);
  ASSERT_TRUE(rig.ready());
  // Two copies over the planes in flight, then the store stops for good.
  ASSERT_TRUE(rig.gate_->Submit(Copy(100)).ok());
  ASSERT_TRUE(rig.gate_->Submit(Copy(101)).ok());
  rig.store_.queued.push_back(Stopped());
  rig.Send(CloseRequest{});
  ASSERT_TRUE(rig.StepUntil([&] { return !rig.server_->attached(); }));
  for (int i = 0; i < 3; ++i) rig.server_->Step(kNowMs, kStepWait);
  EXPECT_EQ(rig.importer_.releases, 0) << "planes released under two running copies";
  EXPECT_FALSE(HasCloseDone(rig.Drain()));
  // No copy is issued once detaching.
  EXPECT_EQ(rig.gate_->Submit(Copy(102)).code(), StatusCode::kUnavailable);

  rig.manual_->finished = 1;
  rig.server_->Step(kNowMs, kStepWait);
  EXPECT_EQ(rig.importer_.releases, 0) << "planes released under a running copy";

  rig.manual_->finished = 1;  // the last copy: only the store's abandoned jobs remain
  ASSERT_TRUE(rig.StepUntil([&] { return rig.importer_.releases == 1; }));
  Result<Received> done = rig.Receive();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_TRUE(std::holds_alternative<CloseDone>(done->message));
  const Status& s = std::get<CloseDone>(done->message).status;
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("lost rank 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("checkpoint(s) 1, 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("fetch ticket(s) 7"), std::string::npos) << s.message();
  EXPECT_TRUE(rig.server_->wedged_reason().empty()) << rig.server_->wedged_reason();
}

TEST(AttachServerDetachTest, HealthyStoreDetachAlsoWaitsForTheStoresEvents) {
  Rig rig(WithGate::kYes);
  ASSERT_TRUE(rig.ready());
  rig.store_.queued.push_back(EventFor(StoreEvent::Kind::kStored, 1));
  rig.store_.queued.push_back(EventFor(StoreEvent::Kind::kFetched, 7));
  rig.Send(CloseRequest{});
  ASSERT_TRUE(rig.StepUntil([&] { return !rig.server_->attached(); }));
  for (int i = 0; i < 3; ++i) rig.server_->Step(kNowMs, kStepWait);
  EXPECT_EQ(rig.importer_.releases, 0) << "released before checkpoint 2's event went out";
  EXPECT_FALSE(HasCloseDone(rig.Drain()));

  rig.store_.queued.push_back(EventFor(StoreEvent::Kind::kStoreFailed, 2));
  ASSERT_TRUE(rig.StepUntil([&] { return rig.importer_.releases == 1; }));
  Result<Received> done = rig.Receive();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_TRUE(std::holds_alternative<CloseDone>(done->message));
  EXPECT_TRUE(std::get<CloseDone>(done->message).status.ok());
}

TEST(AttachServerDetachTest, WithoutAGateAStoppedStoresJobsKeepThePlanesMapped) {
  Rig rig(WithGate::kNo);
  ASSERT_TRUE(rig.ready());
  rig.store_.queued.push_back(Stopped());
  rig.Send(CloseRequest{});
  ASSERT_TRUE(rig.StepUntil([&] { return !rig.server_->attached(); }));
  for (int i = 0; i < 3; ++i) rig.server_->Step(kNowMs, kStepWait);
  EXPECT_EQ(rig.importer_.releases, 0) << "nothing proves the store's copies ended";
  // Past the drain bound the server gives up on this runtime: mapped for good.
  rig.server_->Step(kNowMs + kDrainBoundMs, kStepWait);
  EXPECT_EQ(rig.importer_.releases, 0);
  EXPECT_FALSE(rig.server_->wedged_reason().empty());
  EXPECT_FALSE(HasCloseDone(rig.Drain()));
}

}  // namespace
}  // namespace strata::attach

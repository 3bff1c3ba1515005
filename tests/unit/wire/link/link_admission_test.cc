// Accepted links before their Hello is accepted (LinkAdmission::kAwaitHello,
// the Listener's default): a small frame limit, refused before the body is
// read or allocated, lifted by AcceptHello(); and a Hello deadline that
// closes a connection that never gets one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/wire/link/raw_peer.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"
#include "wire/listener.h"

namespace strata::wire {
namespace {

using testing::EncodeWords;
using ::testing::HasSubstr;
using testing::LoopbackListener;
using testing::RawPeer;

// Accepted links await their Hello, with no heartbeats to keep counts exact.
ListenerOptions AwaitingHello(std::chrono::milliseconds hello_timeout = testing::kEventWait) {
  ListenerOptions o = testing::QuietListening();
  o.admission = LinkAdmission::kAwaitHello;
  o.link_options.hello_timeout = hello_timeout;
  o.link_options.close_timeout =
      std::chrono::milliseconds(100);  // the raw peer never ends its stream
  return o;
}

// The table of a one-segment frame declaring `bytes` (no body follows).
std::vector<uint64_t> TableDeclaring(size_t bytes) { return {uint64_t{bytes / 8} << 32}; }

TEST(LinkAdmissionTest, AnOversizedFrameBeforeHelloIsRefusedFromItsTable) {
  LoopbackListener listener(AwaitingHello());
  RawPeer peer(listener);
  // 1 MiB: far under frame_bytes_max (16 MiB), over the pre-Hello 64 KiB.
  peer.WriteWords(TableDeclaring(size_t{1} << 20));
  const LinkState state = peer.WaitClosed();
  EXPECT_EQ(state.cause, CloseCause::kRejectedFrame);
  EXPECT_THAT(state.reason.message(), HasSubstr("the limit is 65536"));
  EXPECT_EQ(peer.link().stats().rejected(FrameRejection::kOversized), 1u);
  EXPECT_EQ(peer.link().stats().bytes_in, 8u);  // the table only: no body read
  EXPECT_TRUE(peer.SeesConnectionEnd());
}

TEST(LinkAdmissionTest, AcceptHelloLiftsTheLimitForTheNextFrames) {
  LoopbackListener listener(AwaitingHello());
  RawPeer peer(listener);
  peer.WriteWords(EncodeWords(testing::SampleHello()));
  std::optional<Message> hello = peer.events().messages.Pop();
  ASSERT_TRUE(hello.has_value());
  ASSERT_TRUE(std::holds_alternative<Hello>(*hello));
  peer.link().AcceptHello();
  Job big = testing::SampleJob();
  big.record.page_ids.assign(size_t{1} << 16, PageId(3));  // a 256 KiB frame
  big.record.tail_pages = big.record.first_page + (uint32_t{1} << 16);
  peer.WriteWords(EncodeWords(big));
  std::optional<Message> job = peer.events().messages.Pop();
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(std::get<Job>(*job).record.page_ids.size(), size_t{1} << 16);
  EXPECT_EQ(peer.link().state().phase, LinkPhase::kOpen);
}

TEST(LinkAdmissionTest, AConnectionWithoutAHelloIsClosedAtTheDeadline) {
  LoopbackListener listener(AwaitingHello(std::chrono::milliseconds(50)));
  RawPeer peer(listener);  // connects and stays silent
  const LinkState state = peer.WaitClosed();
  EXPECT_EQ(state.cause, CloseCause::kHelloTimeout);
  EXPECT_THAT(state.reason.message(), HasSubstr("no Hello accepted within 50 ms"));
  EXPECT_TRUE(peer.SeesConnectionEnd());
}

TEST(LinkAdmissionTest, AHelloThatIsNeverAcceptedDoesNotStopTheDeadline) {
  LoopbackListener listener(AwaitingHello(std::chrono::milliseconds(50)));
  RawPeer peer(listener);
  peer.WriteWords(EncodeWords(testing::SampleHello()));
  ASSERT_TRUE(peer.events().messages.Pop().has_value());
  EXPECT_EQ(peer.WaitClosed().cause, CloseCause::kHelloTimeout);
}

TEST(LinkAdmissionTest, DialedLinksAreAdmittedFromTheStart) {
  LinkOptions o;
  EXPECT_EQ(o.admission, LinkAdmission::kAdmitted);
  ListenerOptions l;
  EXPECT_EQ(l.admission, LinkAdmission::kAwaitHello);
  EXPECT_EQ(l.bind.address, "127.0.0.1");  // nothing listens beyond loopback unless configured
}

}  // namespace
}  // namespace strata::wire

// A Hello that shares cudaMalloc'd planes by legacy CUDA IPC handle
// (PlaneHandleKind::kCudaIpc): the handles and offsets travel with no fd,
// the codec refuses a handle of the wrong size or one without kCudaIpc, and
// the check pairs one handle with each plane.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <functional>

#include "attach/client/attach_codec.h"
#include "attach/client/unix_channel.h"
#include "attach/hello_check.h"
#include "tests/unit/attach/attach_test_support.h"
#include "wire/attach.capnp.h"

namespace strata::attach {
namespace {

using namespace std::chrono_literals;

AttachHello IpcHello() {
  AttachHello h = testing::HelloFor(testing::TinyGeometry());
  h.plane_handle = PlaneHandleKind::kCudaIpc;
  for (size_t i = 0; i < AllocationCount(h); ++i) {
    IpcPlane p;
    p.handle.fill(static_cast<uint8_t>(0x10 + i));
    p.offset = 512 * i;
    h.ipc_planes.push_back(p);
  }
  return h;
}

AttachExpectation IpcExpectation() {
  AttachExpectation e = testing::Expectation();
  e.plane_handles = {PlaneHandleKind::kCudaVmmFd, PlaneHandleKind::kCudaIpc};
  return e;
}

Result<Received> RoundTrip(const AttachHello& h) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  UnixChannel a{UniqueFd(fds[0])}, b{UniqueFd(fds[1])};
  STRATA_RETURN_IF_ERROR(a.Send(h));
  return b.Receive(5s);
}

TEST(AttachIpcHelloTest, HandlesAndOffsetsTravelWithoutFds) {
  const AttachHello sent = IpcHello();
  Result<Received> got = RoundTrip(sent);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->fds.empty());
  const auto& h = std::get<AttachHello>(got->message);
  EXPECT_EQ(h.plane_handle, PlaneHandleKind::kCudaIpc);
  ASSERT_EQ(h.ipc_planes.size(), sent.ipc_planes.size());
  for (size_t i = 0; i < h.ipc_planes.size(); ++i) {
    EXPECT_EQ(h.ipc_planes[i].handle, sent.ipc_planes[i].handle) << i;
    EXPECT_EQ(h.ipc_planes[i].offset, sent.ipc_planes[i].offset) << i;
  }
  ASSERT_TRUE(CheckHello(h, 0, IpcExpectation()).ok());
  const std::vector<PlaneFd> planes = PlaneFdsOf(h, {}, testing::TinyGeometry());
  ASSERT_EQ(planes.size(), h.ipc_planes.size());
  EXPECT_EQ(planes.back().page_plane, std::nullopt);  // the row, listed last
  ASSERT_TRUE(planes.back().ipc.has_value());
  EXPECT_EQ(planes.back().ipc->offset, h.ipc_planes.back().offset);
  EXPECT_EQ(planes.back().fd, -1);
}

TEST(AttachIpcHelloTest, EncodeRefusesHandlesThatDoNotMatchTheKind) {
  AttachHello missing = IpcHello();
  missing.ipc_planes.pop_back();
  EXPECT_EQ(EncodeAttachFrame(missing).status().code(), StatusCode::kInvalidArgument);
  AttachHello stray = IpcHello();
  stray.plane_handle = PlaneHandleKind::kCudaVmmFd;
  EXPECT_EQ(EncodeAttachFrame(stray).status().code(), StatusCode::kInvalidArgument);
}

// A valid IPC Hello's frame, re-encoded after `edit` changed its first
// allocation as a hostile or broken runtime could: the decoder's check, not
// the encoder's, must refuse it.
Result<AttachMessage> DecodeEdited(
    const std::function<void(wire::attach_schema::Hello::Builder)>& edit) {
  Result<wire::Frame> frame = EncodeAttachFrame(IpcHello());
  EXPECT_TRUE(frame.ok()) << frame.status().ToString();
  capnp::FlatArrayMessageReader reader(
      kj::arrayPtr(reinterpret_cast<const capnp::word*>(frame->words.data()), frame->words.size()));
  capnp::MallocMessageBuilder builder;
  builder.setRoot(reader.getRoot<wire::attach_schema::Envelope>());
  edit(builder.getRoot<wire::attach_schema::Envelope>().getHello());
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(builder);
  std::vector<uint64_t> words(flat.size());
  std::memcpy(words.data(), flat.begin(), flat.asBytes().size());
  return DecodeAttachFrame(words);
}

TEST(AttachIpcHelloTest, DecodeRefusesAHandleOfTheWrongSizeOrWithoutTheKind) {
  // Unchanged, the re-encoded frame decodes: the edits below are what fail.
  ASSERT_TRUE(DecodeEdited([](wire::attach_schema::Hello::Builder) {}).ok());
  const uint8_t short_handle[63] = {};
  Result<AttachMessage> wrong_size = DecodeEdited([&](wire::attach_schema::Hello::Builder h) {
    h.getRanks()[0].getAllocations()[0].setIpcHandle(
        capnp::Data::Reader(short_handle, sizeof(short_handle)));
  });
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_EQ(wrong_size.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_size.status().message().find("63 bytes"), std::string::npos)
      << wrong_size.status().ToString();
  Result<AttachMessage> stray = DecodeEdited([](wire::attach_schema::Hello::Builder h) {
    h.setPlaneHandle(wire::attach_schema::PlaneHandle::CUDA_VMM_FD);
  });
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("not shared by IPC handle"), std::string::npos)
      << stray.status().ToString();
}

TEST(AttachIpcHelloTest, CheckRefusesFdsOrAMissingKind) {
  const AttachHello h = IpcHello();
  Status fds = CheckHello(h, 1, IpcExpectation());
  EXPECT_NE(fds.message().find("shared-memory fds"), std::string::npos) << fds.ToString();
  Status memfd_rank = CheckHello(h, 0, testing::Expectation());
  EXPECT_NE(memfd_rank.message().find("legacy CUDA IPC"), std::string::npos)
      << memfd_rank.ToString();
}

}  // namespace
}  // namespace strata::attach

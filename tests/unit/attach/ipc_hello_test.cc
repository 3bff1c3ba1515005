// A Hello that shares cudaMalloc'd planes by legacy CUDA IPC handle
// (PlaneHandleKind::kCudaIpc): the handles and offsets travel with no fd,
// the codec refuses a handle of the wrong size or one without kCudaIpc, and
// the check pairs one handle with each plane.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include "attach/client/attach_codec.h"
#include "attach/client/unix_channel.h"
#include "attach/hello_check.h"
#include "tests/unit/attach/attach_test_support.h"

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

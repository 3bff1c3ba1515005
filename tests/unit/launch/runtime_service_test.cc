// The runtime service's admission (issue 19 point 7): the job's token on
// every request, a body cap checked before the body is read, loopback by
// default.
#include "launch/runtime/runtime_service.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "launch/config/config.h"
#include "launch/presets.h"
#include "launch/runtime/service_guard.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

JobSecret Secret(char fill) { return *JobSecret::FromText(std::string(40, fill), "test"); }

CacheGeometry OneRank() { return *PresetGeometry("tiny", 1, /*pages=*/8, /*rows=*/4); }

// One peer's planes behind its service, with the job's token.
struct Served {
  explicit Served(std::chrono::seconds io_timeout = std::chrono::seconds(10))
      : planes(OneRank()), token(RuntimeServiceToken(Secret('s'))) {
    Result<std::unique_ptr<RuntimeService>> s = RuntimeService::Start(
        planes, std::filesystem::temp_directory_path().string(),
        {.bind = std::string(kLoopbackBind), .port = 0, .token = token, .io_timeout = io_timeout});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    service = std::move(s).value();
  }
  uint64_t page_bytes() const { return planes.geometry().ranks[0].page_planes[0].unit_bytes; }
  std::vector<uint8_t> Page(uint32_t page) {
    std::vector<uint8_t> bytes(page_bytes());
    EXPECT_TRUE(planes.ReadPage(0, 0, PageId(page), bytes).ok());
    return bytes;
  }
  HostPlanes planes;
  std::string token;
  std::unique_ptr<RuntimeService> service;
};

TEST(ServiceGuardTest, TokenIsTheJobsAndSecretDependent) {
  const std::string a = RuntimeServiceToken(Secret('a'));
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a, RuntimeServiceToken(Secret('a')));
  EXPECT_NE(a, RuntimeServiceToken(Secret('b')));
}

TEST(ServiceGuardTest, AdmitsOnlyTheBearerOfTheToken) {
  const std::string t = RuntimeServiceToken(Secret('a'));
  EXPECT_EQ(AdmitRequest("Bearer " + t, t), ServiceAdmission::kAdmit);
  EXPECT_EQ(AdmitRequest("", t), ServiceAdmission::kNoToken);
  EXPECT_EQ(AdmitRequest("Basic " + t, t), ServiceAdmission::kNoToken);
  EXPECT_EQ(AdmitRequest("Bearer " + RuntimeServiceToken(Secret('b')), t),
            ServiceAdmission::kWrongToken);
  EXPECT_EQ(AdmitRequest("Bearer " + t.substr(1), t), ServiceAdmission::kWrongToken);
  EXPECT_EQ(AdmitRequest("Bearer ", t), ServiceAdmission::kWrongToken);
}

TEST(ServiceGuardTest, BodyMaxIsTheLargestUnit) {
  RankGeometry g;
  g.row = {"row", 100};
  g.page_planes = {{"k", 4096}, {"v", 8192}};
  EXPECT_EQ(RuntimeServiceBodyMax(g), 8192u);
  g.row.unit_bytes = 9000;
  EXPECT_EQ(RuntimeServiceBodyMax(g), 9000u);
}

TEST(RuntimeServiceTest, DefaultBindsAreLoopback) {
  const RankConfig c;
  EXPECT_EQ(c.runtime.service_bind, "127.0.0.1");
  EXPECT_EQ(c.metrics.bind, "127.0.0.1");
}

TEST(RuntimeServiceTest, RequestWithoutTheTokenIsRefusedAndWritesNothing) {
  Served s;
  const std::vector<uint8_t> before = s.Page(3);
  const std::string body(s.page_bytes(), '\x5a');
  httplib::Client anonymous("127.0.0.1", s.service->port());
  auto res = anonymous.Put("/page/0/3", body, "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(s.Page(3), before);
  res = anonymous.Put("/row/1", std::string(s.planes.geometry().ranks[0].row.unit_bytes, 'x'),
                      "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = anonymous.Get("/records");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);

  httplib::Client stranger("127.0.0.1", s.service->port());
  stranger.set_bearer_token_auth(RuntimeServiceToken(Secret('x')).c_str());
  res = stranger.Put("/page/0/3", body, "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(s.Page(3), before);
}

TEST(RuntimeServiceTest, TheJobsRemotePlanesWriteAndRead) {
  Served peer;
  HostPlanes zero(OneRank());
  CacheGeometry all = OneRank();
  all.ranks.push_back(all.ranks[0]);
  RemotePlanes remote(all, zero, {"127.0.0.1:" + std::to_string(peer.service->port())}, peer.token);
  const std::vector<uint8_t> page(peer.page_bytes(), 0x7e);
  ASSERT_TRUE(remote.WritePage(1, 0, PageId(2), page).ok());
  EXPECT_EQ(peer.Page(2), page);
  std::vector<uint8_t> back(page.size());
  ASSERT_TRUE(remote.ReadPage(1, 0, PageId(2), back).ok());
  EXPECT_EQ(back, page);

  RemotePlanes wrong(all, zero, {"127.0.0.1:" + std::to_string(peer.service->port())},
                     RuntimeServiceToken(Secret('x')));
  EXPECT_FALSE(wrong.WritePage(1, 0, PageId(5), page).ok());
}

TEST(RuntimeServiceTest, BodyAboveTheLargestUnitIsRefusedWithToken) {
  Served s;
  const std::vector<uint8_t> before = s.Page(4);
  const uint64_t body_max = RuntimeServiceBodyMax(s.planes.geometry().ranks[0]);
  httplib::Client c("127.0.0.1", s.service->port());
  c.set_bearer_token_auth(s.token.c_str());
  auto res = c.Put("/page/0/4", std::string(body_max + 1, 'z'), "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(s.Page(4), before);
}

// Sends `request` on a fresh loopback connection and returns what the server
// answers, waiting at most `bound` for it (the connection stays open for
// writing, so a server that waits for the rest of the body answers nothing).
std::string Exchange(uint16_t port, const std::string& request, std::chrono::seconds bound) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval tv{.tv_sec = static_cast<time_t>(bound.count()), .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string answer(512, '\0');
  const ssize_t n = recv(fd, answer.data(), answer.size(), 0);
  close(fd);
  answer.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return answer;
}

TEST(RuntimeServiceTest, OversizedBodyIsRefusedBeforeItIsRead) {
  // The server would wait this long for a body it reads; the answer must
  // come well within the client's bound, from the header alone.
  Served s(/*io_timeout=*/std::chrono::seconds(300));
  const std::vector<uint8_t> before = s.Page(0);
  const std::string head =
      "PUT /page/0/0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Authorization: Bearer " +
      s.token + "\r\nContent-Length: " + std::to_string(1ull << 30) +
      "\r\nContent-Type: application/octet-stream\r\n\r\n";
  // A GiB is announced and 16 bytes sent: only the header can decide.
  const std::string answer =
      Exchange(s.service->port(), head + std::string(16, 'z'), std::chrono::seconds(60));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
  EXPECT_EQ(s.Page(0), before);
}

TEST(RuntimeServiceTest, TokenIsCheckedBeforeTheBodyIsRead) {
  Served s(/*io_timeout=*/std::chrono::seconds(300));
  const std::string head = "PUT /page/0/0 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                           std::to_string(s.page_bytes()) +
                           "\r\nContent-Type: application/octet-stream\r\n\r\n";
  const std::string answer = Exchange(s.service->port(), head, std::chrono::seconds(60));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 401")) << answer;
}

}  // namespace
}  // namespace strata

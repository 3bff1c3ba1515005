// The manager in a process of its own (forked, the same code `strata pool`
// runs): the arena's memfd crosses the process boundary, one client puts and
// another claims byte-exact; a SIGKILLed manager fails a claim cleanly, and a
// restarted one serves again without the clients restarting.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <numeric>
#include <string>
#include <vector>

#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_server.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotBytes = 64 * 1024;
constexpr int kReadyBoundMs = 10'000;

// A manager process: forked, serving until killed or until the parent's end of
// `stay` closes.
class ManagerProcess {
 public:
  ManagerProcess(const std::string& socket_path, uint64_t generation) {
    int ready[2];
    int stay[2];
    if (::pipe(ready) != 0 || ::pipe(stay) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(stay[1]);
      PoolServerOptions o;
      o.name = "process";
      o.socket_path = socket_path;
      o.slot_bytes = kSlotBytes;
      o.slot_count = 16;
      o.huge_pages = HugePages::kNever;
      auto server = PoolServer::Start(o, generation);
      const char byte = server.ok() ? 1 : 0;
      (void)!::write(ready[1], &byte, 1);
      char ignored;
      (void)!::read(stay[0], &ignored, 1);  // until the parent closes or kills us
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(stay[0]);
    stay_ = stay[1];
    pollfd p{ready[0], POLLIN, 0};
    char byte = 0;
    ready_ = ::poll(&p, 1, kReadyBoundMs) == 1 && ::read(ready[0], &byte, 1) == 1 && byte == 1;
    ::close(ready[0]);
  }
  ~ManagerProcess() {
    if (stay_ >= 0) ::close(stay_);
    if (pid_ > 0) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  bool ready() const { return ready_; }
  void Kill() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stay_ = -1;
  bool ready_ = false;
};

PoolClientOptions Options(const std::string& socket_path, const std::string& gpu) {
  PoolClientOptions o;
  o.socket_path = socket_path;
  o.hello.instance_sources = {gpu};
  o.hello.model_identity[0] = 3;
  o.hello.layout[0] = 4;
  o.hello.rank_plane_bytes = {{512, 2048}};
  o.hello.page_tokens = 64;
  o.answer_bound = std::chrono::milliseconds(5'000);
  return o;
}

std::vector<std::byte> Pattern(uint64_t bytes, uint8_t seed) {
  std::vector<std::byte> b(bytes);
  for (uint64_t i = 0; i < bytes; ++i) b[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return b;
}

class PoolProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-poolp-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    socket_ = dir_ + "/pool.sock";
    tokens_.resize(192);
    std::iota(tokens_.begin(), tokens_.end(), 40);
  }
  void TearDown() override {
    ::unlink(socket_.c_str());
    ::rmdir(dir_.c_str());
  }

  Status PutFrom(PoolClient& client, uint8_t seed) {
    const PrefixHistory h(tokens_);
    return client.Put(h.key_at(128), std::nullopt, h.bucket_digest(128),
                      Pattern(2 * kSlotBytes + 5, seed), PutKind::kCascade);
  }

  std::string dir_;
  std::string socket_;
  std::vector<Token> tokens_;
};

TEST_F(PoolProcessTest, ClientsShareThroughAManagerProcess) {
  ManagerProcess manager(socket_, 1);
  ASSERT_TRUE(manager.ready());
  auto a = PoolClient::Connect(Options(socket_, "GPU-a"));
  auto b = PoolClient::Connect(Options(socket_, "GPU-b"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(PutFrom(**a, 9).ok());
  auto chain = (*b)->Lookup(tokens_, 0, tokens_.size());
  ASSERT_TRUE(chain.ok() && chain->has_value());
  auto copied = (*b)->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->front(), Pattern(2 * kSlotBytes + 5, 9));
}

TEST_F(PoolProcessTest, KilledManagerFailsCleanlyAndARestartServesAgain) {
  auto manager = std::make_unique<ManagerProcess>(socket_, 1);
  ASSERT_TRUE(manager->ready());
  auto a = PoolClient::Connect(Options(socket_, "GPU-a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(PutFrom(**a, 1).ok());
  auto chain = (*a)->Lookup(tokens_, 0, tokens_.size());
  ASSERT_TRUE(chain.ok() && chain->has_value());
  const std::vector<PrefixKey> keys = **chain;

  manager->Kill();
  auto lost = (*a)->ClaimCopy(keys);
  EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable) << "the instance would recompute";

  manager = std::make_unique<ManagerProcess>(socket_, 2);
  ASSERT_TRUE(manager->ready());
  auto again = PoolClient::Connect(Options(socket_, "GPU-a"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->accepted().generation, 2u) << "a new arena";
  auto empty = (*again)->Lookup(tokens_, 0, tokens_.size());
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value()) << "nothing survives a manager restart yet";
  ASSERT_TRUE(PutFrom(**again, 2).ok());
  auto restored = (*again)->ClaimCopy(*(*(*again)->Lookup(tokens_, 0, tokens_.size())));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->front(), Pattern(2 * kSlotBytes + 5, 2));
}

}  // namespace
}  // namespace strata::pool

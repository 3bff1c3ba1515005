// The qualification with attached runtime processes and planes in GPU
// memory: two `strata rank --gpus N --attach-socket` processes (ranks on one
// device) and two `strata runtime --gpus N` processes, each runtime sharing
// its planes as CUDA VMM allocations (launch/runtime/vmm_planes.h). Phases
// 1-2, then every process restarted for phase 3: every phase passes (every
// restored byte is checked on both ranks) and every process exits 0. Run
// twice: on the transport each rank's probe picks (staged here), and with
// transport = "direct" under the test-only compatibility switch, where each
// rank's share of every record job moves between its record files and its
// attached runtime's GPU planes through cuFile.
//
// Opt-in like the other GPU tests (STRATA_GPU_TESTS=1, STRATA_GPU_DEVICE).
// STRATA_BIN names the strata binary (default: next to this binary, or one
// folder up in a build tree). Every process runs under timeout(1), so each
// wait below is bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/gpu/cufile_gpu_support.h"

extern char** environ;

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr int kWorld = 2;
constexpr char kProcessBoundSeconds[] = "300";

bool OptedIn() {
  const char* opt_in = std::getenv("STRATA_GPU_TESTS");
  return opt_in != nullptr && std::string(opt_in) == "1";
}

std::string Device() {
  const char* d = std::getenv("STRATA_GPU_DEVICE");
  return d != nullptr ? std::to_string(std::strtol(d, nullptr, 10)) : "0";
}

std::string StrataBin() {
  if (const char* b = std::getenv("STRATA_BIN")) return b;
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  return fs::exists(self / "strata") ? (self / "strata").string()
                                     : (self / ".." / "strata").string();
}

// Starts `timeout <bound> strata <args...>` with its output in `log`.
pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> argv = {"timeout", kProcessBoundSeconds, StrataBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  raw.reserve(argv.size() + 1);
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "timeout", &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int Wait(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class GpuRuntimeProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OptedIn()) GTEST_SKIP() << "GPU tests are opt-in: set STRATA_GPU_TESTS=1";
    char tmpl[] = "/var/tmp/strata-gpu-runtime-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "job.secret") << std::string(64, 's') << "\n";
    fs::permissions(dir_ / "job.secret", fs::perms::owner_read | fs::perms::owner_write);
    std::random_device rd;
    base_ = 10000 + static_cast<int>(rd() % 20000);
  }
  void TearDown() override {
    if (!dir_.empty() && std::getenv("KEEP_TEST_DIR") == nullptr) fs::remove_all(dir_);
  }

  std::vector<std::string> Common(int rank) const {
    return {"--rank",
            std::to_string(rank),
            "--world-size",
            std::to_string(kWorld),
            "--master-port",
            std::to_string(base_),
            "--local-rank",
            std::to_string(rank),
            "--metrics-port",
            std::to_string(base_ + 10),
            "--job-secret-file",
            (dir_ / "job.secret").string(),
            "--connect-timeout",
            "60s",
            "--gpus",
            Device(),
            "--preset",
            "qwen-like",
            "--attach-socket",
            (dir_ / ("rank" + std::to_string(rank) + ".sock")).string()};
  }

  // Every rank and runtime for `workload`; the exit codes of the runtimes
  // (rank zero's first) and then of the ranks. `rank_flags` go to every rank.
  std::vector<int> RunPhase(const std::string& workload,
                            const std::vector<std::string>& rank_flags = {}) {
    std::vector<pid_t> ranks, runtimes;
    for (int r = 0; r < kWorld; ++r) {
      std::vector<std::string> a = Common(r);
      a.insert(a.begin(), "rank");
      a.insert(a.end(), {"--prefix-cache-disk", (dir_ / ("rank" + std::to_string(r))).string(),
                         "--prefix-cache-disk-limit", "2GiB"});
      a.insert(a.end(), rank_flags.begin(), rank_flags.end());
      ranks.push_back(Spawn(a, dir_ / ("rank" + std::to_string(r) + "." + workload + ".log")));
    }
    for (int r = kWorld - 1; r >= 0; --r) {
      std::vector<std::string> a = Common(r);
      a.insert(a.begin(), "runtime");
      if (r == 0) {
        a.insert(a.end(), {"--workload", workload, "--summary-json",
                           (dir_ / ("summary." + workload + ".json")).string()});
      }
      runtimes.push_back(
          Spawn(a, dir_ / ("runtime" + std::to_string(r) + "." + workload + ".log")));
    }
    std::vector<int> codes;
    for (auto it = runtimes.rbegin(); it != runtimes.rend(); ++it) codes.push_back(Wait(*it));
    for (pid_t p : ranks) ::kill(p, SIGTERM);
    for (pid_t p : ranks) codes.push_back(Wait(p));
    return codes;
  }

  fs::path dir_;
  int base_ = 0;
};

TEST_F(GpuRuntimeProcessTest, TwoRanksWithAttachedRuntimesPassEveryPhaseOnVmmPlanes) {
  const std::vector<int> all_zero(2 * kWorld, 0);
  EXPECT_EQ(RunPhase("qualify"), all_zero) << Slurp(dir_ / "runtime0.qualify.log");
  const std::string first = Slurp(dir_ / "summary.qualify.json");
  EXPECT_EQ(Count(first, "\"ok\": true"), 2u) << first;
  EXPECT_NE(Slurp(dir_ / "runtime1.qualify.log").find("CUDA VMM planes"), std::string::npos);
  EXPECT_EQ(RunPhase("restore"), all_zero) << Slurp(dir_ / "runtime0.restore.log");
  const std::string restored = Slurp(dir_ / "summary.restore.json");
  EXPECT_EQ(Count(restored, "\"ok\": true"), 1u) << restored;
}

TEST_F(GpuRuntimeProcessTest, TwoRanksRunTheirRecordJobsDirectOnAttachedGpuPlanes) {
  if (std::optional<std::string> why = testing::CuFileCompatSwitchMissing()) GTEST_SKIP() << *why;
  if (std::optional<std::string> why = testing::CuFileCannotRegisterFiles(dir_.string())) {
    ASSERT_EQ(why->rfind("cuFile failed", 0), std::string::npos) << *why;
    GTEST_SKIP() << *why;
  }
  const std::vector<std::string> direct = {"--prefix-cache-transport", "direct"};
  const std::vector<int> all_zero(2 * kWorld, 0);
  EXPECT_EQ(RunPhase("qualify", direct), all_zero) << Slurp(dir_ / "runtime0.qualify.log");
  for (int r = 0; r < kWorld; ++r) {
    const std::string log = Slurp(dir_ / ("rank" + std::to_string(r) + ".qualify.log"));
    EXPECT_NE(log.find("transport direct-compat"), std::string::npos) << log;
  }
  const std::string first = Slurp(dir_ / "summary.qualify.json");
  EXPECT_EQ(Count(first, "\"ok\": true"), 2u) << first;
  // Phase 3 reads back, direct, what phases 1-2 wrote direct.
  EXPECT_EQ(RunPhase("restore", direct), all_zero) << Slurp(dir_ / "runtime0.restore.log");
  const std::string restored = Slurp(dir_ / "summary.restore.json");
  EXPECT_EQ(Count(restored, "\"ok\": true"), 1u) << restored;
}

}  // namespace
}  // namespace strata

// `strata fsck DIR [--repair]`: verify every record file's header, size and
// checksums; report each bad file with its reason. Exit codes: 0 clean,
// 1 bad files found and removed or quarantined (--repair), 2 bad files found
// and left, 3 the check could not run (directory locked by a running store,
// unreadable directory).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>

#include "launch/commands.h"
#include "launch/config/human_units.h"
#include "launch/record_tools.h"

namespace strata {

namespace {

constexpr int kExitClean = 0;
constexpr int kExitRepaired = 1;
constexpr int kExitBad = 2;
constexpr int kExitCouldNotCheck = 3;
// Progress lines go to stderr at most this often.
constexpr std::chrono::seconds kProgressInterval{1};

struct FsckCommandOptions {
  std::string dir;
  bool repair = false;
  bool quiet = false;
};

int RunFsckCommand(const FsckCommandOptions& o) {
  PosixFileSystem fs;
  FsckOptions options;
  options.repair = o.repair;
  auto last = std::chrono::steady_clock::now();
  if (!o.quiet) {
    options.progress = [&last](const FsckProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < kProgressInterval) return;  // small directories print none
      last = now;
      std::fprintf(stderr, "fsck: %s: %llu/%llu records, %s verified\n", p.dir.c_str(),
                   static_cast<unsigned long long>(p.records_done),
                   static_cast<unsigned long long>(p.records_total),
                   HumanBytes(p.bytes_done).c_str());
    };
  }
  Result<FsckReport> report = RunFsck(fs, o.dir, options);
  if (!report.ok()) {
    std::fprintf(stderr, "strata fsck: %s\n", report.status().ToString().c_str());
    return kExitCouldNotCheck;
  }
  std::map<std::string, uint64_t> by_reason;
  for (const FsckProblem& p : report->problems) {
    ++by_reason[std::string(RejectReasonName(p.reason))];
    std::printf("BAD %s/%s: %s: %s%s\n", p.dir.c_str(), p.name.c_str(),
                std::string(RejectReasonName(p.reason)).c_str(), p.detail.c_str(),
                p.removed       ? " [removed]"
                : p.quarantined ? " [quarantined]"
                                : "");
  }
  std::string reasons;
  for (const auto& [reason, count] : by_reason) {
    reasons += (reasons.empty() ? " (" : ", ") + std::to_string(count) + " " + reason;
  }
  if (!reasons.empty()) reasons += ")";
  std::printf(
      "fsck: %llu director%s, %llu records ok (%s verified), %zu bad file%s%s, "
      "%llu torn row%s\n",
      static_cast<unsigned long long>(report->directories), report->directories == 1 ? "y" : "ies",
      static_cast<unsigned long long>(report->records_ok),
      HumanBytes(report->bytes_verified).c_str(), report->problems.size(),
      report->problems.size() == 1 ? "" : "s", reasons.c_str(),
      static_cast<unsigned long long>(report->torn_rows), report->torn_rows == 1 ? "" : "s");
  if (o.repair) {
    std::printf(
        "fsck: repaired: removed %llu file%s, quarantined %llu unreadable file%s, truncated %llu "
        "torn row%s\n",
        static_cast<unsigned long long>(report->removed), report->removed == 1 ? "" : "s",
        static_cast<unsigned long long>(report->quarantined), report->quarantined == 1 ? "" : "s",
        static_cast<unsigned long long>(report->truncated), report->truncated == 1 ? "" : "s");
  } else if (!report->clean() || report->torn_rows > 0) {
    std::printf(
        "fsck: run with --repair to remove bad, temporary and orphaned files (unreadable ones are "
        "moved into quarantine/)\n");
  }
  if (report->clean()) return kExitClean;
  return o.repair ? kExitRepaired : kExitBad;
}

}  // namespace

void AddFsckCommand(CLI::App& app) {
  auto opts = std::make_shared<FsckCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fsck",
      "Verify record files (headers, sizes, every page and row checksum); exit 0 when clean, "
      "1 when bad files were repaired, 2 when bad files remain, 3 when the check could not run");
  cmd->add_option("DIR", opts->dir,
                  "A record directory (<identity>-<fingerprint>) or a base directory holding some")
      ->required();
  cmd->add_flag("--repair", opts->repair,
                "Remove bad, temporary and orphaned files, move unreadable ones into quarantine/, "
                "and truncate torn rows");
  cmd->add_flag("-q,--quiet", opts->quiet, "No progress lines on stderr");
  cmd->callback([opts] {
    int rc = RunFsckCommand(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata

// `strata inspect DIR [--json]`: list the record files of one or more record
// directories (key, parent, pages, row, bytes, age) with totals, and the
// files a store's startup scan would reject. Reads headers only; takes no
// lock and changes nothing.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "launch/commands.h"
#include "launch/config/human_units.h"
#include "launch/record_tools.h"

namespace strata {

namespace {

struct InspectOptions {
  std::string dir;
  bool json = false;
};

const char* RowText(const ScannedRecord& r) {
  switch (r.row_state) {
    case RowState::kPresent: return "yes";
    case RowState::kAbsent: return "no";
    case RowState::kPartial: return "torn";
  }
  return "?";
}

int64_t NowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void PrintTable(const std::vector<InspectedDir>& dirs, int64_t now_ns) {
  for (const InspectedDir& d : dirs) {
    std::printf("record directory %s\n", d.dir.c_str());
    std::printf("%-49s  %-49s  %6s  %-4s  %10s  %8s\n", "key", "parent", "pages", "row", "bytes",
                "age");
    uint64_t pages = 0, with_row = 0;
    for (const ScannedRecord& r : d.scan.records) {
      pages += r.tail_page_count;
      with_row += r.row_present ? 1 : 0;
      std::printf("%-49s  %-49s  %6u  %-4s  %10s  %8s\n", r.key.ToFileStem().c_str(),
                  r.parent ? r.parent->ToFileStem().c_str() : "-", r.tail_page_count, RowText(r),
                  HumanBytes(r.file_bytes).c_str(),
                  HumanAge((now_ns - r.mtime_unix_ns) / 1'000'000'000).c_str());
    }
    for (const RejectedFile& r : d.scan.rejected) {
      std::printf("REJECTED %s: %s: %s\n", r.name.c_str(),
                  std::string(RejectReasonName(r.reason)).c_str(), r.detail.c_str());
    }
    std::printf(
        "totals: %zu records (%llu with row), %llu pages, %s; %zu rejected, %zu other "
        "files\n\n",
        d.scan.records.size(), static_cast<unsigned long long>(with_row),
        static_cast<unsigned long long>(pages), HumanBytes(d.scan.record_bytes()).c_str(),
        d.scan.rejected.size(), d.scan.ignored.size());
  }
}

void PrintJson(const std::vector<InspectedDir>& dirs, int64_t now_ns) {
  nlohmann::json out = nlohmann::json::array();
  for (const InspectedDir& d : dirs) {
    nlohmann::json records = nlohmann::json::array();
    uint64_t pages = 0;
    for (const ScannedRecord& r : d.scan.records) {
      pages += r.tail_page_count;
      records.push_back({{"key", r.key.ToFileStem()},
                         {"parent", r.parent ? nlohmann::json(r.parent->ToFileStem()) : nullptr},
                         {"bucket", ToHex(r.bucket)},
                         {"pages", r.tail_page_count},
                         {"row", RowText(r)},
                         {"pages_replicated", r.pages_replicated},
                         {"row_replicated", r.row_replicated},
                         {"bytes", r.file_bytes},
                         {"age_s", (now_ns - r.mtime_unix_ns) / 1'000'000'000}});
    }
    nlohmann::json rejected = nlohmann::json::array();
    for (const RejectedFile& r : d.scan.rejected) {
      rejected.push_back({{"name", r.name},
                          {"reason", std::string(RejectReasonName(r.reason))},
                          {"detail", r.detail}});
    }
    out.push_back({{"dir", d.dir},
                   {"records", records},
                   {"rejected", rejected},
                   {"totals",
                    {{"records", d.scan.records.size()},
                     {"pages", pages},
                     {"bytes", d.scan.record_bytes()},
                     {"rejected", d.scan.rejected.size()}}}});
  }
  std::printf("%s\n", out.dump(2).c_str());
}

int RunInspectCommand(const InspectOptions& o) {
  PosixFileSystem fs;
  Result<std::vector<InspectedDir>> dirs = RunInspect(fs, o.dir);
  if (!dirs.ok()) {
    std::fprintf(stderr, "strata inspect: %s\n", dirs.status().ToString().c_str());
    return 2;
  }
  const int64_t now = NowUnixNs();
  o.json ? PrintJson(*dirs, now) : PrintTable(*dirs, now);
  return 0;
}

}  // namespace

void AddInspectCommand(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "List record files (key, parent, pages, row, bytes, age) and totals");
  cmd->add_option("DIR", opts->dir,
                  "A record directory (<identity>-<fingerprint>) or a base directory holding some")
      ->required();
  cmd->add_flag("--json", opts->json, "Print one JSON array instead of tables");
  cmd->callback([opts] {
    int rc = RunInspectCommand(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata

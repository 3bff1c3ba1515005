// `strata rank` flags and the one place file, flags and environment are
// merged into a RankConfig. Precedence, highest first:
//   flag  >  config file  >  launcher environment  >  default.
// (A flag is what the operator typed for this process; a file is shared by
// every rank; the launcher's variables fill what neither names.)
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "coordinator/rendezvous/launcher_env.h"
#include "launch/config/config.h"
#include "store/base/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace strata {

// Where flag values land during CLI11's parse. One slot per ConfigKey.
struct ConfigFlags {
  struct Slot {
    const ConfigKey* key = nullptr;
    std::string text;    // a value flag's text
    bool on = false;     // a switch's value
    bool given = false;  // the flag was on the command line
  };
  std::string config_path;  // --config FILE; empty: no file
  std::deque<Slot> slots;   // a deque: CLI11 keeps pointers into it
};

// Adds `--config FILE` and one flag per ConfigKey (key.flag) to `app`.
// `flags` must outlive app's parse. Values are checked by MergeConfig, so a
// bad value reads the same from a flag as from the file.
void AddConfigFlags(CLI::App* app, ConfigFlags* flags);

// A config file's text and the name messages use for it.
struct ConfigText {
  std::string origin;
  std::string text;
};

struct LoadedConfig {
  RankConfig config;
  LauncherEnv launcher;
  // Every key -> where its value came from: "flag --rank",
  // "file rank.toml", "environment RANK (torchrun)" or "default".
  std::map<std::string, std::string> source;
};

// Pure: defaults, then `env`'s values, then `file`'s keys, then the flags
// given, then ValidateConfig. Also fails when a launcher that names no rank
// zero address (Open MPI; Slurm without SLURM_LAUNCH_NODE_IPADDR) runs
// several processes and no flag, file or MASTER_ADDR gives one.
Result<LoadedConfig> MergeConfig(const ConfigFlags& flags, const LauncherEnv& env,
                                 const std::optional<ConfigText>& file);

// The shell around MergeConfig: detects the launcher in `env` and reads
// flags.config_path when set.
Result<LoadedConfig> LoadConfig(const ConfigFlags& flags, const EnvMap& env);

}  // namespace strata

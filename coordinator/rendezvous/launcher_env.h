// Rank, world size and rank zero's address from the environment a cluster
// launcher gives each process: torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_LAUNCH_NODE_IPADDR) and Open MPI (OMPI_COMM_WORLD_RANK,
// OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK). Pure: the environment is
// an argument. docs/operations.md lists the rules.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/status.h"

namespace strata {

using EnvMap = std::map<std::string, std::string, std::less<>>;

enum class Launcher : unsigned char { kNone, kTorchrun, kSlurm, kOpenMpi };

std::string_view LauncherName(Launcher launcher);

// What the environment says. A field is unset when no variable gave it.
struct LauncherEnv {
  Launcher launcher = Launcher::kNone;  // the innermost launcher detected
  std::optional<uint32_t> rank;
  std::optional<uint32_t> world_size;
  std::optional<uint32_t> local_rank;
  std::optional<std::string> master_addr;
  std::optional<uint16_t> master_port;
  // Config key ("cluster.rank") -> the variable that gave it ("RANK").
  std::map<std::string, std::string> origin;
  // Launchers whose variables were present but lost to an inner one
  // (an `srun torchrun` process sees Slurm's variables too).
  std::vector<Launcher> outer;
  // Why a variable was present but not used (MASTER_PORT under torchrun's
  // agent store).
  std::vector<std::string> notes;
};

// Detects the launcher and reads its variables. The innermost launcher wins:
// torchrun, then Open MPI, then Slurm (whose variables every process in a job
// inherits). Errors, each naming the variables: a launcher's variables only
// partly set (RANK without WORLD_SIZE), values that are not whole numbers or
// out of range, a rank not below the world size, and torchrun and Open MPI
// variables that disagree on rank or world size. MASTER_ADDR / MASTER_PORT
// are read under any launcher; Slurm falls back to SLURM_LAUNCH_NODE_IPADDR.
// When TORCHELASTIC_USE_AGENT_STORE is "True", MASTER_PORT is torchrun's own
// store and is not used (a note says so).
Result<LauncherEnv> DetectLauncherEnv(const EnvMap& env);

// This process's environment (the shell edge for DetectLauncherEnv).
EnvMap CurrentEnvironment();

}  // namespace strata

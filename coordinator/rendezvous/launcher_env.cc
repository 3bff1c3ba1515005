#include "coordinator/rendezvous/launcher_env.h"

#include <algorithm>
#include <limits>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, no header declares it

namespace strata {

namespace {

// The variables one launcher sets for rank, world size and local rank.
struct LauncherVars {
  Launcher launcher;
  std::string_view rank;
  std::string_view world_size;
  std::string_view local_rank;
  // The variable whose presence means this launcher started the process.
  std::vector<std::string_view> markers;
};

const std::vector<LauncherVars>& InnermostFirst() {
  static const std::vector<LauncherVars> vars = {
      {Launcher::kTorchrun,
       "RANK",
       "WORLD_SIZE",
       "LOCAL_RANK",
       {"RANK", "WORLD_SIZE", "LOCAL_RANK"}},
      {Launcher::kOpenMpi,
       "OMPI_COMM_WORLD_RANK",
       "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK",
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}},
      // SLURM_NTASKS alone describes the allocation (salloc, sbatch), not a task.
      {Launcher::kSlurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", {"SLURM_PROCID"}},
  };
  return vars;
}

// A set, non-empty variable; empty ones count as unset.
std::optional<std::string_view> Get(const EnvMap& env, std::string_view name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return std::string_view(it->second);
}

Result<uint64_t> ParseWhole(std::string_view name, std::string_view text, uint64_t max) {
  const bool digits =
      !text.empty() && text.size() <= 10 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoull(std::string(text)) > max) {
    return Status::InvalidArgument(std::string(name) + "=\"" + std::string(text) +
                                   "\" is not a whole number in 0.." + std::to_string(max));
  }
  return std::stoull(std::string(text));
}

struct Reading {
  uint32_t rank = 0;
  uint32_t world_size = 0;
  std::optional<uint32_t> local_rank;
};

// Reads one launcher's variables; nullopt when it did not start the process.
Result<std::optional<Reading>> Read(const EnvMap& env, const LauncherVars& v) {
  const bool present = std::any_of(v.markers.begin(), v.markers.end(),
                                   [&](std::string_view m) { return Get(env, m).has_value(); });
  if (!present) return std::optional<Reading>();
  const std::string who(LauncherName(v.launcher));
  const auto rank = Get(env, v.rank);
  const auto size = Get(env, v.world_size);
  if (!rank.has_value() || !size.has_value()) {
    std::string set;
    std::string unset;
    for (std::string_view name : {v.rank, v.world_size, v.local_rank}) {
      std::string& list = Get(env, name).has_value() ? set : unset;
      list += (list.empty() ? "" : ", ") + std::string(name);
    }
    return Status::InvalidArgument("the " + who + " environment is partial: " + set + " set but " +
                                   unset + " not (" + std::string(v.rank) + " and " +
                                   std::string(v.world_size) + " must both be set)");
  }
  constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();
  Reading r;
  STRATA_ASSIGN_OR_RETURN(uint64_t n, ParseWhole(v.world_size, *size, kU32Max));
  if (n == 0) return Status::InvalidArgument(std::string(v.world_size) + "=0: no ranks");
  r.world_size = static_cast<uint32_t>(n);
  STRATA_ASSIGN_OR_RETURN(n, ParseWhole(v.rank, *rank, kU32Max));
  if (n >= r.world_size) {
    return Status::InvalidArgument(std::string(v.rank) + "=" + std::to_string(n) +
                                   " is not below " + std::string(v.world_size) + "=" +
                                   std::to_string(r.world_size));
  }
  r.rank = static_cast<uint32_t>(n);
  if (auto local = Get(env, v.local_rank)) {
    STRATA_ASSIGN_OR_RETURN(n, ParseWhole(v.local_rank, *local, kU32Max));
    if (n >= r.world_size) {
      return Status::InvalidArgument(std::string(v.local_rank) + "=" + std::to_string(n) +
                                     " is not below " + std::string(v.world_size) + "=" +
                                     std::to_string(r.world_size));
    }
    r.local_rank = static_cast<uint32_t>(n);
  }
  return std::optional<Reading>(r);
}

Status ReadMaster(const EnvMap& env, LauncherEnv* out) {
  if (auto addr = Get(env, "MASTER_ADDR")) {
    out->master_addr = std::string(*addr);
    out->origin["cluster.master_addr"] = "MASTER_ADDR";
  } else if (auto node = Get(env, "SLURM_LAUNCH_NODE_IPADDR");
             node.has_value() && out->launcher == Launcher::kSlurm) {
    out->master_addr = std::string(*node);
    out->origin["cluster.master_addr"] = "SLURM_LAUNCH_NODE_IPADDR";
  }
  if (auto port = Get(env, "MASTER_PORT")) {
    STRATA_ASSIGN_OR_RETURN(uint64_t p, ParseWhole("MASTER_PORT", *port, 65535));
    if (p == 0) return Status::InvalidArgument("MASTER_PORT=0 is not a port (1..65535)");
    if (Get(env, "TORCHELASTIC_USE_AGENT_STORE") == "True") {
      out->notes.push_back("MASTER_PORT=" + std::to_string(p) +
                           " not used: TORCHELASTIC_USE_AGENT_STORE=True means torchrun's own "
                           "store listens there");
    } else {
      out->master_port = static_cast<uint16_t>(p);
      out->origin["cluster.master_port"] = "MASTER_PORT";
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNone: return "none";
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kSlurm: return "slurm";
    case Launcher::kOpenMpi: return "openmpi";
  }
  return "?";
}

Result<LauncherEnv> DetectLauncherEnv(const EnvMap& env) {
  LauncherEnv out;
  std::optional<Reading> chosen;
  const LauncherVars* chosen_vars = nullptr;
  for (const LauncherVars& v : InnermostFirst()) {
    STRATA_ASSIGN_OR_RETURN(std::optional<Reading> r, Read(env, v));
    if (!r.has_value()) continue;
    if (chosen_vars == nullptr) {
      chosen = r;
      chosen_vars = &v;
      out.launcher = v.launcher;
      continue;
    }
    // Neither torchrun nor Open MPI conventionally runs inside the other, so
    // when both are present they must agree.
    if (chosen_vars->launcher == Launcher::kTorchrun && v.launcher == Launcher::kOpenMpi &&
        (r->rank != chosen->rank || r->world_size != chosen->world_size)) {
      return Status::InvalidArgument(
          "torchrun and Open MPI variables disagree: RANK=" + std::to_string(chosen->rank) +
          " WORLD_SIZE=" + std::to_string(chosen->world_size) + " but OMPI_COMM_WORLD_RANK=" +
          std::to_string(r->rank) + " OMPI_COMM_WORLD_SIZE=" + std::to_string(r->world_size) +
          " (unset one launcher's variables, or pass --rank and --world-size)");
    }
    out.outer.push_back(v.launcher);
  }
  if (chosen.has_value()) {
    out.rank = chosen->rank;
    out.world_size = chosen->world_size;
    out.local_rank = chosen->local_rank;
    out.origin["cluster.rank"] = std::string(chosen_vars->rank);
    out.origin["cluster.world_size"] = std::string(chosen_vars->world_size);
    if (chosen->local_rank.has_value()) {
      out.origin["cluster.local_rank"] = std::string(chosen_vars->local_rank);
    }
  }
  STRATA_RETURN_IF_ERROR(ReadMaster(env, &out));
  return out;
}

EnvMap CurrentEnvironment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

}  // namespace strata

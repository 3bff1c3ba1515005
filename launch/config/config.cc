#include "launch/config/config.h"

#include <algorithm>
#include <limits>

#include "launch/config/config_values.h"
#include "launch/config/units.h"
#include "launch/presets.h"

namespace strata {

namespace {

using config_values::AsBool;
using config_values::AsDuration;
using config_values::AsDurationOrOff;
using config_values::AsSize;
using config_values::AsText;
using config_values::AsWhole;
using config_values::ValueText;
using std::chrono::milliseconds;

template <typename Enum, size_t N>
Result<Enum> AsName(const ConfigValue& value,
                    const std::array<std::pair<std::string_view, Enum>, N>& names) {
  std::string allowed;
  for (const auto& [name, e] : names) {
    if (const auto* s = std::get_if<std::string>(&value); s != nullptr && *s == name) return e;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  return Status::InvalidArgument(ValueText(value) + " is not one of " + allowed);
}

constexpr std::array<std::pair<std::string_view, LogLevel>, 6> kLogLevels = {{
    {"trace", LogLevel::kTrace},
    {"debug", LogLevel::kDebug},
    {"info", LogLevel::kInfo},
    {"warn", LogLevel::kWarn},
    {"error", LogLevel::kError},
    {"off", LogLevel::kOff},
}};
constexpr std::array<std::pair<std::string_view, LogFormat>, 2> kLogFormats = {{
    {"text", LogFormat::kText},
    {"json", LogFormat::kJson},
}};

constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();

// Assigns `field` from `expr` (a Result), returning its error.
#define STRATA_SET(field, expr)     \
  do {                              \
    auto r = (expr);                \
    if (!r.ok()) return r.status(); \
    (field) = std::move(r).value(); \
    return Status::Ok();            \
  } while (0)

// An idle spin budget: whole microseconds, 0..kIdleSpinMaxUs.
Result<uint32_t> AsSpinMicros(const ConfigValue& value) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t us, AsWhole(value, 0, kIdleSpinMaxUs));
  return static_cast<uint32_t>(us);
}

Status SetDrain(const ConfigValue& value, RankConfig* c) {
  DrainOnShutdown& d = c->prefix_cache.drain_on_shutdown;
  if (const auto* b = std::get_if<bool>(&value)) {
    d = {*b ? DrainMode::kUntilDone : DrainMode::kOff, milliseconds(0)};
    return Status::Ok();
  }
  if (const auto* s = std::get_if<std::string>(&value);
      s != nullptr && (*s == "on" || *s == "off")) {
    d = {*s == "on" ? DrainMode::kUntilDone : DrainMode::kOff, milliseconds(0)};
    return Status::Ok();
  }
  Result<milliseconds> limit = AsDuration(value);
  if (!limit.ok()) {
    return Status::InvalidArgument(ValueText(value) +
                                   " is not \"on\", \"off\" or a positive duration (" +
                                   std::string(kDurationExamples) + ")");
  }
  d = {DrainMode::kBounded, *limit};
  return Status::Ok();
}

Status SetMaxAge(const ConfigValue& value, RankConfig* c) {
  if (const auto* s = std::get_if<std::string>(&value); s != nullptr && *s == "off") {
    c->prefix_cache.max_age.reset();
    return Status::Ok();
  }
  Result<milliseconds> age = AsDuration(value);
  if (!age.ok()) {
    return Status::InvalidArgument(ValueText(value) + " is not \"off\" or a positive duration (" +
                                   std::string(kDurationExamples) + ")");
  }
  c->prefix_cache.max_age = *age;
  return Status::Ok();
}

Status SetRendezvous(const ConfigValue& value, RankConfig* c) {
  if (const auto* s = std::get_if<std::string>(&value); s != nullptr) {
    if (*s == "tcp") {
      c->cluster.rendezvous = RendezvousSource::kTcp;
      return Status::Ok();
    }
    if (*s == "attach") {
      c->cluster.rendezvous = RendezvousSource::kAttach;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument(ValueText(value) + " is not \"tcp\" or \"attach\"");
}

Status SetDurability(const ConfigValue& value, RankConfig* c) {
  if (const auto* s = std::get_if<std::string>(&value); s != nullptr) {
    if (*s == "sync") {
      c->prefix_cache.durability = Durability::kSync;
      return Status::Ok();
    }
    if (*s == "none") {
      c->prefix_cache.durability = Durability::kNone;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument(ValueText(value) + " is not \"sync\" or \"none\"");
}

Status SetPoolData(const ConfigValue& value, RankConfig* c) {
  if (const auto* s = std::get_if<std::string>(&value); s != nullptr) {
    if (std::optional<pool::PoolDataPath> path = pool::ParsePoolDataPath(*s)) {
      c->prefix_cache.pool_data = *path;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument(ValueText(value) + " is not \"auto\", \"arena\" or \"tcp\"");
}

Status SetTransport(const ConfigValue& value, RankConfig* c) {
  if (const auto* s = std::get_if<std::string>(&value); s != nullptr) {
    for (TransportChoice t :
         {TransportChoice::kAuto, TransportChoice::kStaged, TransportChoice::kDirect}) {
      if (*s == TransportChoiceName(t)) {
        c->prefix_cache.transport = t;
        return Status::Ok();
      }
    }
  }
  return Status::InvalidArgument(ValueText(value) + " is not \"auto\", \"staged\" or \"direct\"");
}

Status SetPreset(const ConfigValue& value, RankConfig* c) {
  std::string known;
  for (const GeometryPreset& p : GeometryPresets()) {
    if (const auto* s = std::get_if<std::string>(&value); s != nullptr && *s == p.name) {
      c->runtime.preset = *s;
      return Status::Ok();
    }
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  return Status::InvalidArgument(ValueText(value) + " is not a preset (" + known + ")");
}

// "none" or "" (host memory), or device ordinals like "0,1,2".
Status SetGpus(const ConfigValue& value, RankConfig* c) {
  const auto* text = std::get_if<std::string>(&value);
  if (text == nullptr) return Status::InvalidArgument(ValueText(value) + " is not a list of GPUs");
  std::vector<int> gpus;
  if (*text != "none" && !text->empty()) {
    size_t start = 0;
    while (start <= text->size()) {
      const size_t end = std::min(text->find(',', start), text->size());
      const std::string item = text->substr(start, end - start);
      if (item.empty() || item.size() > 3 ||
          item.find_first_not_of("0123456789") != std::string::npos) {
        return Status::InvalidArgument(ValueText(value) + " is not a list of device ordinals");
      }
      gpus.push_back(std::stoi(item));
      start = end + 1;
    }
  }
  c->runtime.gpus = std::move(gpus);
  return Status::Ok();
}

using Arity = ConfigKey::FlagArity;

std::vector<ConfigKey> MakeKeys() {
  return {
      {"prefix_cache.memory", "--prefix-cache-memory", "a size: 64GiB, 512MiB, 10GB, 4096 (bytes)",
       "0 (no memory tier)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->prefix_cache.memory_bytes, AsSize(v));
       }},
      {"prefix_cache.disk", "--prefix-cache-disk", "a directory path", "unset (no disk store)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->prefix_cache.disk_dir, AsText(v, "a directory path"));
       }},
      {"prefix_cache.disk_limit", "--prefix-cache-disk-limit",
       "a size: 64GiB, 512MiB, 10GB, 4096 (bytes); 0 selects no disk store",
       "one tenth of the free space of the disk's filesystem at startup",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->prefix_cache.disk_limit_bytes, AsSize(v));
       }},
      {"prefix_cache.drain_on_shutdown", "--prefix-cache-drain-on-shutdown",
       "\"on\", \"off\" or a positive duration (500ms, 90s, 2m, 1h, bare seconds); a bare flag "
       "means \"on\"",
       "off", SetDrain, Arity::kOptionalValue},
      {"prefix_cache.max_age", "--prefix-cache-max-age",
       "\"off\" or a positive duration (500ms, 90s, 2m, 1h, bare seconds)", "off", SetMaxAge},
      {"prefix_cache.durability", "--prefix-cache-durability",
       "\"sync\" (fdatasync each record and fsync its directory before acknowledging) or "
       "\"none\"",
       "sync", SetDurability},
      {"prefix_cache.idle_spin_us", "--prefix-cache-idle-spin-us",
       "microseconds an idle disk thread, and rank zero waiting for a job, check for work "
       "before sleeping, 0..10000 (0: never spin)",
       "100 with 8 or more usable CPUs, else 0",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->prefix_cache.idle_spin_us, AsSpinMicros(v));
       }},
      {"prefix_cache.transport", "--prefix-cache-transport",
       "\"auto\" (GPUDirect Storage where the startup probe accepts it, else staged), "
       "\"staged\" or \"direct\" (fail startup where the probe refuses)",
       "auto", SetTransport},
      {"prefix_cache.pool", "--prefix-cache-pool",
       "a pool manager: its Unix socket path on this host (strata pool --socket), or "
       "tcp://HOST:PORT (strata pool --tcp; the Hello proves the job secret)",
       "unset (local tiers only)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->prefix_cache.pool, AsText(v, "a socket path or tcp://HOST:PORT"));
       }},
      {"prefix_cache.pool_data", "--prefix-cache-pool-data",
       "\"auto\" (over tcp://, the arena's file when the manager is on this host, else the "
       "TCP data channel), \"arena\" or \"tcp\" (the data channel even on one host)",
       "auto", SetPoolData},
      {"prefix_cache.pool_instance", "--prefix-cache-pool-instance",
       "an id for this instance at the pool",
       "the planes' GPU UUIDs; with host planes the host name and process id (not stable "
       "across restarts)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->prefix_cache.pool_instance, AsText(v, "an instance id"));
       }},
      {"cluster.rank", "--rank", "a whole number below world_size", "0, or the launcher's",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.rank, AsWhole(v, 0, kU32Max - 1));
       }},
      {"cluster.world_size", "--world-size", "a whole number, at least 1", "1, or the launcher's",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.world_size, AsWhole(v, 1, kU32Max));
       }},
      {"cluster.local_rank", "--local-rank", "a whole number", "0, or the launcher's",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.local_rank, AsWhole(v, 0, kPortMax));
       }},
      {"cluster.single_process", "--single-process", "true or false",
       "false (one process per rank)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.single_process, AsBool(v));
       },
       Arity::kSwitch},
      {"cluster.master_addr", "--master-addr", "a host name or IP address of rank zero",
       "127.0.0.1, or the launcher's",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.master_addr, AsText(v, "a host name or address"));
       }},
      {"cluster.master_port", "--master-port", "a port, 1..65535", "29470, or MASTER_PORT",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.master_port, AsWhole(v, 1, kPortMax));
       }},
      {"cluster.rendezvous", "--rendezvous",
       "\"tcp\" (peers dial master_addr:master_port) or \"attach\" (with attach.socket: "
       "rank zero's runtime is told the rendezvous address and job secret, each peer's "
       "runtime hands them to its rank at attach)",
       "tcp", SetRendezvous},
      {"cluster.record_port", "--record-port", "a port, 0..65535 (0: ephemeral)", "0",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.record_port, AsWhole(v, 0, kPortMax));
       }},
      {"cluster.record_bind", "--record-bind",
       "a numeric IP address for rank zero's record listener (\"0.0.0.0\": every interface)",
       "the rendezvous's address (master_addr)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.record_bind, AsText(v, "an IP address"));
       }},
      {"cluster.heartbeat_interval", "--heartbeat-interval",
       "a positive duration (500ms, 90s, 2m, 1h, bare seconds)", "1s",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.heartbeat_interval, AsDuration(v));
       }},
      {"cluster.silence_timeout", "--silence-timeout",
       "a positive duration above heartbeat_interval (500ms, 90s, 2m, 1h, bare seconds)", "10s",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.silence_timeout, AsDuration(v));
       }},
      {"cluster.link_idle_spin_us", "--link-idle-spin-us",
       "microseconds a record link's idle I/O thread polls its socket before sleeping, "
       "0..10000 (0: never spin)",
       "0",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.link_idle_spin_us, AsSpinMicros(v));
       }},
      {"cluster.shared_link_thread", "--shared-link-thread",
       "true or false: rank zero's record links share one I/O thread", "false",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.shared_link_thread, AsBool(v));
       },
       Arity::kSwitch},
      {"cluster.job_timeout", "--job-timeout",
       "a positive duration (500ms, 90s, 2m, 1h, bare seconds)", "60s",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.job_timeout, AsDuration(v));
       }},
      {"cluster.connect_timeout", "--connect-timeout",
       "a positive duration (500ms, 90s, 2m, 1h, bare seconds)", "120s",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.connect_timeout, AsDuration(v));
       }},
      {"cluster.job_secret_file", "--job-secret-file",
       "a file holding this job's secret (32..4096 bytes; mode 0600)",
       "unset: the environment variable STRATA_JOB_SECRET; ranks in separate processes need one",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->cluster.job_secret_file, AsText(v, "a file path"));
       }},
      {"metrics.bind", "--metrics-bind",
       "an IP address to listen on (\"0.0.0.0\": every interface)", "127.0.0.1 (loopback)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->metrics.bind, AsText(v, "an address"));
       }},
      {"metrics.port", "--metrics-port", "a port, 0..65535 (0: ephemeral); plus local_rank", "9470",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->metrics.port, AsWhole(v, 0, kPortMax));
       }},
      {"metrics.linger_after_failure", "--metrics-linger-after-failure",
       "0 or \"off\", or a positive duration (500ms, 90s, 2m, 1h, bare seconds)", "30s",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->metrics.linger_after_failure, AsDurationOrOff(v));
       }},
      {"log.level", "--log-level", "trace, debug, info, warn, error or off", "info",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->log.level, AsName(v, kLogLevels));
       }},
      {"log.format", "--log-format", "text or json", "text",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->log.format, AsName(v, kLogFormats));
       }},
      {"runtime.preset", "--preset", "a geometry preset name (strata layout --list)", "tiny",
       SetPreset},
      {"runtime.pages", "--pages", "page ids per rank, 1..1048576", "256",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->runtime.pages, AsWhole(v, 1, kRuntimePagesMax));
       }},
      {"runtime.rows", "--rows", "state rows per rank, 1..65536", "16",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->runtime.rows, AsWhole(v, 1, kRuntimeRowsMax));
       }},
      {"runtime.gpus", "--gpus",
       "CUDA device ordinals for this process's ranks, like \"0\" or \"0,1\"; \"none\" for host "
       "memory",
       "none", SetGpus},
      {"runtime.service_bind", "--runtime-service-bind",
       "a numeric IP address rank zero's `strata runtime` listens on for the peers' runtimes "
       "(\"0.0.0.0\": every interface)",
       "127.0.0.1 (loopback)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->runtime.service_bind, AsText(v, "an IP address"));
       }},
      {"runtime.copy_out_rate", "--copy-out-rate",
       "bytes per second each rank copies out of its planes at most, as a size (12GB, 800MiB); "
       "0: unbounded",
       "0 (unbounded)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->runtime.copy_out_rate, AsSize(v));
       }},
      {"runtime.restore_rate", "--restore-rate",
       "bytes per second each rank restores into its planes at most, as a size (12GB, 800MiB); "
       "0: unbounded",
       "0 (unbounded)",
       [](const ConfigValue& v, RankConfig* c) { STRATA_SET(c->runtime.restore_rate, AsSize(v)); }},
      {"tls.cert", "--tls-cert", "a PEM certificate file (with tls.key and tls.ca)",
       "unset (plaintext links)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->tls.cert, AsText(v, "a file path"));
       }},
      {"tls.key", "--tls-key", "a PEM private key file (with tls.cert and tls.ca)",
       "unset (plaintext links)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->tls.key, AsText(v, "a file path"));
       }},
      {"tls.ca", "--tls-ca", "a PEM CA certificate file (with tls.cert and tls.key)",
       "unset (plaintext links)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->tls.ca, AsText(v, "a file path"));
       }},
      {"attach.socket", "--attach-socket",
       "a Unix socket path this rank's runtime process attaches at (with ranks in separate "
       "processes, rank zero's runtime makes the store calls and a peer's shares its planes)",
       "unset (the synthetic runtime runs)",
       [](const ConfigValue& v, RankConfig* c) {
         STRATA_SET(c->attach.socket, AsText(v, "a socket path"));
       }},
  };
}

#undef STRATA_SET

}  // namespace

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> keys = MakeKeys();
  return keys;
}

const ConfigKey* FindConfigKey(std::string_view name) {
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string_view> ConfigTables() {
  std::vector<std::string_view> tables;
  for (const ConfigKey& k : ConfigKeys()) {
    std::string_view table = k.name.substr(0, k.name.find('.'));
    if (std::find(tables.begin(), tables.end(), table) == tables.end()) tables.push_back(table);
  }
  return tables;
}

Status SetConfigValue(const ConfigKey& key, const ConfigValue& value, std::string_view label,
                      RankConfig* config) {
  return key.set(value, config).WithContext(label);
}

uint64_t ResolveDiskLimit(const PrefixCacheConfig& prefix_cache, uint64_t free_bytes) {
  if (prefix_cache.disk_limit_bytes.has_value()) return *prefix_cache.disk_limit_bytes;
  return free_bytes / 10;
}

uint16_t EffectiveMetricsPort(const RankConfig& config) {
  if (config.metrics.port == 0) return 0;
  return static_cast<uint16_t>(config.metrics.port + config.cluster.local_rank);
}

std::string_view LogLevelName(LogLevel level) {
  for (const auto& [name, l] : kLogLevels) {
    if (l == level) return name;
  }
  return "?";
}

std::string_view LogFormatName(LogFormat format) {
  for (const auto& [name, f] : kLogFormats) {
    if (f == format) return name;
  }
  return "?";
}

std::string DrainOnShutdownText(const DrainOnShutdown& drain) {
  switch (drain.mode) {
    case DrainMode::kOff: return "off";
    case DrainMode::kUntilDone: return "on";
    case DrainMode::kBounded: return FormatDuration(drain.write_limit);
  }
  return "?";
}

}  // namespace strata

// RankConfig: everything `strata rank` is configured with, in one typed struct
// (seed 2.11). A TOML file (config_file.h), the launcher's environment
// (launcher_env.h) and flags (config_flags.h) are parsed once into it; each
// key in ConfigKeys() names one field, its flag, its forms and its default.
// docs/operations.md is the reference for operators.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "coordinator/pool/pool_data_path.h"
#include "cuda/gds_probe.h"
#include "store/base/idle_spin.h"
#include "store/base/status.h"
#include "store/record/record_file.h"
#include "store/transfer/threaded_transfers.h"

namespace strata {

enum class DrainMode : unsigned char {
  kOff,        // "off": a stop loses DRAM-only records
  kUntilDone,  // "on": write every DRAM-only record before exit
  kBounded,    // a duration: start no new write after `write_limit`
};

struct DrainOnShutdown {
  DrainMode mode = DrainMode::kOff;  // default "off"
  // kBounded only: how long new writes may start after the stop signal.
  // Accepted transfers still drain after it (seed 2.4).
  std::chrono::milliseconds write_limit{0};

  friend bool operator==(const DrainOnShutdown&, const DrainOnShutdown&) = default;
};

// [prefix_cache]: the seed's names and value forms.
struct PrefixCacheConfig {
  // memory: the warm DRAM budget. Default 0: no memory tier.
  uint64_t memory_bytes = 0;
  // disk: the base directory under which the record directory is created.
  // Default unset: no disk store.
  std::optional<std::string> disk_dir;
  // disk_limit: bytes the record directory may hold; 0 selects no disk store.
  // Default unset: one tenth of the free space of disk_dir's filesystem at
  // startup (ResolveDiskLimit).
  std::optional<uint64_t> disk_limit_bytes;
  // drain_on_shutdown: "on" | "off" | a positive duration. Default off.
  DrainOnShutdown drain_on_shutdown;
  // max_age: records unused for longer expire. Default unset: expiry off.
  std::optional<std::chrono::milliseconds> max_age;
  // durability: "sync" | "none". Default "sync": a store is acknowledged only
  // after its file is fdatasync'ed and its directory fsync'ed, so an
  // acknowledged record survives power loss. "none" (benchmarks) skips both.
  Durability durability = Durability::kSync;
  // idle_spin_us: how long an idle disk thread, and rank zero waiting for
  // its ranks' answers to a job, check for work before they sleep
  // (store/base/idle_spin.h), 0..10000 us. Default unset: 100 on a machine
  // with 8 or more usable CPUs, else 0 (never spin).
  std::optional<uint32_t> idle_spin_us;
  // transport: "auto" | "staged" | "direct" (seed 2.6). Default "auto": the
  // GPUDirect Storage transport where the startup probe accepts it
  // (cuda/gds_probe.h), the staged one otherwise; "direct" fails startup
  // with the probe's reason where it refuses.
  TransportChoice transport = TransportChoice::kAuto;
  // pool: a pool manager (`strata pool`, docs/pool.md): its Unix socket on
  // this host, or tcp://HOST:PORT. Default unset: local tiers only, no
  // sharing code runs.
  std::optional<std::string> pool;
  // pool_instance: this instance's id at the pool with host planes (GPU
  // planes would use their UUIDs). Default unset: the host name and process
  // id, which differ across restarts; set it for an id that does not.
  std::optional<std::string> pool_instance;
  // pool_data: over tcp://, how records reach the manager's slots: "auto"
  // (the arena's file when the manager is on this host, else the TCP data
  // channel), "arena" or "tcp" (the data channel even on one host).
  pool::PoolDataPath pool_data = pool::PoolDataPath::kAuto;
};

// See ClusterConfig::rendezvous.
enum class RendezvousSource : unsigned char { kTcp, kAttach };

// [cluster]: which rank this process is and how ranks find rank zero.
struct ClusterConfig {
  // rank: this process's rank. Default 0, or the launcher's (launcher_env.h).
  uint32_t rank = 0;
  // world_size: ranks in the job. Default 1, or the launcher's.
  uint32_t world_size = 1;
  // local_rank: rank among the ranks on this host; offsets metrics.port.
  // Default 0, or the launcher's.
  uint32_t local_rank = 0;
  // single_process: one process holds every rank (the single-host layout in
  // which a memory tier is allowed). Default false: one process per rank.
  bool single_process = false;
  // master_addr: where rank zero's rendezvous listens and peers dial.
  // Default "127.0.0.1", or the launcher's (MASTER_ADDR,
  // SLURM_LAUNCH_NODE_IPADDR); required under a launcher that names none.
  std::string master_addr = "127.0.0.1";
  // master_port: the rendezvous port. Default 29470, or MASTER_PORT.
  uint16_t master_port = 29470;
  // record_port: rank zero's record-link listener.
  // Default 0: an ephemeral port, handed to peers by the rendezvous.
  uint16_t record_port = 0;
  // record_bind: the numeric address rank zero's record listener binds.
  // Default unset: the address the rendezvous listens on (master_addr
  // resolved), which every peer already reaches: loopback for a single-host
  // cluster, that one interface otherwise. "0.0.0.0" or "::": every interface.
  std::optional<std::string> record_bind;
  // heartbeat_interval: a record link with nothing to send for this long
  // sends a Heartbeat. Default 1s.
  std::chrono::milliseconds heartbeat_interval{std::chrono::seconds(1)};
  // silence_timeout: a record link that reads nothing for this long is
  // closed as a lost peer (above heartbeat_interval). Default 10s.
  std::chrono::milliseconds silence_timeout{std::chrono::seconds(10)};
  // link_idle_spin_us: how long a record link's idle I/O thread polls its
  // socket before it sleeps (wire/link/link.h), 0..10000 us. Default 0: it
  // sleeps at once.
  uint32_t link_idle_spin_us = 0;
  // shared_link_thread: rank zero's record links share one I/O thread
  // (wire/link/link_io_thread.h), so a job's answers wake one thread, not
  // one per peer. Default false: a thread per link.
  bool shared_link_thread = false;
  // job_timeout: a job no rank completes within it stops the transport.
  // Default 60s.
  std::chrono::milliseconds job_timeout{std::chrono::seconds(60)};
  // connect_timeout: how long ranks wait for each other at startup
  // (rendezvous plus record links). Default 120s.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(120)};
  // job_secret_file: the file holding the secret every rendezvous hello
  // proves (coordinator/rendezvous/job_secret.h). Default unset: the
  // environment variable STRATA_JOB_SECRET; ranks in separate processes
  // refuse to start with neither.
  std::optional<std::string> job_secret_file;
  // rendezvous: how a peer finds rank zero. kTcp (default): dial
  // master_addr:master_port. kAttach (with attach.socket, ranks in separate
  // processes): rank zero's rank gives its rendezvous address and the job
  // secret to its attached runtime (HelloAccept); a peer's rank takes them
  // from its runtime's Hello and only then joins, so the runtimes carry
  // them through their own store (docs/python.md).
  RendezvousSource rendezvous = RendezvousSource::kTcp;
};

// The address the listeners below bind unless configured otherwise: loopback
// (DESIGN.md, "Membership": nothing listens on a non-loopback address unless
// configured to).
inline constexpr std::string_view kLoopbackBind = "127.0.0.1";

// [metrics]: the /metrics, /healthz and /status endpoint.
struct MetricsConfig {
  // bind: the address the endpoint listens on. Default "127.0.0.1": a
  // scraper on the same host; set the host's address (or "0.0.0.0") for a
  // scraper elsewhere. The endpoint is read-only plaintext HTTP.
  std::string bind = std::string(kLoopbackBind);
  // port: base port; a rank serves on port + local_rank (EffectiveMetricsPort).
  // 0: an ephemeral port, printed on the startup line. Default 9470.
  uint16_t port = 9470;
  // linger_after_failure: after a failed shutdown drain, the endpoint keeps
  // serving (strata_drain_failed 1, /healthz 503) this long before the rank
  // exits 1, so a scrape sees the failure; a signal ends it early. 0: exit at
  // once. Never delays a clean exit. Default 30s (two scrapes at 15 s).
  std::chrono::milliseconds linger_after_failure{std::chrono::seconds(30)};
};

enum class LogLevel : unsigned char { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class LogFormat : unsigned char { kText, kJson };

// [log]
struct LogConfig {
  LogLevel level = LogLevel::kInfo;     // level: default "info"
  LogFormat format = LogFormat::kText;  // format: default "text"
};

// [runtime]: the synthetic runtime that stands in for an inference engine.
struct RuntimeConfig {
  // preset: a geometry preset name (`strata layout --list`). Default "tiny".
  std::string preset = "tiny";
  // pages: page ids per rank. Default 256.
  uint64_t pages = 256;
  // rows: state rows per rank. Default 16.
  uint64_t rows = 16;
  // gpus: CUDA device ordinals for this process's ranks' planes, one per rank
  // (fewer: rank r uses gpus[r % size]). Default empty: host memory (no GPU).
  std::vector<int> gpus;
  // service_bind: the numeric address rank zero's `strata runtime` listens
  // on for the peers' runtimes (launch/runtime/runtime_lockstep.h).
  // Default "127.0.0.1": enough when every rank shares rank zero's host.
  // With peers on other hosts, an address they reach rank zero's host at.
  std::string service_bind = std::string(kLoopbackBind);
  // copy_out_rate, restore_rate: bounds on the bytes per second each rank
  // copies out of its planes and restores into them (store/transfer/
  // transfer_pacer.h), for a runtime whose model must not slow: even plain
  // DMA at the bus's full rate slows a decode-bound model by 3-8% on an
  // H200. Default 0: unbounded.
  uint64_t copy_out_rate = 0;
  uint64_t restore_rate = 0;
};

// [tls]: mutual TLS 1.3 on the rendezvous and every record link, with the
// PEM files of this rank (wire/tls.h). All three or none (ValidateConfig);
// none (default): plaintext.
struct TlsFilesConfig {
  std::optional<std::string> cert;  // cert: this rank's certificate chain
  std::optional<std::string> key;   // key: its private key
  std::optional<std::string> ca;    // ca: the CA every rank's certificate chains to
  bool enabled() const { return cert.has_value(); }
};

// [attach]: the channel a runtime process attaches to (docs/embedding.md).
struct AttachConfig {
  // socket: the Unix socket path a runtime attaches at (created 0600).
  // Default unset: no attach channel; the synthetic runtime runs instead.
  std::optional<std::string> socket;
};

// The idle spin [prefix_cache] asks for, or the machine's default.
inline std::chrono::microseconds IdleSpin(const PrefixCacheConfig& pc) {
  return pc.idle_spin_us ? std::chrono::microseconds(*pc.idle_spin_us) : DefaultIdleSpin();
}

// The transfer threads' options [runtime] asks for: its copy rates.
inline ThreadedTransfersOptions TransferThreads(const RuntimeConfig& runtime) {
  ThreadedTransfersOptions o;
  o.copy_out_bytes_per_s = runtime.copy_out_rate;
  o.restore_bytes_per_s = runtime.restore_rate;
  return o;
}

struct RankConfig {
  PrefixCacheConfig prefix_cache;
  ClusterConfig cluster;
  MetricsConfig metrics;
  LogConfig log;
  RuntimeConfig runtime;
  TlsFilesConfig tls;
  AttachConfig attach;
};

// Bounds on [runtime] so the synthetic runtime stays small.
inline constexpr uint64_t kRuntimePagesMax = 1 << 20;
inline constexpr uint64_t kRuntimeRowsMax = 1 << 16;

// One value as a file or flag gives it: TOML strings, integers and booleans;
// flags always give strings (booleans for switches).
using ConfigValue = std::variant<std::string, int64_t, bool>;

// One configuration key: `table.name` in the file and `--flag` on the
// command line, with the forms and default docs/operations.md lists.
struct ConfigKey {
  std::string_view name;          // "prefix_cache.memory"
  std::string_view flag;          // "--prefix-cache-memory"
  std::string_view forms;         // what is allowed, for messages and --help
  std::string_view default_text;  // for --help and docs
  // Sets the field; the message of an error names the value, not the key.
  Status (*set)(const ConfigValue& value, RankConfig* config);
  // A switch (`--single-process`) or a flag whose value is optional
  // (`--prefix-cache-drain-on-shutdown[=DURATION]`, bare means "on").
  enum class FlagArity : unsigned char {
    kValue,
    kSwitch,
    kOptionalValue
  } arity = FlagArity::kValue;
};

// Every key, in table order ([prefix_cache], [cluster], [metrics], [log], [runtime],
// [tls], [attach]).
const std::vector<ConfigKey>& ConfigKeys();
// The key named `table.name`, or null.
const ConfigKey* FindConfigKey(std::string_view name);
// The tables ConfigKeys() uses, in order.
std::vector<std::string_view> ConfigTables();

// Sets `key` from `value`; an error reads `<label>: <what is wrong> (<forms>)`,
// where label is the key name or the flag that carried the value.
Status SetConfigValue(const ConfigKey& key, const ConfigValue& value, std::string_view label,
                      RankConfig* config);

// The largest TCP port number, for the port keys and their checks.
inline constexpr uint64_t kPortMax = std::numeric_limits<uint16_t>::max();

// Checks what no single key can: rank below world size, ranks in separate
// processes refuse a memory tier (seed 2.14), a limit without a directory,
// ports in range and distinct. The message names the key(s).
Status ValidateConfig(const RankConfig& config);

// The disk limit in bytes: disk_limit when set, else one tenth of
// `free_bytes`, the free space of disk_dir's filesystem at startup.
uint64_t ResolveDiskLimit(const PrefixCacheConfig& prefix_cache, uint64_t free_bytes);

// The metrics port this rank serves on: 0 stays 0 (ephemeral), otherwise
// port + local_rank (ValidateConfig checks it fits).
uint16_t EffectiveMetricsPort(const RankConfig& config);

std::string_view LogLevelName(LogLevel level);
std::string_view LogFormatName(LogFormat format);
std::string DrainOnShutdownText(const DrainOnShutdown& drain);

}  // namespace strata

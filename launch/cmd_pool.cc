// `strata pool`: the pool manager of seed 2.15 (docs/pool.md). Creates the
// shared arena, listens on a Unix socket for instances on this host (and, with
// --tcp, on TCP with the job-secret rule: pool_hello_proof.h; instances on
// other hosts move their records through the TCP data channel), serves
// /metrics, /healthz and /status with --metrics-port (the ranks' endpoint
// code, launch/ops/), and runs until SIGTERM or SIGINT.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <random>
#include <string>

#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/pool_socket.h"
#include "coordinator/rendezvous/job_secret.h"
#include "launch/commands.h"
#include "launch/ops/http_endpoint.h"
#include "launch/pool_metrics.h"
#include "launch/rank/stop_on_signals.h"
#include "launch/rank/stop_request.h"
#include "wire/tls.h"

namespace strata {
namespace {

struct PoolCommandOptions {
  pool::PoolServerOptions server;
  uint64_t slot_kib = 2048;
  bool no_huge_pages = false;
  std::optional<uint16_t> metrics_port;  // unset: no endpoint
  std::string metrics_bind = "127.0.0.1";
  std::string tcp;                             // HOST:PORT; empty: no TCP listener
  std::optional<std::string> job_secret_file;  // unset: STRATA_JOB_SECRET
  wire::TlsConfig tls;                         // all three set: TLS on --tcp
};

// --tcp HOST:PORT into the server's options, with the job secret it needs.
Status ApplyTcp(PoolCommandOptions& o) {
  if (o.tcp.empty()) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(const pool::PoolAddress address,
                          pool::ParsePoolAddress("tcp://" + o.tcp, /*listening=*/true));
  o.server.tcp_host = address.host;
  o.server.tcp_port = address.port;
  STRATA_ASSIGN_OR_RETURN(JobSecret secret, ReadJobSecret(o.job_secret_file));
  o.server.job_secret = std::move(secret);
  const int given = !o.tls.cert_file.empty() + !o.tls.key_file.empty() + !o.tls.ca_file.empty();
  if (given != 0 && given != 3) {
    return Status::InvalidArgument("--tls-cert, --tls-key and --tls-ca go together");
  }
  if (given == 3) {
    STRATA_ASSIGN_OR_RETURN(o.server.tls, wire::TlsContext::Create(o.tls));
  }
  return Status::Ok();
}

OpsSnapshot ManagerSnapshot(const pool::PoolServer& server) {
  OpsSnapshot s;
  s.owner = OpsOwner::kPoolManager;
  s.extra_metrics = PoolManagerMetrics(server.Stats());
  s.taken_at = std::chrono::steady_clock::now();
  return s;
}

int RunPool(PoolCommandOptions& o) {
  o.server.slot_bytes = o.slot_kib * 1024;
  o.server.huge_pages = o.no_huge_pages ? pool::HugePages::kNever : pool::HugePages::kIfAvailable;
  // The generation tells instances that this is a new arena (a restart).
  std::random_device entropy;
  const uint64_t generation = (static_cast<uint64_t>(entropy()) << 32) | entropy();
  if (o.tcp.empty() &&
      !(o.tls.cert_file.empty() && o.tls.key_file.empty() && o.tls.ca_file.empty())) {
    std::fprintf(stderr, "strata pool: --tls-* apply to the --tcp address, which is not set\n");
    return 1;
  }
  if (Status s = ApplyTcp(o); !s.ok()) {
    std::fprintf(stderr, "strata pool: --tcp %s: %s\n", o.tcp.c_str(), s.ToString().c_str());
    return 1;
  }
  StopRequest stop;
  Result<std::unique_ptr<StopOnSignals>> signals = StopOnSignals::Install(stop);
  if (!signals.ok()) {
    std::fprintf(stderr, "strata pool: %s\n", signals.status().ToString().c_str());
    return 1;
  }
  Result<std::unique_ptr<pool::PoolServer>> server = pool::PoolServer::Start(o.server, generation);
  if (!server.ok()) {
    std::fprintf(stderr, "strata pool: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("strata pool '%s': %u slots of %llu KiB (%s pages), generation %016llx%s, on %s\n",
              o.server.name.c_str(), o.server.slot_count,
              static_cast<unsigned long long>(o.slot_kib),
              (*server)->page_kind() == pool::PageKind::kHuge ? "huge" : "ordinary",
              static_cast<unsigned long long>((*server)->generation()),
              o.server.arena_path.empty() ? ""
              : (*server)->reopened()     ? " (named arena reopened: registrations stay valid)"
                                          : " (named arena, new)",
              o.server.socket_path.c_str());
  if ((*server)->tcp_port() != 0) {
    const std::string mapped =
        o.server.arena_path.empty()
            ? std::string("every TCP instance uses the data channel")
            : "instances on this host map " + o.server.arena_path + ", others use the data channel";
    std::printf("strata pool: also on tcp://%s:%u (%s; job secret required; %s)\n",
                o.server.tcp_host.c_str(), static_cast<unsigned>((*server)->tcp_port()),
                o.server.tls ? "mutual TLS 1.3" : "plaintext", mapped.c_str());
  }
  // Each scrape reads the counts the manager's thread published after its
  // last exchange (PoolServer::Stats), so an answered request is counted.
  std::unique_ptr<HttpEndpoint> endpoint;
  if (o.metrics_port) {
    Result<std::unique_ptr<HttpEndpoint>> started = HttpEndpoint::Start(
        {.bind = o.metrics_bind, .port = *o.metrics_port}, [manager = server->get()] {
          return std::make_shared<const OpsSnapshot>(ManagerSnapshot(*manager));
        });
    if (!started.ok()) {
      std::fprintf(stderr, "strata pool: %s\n", started.status().ToString().c_str());
      return 1;
    }
    endpoint = std::move(*started);
    std::printf("strata pool: metrics at http://%s:%u/metrics\n", o.metrics_bind.c_str(),
                static_cast<unsigned>(endpoint->port()));
  }
  std::fflush(stdout);
  // Bounded waits: a time_point::max() deadline overflows some clocks.
  while (!stop.WaitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(1))) {
  }
  endpoint.reset();
  (*server)->Stop();
  return 0;
}

}  // namespace

void AddPoolCommand(CLI::App& app) {
  auto opts = std::make_shared<PoolCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pool",
      "Run a pool manager: instances share prefixes through its arena (on this host) or its TCP "
      "data channel (other hosts)");
  cmd->add_option("--name", opts->server.name,
                  "Pool name: salts scopes and instance ids (a renamed pool starts cold)")
      ->required();
  cmd->add_option("--socket", opts->server.socket_path, "Unix socket instances connect to")
      ->required();
  cmd->add_option("--slot-kib", opts->slot_kib, "Bytes of one record slot, in KiB")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 22));
  cmd->add_option("--slots", opts->server.slot_count, "Record slots in the arena")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  cmd->add_option("--claims-max", opts->server.claims_in_flight_max, "Claims in flight at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  cmd->add_flag("--no-huge-pages", opts->no_huge_pages, "Use ordinary pages for the arena");
  cmd->add_option("--arena-file", opts->server.arena_path,
                  "Keep the arena in this file (on /dev/shm or hugetlbfs; created 0600) with a "
                  "PATH.generation stamp: a manager restarted with the same file and sizes keeps "
                  "the generation, so instances keep their registered mappings (default: an "
                  "anonymous memfd, new at every start)");
  cmd->add_option("--tcp", opts->tcp,
                  "Also listen on TCP HOST:PORT (port 0: ephemeral, printed). Every Hello over "
                  "TCP proves the job secret. Instances on this host map --arena-file by path; "
                  "others (and those run with --prefix-cache-pool-data tcp) move their records "
                  "through the TCP data channel (without --arena-file, every TCP instance does). "
                  "Plaintext unless --tls-cert, --tls-key and --tls-ca are given");
  cmd->add_option("--job-secret-file", opts->job_secret_file,
                  "File holding the job secret --tcp needs (default: STRATA_JOB_SECRET)");
  cmd->add_option("--tls-cert", opts->tls.cert_file,
                  "PEM certificate the --tcp address presents (mutual TLS 1.3, as the ranks' "
                  "--tls-cert; with --tls-key and --tls-ca)");
  cmd->add_option("--tls-key", opts->tls.key_file, "PEM private key of --tls-cert");
  cmd->add_option("--tls-ca", opts->tls.ca_file,
                  "PEM CA certificate(s) an instance's certificate must chain to");
  cmd->add_option("--metrics-port", opts->metrics_port,
                  "Serve /metrics, /healthz and /status on this port (0: ephemeral, printed)");
  cmd->add_option("--metrics-bind", opts->metrics_bind, "Address the metrics endpoint binds")
      ->capture_default_str();
  cmd->callback([opts] {
    int rc = RunPool(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata

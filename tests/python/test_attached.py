"""Attached mode: `strata rank --attach-socket` processes and one Python
runtime per rank, coordinated through a real torch.distributed.TCPStore.
The runtimes store from torch CPU tensors living in memfd regions, are
killed, and their restarts restore byte-exact from the ranks' tiers.

  ranks 1: one `strata rank` with a memory tier; the restore comes from memory.
  ranks 3: three `strata rank` processes (ranks in separate processes keep
           records on disk, joined through their own TCP rendezvous); rank
           zero's runtime makes the store calls, each peer's runtime only
           shares its planes, and every rank's restored bytes are checked."""
import os
import pathlib
import random
import secrets

import pytest

STRATA = os.environ.get("STRATA_BINARY",
                        str(pathlib.Path(__file__).resolve().parents[2] / "build" / "strata"))
COMMON = ["--preset", "tiny", "--pages", 32, "--rows", 8]


def start_single_rank(spawn, scratch):
    socket_path = scratch / "rank0.sock"
    proc = spawn.binary(STRATA, "rank", "--attach-socket", socket_path, *COMMON,
                        "--prefix-cache-memory", "8MiB", "--metrics-port", 0)
    proc.wait_for_line("serving the runtime of rank 0")
    return [socket_path]


def start_separate_ranks(spawn, scratch, ranks):
    secret = scratch / "job.secret"
    secret.write_text(secrets.token_hex(32))
    secret.chmod(0o600)
    base = 10000 + random.randrange(20000)
    procs, sockets = [], []
    for r in range(ranks):
        sockets.append(scratch / f"rank{r}.sock")
        procs.append(spawn.binary(
            STRATA, "rank", "--attach-socket", sockets[-1], *COMMON, "--world-size", ranks,
            "--rank", r, "--local-rank", r, "--master-addr", "127.0.0.1", "--master-port", base,
            "--metrics-port", base + 10, "--job-secret-file", secret,
            "--prefix-cache-disk", scratch / f"records{r}", "--prefix-cache-disk-limit", "64MiB",
            "--connect-timeout", "60s"))
    for r, proc in enumerate(procs):
        proc.wait_for_line(f"serving the runtime of rank {r}")
    return sockets


@pytest.mark.parametrize("ranks,tier", [(1, "memory"), (3, "disk")])
def test_runtimes_killed_and_restarted_restore_byte_exact(spawn, tcp_store, scratch, ranks, tier):
    sockets = (start_single_rank(spawn, scratch) if ranks == 1
               else start_separate_ranks(spawn, scratch, ranks))
    for r, socket_path in enumerate(sockets):
        tcp_store.set(f"attach/socket/{r}", str(socket_path))
    tcp_store.set("attach/ranks", str(ranks))
    first = [spawn("attached_runtime.py", r, tcp_store.port, "store") for r in range(ranks)]
    assert '"stored": "queued"' in first[0].wait_for_line('"stored"')
    for w in first:
        w.kill()  # the runtimes die; the ranks' tiers keep their records
    second = [spawn("attached_runtime.py", r, tcp_store.port, "restore") for r in range(ranks)]
    for r, w in enumerate(second):
        assert w.result() == {"check": "ok", "tier": tier}, f"rank {r}"

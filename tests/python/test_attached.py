"""Attached mode: `strata rank --attach-socket` processes and one Python
runtime per rank, coordinated through a real torch.distributed.TCPStore.
The runtime stores from torch CPU tensors living in memfd regions, is
killed, and its restart restores byte-exact from the rank's memory tier.

The rank count is a parameter: one `strata rank` per rank once multi-process
ranks serve the attach channel; today a single-process rank serves it."""
import os
import pathlib

import pytest

STRATA = os.environ.get("STRATA_BINARY",
                        str(pathlib.Path(__file__).resolve().parents[2] / "build" / "strata"))


def start_rank(spawn, scratch, rank):
    socket_path = scratch / f"rank{rank}.sock"
    proc = spawn.binary(STRATA, "rank", "--attach-socket", socket_path, "--preset", "tiny",
                        "--pages", 32, "--rows", 8, "--prefix-cache-memory", "8MiB",
                        "--metrics-port", 0)
    proc.wait_for_line("serving runtimes at")
    return socket_path


@pytest.mark.parametrize("ranks", [1])
def test_runtime_killed_and_restarted_restores_from_memory(spawn, tcp_store, scratch, ranks):
    for r in range(ranks):
        tcp_store.set(f"attach/socket/{r}", str(start_rank(spawn, scratch, r)))
    first = [spawn("attached_runtime.py", r, tcp_store.port, "store") for r in range(ranks)]
    for w in first:
        assert '"stored": "queued"' in w.wait_for_line('"stored"')
    for w in first:
        w.kill()  # the runtime dies; the rank's memory tier keeps its records
    second = [spawn("attached_runtime.py", r, tcp_store.port, "restore") for r in range(ranks)]
    for w in second:
        result = w.result()
        assert result == {"check": "ok", "tier": "memory"}

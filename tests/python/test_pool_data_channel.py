"""Two in-process stores sharing through a real `strata pool` over its TCP
address with the data channel forced (docs/pool.md, "The data channel"), as
instances on other hosts would: store A's memory tier evicts a checkpoint,
whose record goes to the manager window by window through A's data
connection; store B claims it through its own and restores it byte-exact
into other page ids. The manager's /metrics counts the bytes both ways."""
import os
import re
import subprocess
import time
import urllib.request

import pytest

import strata
import runtime_model as rm
from test_pool import BOUND_S, evict_one_to_the_pool, restore_in_b

SECRET = "python-data-channel-test-secret-0123456789"


@pytest.fixture
def tcp_manager(scratch, monkeypatch):
    """A `strata pool` on an ephemeral loopback TCP port (no arena file: TCP
    instances use the data channel); (its tcp:// address, its metrics port)."""
    monkeypatch.setenv("STRATA_JOB_SECRET", SECRET)
    proc = subprocess.Popen([os.environ["STRATA_BINARY"], "pool", "--name", "py-tcp", "--socket",
                             str(scratch / "pool.sock"), "--slot-kib", "64", "--slots", "64",
                             "--no-huge-pages", "--tcp", "127.0.0.1:0", "--metrics-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    address, metrics = None, None
    deadline = time.monotonic() + BOUND_S
    while address is None or metrics is None:
        assert time.monotonic() < deadline, "the manager printed no addresses"
        line = proc.stdout.readline()
        assert line or proc.poll() is None, proc.stderr.read()
        found = re.search(r"also on (tcp://[0-9.]+:[0-9]+)", line)
        address = found.group(1) if found else address
        port = re.search(r"metrics at http://[0-9.]+:([0-9]+)", line)
        metrics = int(port.group(1)) if port else metrics
    yield address, metrics
    proc.terminate()
    proc.wait(timeout=BOUND_S)


def data_bytes(metrics_port, direction):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                  timeout=BOUND_S).read().decode()
    found = re.search(r'^strata_pool_data_bytes_total\{direction="%s"\} (\d+)' % direction, text,
                      re.M)
    return int(found.group(1)) if found else 0


def test_instances_share_through_the_data_channel_byte_exact(tcp_manager):
    address, metrics = tcp_manager
    a = evict_one_to_the_pool(address, pool_data="tcp")
    assert data_bytes(metrics, "in") > 0, "the put's windows came through the data channel"

    restore_in_b(address, pool_data="tcp")
    assert data_bytes(metrics, "out") > 0, "the claim's windows came through the data channel"
    a.close()


def test_an_unknown_pool_data_value_is_refused(tcp_manager):
    address, _ = tcp_manager
    with pytest.raises(strata.StrataError, match="pool_data"):
        strata.memory_store(rm.geometry(rm.allocate()), 6 << 20, pool=address,
                            model_identity=rm.MODEL, pool_data="nfs")

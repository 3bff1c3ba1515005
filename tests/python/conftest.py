"""Fixtures of the Python package's tests: a real torch.distributed.TCPStore
hosted by the test process (workers connect to it), worker processes started
here (never torchrun: Debian's fails on Python 3.11), and a scratch directory
on a filesystem that accepts O_DIRECT."""
import datetime
import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest
import torch.distributed as dist

HERE = pathlib.Path(__file__).resolve().parent
PROCESS_BOUND_S = 90


@pytest.fixture
def tcp_store():
    """The master of a TCPStore on an ephemeral port."""
    store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=30),
                          wait_for_workers=False)
    yield store


@pytest.fixture
def scratch():
    base = os.environ.get("STRATA_TEST_TMP")
    if base:
        os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(prefix="strata-py-", dir=base)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(HERE), env.get("PYTHONPATH", "")] if p)
    return env


class Worker:
    """A process of this test; its stdout lines arrive on a queue."""

    def __init__(self, args, merge_stderr=False):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                                     text=True, env=_env())
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        if not merge_stderr:
            threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr),
                             daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for_line(self, text, bound_s=PROCESS_BOUND_S):
        """The first output line containing `text`, waiting at most bound_s."""
        while True:
            line = self.lines.get(timeout=bound_s)
            if line is None:
                raise AssertionError(f"process ended before '{text}': {''.join(self.stderr)}")
            if text in line:
                return line

    def result(self, bound_s=PROCESS_BOUND_S):
        """The JSON line it printed last, after it exited 0."""
        rc = self.proc.wait(timeout=bound_s)
        out = []
        while not self.lines.empty():
            line = self.lines.get()
            if line is not None:
                out.append(line)
        assert rc == 0, f"exit {rc}: {''.join(self.stderr)[-4000:]}"
        return json.loads(out[-1])

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=PROCESS_BOUND_S)


@pytest.fixture
def spawn():
    workers = []

    def start(script, *args):
        w = Worker([sys.executable, str(HERE / script), *map(str, args)])
        workers.append(w)
        return w

    def binary(path, *args):
        w = Worker([str(path), *map(str, args)], merge_stderr=True)
        workers.append(w)
        return w

    start.binary = binary
    yield start
    for w in workers:
        if w.proc.poll() is None:
            w.kill()

"""A minimal runtime loop over Strata, one process per rank (docs/python.md).

Each rank allocates its KV planes and state rows as torch CPU tensors. Rank
zero makes the torch.distributed.TCPStore every rank joins, and its Strata
coordinator is the store for all ranks; the other ranks run a RankAgent whose
copies rank zero's calls drive. The loop publishes checkpoints, evicts them
from the "GPU" (its tensors), restores them into other page ids and checks
every byte on every rank.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/runtime_loop.py \
      --world 3 --dir /tmp/strata-example
(starts the ranks itself; --rank R --port P runs one rank)."""
import argparse
import datetime
import subprocess
import sys
import time

import torch
import torch.distributed as dist

import strata

PAGE_TOKENS, PAGES, ROWS = 16, 64, 8
PLANES = {f"layer{l:02d}.{kv}": 2048 for l in range(2) for kv in ("key", "value")}
ROW_BYTES = 1024
WAIT = datetime.timedelta(seconds=60)


_pending = []  # events a poll returned after the one being waited for


def poll_until(store, want, bound_s=30.0):
    """Runs the runtime's loop until an event of kind `want` arrives. A real
    runtime handles every event each iteration; this one keeps the others
    for its next wait rather than dropping them."""
    deadline = time.monotonic() + bound_s
    while True:
        while _pending:
            e = _pending.pop(0)
            if e.kind == want:
                return e
            if not e.ok or e.kind == "stopped":
                raise RuntimeError(f"strata: {e!r}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no {want} within {bound_s} s")
        _pending.extend(store.poll())
        if not _pending:
            time.sleep(0.001)  # one iteration of the runtime's loop


def run_rank(rank, world, port, directory):
    kv = dist.TCPStore("127.0.0.1", port, world, rank == 0, WAIT)
    torch.manual_seed(rank)
    planes = {n: torch.randint(0, 256, (PAGES, u), dtype=torch.uint8) for n, u in PLANES.items()}
    rows = torch.randint(0, 256, (ROWS, ROW_BYTES), dtype=torch.uint8)
    original = {n: t.clone() for n, t in planes.items()}
    original_rows = rows.clone()
    geo = strata.Geometry(PAGE_TOKENS, [strata.Allocation(n, t) for n, t in planes.items()] +
                          [strata.Allocation("state.rows", rows, strata.STATE_ROWS)])
    args = dict(world_size=world, directory=directory, disk_bytes=256 << 20,
                model_identity="example/model")
    requests = [[(r * 131 + i) % 32000 for i in range(4 * PAGE_TOKENS)] for r in range(3)]
    chains = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    if rank != 0:
        agent = strata.RankAgent(geo, kv, rank, **args)
        for i in range(len(requests)):
            kv.wait([f"example/evict/{i}"], WAIT)
            evict(planes, rows, chains[i], i)
            kv.set(f"example/evicted/{i}/{rank}", "1")
            kv.wait([f"example/restored/{i}"], WAIT)
            check(planes, original, rows, original_rows, chains[i], [40 + p for p in range(4)], i)
        agent.wait(60.0)
        agent.close()
        return
    with strata.coordinator(geo, kv, **args) as store:
        for i, (tokens, chain) in enumerate(zip(requests, chains)):
            assert store.store(i, tokens, len(tokens), chain, row_slot=i) == "queued"
            poll_until(store, "stored")  # unpin the checkpoint now
            kv.set(f"example/evict/{i}", "1")
            kv.wait([f"example/evicted/{i}/{r}" for r in range(1, world)], WAIT)
            evict(planes, rows, chain, i)
            hit = store.lookup(tokens)
            ids = [40 + p for p in range(hit.pages)]
            store.fetch(hit, ticket=i, page_ids=ids, row_slot=6)
            poll_until(store, "fetched")
            kv.set(f"example/restored/{i}", "1")
            check(planes, original, rows, original_rows, chain, ids, i)
            print(f"rank 0: request {i}: {hit.pages} pages restored from {hit.tier}, bytes match")


def evict(planes, rows, chain, slot):
    """The checkpoint leaves the "GPU": its pages and its row are zeroed."""
    for t in planes.values():
        t[chain] = 0
    rows[slot] = 0


def check(planes, original, rows, original_rows, chain, ids, published_slot, slot=6):
    """Restored pages `ids` hold `chain`'s original bytes; row `slot` holds
    the row published from `published_slot`."""
    for n, t in planes.items():
        for src, dst in zip(chain, ids):
            assert torch.equal(t[dst], original[n][src]), (n, src, dst)
    assert torch.equal(rows[slot], original_rows[published_slot])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=3)
    p.add_argument("--dir", required=True)
    p.add_argument("--rank", type=int)
    p.add_argument("--port", type=int, default=29555)
    a = p.parse_args()
    if a.rank is not None:
        run_rank(a.rank, a.world, a.port, a.dir)
        return
    procs = [subprocess.Popen([sys.executable, __file__, "--world", str(a.world), "--dir", a.dir,
                               "--rank", str(r), "--port", str(a.port)]) for r in range(a.world)]
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    main()

"""One rank of the embedded-mode test: its planes are torch CPU tensors;
rank zero runs the coordinator (the store for every rank), the others a
RankAgent; the rendezvous and the test's own signals go through a
torch.distributed.TCPStore. Prints one JSON line: {"ok", "files", ...}.

  embedded_rank.py RANK WORLD PORT DIR PHASE PREFIX
PHASE "store": fill, store the checkpoint, zero, restore into other ids.
PHASE "restore": start empty, restore from disk (records of "store")."""
import datetime
import json
import os
import sys

import torch.distributed as dist

import runtime_model as rm
import strata

WAIT = datetime.timedelta(seconds=60)


def main():
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    directory, phase, prefix = sys.argv[4], sys.argv[5], sys.argv[6]
    kv = dist.TCPStore("127.0.0.1", port, world, False, WAIT)
    tensors = rm.allocate()
    geo = rm.geometry(tensors)
    if phase == "store":
        rm.fill(tensors, rank)
    page_ids, row_slot = ([20, 21, 22, 23], 5) if phase == "store" else ([24, 25, 26, 27], 6)
    common = dict(world_size=world, directory=directory, disk_bytes=64 << 20,
                  model_identity=rm.MODEL, prefix=prefix, timeout_s=60.0, durable=False)
    result = {"rank": rank}
    if rank == 0:
        store = strata.coordinator(geo, kv, **common)
        if phase == "store":
            assert store.store(1, rm.TOKENS, len(rm.TOKENS), rm.CHAIN, rm.ROW_SLOT) == "queued"
            rm.poll_until(store, "stored")
        kv.set(f"{prefix}test/zero", "1")
        kv.wait([f"{prefix}test/zeroed/{r}" for r in range(1, world)], WAIT)
        rm.zero(tensors)
        hit = store.lookup(rm.TOKENS)
        assert hit is not None and hit.consumed == len(rm.TOKENS), hit
        result["tier"] = hit.tier
        store.fetch(hit, 7, page_ids, row_slot)
        rm.poll_until(store, "fetched")
        kv.set(f"{prefix}test/fetched", "1")
        kv.wait([f"{prefix}test/checked/{r}" for r in range(1, world)], WAIT)
        result["peer_checks"] = [kv.get(f"{prefix}test/checked/{r}").decode() for r in range(1, world)]
        result["check"] = rm.check_restored(tensors, rank, page_ids, row_slot) or "ok"
        result["files"] = sorted(os.listdir(store.record_dir))
        store.close()
    else:
        agent = strata.RankAgent(geo, kv, rank, **common)
        kv.wait([f"{prefix}test/zero"], WAIT)
        rm.zero(tensors)
        kv.set(f"{prefix}test/zeroed/{rank}", "1")
        kv.wait([f"{prefix}test/fetched"], WAIT)
        check = rm.check_restored(tensors, rank, page_ids, row_slot) or "ok"
        kv.set(f"{prefix}test/checked/{rank}", check)
        result["check"] = check
        result["files"] = sorted(os.listdir(agent.record_dir))
        result["ended"] = agent.wait(60.0)  # rank zero closes the session
        agent.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

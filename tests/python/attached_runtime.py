"""A Python runtime attached to its local `strata rank` (attach channel):
its planes are torch tensors over memfd regions the rank maps, so the
runtime's tensor is the shared memory. Reads its socket from the test's
torch.distributed.TCPStore. Prints JSON lines.

  attached_runtime.py RANK PORT PHASE [attach-rendezvous]
PHASE "store": fill, store the checkpoint, print {"stored": ...}, then wait
to be killed. PHASE "restore": start zeroed, restore into other ids from
the rank's tiers, check, detach.

With several ranks ("attach/ranks" in the store) only rank zero's runtime
makes the store calls; a peer's runtime attaches its planes, says so
("attach/ready/PHASE/RANK"), and in the restore phase checks its planes
once rank zero says the restore finished ("attach/restored").

With "attach-rendezvous" the `strata rank` processes know no rendezvous of
their own: rank zero's runtime publishes what its rank's HelloAccept gave
(strata.publish_rendezvous) and each peer's runtime hands it to its rank at
attach (strata.read_rendezvous)."""
import datetime
import json
import sys
import threading

import torch
import torch.distributed as dist

import runtime_model as rm
import strata

WAIT = datetime.timedelta(seconds=60)
SHAPE = rm.TINY


def main():
    rank, port, phase = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    through_store = sys.argv[4:] == ["attach-rendezvous"]
    kv = dist.TCPStore("127.0.0.1", port, 1, False, WAIT)
    kv.wait([f"attach/socket/{rank}"], WAIT)
    socket_path = kv.get(f"attach/socket/{rank}").decode()
    regions = {}

    def in_memfd(name, dims):
        regions[name] = strata.MemfdRegion(name, dims[0] * dims[1])
        return torch.frombuffer(regions[name], dtype=torch.uint8).view(dims)

    tensors = rm.allocate(SHAPE, in_memfd)
    geo = rm.geometry(tensors, lambda name, t: regions[name], SHAPE.page_tokens)
    tokens = SHAPE.tokens
    if phase == "store":
        rm.fill(tensors, rank)
    rendezvous = strata.read_rendezvous(kv, timeout_s=60) if through_store and rank else None
    client = strata.attach(socket_path, geo, rm.TINY_MODEL, runtime_id=f"pytest-{rank}-{phase}",
                           rendezvous=rendezvous)
    if through_store and rank == 0:
        strata.publish_rendezvous(kv, client)
    ranks = int(kv.get("attach/ranks").decode())
    kv.set(f"attach/ready/{phase}/{rank}", "1")
    if rank != 0:
        # A peer shares its planes; rank zero's runtime moves its bytes.
        if phase == "store":
            threading.Event().wait()  # until the test kills this runtime
        kv.wait(["attach/restored"], WAIT)
        check = rm.check_restored(tensors, rank, [20, 21, 22, 23], 5) or "ok"
        client.close()
        print(json.dumps({"check": check, "tier": kv.get("attach/restored").decode()}),
              flush=True)
        return
    # Every peer's planes must be attached before a job reaches them.
    kv.wait([f"attach/ready/{phase}/{r}" for r in range(1, ranks)], WAIT)
    if phase == "store":
        client.store(1, tokens, len(tokens), rm.CHAIN, rm.ROW_SLOT)
        answer = rm.poll_until(client, "store_answer")
        rm.poll_until(client, "stored")
        print(json.dumps({"stored": answer.outcome}), flush=True)
        threading.Event().wait()  # until the test kills this runtime
        return
    # In two steps, as a runtime begins a request's lookup when it arrives
    # (a rank without a pool opens no ticket: the admission is a lookup).
    ticket = client.begin_lookup(tokens)
    request = client.lookup_for(ticket, tokens)
    found = rm.poll_until(client, "lookup")
    assert found.request_id == request and found.hit is not None, found
    asked = client.ticket_status(ticket)
    status = rm.poll_until(client, "ticket_status")
    assert status.request_id == asked, status
    assert status.ticket_status["state"] == "none", status.ticket_status  # no pool: no ticket
    client.end_lookup(ticket)
    client.fetch(found.hit, 9, [20, 21, 22, 23], 5)
    rm.poll_until(client, "fetched")
    check = rm.check_restored(tensors, rank, [20, 21, 22, 23], 5) or "ok"
    kv.set("attach/restored", found.hit.tier)
    client.close()
    with __import__("pytest").raises(strata.StrataError):
        client.lookup(tokens)  # use after detach
    print(json.dumps({"check": check, "tier": found.hit.tier}), flush=True)


if __name__ == "__main__":
    main()

"""Strata for Python inference runtimes (docs/python.md).

Describe the runtime's own allocations with `Allocation` and `Geometry`, then
either attach to a local `strata rank` (`attach`) or build a store in this
process: `memory_store`, `disk_store`, `composite_store`, or the multi-process
form (`coordinator` on rank zero, `rank_agent` on every other rank) with the
rendezvous through the runtime's own torch.distributed.Store.

Every Strata error is raised as `StrataError` with `.kind` and `.message`.
Calls that can block release the GIL.
"""
import datetime as _datetime

from ._strata import (  # noqa: F401  (re-exported)
    DeviceBuffer,
    Event,
    Hit,
    MemfdRegion,
    StrataError,
    cuda_device_count,
)
from . import _strata

PAGE_PLANE = "page_plane"
STATE_ROWS = "state_rows"
PEER = "peer"
_KINDS = (PAGE_PLANE, STATE_ROWS, PEER)


def _memory_of(memory):
    """(address, bytes, count_hint, cuda_device or -1) of a tensor, an object
    with __cuda_array_interface__ / __array_interface__, a buffer, or a raw
    (pointer, bytes_per_id, count) tuple."""
    if isinstance(memory, tuple):
        if len(memory) != 3 or not all(isinstance(v, int) for v in memory):
            raise TypeError("a raw allocation is (pointer, bytes_per_id, count), all integers")
        pointer, unit, count = memory
        return pointer, unit * count, count, -1
    iface = getattr(memory, "__cuda_array_interface__", None)
    if iface is not None:
        device = getattr(memory, "device", 0)
        device = getattr(device, "index", device)
        return _from_interface(iface, memory) + ((0 if device is None else int(device)),)
    iface = getattr(memory, "__array_interface__", None)
    if iface is not None:
        return _from_interface(iface, memory) + (-1,)
    if hasattr(memory, "data_ptr") and hasattr(memory, "element_size"):  # torch.Tensor
        if not memory.is_contiguous():
            raise StrataError("invalid_argument", "a plane's tensor must be contiguous")
        if memory.device.type not in ("cpu", "cuda"):
            raise StrataError("invalid_argument", f"tensors on {memory.device} are not supported")
        count = memory.shape[0] if memory.dim() > 0 else 1
        device = -1 if memory.device.type == "cpu" else (memory.device.index or 0)
        return memory.data_ptr(), memory.numel() * memory.element_size(), count, device
    if isinstance(memory, MemfdRegion):
        return memory.address, memory.bytes, None, -1
    raise TypeError(f"cannot take the memory of {type(memory).__name__}: pass a tensor, an object "
                    "with __cuda_array_interface__ / __array_interface__, or (pointer, bytes_per_id, count)")


def _from_interface(iface, memory):
    if iface.get("strides") not in (None,):
        raise StrataError("invalid_argument", "a plane's memory must be contiguous")
    shape = tuple(iface["shape"])
    itemsize = int(iface["typestr"][2:])
    count = shape[0] if shape else 1
    total = itemsize
    for dim in shape:
        total *= dim
    return int(iface["data"][0]), total, count


class Allocation:
    """One runtime allocation: `kind` is PAGE_PLANE (one unit per page id),
    STATE_ROWS (one row per state slot; exactly one per geometry) or PEER
    (another rank's memory, described but never copied). The memory's first
    dimension is the page or row count unless `count` is given;
    `bytes_per_id` defaults to the memory's bytes / count."""

    def __init__(self, name, memory=None, kind=PAGE_PLANE, bytes_per_id=None, count=None):
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}")
        self.name, self.memory, self.kind = name, memory, kind
        a = _strata._Allocation()
        a.name = name
        a.group = _strata._Group.STATE_ROWS if kind == STATE_ROWS else _strata._Group.PAGES
        a.owner = _strata._Owner.PEER if kind == PEER else _strata._Owner.LOCAL
        self.device = -1
        if kind == PEER:
            if bytes_per_id is None or count is None:
                raise ValueError("a peer allocation needs bytes_per_id and count")
        else:
            address, total, count_hint, self.device = _memory_of(memory)
            count = count if count is not None else count_hint
            if not count:
                raise ValueError(f"allocation '{name}': give count")
            bytes_per_id = bytes_per_id if bytes_per_id is not None else total // count
            a.address, a.capacity = address, total
        a.unit_bytes, a.count = bytes_per_id, count
        self._spec = a


class Geometry:
    """One rank's planes as the runtime allocated them. Checked at once:
    a geometry that does not match its memory raises StrataError."""

    def __init__(self, page_tokens, allocations):
        self.allocations = list(allocations)
        devices = {a.device for a in self.allocations if a.kind != PEER}
        if len(devices) != 1:
            raise StrataError("invalid_argument",
                              "every plane of a rank must be on one device (host or one GPU)")
        self.page_tokens = page_tokens
        self._planes = _strata._Planes()
        self._planes.page_tokens = page_tokens
        self._planes.allocations = [a._spec for a in self.allocations]
        self._planes.cuda_device = devices.pop()
        # page_bytes: one page id of every plane; page_record_bytes: one
        # stored page record (padded, with its checksum): one slot of a
        # memory tier, the unit memory_bytes is counted in.
        self.page_bytes, self.page_record_bytes = _strata._check_planes(self._planes)


def tokens(sequence):
    """Token ids as a list of ints from a list, an array or a tensor;
    TypeError when they are not integers, ValueError when out of range."""
    if hasattr(sequence, "tolist"):
        sequence = sequence.tolist()
    out = list(sequence)
    for t in out:
        if not isinstance(t, int) or isinstance(t, bool):
            raise TypeError(f"token ids must be integers, got {type(t).__name__}")
        if t < 0 or t >= 1 << 32:
            raise ValueError(f"token id {t} is outside 0 .. 2**32-1")
    return out


class Store:
    """A store over this process's planes: lookup / store / fetch / poll /
    close, as HostStore (docs/embedding.md section 3)."""

    def __init__(self, handle, geometry):
        self._handle, self.geometry = handle, geometry

    def lookup(self, token_ids, resident_tokens=0, before=None):
        """The deepest restorable prefix of `token_ids` as a Hit, or None.
        With a pool this waits at most the lookup grace (2 ms) for the
        manager: begin_lookup / lookup_for never wait beyond it once."""
        return self._handle.lookup(tokens(token_ids), resident_tokens, before)

    def begin_lookup(self, token_ids, resident_tokens=0, before=None):
        """When a request arrives: starts its pool lookup without waiting
        and returns a ticket (0 without a pool, or at the ticket limit)."""
        return self._handle.begin_lookup(tokens(token_ids), resident_tokens, before)

    def lookup_for(self, ticket, token_ids, resident_tokens=0, before=None):
        """At admission: as lookup, with the pool's answer only if the
        ticket has it (a pending one waits at most the rest of its grace,
        once). A pooled Hit is claimed by the fetch that follows."""
        return self._handle.lookup_for(ticket, tokens(token_ids), resident_tokens, before)

    def ticket_status(self, ticket):
        """{"state": "none" | "pending" | "ready", "pool_consumed",
        "admitted_consumed", "admissions", "answered_late", "retry_used"}:
        what a late answer's retry is decided on (docs/pool.md)."""
        return self._handle.ticket_status(ticket)

    def end_lookup(self, ticket):
        """Drops the ticket (prefill started, or the request went away)."""
        self._handle.end_lookup(ticket)

    def evicted(self, notices):
        """The checkpoints the runtime retired since its last call, oldest
        first, each as (token_ids, consumed, generation); hand them over
        before the next other store call (docs/embedding.md section 5). An
        offer refused for now ("deferred", "retry") whose checkpoint is
        evicted counts in stats()["retry_abandoned"] under its last cause."""
        self._handle.evicted([(tokens(t), c, g) for t, c, g in notices])

    def evictions_lost(self):
        """The runtime's bounded notice queue dropped notices."""
        self._handle.evictions_lost()

    def export_pinned(self, export_id, start_page, pages, row_slot):
        """The answer to an "export_requested" event whose checkpoint the
        runtime pinned (docs/embedding.md section 5): its pages from
        `start_page` on, in chain order, and its row slot. Keep them pinned
        until the "export_ended" event of `export_id`."""
        self._handle.export_pinned(export_id, start_page, list(pages), row_slot)

    def export_refused(self, export_id, reason):
        """The answer to an "export_requested" event the runtime did not pin:
        "not_found", "generation_changed", "chain_gap" or "no_headroom"."""
        self._handle.export_refused(export_id, reason)

    def store(self, checkpoint_id, token_ids, consumed, chain, row_slot, parent_consumed=None,
              tail_pages=None, generation=0):
        """Offers the checkpoint of the first `consumed` tokens (pages `chain`,
        row `row_slot`; `generation`: the runtime's generation of it, which
        export requests and eviction notices name); returns the outcome
        ("queued", "present", "deferred", "retry", "oversize", "disabled")."""
        return self._handle.store(checkpoint_id, tokens(token_ids), consumed, list(chain), row_slot,
                                  parent_consumed, tail_pages, generation)

    def fetch(self, hit, ticket, page_ids, row_slot):
        """Starts restoring `hit` into free `page_ids` and `row_slot`."""
        self._handle.fetch(hit, ticket, list(page_ids), row_slot)

    def poll(self, now_ms=None):
        return self._handle.poll(now_ms)

    def stats(self):
        return self._handle.stats()

    def close(self):
        self._handle.close()

    @property
    def record_dir(self):
        return self._handle.record_dir

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _local(geometry, memory_bytes, directory, disk_bytes, model_identity, durable, pool=None,
           pool_instance=None, pool_data="auto", copy_out_rate=0, restore_rate=0):
    if pool is not None and not model_identity:
        raise StrataError("invalid_argument",
                          "a store with a pool needs model_identity: instances share only "
                          "within one model")
    o = _strata._LocalStoreOptions()
    o.memory_bytes, o.directory, o.disk_bytes = memory_bytes, directory, disk_bytes
    o.model_identity, o.durable = model_identity, durable
    o.pool = None if pool is None else str(pool)
    o.pool_instance = pool_instance
    o.pool_data = pool_data
    o.copy_out_rate, o.restore_rate = copy_out_rate, restore_rate
    return Store(_strata._open_local_store(geometry._planes, o, geometry), geometry)


# `pool`: a pool manager's socket (`strata pool --socket`, docs/pool.md), or
# its tcp://HOST:PORT (`strata pool --tcp`; STRATA_JOB_SECRET): the store
# joins it, attaching within 10 s or staying local with one warning;
# `pool_instance` names the instance there (default: host name and pid);
# `pool_data` says how records reach a tcp:// manager's slots: "auto" (its
# arena's file on this host, else the TCP data channel), "arena" or "tcp".
# `copy_out_rate` and `restore_rate` bound the bytes per second the store's
# copies move out of and into the planes (0: unbounded), as `strata rank`'s
# [runtime] copy_out_rate and restore_rate: for a model that must not slow
# while it decodes (docs/performance.md, "Pacing the copies").


def memory_store(geometry, memory_bytes, pool=None, model_identity="", pool_instance=None,
                 pool_data="auto", copy_out_rate=0, restore_rate=0):
    return _local(geometry, memory_bytes, None, 0, model_identity, True, pool, pool_instance,
                  pool_data, copy_out_rate, restore_rate)


def disk_store(geometry, directory, disk_bytes, model_identity, durable=True, pool=None,
               pool_instance=None, pool_data="auto", copy_out_rate=0, restore_rate=0):
    return _local(geometry, 0, str(directory), disk_bytes, model_identity, durable, pool,
                  pool_instance, pool_data, copy_out_rate, restore_rate)


def composite_store(geometry, memory_bytes, directory, disk_bytes, model_identity, durable=True,
                    pool=None, pool_instance=None, pool_data="auto", copy_out_rate=0,
                    restore_rate=0):
    return _local(geometry, memory_bytes, str(directory), disk_bytes, model_identity, durable, pool,
                  pool_instance, pool_data, copy_out_rate, restore_rate)


def pool_store(geometry, pool, model_identity, pool_instance=None, pool_data="auto",
               copy_out_rate=0, restore_rate=0):
    """No local tier: every restore comes from the pool (landing in a small
    memory tier of its own), and every stored checkpoint goes to the pool
    (through that tier, put once its copy-out ended)."""
    return _local(geometry, 0, None, 0, model_identity, True, pool, pool_instance, pool_data,
                  copy_out_rate, restore_rate)


def _options(world_size, directory, disk_bytes, model_identity, prefix, record_host, timeout_s,
             durable, copy_out_rate, restore_rate):
    o = _strata._MultiProcessOptions()
    o.world_size, o.directory, o.disk_bytes = world_size, str(directory), disk_bytes
    o.model_identity, o.prefix, o.record_host = model_identity, prefix, record_host
    o.join_timeout = _datetime.timedelta(seconds=timeout_s)
    o.durable = durable
    o.copy_out_rate, o.restore_rate = copy_out_rate, restore_rate
    return o


def coordinator(geometry, rendezvous, world_size, directory, disk_bytes, model_identity,
                prefix="strata/", record_host="127.0.0.1", timeout_s=60.0, durable=True,
                copy_out_rate=0, restore_rate=0):
    """Rank zero of ranks in separate processes: blocks until every peer
    joined through `rendezvous` (any object with set/get, e.g. a
    torch.distributed.TCPStore), then returns the Store for every rank.
    `copy_out_rate` and `restore_rate` bound this rank's copies (bytes per
    second; 0: unbounded); each peer sets its own."""
    o = _options(world_size, directory, disk_bytes, model_identity, prefix, record_host, timeout_s,
                 durable, copy_out_rate, restore_rate)
    return Store(_strata._open_coordinator(geometry._planes, rendezvous, o, geometry), geometry)


class RankAgent:
    """A peer rank (1 .. world_size-1): serves rank zero's copies on this
    process's planes until rank zero closes the session (wait) or close()."""

    def __init__(self, geometry, rendezvous, rank, world_size, directory, disk_bytes,
                 model_identity, prefix="strata/", timeout_s=60.0, durable=True, copy_out_rate=0,
                 restore_rate=0):
        o = _options(world_size, directory, disk_bytes, model_identity, prefix, "", timeout_s,
                     durable, copy_out_rate, restore_rate)
        self.geometry = geometry
        self._agent = _strata._start_agent(geometry._planes, rendezvous, rank, o, geometry)

    @property
    def state(self):
        return self._agent.state

    @property
    def record_dir(self):
        return self._agent.record_dir

    def wait(self, timeout_s):
        """True once rank zero ended the session (raises its error if it
        failed); False when `timeout_s` passed first."""
        return self._agent.wait(_datetime.timedelta(seconds=timeout_s))

    def close(self):
        self._agent.close()


class AttachedStore:
    """A runtime attached to its local `strata rank`: lookup returns a
    request id whose result arrives through poll (an Event of kind
    "lookup" carrying .hit); ticket_status's is an Event of kind
    "ticket_status" (.ticket_status); store's answer is an Event of kind
    "store_answer" (.outcome); then the store events as in Store."""

    def __init__(self, client, geometry):
        self._client, self.geometry = client, geometry

    def lookup(self, token_ids, resident_tokens=0, before=None):
        return self._client.lookup(tokens(token_ids), resident_tokens, before)

    def begin_lookup(self, token_ids, resident_tokens=0, before=None):
        """When a request arrives: the rank starts its pool lookup; returns
        the ticket (no event follows)."""
        return self._client.begin_lookup(tokens(token_ids), resident_tokens, before)

    def lookup_for(self, ticket, token_ids, resident_tokens=0, before=None):
        """At admission, for a ticket begun earlier with the same tokens: a
        request id whose `lookup` event carries the hit."""
        return self._client.lookup_for(ticket, tokens(token_ids), resident_tokens, before)

    def ticket_status(self, ticket):
        """Asks the state of a ticket begun earlier: a request id whose
        `ticket_status` event carries .ticket_status, the dict Store's
        ticket_status returns (what a late answer's retry is decided on)."""
        return self._client.ticket_status(ticket)

    def end_lookup(self, ticket):
        self._client.end_lookup(ticket)

    def evicted(self, notices):
        """As Store.evicted: sent to the rank's store, no answer."""
        self._client.evicted([(tokens(t), c, g) for t, c, g in notices])

    def evictions_lost(self):
        self._client.evictions_lost()

    def export_pinned(self, export_id, start_page, pages, row_slot):
        """As Store.export_pinned: sent to the rank's store, no answer."""
        self._client.export_pinned(export_id, start_page, list(pages), row_slot)

    def export_refused(self, export_id, reason):
        """As Store.export_refused: sent to the rank's store, no answer."""
        self._client.export_refused(export_id, reason)

    def store(self, checkpoint_id, token_ids, consumed, chain, row_slot, parent_consumed=None,
              tail_pages=None, generation=0):
        self._client.store(checkpoint_id, tokens(token_ids), consumed, list(chain), row_slot,
                           parent_consumed, tail_pages, generation)

    def fetch(self, hit, ticket, page_ids, row_slot):
        self._client.fetch(hit, ticket, list(page_ids), row_slot)

    def poll(self):
        return self._client.poll()

    def fileno(self):
        return self._client.fileno()

    @property
    def rendezvous(self):
        """(address, job secret bytes) of rank zero's rendezvous when this
        is rank zero's `strata rank` started with --rendezvous attach (to
        hand to the peers: publish_rendezvous); None from any other rank."""
        return self._client.rendezvous

    def close(self, timeout_s=30.0):
        self._client.close(_datetime.timedelta(seconds=timeout_s))


def attach(socket_path, geometry, model_identity, runtime_id="python", hello_timeout_s=10.0,
           rendezvous=None):
    """Attaches to the `strata rank` serving `socket_path`. Every allocation's
    memory is either
      - a MemfdRegion (or a tensor made from one with torch.frombuffer,
        given as Allocation(..., memory=region)): host memory, for a rank
        started without --gpus; or
      - GPU memory from cudaMalloc (a CUDA tensor from torch's caching
        allocator, a strata.DeviceBuffer, anything with
        __cuda_array_interface__) on the rank's --gpus device: each plane is
        shared by the legacy IPC handle of the block it lies in and its
        offset there. Keep that memory allocated and unused for anything
        else until close() returned (strata copies into it until then).
        Memory from torch's expandable segments is not cudaMalloc'd and is
        refused by the driver.

    rendezvous: on a peer whose `strata rank` runs with --rendezvous attach,
    rank zero's (address, job secret bytes) as read_rendezvous returns them;
    the rank joins rank zero through them. Rank zero's own attach returns
    them as `.rendezvous` (publish_rendezvous writes them)."""
    address, secret = rendezvous if rendezvous is not None else ("", b"")
    regions, ipc = [], []
    for a in geometry.allocations:
        if isinstance(a.memory, MemfdRegion):
            regions.append(a.memory)
        elif a.kind != PEER and a.device >= 0:
            ipc.append(_strata._cuda_ipc_plane(a.device, a._spec.address))
        else:
            raise StrataError("invalid_argument",
                              f"allocation '{a.name}': attach shares host memory by memfd "
                              "(allocate it with strata.MemfdRegion) or GPU memory by IPC handle")
    if regions and ipc:
        raise StrataError("invalid_argument",
                          "attach shares every plane one way: all in memfd regions or all in "
                          "GPU memory")
    client = _strata._attach(socket_path, runtime_id, model_identity, geometry.page_tokens,
                             [a._spec for a in geometry.allocations], regions,
                             _datetime.timedelta(seconds=hello_timeout_s), geometry,
                             address, bytes(secret), ipc)
    return AttachedStore(client, geometry)


# Keys of the attach rendezvous under `prefix` (next to the keys of
# coordinator/rendezvous/kv_rendezvous.h under the same default prefix).
_ATTACH_ZERO = "attach/zero"
_ATTACH_VERSION = "strata-attach-v1"


def publish_rendezvous(kv, attached, prefix="strata/"):
    """Rank zero's runtime: writes its `strata rank`'s rendezvous address and
    the job secret (attached.rendezvous) into `kv` (any object with
    set(key, value), e.g. a torch.distributed.Store) as
    `<prefix>attach/zero` = "strata-attach-v1 <host:port> <secret hex>"."""
    if attached.rendezvous is None:
        raise StrataError("failed_precondition",
                          "this rank gave no rendezvous at attach: start rank zero's "
                          "`strata rank` with --rendezvous attach")
    address, secret = attached.rendezvous
    kv.set(prefix + _ATTACH_ZERO, f"{_ATTACH_VERSION} {address} {bytes(secret).hex()}")


def read_rendezvous(kv, prefix="strata/", timeout_s=120.0):
    """A peer's runtime: rank zero's (address, job secret bytes) from `kv`,
    for attach(..., rendezvous=...). Waits through kv.wait when it has one
    (torch's stores do); StrataError(kind="unavailable") when nothing came
    within timeout_s, "invalid_argument" for a value it cannot read."""
    key = prefix + _ATTACH_ZERO
    if hasattr(kv, "wait"):
        try:
            kv.wait([key], _datetime.timedelta(seconds=timeout_s))
        except RuntimeError as e:
            raise StrataError("unavailable",
                              f"rank zero's runtime published no rendezvous at '{key}' "
                              f"within {timeout_s} s ({e})") from None
    value = kv.get(key)
    text = value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
    fields = text.split(" ")
    if len(fields) != 3 or fields[0] != _ATTACH_VERSION:
        raise StrataError("invalid_argument",
                          f"'{key}' holds '{fields[0]}...', not a {_ATTACH_VERSION} rendezvous")
    try:
        secret = bytes.fromhex(fields[2])
    except ValueError:
        raise StrataError("invalid_argument", f"'{key}': the job secret is not hex") from None
    return fields[1], secret

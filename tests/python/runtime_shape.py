"""The torch-free half of the test runtime (runtime_model.py): its layouts,
the checkpoint it publishes, and its poll loop. The GPU check
(gpu_planes_check.py) imports only this, so it also runs where the
interpreter has no torch (the GPU machine)."""
import time


class Shape:
    """A runtime's KV layout: page planes (name -> bytes per page) and one
    state-row allocation."""

    def __init__(self, page_tokens, pages, rows, planes, row_bytes):
        self.page_tokens, self.pages, self.rows = page_tokens, pages, rows
        self.planes, self.row_bytes = planes, row_bytes
        self.tokens = list(range(1000, 1000 + 4 * page_tokens))  # four pages


# The embedded tests' own layout.
EMBEDDED = Shape(16, 32, 8, {"layer00.key": 1024, "layer00.value": 1024, "layer01.key": 512}, 768)
# `strata rank --preset tiny --pages 32 --rows 8` (launch/presets.cc).
TINY = Shape(64, 32, 8, {f"layer0{l}.{k}": 4096 for l in (0, 1) for k in ("key", "value")}, 8192)
TINY_MODEL = "synthetic/tiny"

PAGE_TOKENS = EMBEDDED.page_tokens
TOKENS = EMBEDDED.tokens
CHAIN = [3, 7, 9, 11]             # where the runtime keeps the four pages
ROW_SLOT = 2
MODEL = "python-test/model"
POLL_BOUND_S = 30.0


# Events a poll returned after the one a caller waited for, kept for the
# next wait on the same store (one poll may return several at once).
_pending = {}


def poll_until(store, want, bound_s=POLL_BOUND_S):
    """Polls as a runtime's loop does until an event of kind `want` (or a
    failure) arrives; raises after `bound_s`. Events that arrive with it stay
    pending for the next call."""
    pending = _pending.setdefault(id(store), [])
    deadline = time.monotonic() + bound_s
    while True:
        while pending:
            e = pending.pop(0)
            if e.kind == want:
                return e
            if e.kind in ("store_failed", "fetch_failed", "stopped"):
                raise AssertionError(f"unexpected {e!r}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {want} event within {bound_s} s")
        pending.extend(store.poll())
        if not pending:
            time.sleep(0.002)  # a runtime's loop period; the bound above ends the wait

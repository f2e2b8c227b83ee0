"""blobs/fetch and blobs/put through the real cairnd: the verified whole round
trip with the consumer's hash check, ranged fetch with slice digests and
clamping, the typed miss, chunked (unknown-length) puts, verification
failures, a live-broadcast tap served before the put commits, a tap that
missed the prefix degrading to a re-fetch, the late joiner served by the
store, and a slow subscriber dropped without slowing the putter."""
import json
import os
import threading
import time

import pytest
import requests

from blobsclient import Ops, b3, error_of, make_token

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]
NS = "media"


@pytest.fixture
def srv(server_factory):
    return server_factory(args=HTTP_ONLY, wait_for=("http",))


@pytest.fixture
def ops(srv):
    return Ops(srv, make_token(srv, "alice", grants=[(NS, "read"), (NS, "write")]))


def test_verified_round_trip(ops):
    data = os.urandom(3 * 1024 * 1024 + 17)
    d = b3(data)
    status, body = ops.put(NS, data, digest=d, length=len(data))
    assert status == 200, body
    assert body["digest"] == d
    r = ops.fetch(NS, d)
    assert r.status_code == 200
    assert r.ack == {"source": "store", "len": len(data)}
    assert int(r.headers["Content-Length"]) == len(data)
    assert b3(r.content) == d            # the consumer's hash check
    # a second put of the same bytes is idempotent (CAS) and mints a new token
    status, again = ops.put(NS, data)
    assert status == 200 and again["digest"] == d and again["token"] != body["token"]


def test_ranged_fetch_acks_slice_digests_and_clamps(ops):
    data = os.urandom(100000)
    d = b3(data)
    assert ops.put(NS, data)[0] == 200
    ranges = [[0, 10], [99990, 100], [50000, 1], [200000, 5], [7, 0]]
    r = ops.fetch(NS, d, ranges=ranges)
    assert r.status_code == 200, r.text
    assert r.ack["source"] == "store" and r.ack["len"] == len(data)
    served = [data[0:10], data[99990:], data[50000:50001], b"", b""]
    assert r.ack["slice_digests"] == [b3(s) for s in served]
    assert r.content == b"".join(served)
    assert int(r.headers["Content-Length"]) == 21
    # the consumer splits by the clamped lengths it derives from len
    off = 0
    for (o, n), dig in zip(ranges, r.ack["slice_digests"]):
        o = min(o, len(data))
        n = min(n, len(data) - o)
        assert b3(r.content[off:off + n]) == dig
        off += n
    empty = ops.fetch(NS, d, ranges=[])
    assert empty.status_code == 200 and empty.content == b""


def test_typed_miss(ops):
    d = b3(b"never stored")
    r = ops.fetch(NS, d)
    assert r.status_code == 404
    assert "Cairn-Open" not in r.headers
    assert r.json() == {"error": {"code": "channel:open_failed", "reason": "unknown_resource",
                                  "message": d}}


def test_chunked_put_of_unknown_length(ops):
    parts = [os.urandom(70000) for _ in range(5)]
    data = b"".join(parts)
    status, body = ops.put(NS, iter(parts))
    assert status == 200, body
    assert body["digest"] == b3(data)
    assert ops.fetch(NS, body["digest"]).content == data
    status, body = ops.put(NS, b"")
    assert status == 200 and body["digest"] == b3(b"")
    r = ops.fetch(NS, b3(b""))
    assert r.status_code == 200 and r.content == b"" and r.ack["len"] == 0


def test_put_is_verified_before_commit(ops):
    data = b"the real bytes"
    wrong = b3(b"other bytes")
    status, body = ops.put(NS, data, digest=wrong)
    assert status == 400 and error_of(body) == ("verification_failed", "digest_mismatch")
    assert ops.have(NS, [wrong, b3(data)]) == [False, False]
    status, body = ops.put(NS, data, length=len(data) + 1)
    assert status == 400 and error_of(body) == ("verification_failed", "length_mismatch")
    status, body = ops.put(NS, iter([data]), length=len(data) - 1)
    assert status == 400 and error_of(body) == ("verification_failed", "length_mismatch")
    assert ops.have(NS, [b3(data)]) == [False]
    for offer, reason in [({"digest": b3(data)}, "missing_field"),
                          ({"namespace": NS, "len": -1}, "wrong_type"),
                          ({"namespace": NS, "size": 3}, "unknown_field")]:
        status, body = ops.put(NS, data, offer=offer)
        assert status == 400 and error_of(body) == ("invalid_params", reason), offer
    r = requests.post(ops.base + "/_cairn/ops/blobs/put", data=data, headers=ops.headers())
    assert r.status_code == 400 and error_of(r.json()) == ("invalid_params", "missing_offer")
    r = requests.post(ops.base + "/_cairn/ops/blobs/put", data=data,
                      headers=ops.headers({"Cairn-Offer": "{nope"}))
    assert r.status_code == 400 and error_of(r.json()) == ("invalid_params", "malformed_json")


class SlowPut:
    """A chunked put whose chunks are released one at a time."""

    def __init__(self, ops, ns, chunks, digest):
        self.chunks = chunks
        self.gates = [threading.Event() for _ in chunks]
        self.sent = [threading.Event() for _ in chunks]
        self.result = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ops, ns, digest), daemon=True)
        self.thread.start()

    def _body(self):
        for i, c in enumerate(self.chunks):
            self.gates[i].wait(30)
            yield c
            self.sent[i].set()

    def _run(self, ops, ns, digest):
        try:
            self.result = ops.put(ns, self._body(), digest=digest)
        finally:
            self.done.set()

    def release(self, i):
        self.gates[i].set()
        self.sent[i].wait(30)


def tap(ops, ns, d, timeout=10):
    """Fetches until the put's broadcast is registered (a miss until then)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = ops.fetch(ns, d, stream=True)
        if r.status_code == 200:
            return r
        assert r.status_code == 404, r.text
        r.close()
        time.sleep(0.02)
    raise AssertionError("no broadcast")


def read_exactly(it, n, buf):
    while len(buf) < n:
        buf += next(it)
    return buf


def test_live_tap_is_served_before_the_put_commits(ops):
    chunks = [os.urandom(100000) for _ in range(4)]
    data = b"".join(chunks)
    d = b3(data)
    put = SlowPut(ops, NS, chunks, d)
    r = tap(ops, NS, d)
    assert r.ack == {"source": "fanout"}                # no len from a tap
    assert "Content-Length" not in r.headers
    assert r.headers.get("Transfer-Encoding") == "chunked"
    it = r.iter_content(chunk_size=None)
    got = bytearray()
    for i in range(3):
        put.release(i)
        read_exactly(it, sum(len(c) for c in chunks[:i + 1]), got)
    # three quarters served, and the put has not committed yet
    assert not put.done.is_set()
    assert ops.have(NS, [d]) == [False]
    put.release(3)
    for piece in it:
        got += piece
    assert put.done.wait(30)
    assert put.result[0] == 200 and put.result[1]["digest"] == d
    assert bytes(got) == data and b3(bytes(got)) == d   # the hash check at stream end
    # the late joiner, after the broadcast ended, is served by the store
    late = ops.fetch(NS, d)
    assert late.ack == {"source": "store", "len": len(data)}
    assert late.content == data


def test_tap_that_missed_the_prefix_degrades_to_a_refetch(ops):
    chunks = [os.urandom(50000) for _ in range(3)]
    data = b"".join(chunks)
    d = b3(data)
    put = SlowPut(ops, NS, chunks, d)
    # wait until the broadcast exists and its first chunk went by
    first = tap(ops, NS, d)
    put.release(0)
    read_exactly(first.iter_content(chunk_size=None), len(chunks[0]), bytearray())
    mid = ops.fetch(NS, d, stream=True)
    assert mid.status_code == 200 and mid.ack == {"source": "fanout"}
    put.release(1)
    put.release(2)
    tail = mid.content
    assert put.done.wait(30) and put.result[0] == 200
    assert tail == data[len(chunks[0]):]
    assert b3(tail) != d                                 # the consumer's check fails ...
    again = ops.fetch(NS, d)                             # ... and it re-fetches
    assert again.ack["source"] == "store" and b3(again.content) == d
    first.close()


def test_ranged_fetch_of_a_put_in_flight_is_refused(ops):
    chunks = [b"a" * 1000, b"b" * 1000]
    d = b3(b"".join(chunks))
    put = SlowPut(ops, NS, chunks, d)
    r = tap(ops, NS, d)
    ranged = ops.fetch(NS, d, ranges=[[0, 10]])
    assert ranged.status_code == 409
    assert error_of(ranged.json()) == ("handler_error", "unverifiable")
    assert "Cairn-Open" not in ranged.headers
    put.release(0)
    put.release(1)
    assert put.done.wait(30) and put.result[0] == 200
    assert r.content == b"".join(chunks)


def test_slow_subscriber_is_dropped_and_never_slows_the_putter(ops):
    chunk = os.urandom(1 << 20)
    n = 24                                  # 24 MiB: three times the tap queue bound
    d = b3(chunk * n)
    put = SlowPut(ops, NS, [chunk] * n, d)
    slow = tap(ops, NS, d)                  # subscribed, never read
    t0 = time.time()
    for i in range(n):
        put.release(i)
    assert put.done.wait(60)
    assert put.result[0] == 200, put.result
    assert time.time() - t0 < 30
    dropped = False
    try:
        got = slow.content
        dropped = len(got) < len(chunk) * n
    except requests.exceptions.RequestException:
        dropped = True                      # the stream was cut short
    assert dropped
    late = ops.fetch(NS, d)                 # it late-joins from the store
    assert late.ack["source"] == "store" and b3(late.content) == d

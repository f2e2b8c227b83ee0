"""A client that stops reading a get_objects reply stream holds no worker
(issue 16, docs/architecture.md "A reply in parts"): after an object whose
rest the client has not taken, the stream's rest goes to the network loop
and the send stops there; a worker sends the next items once the client
took it.  With one worker per request pool, more stalled readers than
workers leave a fresh client's requests answered at once; the stalled
streams then arrive whole and byte-exact, and their connections serve the
next request."""
import os
import time

from conftest import Server, assert_no_sanitizer
from scribe_wire import CHUNK, OP, Conn, chunk_id

MiB = 1 << 20


def one_worker_server(tmp_path):
    """A started Scribe-only cairnd with one worker per request pool (and no
    share cap), so that a few stalled readers would hold every worker."""
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[server]\nquery_workers = 1\nstorage_workers = 1\n"
                   "[limits]\nworker_share_percent = 0\nio_timeout_floor_ms = 30000\n"
                   "io_rate_bytes_per_sec = 1000000000\n")
    srv = Server(tmp_path / "data", args=["--jay", "off", "--http", "off", "--scribe",
                                          "127.0.0.1:0", "--config", str(cfg)])
    return srv.start(wait_for=("scribe",))


def stall_then_probe(addr, rid, refs, small, opener, caps=0):
    """Four connections from opener() each ask get_objects of refs and do not
    read; a fresh client's get_objects of the chunk `small` is then answered
    at once.  Returns the stalled connections."""
    stalled = []
    for _ in range(4):
        s = opener()
        s.send_frame(OP["get_objects"], s.refs_payload(rid, refs))
        stalled.append(s)
    time.sleep(0.5)  # each has had its turn on the one worker
    with Conn(addr, caps=caps, timeout=10) as c:
        t = time.monotonic()
        got = c.get_objects(rid, [(CHUNK, chunk_id(small))])
        took = time.monotonic() - t
        assert took < 2, "a get_objects waited %.1f s behind stalled readers" % took
        assert got[0][2] == small
    return stalled


def test_stalled_stream_readers_leave_the_workers_free(tmp_path):
    srv = one_worker_server(tmp_path)
    try:
        addr = srv.addrs["scribe"]
        objs = [(CHUNK, chunk_id(b), b) for b in (os.urandom(3 * MiB) for _ in range(4))]
        small = os.urandom(1000)
        with Conn(addr) as c:
            rid = c.repo_create("stall")["id"]
            c.put_objects(rid, objs + [(CHUNK, chunk_id(small), small)])
        refs = [(k, i) for k, i, _ in objs]
        # default buffers, unread: a socket takes a few MiB at most
        stalled = stall_then_probe(addr, rid, refs, small, lambda: Conn(addr, timeout=60))
        for s in stalled:
            _, _, _, body = s.recv_frame()  # the stream's head: its count
            got = s.stream_items(s.dec(body).u32())
            assert [d for _, _, d in got] == [b for _, _, b in objs]
            assert s.get_objects(rid, [(CHUNK, chunk_id(small))])[0][2] == small
            s.close()
    finally:
        srv.stop()
        assert_no_sanitizer(srv.output())

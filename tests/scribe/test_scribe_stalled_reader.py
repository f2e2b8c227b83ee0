"""A client that stops reading a get_objects reply stream holds no worker
(issue 16, docs/architecture.md "A reply in parts"): after an object whose
rest the client has not taken, the stream's rest goes to the network loop
and the send stops there; a worker sends the next items once the client
took it.  With one worker per request pool, more stalled readers than
workers leave a fresh client's requests answered at once; the stalled
streams then arrive whole and byte-exact, and their connections serve the
next request.  A reply of one frame (a listing, a log page, a proof)
goes the same way: what the socket does not take is written by the loop."""
import os
import time

from conftest import Server, assert_no_sanitizer
from scribe_wire import ADD, CHUNK, OP, Conn, Enc, chunk_id
from test_scribe_server import Repo

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


def test_stalled_readers_of_a_one_frame_listing_leave_the_workers_free(tmp_path):
    """tree_page of 1,000 paths of 8,000 bytes: one 8 MiB frame, more than a
    socket takes from a client that does not read."""
    srv = one_worker_server(tmp_path)
    try:
        addr = srv.addrs["scribe"]
        paths = ["%04d-" % i + "x" * 7995 for i in range(1000)]
        with Conn(addr) as c:
            r = Repo(c, "listing")
            mid = r.upload({"f": b"bytes of every file"})["f"]
            assert r.submit([(ADD, p, mid, 0, None) for p in paths])["outcome"] == 1
            want, more, _, _ = c.tree_page(r.id, r.main, r.head, limit=1000)
            assert [w["path"] for w in want] == paths and not more
        page = (Enc().raw(r.id).raw(r.main).u64(r.head).str16("").u32(1000)
                .bool(False).bytes())
        stalled = []
        for _ in range(4):
            s = Conn(addr, timeout=60)
            s.send_frame(OP["tree_page"], page)
            stalled.append(s)
        time.sleep(0.5)  # each has had its turn on the one query worker
        with Conn(addr, timeout=10) as c:
            t = time.monotonic()
            got, _, _, _ = c.tree_page(r.id, r.main, r.head, limit=1)
            took = time.monotonic() - t
            assert took < 2, "a tree_page waited %.1f s behind stalled readers" % took
            assert got[0]["path"] == paths[0]
        for s in stalled:
            op, flags, _, body = s.recv_frame()
            assert op == OP["tree_page"] and flags == 0 and len(body) > 8_000_000
            rows, _, _, _ = s.tree_page(r.id, r.main, r.head, limit=1)  # the next request
            assert rows[0]["path"] == paths[0]
            s.close()
    finally:
        srv.stop()
        assert_no_sanitizer(srv.output())

"""Large GETs through the Jay face (issue 16): a body far past the socket's
buffers goes out by sendfile(2), waiting on the socket between short sends.
It reads back byte-exact whole and in ranges (clamped at the end), and
readers that stop mid-body hold only their own connections: others are
served meanwhile, and the server answers after they go."""
import hashlib
import os
import socket
import time

import jayclient as j
from jayfixtures import conn, jay_args

MiB = 1 << 20
SIZE = 40 * MiB + 4093  # not a multiple of a page or of a sendfile chunk


def put_big(c, body):
    c.create_bucket("lgx")
    pieces = (body[o:o + MiB] for o in range(0, len(body), MiB))
    r = c.put_object_stream("lgx", "big", len(body), pieces)
    assert r["checksum"] == hashlib.sha256(body).hexdigest()


def get_all(c):
    got = bytearray()
    info, n = c.get_object_stream("lgx", "big", got.extend)
    assert n == len(got) == info["size"]
    return bytes(got)


def test_large_get_is_byte_exact_whole_and_in_ranges(server_factory):
    srv = server_factory(args=jay_args())
    body = os.urandom(SIZE)
    with conn(srv, timeout=300) as c:
        put_big(c, body)
        assert get_all(c) == body
        cases = [(0, 1), (1, 65536), (SIZE // 2 - 3, 5 * MiB + 7), (17, 0), (SIZE - 10, 0),
                 (SIZE - 100, 1000)]
        for off, length in cases:
            info, got = c.get_range("lgx", "big", off, length)
            want = body[off:off + length] if length else body[off:]
            assert info["size"] == SIZE
            assert got == want, (off, length, len(got), len(want))
        assert c.ping()


def stalled_reader(srv):
    """A connection that asks for the big object, takes its response header
    and a few body bytes, then reads no more."""
    c = conn(srv, timeout=300)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    c.send_frame(j.OP["GetObject"], j.s("lgx") + j.s("big"))
    r = c.read_response(read_body=False)
    assert r.status == j.ST_OK and r.data_len == SIZE
    assert len(j.recv_exact(c.sock, 100)) == 100
    return c


def test_readers_that_stop_mid_body_do_not_stall_others(server_factory):
    srv = server_factory(args=jay_args())
    body = os.urandom(SIZE)
    with conn(srv, timeout=300) as c:
        put_big(c, body)
    stalled = [stalled_reader(srv) for _ in range(3)]
    try:
        # The stalled bodies are far larger than the socket buffers: their
        # senders wait on their sockets while these are answered.
        with conn(srv, timeout=300) as c:
            assert get_all(c) == body
            c.put_object("lgx", "small", b"x" * 5000)
            assert c.get_object("lgx", "small")[1] == b"x" * 5000
            assert c.get_range("lgx", "big", 5, 10)[1] == body[5:15]
            assert c.ping()
    finally:
        for s in stalled:
            s.close()
    # The stalled connections' senders end (reset or closed); the server goes on.
    with conn(srv, timeout=300) as c:
        assert get_all(c) == body


def test_stalled_readers_leave_the_workers_free(server_factory, tmp_path):
    """With one worker per request pool, more readers that stop reading a
    large GET than there are workers: the rest of each reply goes to the
    network loop (cn_conn_reply), so a fresh client's PUT and worker-served
    GET are answered at once; the stalled readers then get their bodies
    whole, and their connections serve the next request."""
    stalled_round(server_factory, tmp_path, False)


def test_stalled_readers_of_a_multipart_object_leave_the_workers_free(server_factory, tmp_path):
    """The same for an object of several parts: the send stops where a
    part's rest went to the loop (CN_CONN_MORE) and goes on from there on a
    worker once the client took it (cn__jay_resume)."""
    stalled_round(server_factory, tmp_path, True)


def stalled_round(server_factory, tmp_path, parts):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[server]\nquery_workers = 1\nstorage_workers = 1\n"
                   "[jay]\nworker_share_percent = 0\nio_timeout_floor_ms = 30000\n"
                   "io_rate_bytes_per_sec = 1000000000\n")
    srv = server_factory(args=jay_args(["--config", str(cfg)]))
    big = os.urandom(12 * MiB)
    small = os.urandom(100 << 10)  # past the loop's inline body: a worker's reply
    with conn(srv, timeout=60) as c:
        c.create_bucket("lgx")
        if parts:  # four parts of 3 MiB
            uid = c.create_multipart("lgx", "big")
            for n in range(4):
                c.upload_part("lgx", "big", uid, n + 1, big[n * 3 * MiB:][:3 * MiB])
            c.complete_multipart("lgx", "big", uid, [1, 2, 3, 4])
        else:
            c.put_object("lgx", "big", big)
        c.put_object("lgx", "small", small)
    stalled = []
    for _ in range(4):
        # Default buffers (window scaling intact, so the reading below is
        # quick): unread, a socket takes a few MiB at most.
        s = conn(srv, timeout=60)
        s.send_frame(j.OP["GetObject"], j.s("lgx") + j.s("big"))
        stalled.append(s)
    time.sleep(0.5)  # each has had its turn on the one worker
    try:
        with conn(srv, timeout=10) as c:
            t = time.monotonic()
            c.put_object("lgx", "fresh", b"x" * 200000)
            took = time.monotonic() - t
            assert took < 2, "a PUT waited %.1f s behind stalled readers" % took
            t = time.monotonic()
            got = c.get_object("lgx", "small")[1]
            took = time.monotonic() - t
            assert took < 2, "a GET waited %.1f s behind stalled readers" % took
            assert got == small
        for s in stalled:
            r = s.read_response()
            assert r.status == j.ST_OK and r.body == big
        assert stalled[0].get_object("lgx", "small")[1] == small
    finally:
        for s in stalled:
            s.close()

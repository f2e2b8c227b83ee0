"""Large GETs through the Jay face (issue 16): a body far past the socket's
buffers goes out by sendfile(2), waiting on the socket between short sends.
It reads back byte-exact whole and in ranges (clamped at the end), and
readers that stop mid-body hold only their own connections: others are
served meanwhile, and the server answers after they go."""
import hashlib
import os
import socket

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

"""Large PUTs through the Jay face (issue 17): from 1 MiB a body's MD5 is
hashed on a helper thread beside the write while BLAKE3 and SHA-256 run on
the caller's.  Whatever the split, the etag (MD5) and checksum (SHA-256) the
server answers are the body's, the object reads back byte-exact, and a body
cut short commits nothing."""
import hashlib
import os
import socket

import pytest

import jayclient as j
from jayfixtures import conn, jay_args

MiB = 1 << 20


@pytest.mark.parametrize("size", [MiB - 1, MiB, 3 * MiB + 17, 9 * MiB + 4093])
def test_large_put_digests(server_factory, size):
    srv = server_factory(args=jay_args())
    body = os.urandom(size)
    with conn(srv, timeout=120) as c:
        c.create_bucket("lpx")
        # Odd send sizes: the server's reads do not line up with 64 KiB.
        pieces = (body[o:o + 70001] for o in range(0, size, 70001))
        r = c.put_object_stream("lpx", "k", size, pieces)
        assert r["etag"] == hashlib.md5(body).hexdigest()
        assert r["checksum"] == hashlib.sha256(body).hexdigest()
        info, got = c.get_object("lpx", "k")
        assert got == body and info["etag"] == r["etag"] and info["checksum"] == r["checksum"]


def test_large_put_cut_short_commits_nothing(server_factory):
    srv = server_factory(args=jay_args())
    body = os.urandom(5 * MiB)
    with conn(srv) as c:
        c.create_bucket("lpx")
    c = conn(srv)
    meta = j.s("lpx") + j.s("cut") + j.s("application/octet-stream") + j.smap({})
    c.sock.sendall(j.header(j.OP["PutObject"], len(meta), 2 * len(body)) + meta)
    c.sock.sendall(body)  # half the declared length, then the peer goes away
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    with conn(srv) as c:
        with pytest.raises(j.JayError):
            c.get_object("lpx", "cut")
        # The connection and the helper threads are fine: a full put works.
        r = c.put_object("lpx", "after", body)
        assert r["checksum"] == hashlib.sha256(body).hexdigest()

"""Large PUTs through the Jay face (issue 17): from 1 MiB a body's bytes are
copied into the put's two lane slots and a full slot's MD5 (and SHA-256, when
a second helper thread is idle) is hashed on a helper thread while the
caller reads on and hashes BLAKE3.  Whatever the split, the etag (MD5) and
checksum (SHA-256) the server answers are the body's, the object reads back
byte-exact, and a body cut short commits nothing.  A PUT with skip_etag
hashes no MD5 at all: its etag is empty and its checksum still the body's."""
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


# No helper thread, the machine's count, and two: the lane hashes every slot
# inline, MD5 beside, or MD5 and SHA-256 beside.
@pytest.mark.parametrize("threads", ["0", None, "2"])
def test_large_put_digests_by_helper_count(server_factory, threads):
    env = {"CAIRN_TEST_HASH_THREADS": threads} if threads else None
    srv = server_factory(args=jay_args(), env=env)
    size = 4 * MiB + 12345  # a partial last slot
    body = os.urandom(size)
    with conn(srv, timeout=120) as c:
        c.create_bucket("lpx")
        for skip in (False, True):
            key = "skip" if skip else "md5"
            pieces = (body[o:o + 65536] for o in range(0, size, 65536))
            r = c.put_object_stream("lpx", key, size, pieces, skip_etag=skip)
            assert r["etag"] == ("" if skip else hashlib.md5(body).hexdigest())
            assert r["checksum"] == hashlib.sha256(body).hexdigest()
            info, got = c.get_object("lpx", key)
            assert got == body and info["etag"] == r["etag"]
            assert info["checksum"] == r["checksum"]


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

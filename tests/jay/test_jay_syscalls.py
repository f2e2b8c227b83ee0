"""How a Jay GetObject's answer reaches the socket (issue 16), seen by
strace(1) attached to the real cairnd, as tests/http/test_http_syscalls.py
sees S3's: a body of at most 16 KiB goes out with its response frame's
header and meta in one gathered write (src/net/conn.c: cn_conn_reply on a
worker, the loop's own path once the object's head is cached), and a 1 MiB
body by sendfile(2) from the blob's file.  The reply's bytes on the wire
are the frame's 17-byte header, its meta and the body."""
import os
import sys

from conftest import ADMIN_TOKEN
from jayfixtures import conn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "http"))
from test_http_syscalls import traced  # noqa: E402

SMALL = os.urandom(4 << 10)
LARGE = os.urandom(1 << 20)


class Traced:
    """What test_http_syscalls.traced needs of a server: .server, with its
    process and an HTTP listener for the probe."""

    def __init__(self, srv):
        self.server = srv


def get_traced(srv, c, key, tmp_path):
    """The GET's (info, body) and the write calls on c's socket meanwhile."""
    got = {}
    tmp_path.mkdir()
    calls = traced(Traced(srv), tmp_path, lambda: got.update(r=c.get_object("sys", key)))
    mine = [x for x in calls if x[3] > 0 and x[0] != "pwrite64"]
    return got["r"], mine


def test_small_and_large_bodies(server_factory, tmp_path):
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--scribe", "off",
                               "--http", "127.0.0.1:0"],
                         env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN}, wait_for=("jay", "http"))
    with conn(srv) as c:
        c.create_bucket("sys")
        c.put_object("sys", "small", SMALL)
        c.put_object("sys", "large", LARGE)
        for look in ("worker", "loop"):  # the first GET files the head, the second is the loop's
            (info, body), calls = get_traced(srv, c, "small", tmp_path / look)
            assert body == SMALL
            wire = [x for x in calls if x[3] >= len(SMALL)]
            assert len(wire) == 1, (look, calls)
            assert wire[0][0] in ("sendmsg", "writev", "sendto", "write"), (look, wire)
            # the one call carried the whole reply: header, meta, body
            assert wire[0][3] > 17 + len(SMALL), (look, wire)
        (info, body), calls = get_traced(srv, c, "large", tmp_path / "large")
        assert body == LARGE
        files = [x for x in calls if x[0] == "sendfile"]
        assert sum(x[3] for x in files) == len(LARGE), calls

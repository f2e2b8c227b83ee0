"""Large bodies: a 1 GiB round trip streamed both ways with the checksum
verified (never held whole in Python memory), and kill -9 during an upload
followed by a restart: no partial object, no visible part."""
import hashlib
import os
import shutil
import time

import pytest

import jayclient as j
from jayfixtures import conn, jay_args, restart

GIB = 1 << 30
CHUNK = 1 << 20


def chunks(total, sha=None):
    """Deterministic, non-repeating-per-chunk data: chunk i starts with i."""
    base = os.urandom(CHUNK)
    sent = 0
    i = 0
    while sent < total:
        n = min(CHUNK, total - sent)
        c = i.to_bytes(8, "big") + base[8:n] if n >= 8 else base[:n]
        if sha:
            sha.update(c)
        yield c
        sent += n
        i += 1


def test_1gib_round_trip(server_factory):
    srv = server_factory(args=jay_args())
    with conn(srv, timeout=300) as c:
        c.create_bucket("big")
        sha = hashlib.sha256()
        r = c.put_object_stream("big", "gig", GIB, chunks(GIB, sha))
        want = sha.hexdigest()
        assert r["checksum"] == want
        got = hashlib.sha256()
        info, n = c.get_object_stream("big", "gig", got.update)
        assert n == GIB and info["size"] == GIB
        assert got.hexdigest() == want == info["checksum"]
        # A range from the middle, to the end.
        got = hashlib.sha256()
        c.send_frame(j.OP["GetObjectRange"], j.s("big") + j.s("gig") + j.i64(GIB - 10) + j.i64(0))
        rr = c.read_response()
        assert rr.status == 0 and rr.data_len == 10 and len(rr.body) == 10
        assert c.ping()
    # Do not leave a gibibyte behind in pytest's retained temporary dirs.
    srv.stop()
    shutil.rmtree(srv.data_dir, ignore_errors=True)


@pytest.mark.parametrize("kind", ["put", "part"])
def test_crash_during_upload_leaves_nothing(server_factory, kind):
    srv = server_factory(args=jay_args())
    with conn(srv) as c:
        c.create_bucket("crash")
        c.put_object("crash", "before", b"kept")
        uid = c.create_multipart("crash", "mp") if kind == "part" else None
    c = conn(srv)
    if kind == "put":
        meta = j.s("crash") + j.s("partial") + j.s("") + j.smap({}) + j.boolean(False)
        op = j.OP["PutObject"]
    else:
        meta = j.s("crash") + j.s("mp") + j.s(uid) + j.i32(1)
        op = j.OP["UploadPart"]
    size = 64 << 20
    c.sock.sendall(j.header(op, len(meta), size) + meta)
    sent = 0
    for piece in chunks(size // 2):
        c.sock.sendall(piece)
        sent += len(piece)
    time.sleep(0.3)
    srv.kill9()
    c.close()
    srv2 = restart(server_factory, srv)
    with conn(srv2) as c:
        keys = [e["key"] for e in c.list_objects("crash")["contents"]]
        assert keys == ["before"]
        assert c.get_object("crash", "before")[1] == b"kept"
        if kind == "part":
            assert c.list_parts("crash", "mp", uid) == []
        else:
            with pytest.raises(j.JayError) as e:
                c.head_object("crash", "partial")
            assert e.value.code == "NoSuchKey"
    # Nothing of the upload is left in staging either.
    staging = os.path.join(srv2.data_dir, "staging")
    left = [f for _, _, fs in os.walk(staging) for f in fs] if os.path.isdir(staging) else []
    assert left == []


def test_interrupted_upload_by_client_leaves_nothing(server_factory):
    srv = server_factory(args=jay_args())
    with conn(srv) as c:
        c.create_bucket("cut")
    c = conn(srv)
    meta = j.s("cut") + j.s("half") + j.s("") + j.smap({}) + j.boolean(False)
    c.sock.sendall(j.header(j.OP["PutObject"], len(meta), 1 << 20) + meta + b"x" * 1000)
    c.close()
    time.sleep(0.3)
    with conn(srv) as c:
        assert c.list_objects("cut")["contents"] == []

"""A client that stops reading a get_objects reply stream holds no worker
when the objects are not sent from a descriptor either (issue 16,
docs/architecture.md "A reply in parts"): blobs stored LZ4 (decoded on the
worker) on a raw transfer, and any object on an LZ4 transfer (packed in
blocks on the worker), go out in bounded pieces, each by cn_conn_reply; a
piece the client has not taken stops the stream there, inside an object,
and a worker makes the next piece, from that byte on, once the client took
it.  With one worker per request pool, more stalled readers than workers
leave a fresh client's get_objects answered at once; the stalled streams
then arrive whole and byte-exact (BLAKE3 per object), and their connections
serve the next request."""
import os
import socket

import pytest

from cairnutil import half_compressible
from conftest import assert_no_sanitizer
from scribe_wire import CHUNK, Conn, b3, chunk_id
from test_scribe_stalled_reader import one_worker_server, stall_then_probe

MiB = 1 << 20


def stalled_conn(addr, caps):
    """A Conn whose socket asks for a 4 KiB receive buffer before it connects,
    so that a reply of a few MiB is far more than the socket holds."""
    c = Conn.__new__(Conn)
    c.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sock.settimeout(60)
    c.sock.connect(addr)
    c.codec, c.be, c.rid = 1, False, 0
    c.bytes_sent = c.bytes_received = 0
    c.hello_ok = c.hello(caps=caps)
    return c


@pytest.mark.parametrize("caps", [0, 1], ids=["raw-transfer-lz4-blobs", "lz4-transfer"])
def test_stalled_readers_of_unsendfiled_objects_leave_the_workers_free(tmp_path, caps):
    srv = one_worker_server(tmp_path)
    try:
        addr = srv.addrs["scribe"]
        # An LZ4 transfer's test decodes in Python: its big objects are random
        # (their blocks travel as stored), one small one compresses.
        make = half_compressible if caps == 0 else os.urandom
        blobs = [make(4 * MiB) for _ in range(3)] + [half_compressible(256 * 1024)]
        objs = [(CHUNK, chunk_id(b), b) for b in blobs]
        small = os.urandom(1000)
        with Conn(addr, caps=caps) as c:
            rid = c.repo_create("stall", compression=1)["id"]
            c.put_objects(rid, objs + [(CHUNK, chunk_id(small), small)])
        refs = [(k, i) for k, i, _ in objs]
        stalled = stall_then_probe(addr, rid, refs, small, lambda: stalled_conn(addr, caps), caps)
        for s in stalled:
            # a 4 KiB window takes minutes for streams this size: read at full speed
            s.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            _, _, _, body = s.recv_frame()  # the stream's head: its count
            got = s.stream_items(s.dec(body).u32())
            assert [b3(d) for _, _, d in got] == [b3(b) for b in blobs]
            assert s.get_objects(rid, [(CHUNK, chunk_id(small))])[0][2] == small
            s.close()
    finally:
        srv.stop()
        assert_no_sanitizer(srv.output())

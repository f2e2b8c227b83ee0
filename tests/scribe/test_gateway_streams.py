"""get_objects' reply streams relayed in large pieces by the gateway and
gathered by storage (issue 23): the gateway reads what storage has sent,
up to its relay buffer, and writes it to the client in one call whatever
item or LZ4 block boundaries it spans, following the item and block
headers only to find where the stream ends; storage sends the reply's
header, count, item headers and small raw objects (up to 16 KiB) in one
write, and larger ones by sendfile(2) after them.  Checked byte for byte
through a real gateway and directly against the same storage, raw and LZ4,
with objects around the 16 KiB and relay-buffer sizes and a
stream of many small items larger than either buffer, each followed by
another request on the same connection (so the stream ended exactly where
it should); and a storage server killed in the middle of a large stream
closes the client's connection through the gateway."""
import os
import socket

import pytest

from conftest import Server, assert_no_sanitizer
from scribe_wire import CHUNK, OP, Conn, chunk_id

STORAGE = ["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0"]
SIZES = [1, 4096, 16 * 1024 - 42, 16 * 1024, 16 * 1024 + 1, 100 * 1024, 256 * 1024 - 1,
         256 * 1024 + 7, 1 << 20]


@pytest.fixture
def pair(tmp_path):
    storage = Server(tmp_path / "storage", args=STORAGE).start(wait_for=("scribe",))
    host, port = storage.addrs["scribe"]
    cfg = tmp_path / "gateway.toml"
    cfg.write_text('[[storage]]\naddress = "%s:%d"\nnamespace = ""\n' % (host, port))
    gw = Server(tmp_path / "gw", args=["--scribe", "127.0.0.1:0", "--jay", "off", "--http", "off",
                                       "--gateway", str(cfg)]).start(wait_for=("scribe",))
    yield storage, gw
    for s in (gw, storage):
        if s.proc and s.proc.poll() is None:
            s.stop()
        out = s.output()
        assert_no_sanitizer(out)


def objects(sizes):
    """Distinct random chunks of the given sizes: [(kind, id, bytes)]."""
    out = []
    for n in sizes:
        b = os.urandom(n)
        out.append((CHUNK, chunk_id(b), b))
    return out


@pytest.mark.parametrize("caps", [0, 1])
def test_mixed_streams_are_byte_exact_through_the_gateway_and_direct(pair, caps):
    codec = 1  # the gateway speaks codec 1 only
    storage, gw = pair
    big = objects(SIZES)
    many = objects([1000 + 37 * i for i in range(150)])  # ~560 KiB of small items
    # compressible objects too, so LZ4 blocks are not all raw
    text = [(CHUNK, chunk_id(b), b) for b in (b"abc" * 50000, b"z" * 300000)]
    absent = (CHUNK, b"\x05" * 32)
    with Conn(gw.addrs["scribe"], codec=codec, caps=caps) as c:
        rid = c.repo_create("mixed%d%d" % (caps, codec))["id"]
        c.put_objects(rid, big + many + text)
    asks = [big + text, many, [big[3], absent, many[0], big[-1], absent, big[0]],
            [absent]]
    for addr in (gw.addrs["scribe"], storage.addrs["scribe"]):
        with Conn(addr, codec=codec, caps=caps) as c:
            for want in asks:
                refs = [(k, i) for k, i, *_ in want]
                got = c.get_objects(rid, refs)
                assert [(k, i) for k, i, _ in got] == refs
                for (k, i, data), w in zip(got, want):
                    assert data == (w[2] if len(w) == 3 else None), (addr, len(w[2] or b""))
            # the stream ended where it should: the connection still serves
            assert c.get_objects(rid, [big[1][:2]])[0][2] == big[1][2]


def test_a_storage_server_killed_mid_stream_closes_the_client_connection(pair):
    storage, gw = pair
    objs = objects([4 << 20] * 8)  # far more than the socket buffers on the way hold
    with Conn(gw.addrs["scribe"]) as c:
        rid = c.repo_create("killed")["id"]
        c.put_objects(rid, objs)
    total = sum(len(b) for *_, b in objs)
    with Conn(gw.addrs["scribe"], timeout=60) as c:
        c.send_frame(OP["get_objects"], c.refs_payload(rid, [(k, i) for k, i, _ in objs]))
        got = len(c.recv_exact(24 + 4 + 42 + 65536))  # the stream has begun
        storage.kill9()
        c.sock.settimeout(60)
        while True:
            try:
                b = c.sock.recv(1 << 20)
            except (ConnectionResetError, socket.timeout) as e:
                assert not isinstance(e, socket.timeout), "the gateway kept the client open"
                break
            if not b:
                break
            got += len(b)
        assert got < total + 24 + 4 + 42 * len(objs)  # closed before the stream's end
    out = gw.output()
    assert "closing the client connection" in out, out

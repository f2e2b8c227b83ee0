"""Large blob fetches through the real cairnd (issue 16): a whole stored
blob far past the socket's buffers goes out by sendfile(2) and reads back
byte-exact, ranges of it are right (clamped, with their slice digests), and
fetchers that stop reading mid-body hold only their own connections: other
fetches and puts are served meanwhile."""
import os
import socket

import pytest
import requests

from blobsclient import OPS, Ops, b3, make_token

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]
NS = "media"
MiB = 1 << 20
SIZE = 40 * MiB + 4093


@pytest.fixture
def srv(server_factory):
    return server_factory(args=HTTP_ONLY, wait_for=("http",))


@pytest.fixture
def ops(srv):
    return Ops(srv, make_token(srv, "alice", grants=[(NS, "read"), (NS, "write")]), timeout=300)


@pytest.fixture
def big(ops):
    data = os.urandom(SIZE)
    d = b3(data)
    status, body = ops.put(NS, data, digest=d, length=len(data))
    assert status == 200, body
    return data, d


def test_large_fetch_is_byte_exact_whole_and_in_ranges(ops, big):
    data, d = big
    r = ops.fetch(NS, d)
    assert r.status_code == 200 and r.ack == {"source": "store", "len": SIZE}
    assert int(r.headers["Content-Length"]) == SIZE
    assert r.content == data
    ranges = [[SIZE // 2 - 3, 5 * MiB + 7], [0, 1], [SIZE - 10, 1000], [17, 65536]]
    r = ops.fetch(NS, d, ranges=ranges)
    assert r.status_code == 200, r.text
    served = [data[o:o + n] for o, n in ranges]
    assert r.ack["slice_digests"] == [b3(s) for s in served]
    assert r.content == b"".join(served)
    # One range goes file -> socket (sendfile from the range's offset): the
    # same bytes and slice digest as the streamed form; clamped at the end.
    for o, n in [[SIZE // 3, 7 * MiB + 1], [SIZE - 10, 1000], [0, SIZE + 5], [SIZE, 5]]:
        r = ops.fetch(NS, d, ranges=[[o, n]])
        assert r.status_code == 200, r.text
        assert r.content == data[o:o + n]
        assert int(r.headers["Content-Length"]) == len(data[o:o + n])
        assert r.ack["slice_digests"] == [b3(data[o:o + n])]


def test_one_range_of_a_small_packed_blob(ops):
    # Small blobs may sit in a pack: the range starts at the payload's offset.
    for size in (100, 5000, 100000):
        data = os.urandom(size)
        d = b3(data)
        assert ops.put(NS, data)[0] == 200
        for o, n in [[7, 50], [0, size], [size - 1, 10], [size // 2, 1]]:
            r = ops.fetch(NS, d, ranges=[[o, n]])
            assert r.status_code == 200, r.text
            assert r.content == data[o:o + n], (size, o, n)
            assert r.ack["slice_digests"] == [b3(data[o:o + n])]


def stalled_fetch(srv, cred, digest):
    """A raw connection that asks for the whole blob, takes the response
    head and a few body bytes, then reads no more."""
    host, port = srv.addrs["http"]
    s = socket.create_connection((host, port), timeout=300)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    body = ('{"namespace":"%s","digest":"%s"}' % (NS, digest)).encode()
    s.sendall(b"POST %s/channels/blobs/sub HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
              b"Content-Length: %d\r\n\r\n" % (OPS.encode(), cred.encode(), len(body)) + body)
    got = b""
    while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 100:
        chunk = s.recv(4096)
        assert chunk, got
        got += chunk
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    return s


def test_fetchers_that_stop_mid_body_do_not_stall_others(srv, ops, big):
    data, d = big
    stalled = [stalled_fetch(srv, ops.cred, d) for _ in range(3)]
    try:
        r = ops.fetch(NS, d)
        assert r.status_code == 200 and r.content == data
        small = os.urandom(5000)
        assert ops.put(NS, small)[0] == 200
        assert ops.fetch(NS, b3(small)).content == small
        assert ops.fetch(NS, d, ranges=[[5, 10]]).content == data[5:15]
    finally:
        for s in stalled:
            s.close()
    # Their senders end (reset or closed); the server goes on.
    fresh = Ops(srv, ops.cred, timeout=300)
    assert fresh.fetch(NS, d).content == data
    assert requests.get(fresh.base + OPS, headers=fresh.headers(), timeout=60).status_code == 200

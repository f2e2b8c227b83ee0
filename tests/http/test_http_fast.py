"""S3 small GETs answered on the network loop (cn_adapter_t.fast, issue 16):
a bodiless GET or HEAD of an object of at most 16 KiB, anonymous or signed
(SigV4 in the header or presigned) with its token in the identity cache, is
parsed and answered by the loop itself; anything else goes to a worker as
before.  cairn_http_loop_answered_total{route="s3"} shows which path ran.

Every answer given on the loop is compared, byte for byte (Date and the
request ids aside), with the worker's answer to the same request: an
`Expect: 100-continue` on a bodiless request changes nothing in the answer
but makes the loop decline, so the worker serves it."""
import os
import re
import socket
import sys
import threading
import time

import pytest
import requests

from conftest import Server, assert_no_sanitizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "s3"))
from s3fixtures import S3Server, s3_args  # noqa: E402

SMALL = bytes(range(256)) * 16          # 4 KiB
LIMIT = os.urandom(16 << 10)            # exactly 16 KiB: still on the loop
LARGE = os.urandom((16 << 10) + 1)      # one byte more: a worker's
VOLATILE = ("date", "x-amz-request-id", "x-amz-id-2")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("fast") / "data", args=s3_args())
    s.start(wait_for=("jay", "http"))
    srv = S3Server(s)
    c = srv.client()
    c.create_bucket(Bucket="pub")
    c.put_bucket_acl(Bucket="pub", ACL="public-read")
    for key, body in (("small", SMALL), ("limit", LIMIT), ("large", LARGE)):
        c.put_object(Bucket="pub", Key=key, Body=body, ACL="public-read",
                     ContentType="application/x-test", Metadata={"colour": "green"})
    c.create_bucket(Bucket="priv")
    c.put_object(Bucket="priv", Key="small", Body=SMALL)
    yield srv
    s.stop()
    out = s.output()
    assert_no_sanitizer(out)


def warm(srv, *keys):
    """Reads each object once, so that its head is in the server's cache."""
    for k in keys:
        exchange(srv, request("/pub/" + k))


def answered(srv):
    """cairn_http_loop_answered_total{route="s3"} (0 before the first)."""
    text = requests.get(srv.endpoint + "/_cairn/metrics", timeout=10).text
    m = re.search(r'^cairn_http_loop_answered_total\{route="s3"\} (\d+)$', text, re.M)
    return int(m.group(1)) if m else 0


def addr(srv):
    return srv.server.addrs["http"]


def read_response(f, head_only=False):
    """One response from a socket file: (status line, [(name, value)], body)."""
    status = f.readline().decode().rstrip("\r\n")
    assert status, "the connection closed before an answer"
    hdrs = []
    while True:
        line = f.readline().decode().rstrip("\r\n")
        if not line:
            break
        n, v = line.split(":", 1)
        hdrs.append((n.strip(), v.strip()))
    length = next((int(v) for n, v in hdrs if n.lower() == "content-length"), 0)
    code = int(status.split()[1])
    body = b"" if head_only or code in (204, 304) else f.read(length)
    return status, hdrs, body


def stable(resp):
    """An answer without what differs between any two answers: the date and
    the request ids (headers, and an error body's RequestId and HostId)."""
    status, hdrs, body = resp
    body = re.sub(rb"<(RequestId|HostId)>[^<]*</\1>", b"", body)
    return status, [(n.lower(), v) for n, v in hdrs if n.lower() not in VOLATILE], body


def request(target, method="GET", headers=(), version="HTTP/1.1", host="127.0.0.1"):
    lines = ["%s %s %s" % (method, target, version), "Host: " + host] + list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchange(srv, raw, n=1, head_only=False):
    """Sends raw on a new connection and reads n answers."""
    with socket.create_connection(addr(srv), timeout=30) as s:
        s.sendall(raw)
        f = s.makefile("rb")
        return [read_response(f, head_only) for _ in range(n)]


def loop_and_worker(srv, target, method="GET", headers=(), host="127.0.0.1"):
    """The same request answered on the loop, then by a worker: both answers
    and how many the loop answered meanwhile (exactly one expected).  A
    first read of the object fills the server's object-head cache (the loop
    answers from it only)."""
    exchange(srv, request(target, method, headers, host=host), head_only=method == "HEAD")
    before = answered(srv)
    fast = exchange(srv, request(target, method, headers, host=host),
                    head_only=method == "HEAD")[0]
    mid = answered(srv)
    slow = exchange(srv, request(target, method, list(headers) + ["Expect: 100-continue"],
                                 host=host), head_only=method == "HEAD")[0]
    assert answered(srv) == mid, "the request with Expect was answered on the loop"
    return fast, slow, mid - before


@pytest.mark.parametrize("target,method,headers,status", [
    ("/pub/small", "GET", (), 200),
    ("/pub/limit", "GET", (), 200),
    ("/pub/small", "HEAD", (), 200),
    ("/pub/small", "GET", ("Range: bytes=100-1099",), 206),
    ("/pub/small", "GET", ("Range: bytes=-10",), 206),
    ("/pub/small", "GET", ("If-None-Match: *",), 304),
    ("/pub/small?response-content-type=text/plain", "GET", (), 400),
])
def test_loop_answer_is_the_workers(srv, target, method, headers, status):
    fast, slow, moved = loop_and_worker(srv, target, method, headers)
    assert stable(fast) == stable(slow)
    assert fast[0].split()[1] == str(status)
    # Successes and 304 are answered on the loop; errors by a worker.
    assert moved == (1 if status < 400 else 0)


def test_large_objects_and_ranges_past_16k_go_to_a_worker(srv):
    before = answered(srv)
    got = exchange(srv, request("/pub/large"))[0]
    assert got[0].split()[1] == "200" and got[2] == LARGE
    part = exchange(srv, request("/pub/large", headers=["Range: bytes=0-16384"]))[0]
    assert part[0].split()[1] == "206" and part[2] == LARGE[:16385]
    assert answered(srv) == before
    # A range of the large object that fits is the loop's.
    part = exchange(srv, request("/pub/large", headers=["Range: bytes=0-99"]))[0]
    assert part[2] == LARGE[:100]
    assert answered(srv) == before + 1


def test_private_bucket_anonymous_is_refused_the_same(srv):
    fast, slow, moved = loop_and_worker(srv, "/priv/small")
    assert fast[0].split()[1] == "403" and b"<Code>AccessDenied</Code>" in fast[2]
    assert stable(fast) == stable(slow) and moved == 0


def test_missing_key_is_refused_the_same(srv):
    fast, slow, moved = loop_and_worker(srv, "/pub/nope")
    assert fast[0].split()[1] == "404" and b"<Code>NoSuchKey</Code>" in fast[2]
    assert stable(fast) == stable(slow) and moved == 0


def test_pipelined_gets_and_a_put_are_answered_in_order(srv):
    s3 = srv.client()
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": "pub", "Key": "piped"})
    get_url = s3.generate_presigned_url("get_object", Params={"Bucket": "pub", "Key": "piped"})
    host = "%s:%d" % addr(srv)
    body = b"written and read back in one pipelined stream"
    raw = (request("/pub/small", host=host) +
           request("/pub/small", headers=["Range: bytes=0-9"], host=host) +
           request(put_url[len(srv.endpoint):], "PUT", ["Content-Length: %d" % len(body)],
                   host=host) + body +
           request(get_url[len(srv.endpoint):], host=host) +
           request("/pub/limit", host=host) +
           request("/pub/large", host=host) +
           request("/pub/small", method="HEAD", host=host) +
           request("/pub/small", host=host))
    before = answered(srv)
    with socket.create_connection(addr(srv), timeout=30) as s:
        s.sendall(raw)
        f = s.makefile("rb")
        r = [read_response(f, head_only=i == 6) for i in range(8)]
    assert [x[0].split()[1] for x in r] == ["200", "206", "200", "200", "200", "200", "200",
                                            "200"], [x[0] for x in r]
    assert r[0][2] == SMALL and r[1][2] == SMALL[:10] and r[3][2] == body
    assert r[4][2] == LIMIT and r[5][2] == LARGE and r[7][2] == SMALL
    assert answered(srv) > before


def test_presigned_and_header_signed_gets_on_the_loop(srv):
    s3 = srv.client()
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "priv", "Key": "small"})
    before = answered(srv)
    with requests.Session() as sess:
        for _ in range(20):   # the first may warm the token cache on a worker
            r = sess.get(url, timeout=10)
            assert r.status_code == 200 and r.content == SMALL
    mid = answered(srv)
    assert mid > before
    for _ in range(10):
        got = s3.get_object(Bucket="priv", Key="small", Range="bytes=0-15")
        assert got["Body"].read() == SMALL[:16]
        assert s3.head_object(Bucket="priv", Key="small")["ContentLength"] == len(SMALL)
    assert answered(srv) > mid


def test_presigned_answer_is_the_workers(srv):
    s3 = srv.client()
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "priv", "Key": "small"})
    target = url[len(srv.endpoint):]
    host = "%s:%d" % addr(srv)
    # A token's state is re-read after any identity write (another test's
    # token create or revoke): the request after the warm-up may then go to
    # a worker, so the pair is tried again until the loop answered one
    # (every pair must match either way).
    on_loop = 0
    for _ in range(20):
        fast, slow, moved = loop_and_worker(srv, target, host=host)
        assert fast[0].split()[1] == "200" and fast[2] == SMALL
        assert stable(fast) == stable(slow)
        on_loop += moved
        if on_loop:
            break
    assert on_loop == 1


def test_revoked_token_is_refused_by_the_next_request(srv):
    """A token's cached state lives while the data directory's identity
    write-generation holds (src/identity/gen.c): a revocation made by another
    process (cairn admin) refuses the very next request, on the loop as on a
    worker, with no time for a cache to expire."""
    cred = srv.admin("token", "create", "--account", "admin")
    key, secret = cred.split(":", 1)
    s3 = srv.client(key=key, secret=secret)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "priv", "Key": "small"})
    with requests.Session() as sess:
        for _ in range(3):   # the first may warm the token cache on a worker
            assert sess.get(url, timeout=10).status_code == 200
        before = answered(srv)
        assert sess.get(url, timeout=10).status_code == 200
        assert answered(srv) > before   # served from the cache, on the loop
        srv.admin("token", "revoke", key)
        r = sess.get(url, timeout=10)
        assert r.status_code == 403 and b"<Code>" in r.content, r.content


def test_expired_presigned_url_is_refused_the_same(srv):
    s3 = srv.client()
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "priv", "Key": "small"},
                                    ExpiresIn=1)
    time.sleep(2.5)   # past its expiry (not a measurement)
    target = url[len(srv.endpoint):]
    fast, slow, moved = loop_and_worker(srv, target, host="%s:%d" % addr(srv))
    assert fast[0].split()[1] == "403" and b"<Code>AccessDenied</Code>" in fast[2]
    assert stable(fast) == stable(slow) and moved == 0


def test_http10_and_connection_close(srv):
    warm(srv, "small", "limit")
    before = answered(srv)
    with socket.create_connection(addr(srv), timeout=30) as s:
        s.sendall(request("/pub/small", version="HTTP/1.0"))
        f = s.makefile("rb")
        status, hdrs, body = read_response(f)
        assert status.startswith("HTTP/1.1 200") and body == SMALL
        assert f.read() == b""   # closed after the answer
    with socket.create_connection(addr(srv), timeout=30) as s:
        s.sendall(request("/pub/small", headers=["Connection: close"]) + request("/pub/small"))
        f = s.makefile("rb")
        status, hdrs, body = read_response(f)
        assert ("Connection", "close") in hdrs and body == SMALL
        assert f.read() == b""   # the second request is not answered
    with socket.create_connection(addr(srv), timeout=30) as s:
        s.sendall(request("/pub/small", version="HTTP/1.0", headers=["Connection: keep-alive"]))
        f = s.makefile("rb")
        status, hdrs, body = read_response(f)
        assert ("Connection", "keep-alive") in hdrs and body == SMALL
        s.sendall(request("/pub/limit", version="HTTP/1.0", headers=["Connection: keep-alive"]))
        assert read_response(f)[2] == LIMIT
    # Only the kept-alive HTTP/1.0 requests were the loop's.
    assert answered(srv) == before + 2


def test_a_client_that_stops_reading_does_not_stall_others(srv):
    n = 400   # 16 KiB answers: far more than the socket buffers hold
    stuck = socket.socket()
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.settimeout(30)
    stuck.connect(addr(srv))
    stop = threading.Event()

    def send_all():
        try:
            stuck.sendall(request("/pub/limit") * n)
        except OSError:
            pass
        stop.set()

    t = threading.Thread(target=send_all, daemon=True)
    t.start()
    try:
        # Meanwhile other clients are answered, on the loop and by workers.
        warm(srv, "small")
        before = answered(srv)
        for _ in range(20):
            assert exchange(srv, request("/pub/small"))[0][2] == SMALL
            assert exchange(srv, request("/pub/large"))[0][2] == LARGE
        assert answered(srv) >= before + 20
        # Then the stalled client reads everything, in order and whole.
        f = stuck.makefile("rb")
        for _ in range(n):
            status, _, body = read_response(f)
            assert status.startswith("HTTP/1.1 200") and body == LIMIT
    finally:
        stuck.close()
        t.join(30)


def test_puts_and_gets_alternate_on_one_connection(srv):
    """One keep-alive connection whose requests alternate between a worker
    (signed PUTs) and the loop (small GETs, one after empty lines, which
    llhttp skips before a request): the loop re-registers the connection
    one-shot after a worker's request and persistent after its own answer
    (src/net/loop.c, watch), and declines a PUT before parsing it
    (src/http/serve.c).  Every answer arrives, in order, and the GETs are
    the loop's."""
    warm(srv, "small")
    s3 = srv.client()
    host = "%s:%d" % addr(srv)
    bodies = {"alt%d" % i: os.urandom(4096) for i in range(4)}

    def put(f, s, key):
        url = s3.generate_presigned_url("put_object", Params={"Bucket": "priv", "Key": key})
        s.sendall(request(url[len(srv.endpoint):], "PUT",
                          ["Content-Length: %d" % len(bodies[key])], host=host) + bodies[key])
        assert read_response(f)[0].split()[1] == "200"

    def get(f, s, lead=b""):
        s.sendall(lead + request("/pub/small", host=host))
        status, _, body = read_response(f)
        assert status.split()[1] == "200" and body == SMALL

    before = answered(srv)
    with socket.create_connection(addr(srv), timeout=30) as s:
        f = s.makefile("rb")
        put(f, s, "alt0")
        put(f, s, "alt1")
        get(f, s)
        get(f, s, b"\r\n\r\n")
        put(f, s, "alt2")
        get(f, s)
        put(f, s, "alt3")
    assert answered(srv) == before + 3
    for key, body in bodies.items():
        assert s3.get_object(Bucket="priv", Key=key)["Body"].read() == body

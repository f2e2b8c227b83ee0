"""How an S3 GET's answer reaches the socket (issue 16), seen by strace(1)
attached to the real cairnd:

  * a body over 16 KiB (a 1 MiB object) goes by sendfile(2) from the
    store's file, never through a buffer of the server's (src/net/conn.c,
    cn_conn_reply);
  * a body of at most 16 KiB (4 KiB: read into memory by src/s3/object.c)
    goes with its head in one gathered write (src/http/response.c,
    cn__resp_send), answered on the loop and on a worker alike.

(The Date header, formatted once per second, is checked by the unit test
tests/http/test_http_date.c: from outside, a cache cannot be told from a
fresh format without a timing.)

Each GET is sent on a fresh connection once strace is attached; the call
that carries it is found by its result (the head's and body's length)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from conftest import Server, assert_no_sanitizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "s3"))
from s3fixtures import S3Server, s3_args  # noqa: E402

SMALL = os.urandom(4 << 10)
LARGE = os.urandom(1 << 20)
CALLS = ("sendfile", "sendmsg", "writev", "sendto", "write", "pwrite64", "splice")
# sendmsg(fd, {... msg_iov=[{iov_base=..., iov_len=N}, ...] ...}, flags) = R
LINE = re.compile(r"^(\d+)\s+(\w+)\((\d+),(.*)\)\s+=\s+(-?\d+)")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    s = Server(tmp_path_factory.mktemp("syscalls") / "data", args=s3_args())
    s.start(wait_for=("jay", "http"))
    srv = S3Server(s)
    c = srv.client()
    c.create_bucket(Bucket="pub")
    c.put_bucket_acl(Bucket="pub", ACL="public-read")
    for key, body in (("small", SMALL), ("large", LARGE)):
        c.put_object(Bucket="pub", Key=key, Body=body, ACL="public-read")
    get(srv, "small")  # its head cached: the loop may answer it (test_http_fast.py)
    yield srv
    s.stop()
    assert_no_sanitizer(s.output())


def answered(srv):
    """GETs the network loop answered itself (test_http_fast.py)."""
    text = requests.get(srv.endpoint + "/_cairn/metrics", timeout=10).text
    m = re.search(r'^cairn_http_loop_answered_total\{route="s3"\} (\d+)$', text, re.M)
    return int(m.group(1)) if m else 0


def get(srv, key, headers=""):
    """One GET on a new keep-alive connection (a Connection: close makes
    the loop decline): (head, body) as the client read them."""
    host, port = srv.server.addrs["http"]
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(("GET /pub/%s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (key, headers)).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(1 << 20)
            assert chunk, data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 "), head
        length = int(re.search(rb"(?im)^Content-Length: (\d+)\r?$", head).group(1))
        while len(body) < length:
            chunk = s.recv(1 << 20)
            assert chunk, len(body)
            body += chunk
    return head + b"\r\n\r\n", body


def probe(srv):
    host, port = srv.server.addrs["http"]
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while s.recv(65536):
            pass


def traced(srv, tmp_path, fn):
    """Runs fn() with strace attached to every thread of cairnd; the write
    calls it saw, as (name, fd, text, result)."""
    out = tmp_path / "strace.out"
    st = subprocess.Popen(["strace", "-f", "-qq", "-s", "0", "-e", "signal=none",
                           "-e", "trace=" + ",".join(CALLS), "-o", str(out),
                           "-p", str(srv.server.proc.pid)], stderr=subprocess.PIPE)
    # strace attaches to the threads one by one: a probe answered after it
    # started is seen once they all are (the probe is no GET of an object,
    # so that its write is never taken for the one under test).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and st.poll() is None:
        probe(srv)
        time.sleep(0.2)
        if out.exists() and any(LINE.match(x) for x in out.read_text().splitlines()):
            break
    if st.poll() is not None:
        pytest.skip("strace cannot attach: %s" % st.stderr.read().decode(errors="replace"))
    mark = len(out.read_text().splitlines())
    try:
        fn()
    finally:
        time.sleep(0.3)  # strace writes the last calls' results after they return
        st.send_signal(signal.SIGINT)
        st.wait(30)
    calls = []
    for line in out.read_text().splitlines()[mark:]:
        m = LINE.match(line)
        if m:
            calls.append((m.group(2), int(m.group(3)), m.group(4), int(m.group(5))))
    return calls


def test_a_large_body_goes_by_sendfile(srv, tmp_path):
    got = {}
    calls = traced(srv, tmp_path, lambda: got.update(large=get(srv, "large")))
    head, body = got["large"]
    assert body == LARGE
    files = [c for c in calls if c[0] == "sendfile" and c[3] > 0]
    assert files, "a 1 MiB body without sendfile: %r" % calls
    fds = {c[1] for c in files}
    assert len(fds) == 1, files
    # The whole body, and nothing but it, went by sendfile on that socket;
    # the head went before it by another call.
    assert sum(c[3] for c in files) == len(LARGE), files
    fd = fds.pop()
    others = [c for c in calls if c[1] == fd and c[0] != "sendfile" and c[3] > 0]
    assert sum(c[3] for c in others) == len(head), others


@pytest.mark.parametrize("where,headers", [
    ("loop", ""),
    # a bodiless request with the expectation is declined by the loop and
    # served by a worker (test_http_fast.py)
    ("worker", "Expect: 100-continue\r\n"),
])
def test_a_small_body_goes_with_its_head_in_one_write(srv, tmp_path, where, headers):
    got = {}
    before = answered(srv)
    calls = traced(srv, tmp_path, lambda: got.update(small=get(srv, "small", headers)))
    assert answered(srv) - before == (1 if where == "loop" else 0)
    head, body = got["small"]
    assert body == SMALL
    whole = len(head) + len(body)
    assert not [c for c in calls if c[0] == "sendfile"], calls
    one = [c for c in calls if c[3] == whole]
    assert len(one) == 1, "head and a 4 KiB body not in one write: %r" % calls
    name, fd, _, _ = one[0]
    assert name in ("sendmsg", "writev"), one
    # Nothing else was written on that connection: the probe GETs are on
    # other descriptors, or on this one's number before it was reused,
    # which their own results (the same whole length) would show.
    assert [c for c in calls if c[1] == fd and c[3] > 0] == one, calls

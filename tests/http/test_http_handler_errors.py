"""A handler's failure (on_request or on_body returning an error class) is
answered by its route's adapter table (cn_http_route_t.err_of), not the
framework's generic one; a route without one keeps the framework's.  Against
the test server's /fail route, whose table differs from the framework's on
purpose, and /failgen, the same callbacks without a table, over real sockets."""
import re
import socket

import pytest
import requests

from test_http_framework import HttpTestServer

BODY = b"x" * 4096


@pytest.fixture
def srv(tmp_path):
    s = HttpTestServer(tmp_path)
    yield s
    s.stop()


def code(resp):
    m = re.search(r"<Code>([^<]*)</Code>", resp.text)
    return m.group(1) if m else None


@pytest.mark.parametrize("at", ["body", "request"])
@pytest.mark.parametrize("cls,own,generic", [
    ("exists", (409, "BucketAlreadyExists"), (409, "BucketAlreadyOwnedByYou")),
    ("timeout", (503, "ServiceUnavailable"), (400, "RequestTimeout")),
])
def test_failure_answered_by_the_routes_table(srv, at, cls, own, generic):
    with requests.Session() as s:
        r = s.put(srv.url("/fail?class=%s&at=%s" % (cls, at)), data=BODY)
        assert (r.status_code, code(r)) == own, r.text
        # The connection carries on: the rest of the body was discarded.
        r = s.put(srv.url("/failgen?class=%s&at=%s" % (cls, at)), data=BODY)
        assert (r.status_code, code(r)) == generic, r.text


def test_adapter_answers_in_its_own_vocabulary(srv):
    """err_of may answer itself (a JSON family): sent once the body is drained."""
    with requests.Session() as s:
        r = s.put(srv.url("/fail?class=pinned"), data=BODY)
        assert r.status_code == 423 and r.json() == {"own": True}, r.text
        r = s.put(srv.url("/fail?class=pinned&at=request"), data=BODY)
        assert r.status_code == 423 and r.json() == {"own": True}, r.text
        r = s.put(srv.url("/failgen?class=pinned"), data=BODY)
        assert (r.status_code, code(r)) == (500, "InternalError"), r.text


def test_body_failure_mid_stream_on_raw_socket(srv):
    """A chunked body whose first piece fails: the adapter's code, once the
    rest (sent after the failure) is discarded, and the connection is kept."""
    with socket.create_connection((srv.host, srv.port), timeout=30) as c:
        c.sendall(b"PUT /fail?class=exists HTTP/1.1\r\nHost: x\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n1000\r\n" + BODY + b"\r\n")
        c.sendall(b"1000\r\n" + BODY + b"\r\n0\r\n\r\n")
        c.sendall(b"GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        while got.count(b"HTTP/1.1 ") < 2 or not got.rstrip().endswith(b"}"):
            part = c.recv(65536)
            if not part:
                break
            got += part
    first, _, rest = got.partition(b"HTTP/1.1 200")
    assert first.startswith(b"HTTP/1.1 409 "), got
    assert b"<Code>BucketAlreadyExists</Code>" in first, got
    assert b'"path":"/whoami"' in rest, got

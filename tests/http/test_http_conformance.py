"""HTTP/1.1 message handling of the framework, through raw sockets against
tests/http/http_test_server: pipelining, bodies cut into many writes,
100-continue refused before the body, chunked bodies with extensions and
trailers, the limits of a request head, malformed request lines and
framing (request smuggling), HTTP/1.0 and Connection: close.

Every case reads what the server wrote; none asserts how long it took.  A
case where the server must answer without waiting for the client relies on
the socket timeout: if the server waited, the read times out and the test
fails."""
import hashlib
import json
import re
import socket

import pytest

from test_http_framework import HttpTestServer


@pytest.fixture
def srv(tmp_path):
    s = HttpTestServer(tmp_path)
    yield s
    s.stop()


def connect(srv, timeout=10):
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """Reads whole responses off one connection, keeping what follows."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed with %r unread" % self.buf[:200])
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self, head_request=False):
        """(status, headers as a lower-cased dict, body)."""
        status_line = self._line().decode()
        m = re.match(r"HTTP/1\.1 (\d{3}) ", status_line)
        assert m, status_line
        status = int(m.group(1))
        headers = {}
        while True:
            line = self._line().decode()
            if not line:
                break
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status < 200 or head_request or status in (204, 304):
            return status, headers, b""
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    return status, headers, body
                body += self._take(size)
                assert self._take(2) == b"\r\n"
        return status, headers, self._take(int(headers["content-length"]))

    def closed(self):
        """True when the server closed the connection with nothing more sent."""
        if self.buf:
            return False
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def refused(srv, raw, status=400):
    """Sends raw on a new connection; the answer must be status, with
    Connection: close, and then the connection must end.  Returns the body."""
    s = connect(srv)
    try:
        s.sendall(raw)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may answer and close before the rest arrives
    rd = Reader(s)
    st, h, b = rd.response()
    assert st == status and h.get("connection") == "close", (st, h)
    assert rd.closed()
    s.close()
    return b


def request(method, path, body=b"", headers=(), version="HTTP/1.1"):
    head = "%s %s %s\r\nHost: x\r\n" % (method, path, version)
    for h in headers:
        head += h + "\r\n"
    if body or method in ("PUT", "POST"):
        head += "Content-Length: %d\r\n" % len(body)
    return head.encode() + b"\r\n" + body


def test_pipelined_requests_answered_in_order(srv):
    s = connect(srv)
    body = b"pipelined body"
    s.sendall(request("GET", "/whoami?i=1") + request("PUT", "/echo/a", body) +
              request("GET", "/whoami?i=3") + request("HEAD", "/whoami?i=4"))
    rd = Reader(s)
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["query"] == {"i": "1"}
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["sha256"] == hashlib.sha256(body).hexdigest()
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["query"] == {"i": "3"}
    st, h, b = rd.response(head_request=True)
    assert st == 200 and int(h["content-length"]) > 0
    # The connection is still usable after the pipeline.
    s.sendall(request("GET", "/whoami?i=5"))
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["query"] == {"i": "5"}
    s.close()


def test_request_split_across_many_small_writes(srv):
    body = bytes(range(256)) * 40
    raw = request("PUT", "/echo/split", body)
    s = connect(srv)
    i, step = 0, 1
    while i < len(raw):
        s.sendall(raw[i:i + step])
        i += step
        step = step % 7 + 1
    st, h, b = Reader(s).response()
    assert st == 200, b
    j = json.loads(b)
    assert j["len"] == len(body) and j["sha256"] == hashlib.sha256(body).hexdigest()
    s.close()


def test_expect_continue_refused_before_the_body(srv):
    # No body byte is sent: the answer must come without it, and it is the
    # refusal, never an interim 100.
    body = refused(srv, b"PUT /echo/big HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n"
                        b"Authorization: Bearer tok1:wrong\r\nExpect: 100-continue\r\n\r\n",
                   status=403)
    assert b"<Code>AccessDenied</Code>" in body


def test_expect_continue_granted_after_authorization(srv):
    s = connect(srv)
    s.sendall(b"PUT /echo/k HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
              b"Authorization: Bearer tok1:sekrit\r\nExpect: 100-continue\r\n\r\n")
    rd = Reader(s)
    st, _, _ = rd.response()
    assert st == 100
    s.sendall(b"abc")
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["auth"] == "bearer" and json.loads(b)["len"] == 3
    s.close()


def test_chunked_with_extensions_and_trailers(srv):
    s = connect(srv)
    s.sendall(b"PUT /echo/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
              b"Trailer: X-Check\r\n\r\n"
              b"5;name=value\r\nhello\r\n"
              b"6;a;b=\"quoted\"\r\n world\r\n"
              b"0;last\r\nX-Check: 1\r\nX-Other: two\r\n\r\n")
    rd = Reader(s)
    st, h, b = rd.response()
    assert st == 200, b
    j = json.loads(b)
    assert j["len"] == 11 and j["sha256"] == hashlib.sha256(b"hello world").hexdigest()
    assert j["declared"] == -1
    # The trailers ended the message: the next request is read normally.
    s.sendall(request("GET", "/whoami?after=trailers"))
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["query"] == {"after": "trailers"}
    s.close()


def test_chunked_bad_chunk_size_refused(srv):
    refused(srv, b"PUT /echo/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"zz\r\nhello\r\n0\r\n\r\n")


@pytest.mark.parametrize("head", [
    # one field of 70 KiB
    b"GET /whoami HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (70 << 10) + b"\r\n\r\n",
    # 600 small fields
    b"GET /whoami HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-F%d: v\r\n" % i for i in range(600)) +
    b"\r\n",
])
def test_oversized_head_refused(srv, head):
    assert b"<Code>RequestHeaderSectionTooLarge</Code>" in refused(srv, head)


def test_head_within_limits_accepted(srv):
    s = connect(srv)
    s.sendall(b"GET /whoami HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (60 << 10) + b"\r\n\r\n")
    st, h, b = Reader(s).response()
    assert st == 200
    s.close()


def test_overlong_target_refused(srv):
    body = refused(srv, b"GET /whoami/" + b"k" * (20 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"<Code>InvalidURI</Code>" in body


def test_request_line_without_version(srv):
    refused(srv, b"GET /whoami\r\nHost: x\r\n\r\n")


@pytest.mark.parametrize("fields", [
    [b"Content-Length: 3", b"Content-Length: 4"],
    [b"Content-Length: 3", b"Content-Length: 3"],
    [b"Content-Length: -3"],
    [b"Content-Length: 99999999999999999999999"],
    [b"Content-Length: 18446744073709551615"],
    [b"Content-Length: 3x"],
])
def test_bad_content_length_refused(srv, fields):
    refused(srv, b"PUT /echo/cl HTTP/1.1\r\nHost: x\r\n" + b"\r\n".join(fields) +
            b"\r\n\r\nabcd")


def test_transfer_encoding_with_content_length_refused(srv):
    # The classic smuggling shape: a front end that trusts Content-Length
    # would forward the GET as the body; this server must not serve it.
    refused(srv, b"POST /echo/s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 b"Content-Length: 4\r\n\r\n0\r\n\r\nGET /whoami?smuggled=1 HTTP/1.1\r\n"
                 b"Host: x\r\n\r\n")


def test_unknown_transfer_coding_not_implemented(srv):
    body = refused(srv, b"PUT /echo/te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc",
                   status=501)
    assert b"<Code>NotImplemented</Code>" in body


def test_http10_closes_after_the_response(srv):
    s = connect(srv)
    s.sendall(b"GET /whoami?v=10 HTTP/1.0\r\n\r\n")
    rd = Reader(s)
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["query"] == {"v": "10"}
    assert h.get("connection") == "close"
    assert rd.closed()
    s.close()


def test_http10_keep_alive_when_asked(srv):
    s = connect(srv)
    rd = Reader(s)
    for i in range(3):
        s.sendall(b"GET /whoami?n=%d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" % i)
        st, h, b = rd.response()
        assert st == 200 and json.loads(b)["query"] == {"n": str(i)}
        assert h.get("connection", "").lower() == "keep-alive"
    s.close()


def test_http10_stream_is_close_delimited(srv):
    s = connect(srv)
    s.sendall(b"GET /stream?n=5000 HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"chunked" not in head.lower()
    assert len(body) == 5000
    s.close()


def test_connection_close_honoured(srv):
    s = connect(srv)
    s.sendall(request("GET", "/whoami", headers=["Connection: close"]) + request("GET", "/whoami"))
    rd = Reader(s)
    st, h, b = rd.response()
    assert st == 200 and h.get("connection") == "close"
    assert rd.closed()  # the second request is not answered
    s.close()


def test_head_has_length_and_no_body(srv, tmp_path):
    (tmp_path / "f.bin").write_bytes(b"z" * 100000)
    s = connect(srv)
    s.sendall(request("HEAD", "/file/f.bin") + request("GET", "/file/f.bin",
                                                       headers=["Range: bytes=5-9"]))
    rd = Reader(s)
    st, h, b = rd.response(head_request=True)
    assert st == 200 and h["content-length"] == "100000" and b == b""
    st, h, b = rd.response()  # would fail to parse had the HEAD carried a body
    assert st == 206 and b == b"zzzzz"
    s.close()


def test_date_and_request_id_on_every_answer(srv):
    s = connect(srv)
    s.sendall(request("GET", "/whoami") + request("GET", "/nothing"))
    rd = Reader(s)
    for want in (200, 501):
        st, h, b = rd.response()
        assert st == want
        assert re.fullmatch(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT",
                            h["date"])
        assert re.fullmatch(r"[0-9A-F]{16}", h["x-amz-request-id"])
    s.close()


def test_refused_body_is_drained_and_connection_kept(srv):
    # A refused upload without Expect: the body still arrives; it is read
    # and dropped so that the next request on the connection is served.
    s = connect(srv)
    s.sendall(request("PUT", "/echo/x", b"q" * 50000, headers=["Authorization: Bearer tok1:bad"]) +
              request("GET", "/whoami?next=1"))
    rd = Reader(s)
    st, h, b = rd.response()
    assert st == 403 and h.get("connection") != "close"
    st, h, b = rd.response()
    assert st == 200 and json.loads(b)["query"] == {"next": "1"}
    s.close()

"""The pending-request deadlines of the HTTP listener (issue 16, "headers
within 10 s"; docs/protocol/http.md "Limits"), through a real cairnd:
- a connection that sends nothing is closed, unanswered, at the listener's
  handshake deadline ([http] handshake_timeout_ms, shortened here);
- a connection whose request head starts but never ends is answered
  `400 RequestTimeout` with `Connection: close` once head_timeout_ms (10 s,
  fixed) has passed since its first byte, and closed; never earlier than
  the deadline, so a slow but live client is not cut;
- a head that ends just before its deadline is served on the same connection.
The other admission cases (the table, per-source share, eviction) are in
test_http_admission.py; the body rate floor in test_http_load.py."""
import socket
import time

from test_http_admission import connect, read_all, start

HEAD_DEADLINE_S = 10.0


def test_silent_connection_closed_at_the_handshake_deadline(tmp_path, servers):  # noqa: F811
    srv = start(tmp_path, {"handshake_timeout_ms": 1000})
    servers.append(srv)
    s = connect(srv.addrs["http"], timeout=15)
    t0 = time.monotonic()
    data = read_all(s)
    waited = time.monotonic() - t0
    assert data == b"", data[:200]
    assert 0.8 <= waited < 8, waited
    s.close()


def test_unfinished_head_answered_request_timeout(tmp_path, servers):  # noqa: F811
    srv = start(tmp_path, {"handshake_timeout_ms": 1000})
    servers.append(srv)
    s = connect(srv.addrs["http"], timeout=HEAD_DEADLINE_S + 20)
    t0 = time.monotonic()
    s.sendall(b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\n")
    # A live client trickles a field now and then, past the handshake deadline.
    for i in range(3):
        time.sleep(1.5)
        s.sendall(b"X-Slow-%d: v\r\n" % i)
    data = read_all(s)
    waited = time.monotonic() - t0
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), data[:300]
    assert b"connection: close" in head.lower(), head
    assert b"<Code>RequestTimeout</Code>" in body, body
    assert HEAD_DEADLINE_S - 0.5 <= waited < HEAD_DEADLINE_S + 8, waited
    s.close()


def test_slow_head_that_ends_in_time_is_served(tmp_path, servers):  # noqa: F811
    srv = start(tmp_path, {"handshake_timeout_ms": 1000})
    servers.append(srv)
    s = connect(srv.addrs["http"], timeout=30)
    s.sendall(b"GET /_cairn/health HTTP/1.1\r\n")
    for i in range(4):
        time.sleep(1.2)  # each pause longer than the handshake deadline
        s.sendall(b"X-Slow-%d: v\r\n" % i)
    s.sendall(b"Host: x\r\n\r\n")
    data = read_all(s, lambda d: d.startswith(b"HTTP/1.1 ") and d.endswith(b"ok"))
    assert data.startswith(b"HTTP/1.1 200 "), data[:300]
    # still a keep-alive connection
    s.sendall(b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\n\r\n")
    data = read_all(s, lambda d: d.startswith(b"HTTP/1.1 ") and d.endswith(b"ok"))
    assert data.startswith(b"HTTP/1.1 200 "), data[:300]
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()

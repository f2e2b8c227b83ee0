"""Admission on cairnd's HTTP listener, which is one listener of the shared
network layer: the connection table answered with S3's 503 SlowDown (with
Retry-After) before a byte of the request is read, the per-source share of
pending connections, and the eviction of the oldest pending connection, so
that a flood of silent connections from one address never locks out a
client from another.

The limits come from a --config file ([http] section).  Pending
connections get a handshake deadline far beyond the test's life, so what
is counted depends on the counts alone, never on how fast this runs."""
import re
import socket
import threading
import time


from conftest import ADMIN_TOKEN, Server


def start(tmp_path, limits):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[http]\n" + "".join("%s = %d\n" % kv for kv in limits.items()))
    srv = Server(tmp_path / "data", args=["--jay", "off", "--scribe", "off", "--http",
                                          "127.0.0.1:0", "--config", str(cfg)],
                 env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    return srv.start(wait_for=("http",))


def connect(addr, source=None, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect(addr)
    return s


def read_all(s, until=None):
    """What s receives until the peer closes (or until(data) holds)."""
    data = b""
    while not (until and until(data)):
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def health(s):
    """One keep-alive GET /_cairn/health on s; returns its status line."""
    s.sendall(b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf or not buf.endswith(b"ok"):
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk
    return buf.split(b"\r\n", 1)[0]


def assert_slow_down(data):
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), data[:200]
    assert re.search(rb"(?im)^Retry-After: 1\r?$", head), head
    assert re.search(rb"(?im)^Connection: close\r?$", head), head
    assert b"<Code>SlowDown</Code>" in body


def test_connection_limit_answers_slow_down_before_reading(tmp_path, servers):
    srv = start(tmp_path, {"max_connections": 4})
    servers.append(srv)
    addr = srv.addrs["http"]
    # Four connections that each had a request answered: none is pending,
    # so none can be evicted, and the table is full.
    held = [connect(addr) for _ in range(4)]
    for s in held:
        assert health(s) == b"HTTP/1.1 200 OK"
    extra = connect(addr)
    # Nothing is sent on it: the refusal comes first, then the close.
    assert_slow_down(read_all(extra))
    extra.close()
    # The held connections are still served, and once one goes, a newcomer is.
    assert health(held[0]) == b"HTTP/1.1 200 OK"
    held.pop().close()
    for _ in range(100):  # the close reaches the server's loop asynchronously
        s = connect(addr)
        s.sendall(b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\n\r\n")
        data = read_all(s, lambda d: d.startswith(b"HTTP/1.1 200") and d.endswith(b"ok"))
        s.close()
        if data.startswith(b"HTTP/1.1 200"):
            break
        assert_slow_down(data)
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    for s in held:
        s.close()


def test_silent_flood_from_one_address_does_not_lock_out_another(tmp_path, servers):
    srv = start(tmp_path, {"max_pending_per_source": 16, "handshake_timeout_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    flood = [connect(addr, "127.0.0.1") for _ in range(200)]
    # A client from another address is served at once, flood or not.
    other = connect(addr, "127.0.0.2")
    assert health(other) == b"HTTP/1.1 200 OK"
    # The flood holds its share of pending connections; every one past it
    # was refused with SlowDown before anything was read.  The listener
    # accepts in arrival order and writes a refusal as it accepts, so with
    # the later client answered, every refusal is here already.
    refused = 0
    for s in flood:
        s.setblocking(False)
        try:
            first = s.recv(65536)
        except BlockingIOError:
            continue  # pending and still open: one of the share
        s.settimeout(10)
        assert_slow_down(first + read_all(s))
        refused += 1
    assert refused == 200 - 16
    assert health(other) == b"HTTP/1.1 200 OK"
    other.close()
    for s in flood:
        s.close()


def test_full_table_of_silent_connections_evicts_the_oldest(tmp_path, servers):
    srv = start(tmp_path, {"max_connections": 16, "max_pending_per_source": 16,
                           "handshake_timeout_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    flood = [connect(addr, "127.0.0.1") for _ in range(16)]
    # The table is full of pending connections: the newcomer takes the
    # oldest one's place instead of being refused.
    other = connect(addr, "127.0.0.2")
    assert health(other) == b"HTTP/1.1 200 OK"
    flood[0].settimeout(10)
    assert read_all(flood[0]) == b""  # evicted: closed without a word
    other.close()
    for s in flood:
        s.close()


def test_default_pending_share_takes_a_client_pool(tmp_path, servers):
    """With no per-source setting, the HTTP listener lets one address hold
    256 pending connections (a client opening its whole pool at once, as
    s5cmd or wrk do), every one of them then served; the 257th is refused
    with SlowDown before it is read."""
    srv = start(tmp_path, {"handshake_timeout_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    pool = [connect(addr) for _ in range(256)]
    extra = connect(addr)
    assert_slow_down(read_all(extra))
    extra.close()
    for s in pool:
        assert health(s) == b"HTTP/1.1 200 OK"
        s.close()


def test_dribbled_heads_from_many_addresses_do_not_hold_the_workers(tmp_path, servers):
    """240 connections from ten addresses each send the start of a request
    and then a byte every 0.25 s, more than the request pools have workers:
    the loop holds their heads until they end (src/net/loop.c head_here), so
    none holds a worker, and a client from another address is served at once
    (on the build before, it waited for the dribblers' head deadlines, past
    this test's 30 s timeout)."""
    srv = start(tmp_path, {"max_pending_per_source": 64})
    servers.append(srv)
    addr = srv.addrs["http"]
    head = b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 4000
    dribblers = {}
    for i in range(2, 12):
        for _ in range(24):
            s = connect(addr, "127.0.0.%d" % i)
            s.sendall(head[:20])
            dribblers[s] = 20
    stop = threading.Event()

    def dribble():
        while not stop.is_set():
            for s, at in list(dribblers.items()):
                try:
                    s.send(head[at:at + 1])
                    dribblers[s] = at + 1
                except OSError:
                    pass
            time.sleep(0.25)

    t = threading.Thread(target=dribble, daemon=True)
    t.start()
    try:
        time.sleep(1.0)
        for _ in range(3):
            t0 = time.time()
            other = connect(addr, "127.0.0.200", timeout=30)
            assert health(other) == b"HTTP/1.1 200 OK"
            other.close()
            took = time.time() - t0
            assert took < 2.0, "a client waited %.2fs behind dribbled heads" % took
            time.sleep(0.3)
    finally:
        stop.set()
        t.join(10)
        for s in dribblers:
            s.close()

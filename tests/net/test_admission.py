"""Admission, deadlines and shutdown of the network layer, over real sockets,
through tests/net/net_test_server (a cn_server_t with a tiny echo adapter).

Echo wire: "ECHO" + u8 name_len + name -> "OKAY" | "BADM";
request u32be len + body -> u32be status (0 ok, 1 busy) + u32be len + body;
a body "SLEEP:<ms>;..." is answered after ms milliseconds; busy() = "BUSY".
A body "HOLD;..." keeps its worker until the gate opens; the control hellos
"!stat" and "!open" answer (requests held now, most held at once).

Nothing here asserts how long something took, only what happened and in
which order: the tests run under ASan on busy machines.  Where a deadline is
the subject, it is checked from below (never before it) and bounded
generously from above.
"""
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from conftest import assert_no_sanitizer, binary


class EchoServer:
    def __init__(self, tmp_path, *args):
        self.log_path = str(tmp_path / "net_test_server.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([binary("tests/net/net_test_server"), *args],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        self.addrs = []
        want = max(1, list(args).count("--listen"))   # one log line per listener
        while time.time() < deadline:
            self.addrs = [(h.strip("[]"), int(p)) for h, p in
                          (m.rsplit(":", 1) for m in
                           re.findall(r"listening echo on (\S+)", self.output()))]
            if len(self.addrs) >= want:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("net_test_server exited %d:\n%s"
                                   % (self.proc.returncode, self.output()))
            time.sleep(0.02)
        raise RuntimeError("net_test_server did not listen:\n" + self.output())

    @property
    def addr(self):
        return self.addrs[0]

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        out = self.output()
        assert_no_sanitizer(out)
        return self.proc.returncode


@pytest.fixture
def echo_server(tmp_path):
    servers = []

    def make(*args):
        s = EchoServer(tmp_path, *args)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


def dial(addr, source=None, timeout=10):
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect(addr)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def hello(s, name=b""):
    s.sendall(b"ECHO" + bytes([len(name)]) + name)
    return recv_exact(s, 4)


def request(s, body):
    s.sendall(struct.pack(">I", len(body)) + body)
    head = recv_exact(s, 8)
    if len(head) < 8:
        return None, head
    status, n = struct.unpack(">II", head)
    return status, recv_exact(s, n)


def is_closed(s, timeout=5):
    """True when the server closes s (EOF or reset) within timeout."""
    s.settimeout(timeout)
    try:
        return s.recv(16) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def session(addr, name=b""):
    s = dial(addr)
    assert hello(s, name) == b"OKAY"
    return s


def test_echo_roundtrip(echo_server):
    srv = echo_server()
    s = session(srv.addr)
    for body in (b"hello", b"", os.urandom(300_000)):
        assert request(s, body) == (0, body)
    assert request(s, b"FILE:3000000") == (0, file_pattern(3_000_000))
    assert request(s, b"after file") == (0, b"after file")
    s.close()


def file_pattern(n):
    chunk = bytes(ord("0") + i % 10 for i in range(4000))
    return (chunk * (n // 4000 + 1))[:n]


def test_head_len_zero_adapter(echo_server):
    srv = echo_server("--head0", "--workers", "1", "--idle-ms", "5000")
    conns = [session(srv.addr) for _ in range(5)]    # idle: no worker held
    for i, s in enumerate(conns):
        assert request(s, b"raw %d" % i) == (0, b"raw %d" % i)
    conns[0].close()                                 # a peer that leaves is noticed
    assert request(conns[1], b"FILE:70000") == (0, file_pattern(70_000))


def test_bad_magic_is_refused(echo_server):
    srv = echo_server()
    s = dial(srv.addr)
    s.sendall(b"NOPE\x00")
    assert recv_exact(s, 4) == b"BADM"
    assert is_closed(s)


def test_connection_cap_answers_busy(echo_server):
    srv = echo_server("--max-conns", "3")
    held = []
    for _ in range(3):
        s = session(srv.addr)
        assert request(s, b"x") == (0, b"x")    # delivered a request: no longer pending
        held.append(s)
    extra = dial(srv.addr)
    assert recv_exact(extra, 4) == b"BUSY"     # written before anything was read
    assert is_closed(extra)
    # The held connections are unaffected, and a freed slot admits again.
    assert request(held[0], b"still here") == (0, b"still here")
    held.pop().close()
    deadline = time.time() + 30
    while True:
        s = dial(srv.addr)
        if hello(s) == b"OKAY":
            break
        s.close()
        assert time.time() < deadline, "slot was not released"
        time.sleep(0.05)
    assert request(s, b"in") == (0, b"in")


def test_full_table_evicts_oldest_pending(echo_server):
    srv = echo_server("--max-conns", "4", "--max-pending-per-source", "100")
    silent = [dial(srv.addr) for _ in range(4)]      # pending: no handshake at all
    time.sleep(0.3)
    newcomer = dial(srv.addr)
    assert is_closed(silent[0]), "the oldest pending connection must be evicted"
    assert hello(newcomer) == b"OKAY"
    assert request(newcomer, b"admitted") == (0, b"admitted")
    for s in silent[1:]:
        assert not is_closed(s, timeout=0.2)        # younger ones are kept
    # Once every slot carries a settled connection, newcomers get busy instead.
    for s in silent[1:]:
        s.close()
    settled = [newcomer]
    deadline = time.time() + 30
    while len(settled) < 4 and time.time() < deadline:
        s = dial(srv.addr)
        if hello(s) == b"OKAY" and request(s, b"x") == (0, b"x"):
            settled.append(s)
        else:
            s.close()
            time.sleep(0.05)
    assert len(settled) == 4
    extra = dial(srv.addr)
    assert recv_exact(extra, 4) == b"BUSY"


def test_pending_per_source_cap(echo_server):
    srv = echo_server("--max-pending-per-source", "3")
    pending = [dial(srv.addr, source="127.0.0.1") for _ in range(3)]
    time.sleep(0.2)
    over = dial(srv.addr, source="127.0.0.1")
    assert recv_exact(over, 4) == b"BUSY"
    # Another source is not held to this one's share.
    other = dial(srv.addr, source="127.0.0.2")
    assert hello(other) == b"OKAY"
    # Completing a handshake and one request settles a connection; the
    # source may then open another pending one.
    assert hello(pending[0]) == b"OKAY"
    assert request(pending[0], b"y") == (0, b"y")
    deadline = time.time() + 30
    while True:
        s = dial(srv.addr, source="127.0.0.1")
        if hello(s) == b"OKAY":
            break
        assert time.time() < deadline
        time.sleep(0.05)


def test_no_per_principal_connection_cap(echo_server):
    # A principal may hold every slot of the table: a refusal decided after
    # authentication could only be answered as busy, which a protocol such
    # as Jay reserves for the full table (no credential examined).  The
    # configured per-principal figure is not enforced.
    srv = echo_server("--max-conns", "4", "--max-conns-per-principal", "2")
    alice = []
    for i in range(4):
        s = session(srv.addr, b"alice")
        assert request(s, b"a%d" % i) == (0, b"a%d" % i)     # settled
        alice.append(s)
    extra = dial(srv.addr)
    assert recv_exact(extra, 4) == b"BUSY"      # the table is full: before any hello
    assert is_closed(extra)
    alice.pop().close()
    deadline = time.monotonic() + 30
    while True:
        s = dial(srv.addr)
        if hello(s, b"bob") == b"OKAY":
            break
        assert time.monotonic() < deadline, "slot was not released"
        time.sleep(0.05)
    assert request(s, b"bob ok") == (0, b"bob ok")
    for a in alice:
        assert request(a, b"still") == (0, b"still")


def test_memory_budget_refusal(echo_server):
    srv = echo_server("--budget", "1000000", "--budget-per-conn", "800000")
    big = 600_000
    a = session(srv.addr)
    b = session(srv.addr)
    # a declares a big body and sends half of it: its reservation is held.
    a.sendall(struct.pack(">I", big) + b"a" * (big // 2))
    time.sleep(0.3)
    # b's big body does not fit in what is left: refused before it is read.
    b.sendall(struct.pack(">I", big))
    head = recv_exact(b, 8)
    assert struct.unpack(">II", head) == (1, 0)
    assert is_closed(b)
    # a finishes and is answered; its reservation is released afterwards.
    a.sendall(b"a" * (big - big // 2))
    assert struct.unpack(">II", recv_exact(a, 8)) == (0, big)
    assert recv_exact(a, big) == b"a" * big
    # One connection may never hold more than its own cap.
    c = session(srv.addr)
    c.sendall(struct.pack(">I", 900_000))
    assert struct.unpack(">II", recv_exact(c, 8)) == (1, 0)
    # The server stays up and the budget is whole again.  a's reservation is
    # released after its answer is written, before a's next request is read:
    # once a second request on a is answered, the release has happened.
    assert request(a, b"small") == (0, b"small")
    d = session(srv.addr)
    body = b"d" * big
    assert request(d, body) == (0, body)


def test_idle_connections_hold_no_worker(echo_server):
    srv = echo_server("--workers", "2", "--queue-len", "2")
    idle = [session(srv.addr) for _ in range(12)]    # 6x the workers of each pool
    for s in idle[:4]:
        assert request(s, b"warm") == (0, b"warm")
    late = session(srv.addr)
    assert request(late, b"served") == (0, b"served")
    assert request(idle[-1], b"me too") == (0, b"me too")


def test_queue_full_waits_instead_of_failing(echo_server):
    srv = echo_server("--workers", "1", "--queue-len", "1")
    conns = [session(srv.addr) for _ in range(4)]
    results = [None] * 4

    def run(i):
        results[i] = request(conns[i], b"SLEEP:200;" + bytes([65 + i]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [(0, b"SLEEP:200;" + bytes([65 + i])) for i in range(4)]


def gate(srv, cmd):
    """A control hello: "!stat" or "!open".  Returns (held now, most held)."""
    s = dial(srv.addr)
    name = cmd.encode()
    s.sendall(b"ECHO" + bytes([len(name)]) + name)
    reply = recv_exact(s, 8)
    s.close()
    assert len(reply) == 8, reply
    return struct.unpack(">II", reply)


def wait_held(srv, n):
    deadline = time.monotonic() + 30
    while gate(srv, "!stat")[0] != n:
        assert time.monotonic() < deadline, "held %r, want %d" % (gate(srv, "!stat"), n)
        time.sleep(0.02)


def _requests(conns, body):
    """Sends body on every connection at once; each result lands in the
    returned list when it arrives."""
    out = [None] * len(conns)

    def run(i):
        out[i] = request(conns[i], body)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    return threads, out


def test_worker_share_keeps_workers_for_others(echo_server):
    # 4 workers per pool, share 50 %: one principal has at most 2 requests in
    # flight; the rest wait in the loop, and another principal is served
    # while those 2 still hold their workers.
    srv = echo_server("--workers", "4")
    hog = [session(srv.addr, b"hog") for _ in range(6)]
    threads, results = _requests(hog, b"HOLD;hog")
    wait_held(srv, 2)
    other = session(srv.addr, b"other")
    assert request(other, b"prompt") == (0, b"prompt")      # the gate is still shut
    assert results == [None] * 6
    assert gate(srv, "!stat") == (2, 2), "more than the share ran at once"
    gate(srv, "!open")
    for t in threads:
        t.join(60)
    assert results == [(0, b"HOLD;hog")] * 6
    assert gate(srv, "!stat") == (0, 2), "the waiting requests ran beyond the share"


def test_worker_share_by_source_without_principal(echo_server):
    # Connections without a principal share by source address.
    srv = echo_server("--workers", "4")
    hog = [dial(srv.addr, source="127.0.0.2") for _ in range(4)]
    for s in hog:
        assert hello(s) == b"OKAY"
    threads, results = _requests(hog, b"HOLD;")
    wait_held(srv, 2)
    other = session(srv.addr)       # from 127.0.0.1
    assert request(other, b"prompt") == (0, b"prompt")
    assert results == [None] * 4
    assert gate(srv, "!stat") == (2, 2)
    gate(srv, "!open")
    for t in threads:
        t.join(60)
    assert results == [(0, b"HOLD;")] * 4


def test_worker_share_off_lets_one_principal_take_all(echo_server):
    # The control: with the share off, the hog holds every worker, and
    # another principal's request is answered only once the gate opens.
    srv = echo_server("--workers", "2", "--worker-share", "0")
    hog = [session(srv.addr, b"hog") for _ in range(2)]
    threads, results = _requests(hog, b"HOLD;")
    wait_held(srv, 2)
    other = session(srv.addr, b"other")
    other.sendall(struct.pack(">I", 4) + b"late")
    other.settimeout(1)
    with pytest.raises(socket.timeout):
        other.recv(8)                   # no worker is free to answer it
    gate(srv, "!open")
    other.settimeout(30)
    assert struct.unpack(">II", recv_exact(other, 8)) == (0, 4)
    assert recv_exact(other, 4) == b"late"
    for t in threads:
        t.join(60)
    assert results == [(0, b"HOLD;")] * 2


def test_handshake_deadline(echo_server):
    srv = echo_server("--handshake-ms", "500")
    t0 = time.monotonic()                   # before accept: the deadline runs from it
    silent = dial(srv.addr)
    partial = dial(srv.addr)
    partial.sendall(b"EC")                  # starts, never finishes
    assert is_closed(silent, timeout=30)
    assert is_closed(partial, timeout=30)
    assert time.monotonic() - t0 >= 0.45    # never before the deadline (ms clocks)
    session(srv.addr).close()              # the server still admits


def test_idle_deadline(echo_server):
    srv = echo_server("--idle-ms", "400")
    s = session(srv.addr)
    t0 = time.monotonic()                   # before the request: the idle time follows it
    assert request(s, b"x") == (0, b"x")
    assert is_closed(s, timeout=30)
    assert time.monotonic() - t0 >= 0.35    # never before the deadline (ms clocks)


def test_graceful_shutdown(echo_server):
    srv = echo_server()
    busy = session(srv.addr)
    idle = session(srv.addr)
    result = {}

    def slow():
        result["r"] = request(busy, b"SLEEP:1500;payload")

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.4)
    srv.proc.send_signal(signal.SIGTERM)
    assert is_closed(idle, timeout=3), "idle connections are closed at shutdown"
    with pytest.raises(OSError):
        # The listener is closed: new connections are refused.
        deadline = time.time() + 10
        while time.time() < deadline:
            c = dial(srv.addr, timeout=1)
            c.close()
            time.sleep(0.05)
    t.join(10)
    assert result["r"] == (0, b"SLEEP:1500;payload"), "the in-flight request completes"
    assert srv.proc.wait(10) == 0
    assert "shutting down" in srv.output()


def test_shutdown_grace_cuts_stalled_requests(echo_server):
    # The stalled request's own I/O deadline is 30 s: exiting within the
    # bound below means the grace period cut it.
    srv = echo_server("--grace-ms", "300")
    s = session(srv.addr)
    s.sendall(struct.pack(">I", 1000) + b"only part")   # a worker waits for the rest
    time.sleep(0.3)
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(20) == 0
    assert is_closed(s)


def test_ipv6_listener(echo_server):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback")
    srv = echo_server("--listen", "[::1]:0", "--listen", "127.0.0.1:0")
    assert srv.addrs[0][0] == "::1" and srv.addrs[1][0] == "127.0.0.1"
    for addr in srv.addrs:
        s = session(addr)
        assert request(s, b"v6 or v4") == (0, b"v6 or v4")
    assert re.search(r"listening echo on \[::1\]:\d+", srv.output())


def test_plaintext_public_refused(tmp_path):
    r = subprocess.run([binary("tests/net/net_test_server"), "--listen", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 1
    assert "refusing plaintext on non-loopback address" in r.stderr


def test_tls_listener(echo_server, tmp_path):
    import shutil
    import ssl
    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed")
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=60)
    srv = echo_server("--tls-cert", cert, "--tls-key", key)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cert)
    ctx.check_hostname = False
    raw = dial(srv.addr)
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    assert s.version() == "TLSv1.3"
    assert hello(s) == b"OKAY"
    for body in (b"over tls", os.urandom(200_000)):
        assert request(s, body) == (0, body)
    assert request(s, b"FILE:1000001") == (0, file_pattern(1_000_001))
    assert request(s, b"next") == (0, b"next")
    # TLS 1.2 is refused.
    ctx12 = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx12.load_verify_locations(cert)
    ctx12.check_hostname = False
    ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        ctx12.wrap_socket(dial(srv.addr), server_hostname="localhost")


def test_many_concurrent_clients(echo_server):
    # One source opens them all at once: lift its pending share.
    srv = echo_server("--workers", "4", "--queue-len", "8", "--max-pending-per-source", "1000")
    errors = []

    def client(i):
        try:
            s = session(srv.addr, b"user%d" % (i % 7))
            for j in range(20):
                body = os.urandom((i * 131 + j * 977) % 90_000)
                if request(s, body) != (0, body):
                    errors.append((i, j))
            s.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(48)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


def test_anonymous_memory_share(echo_server):
    # Connections without a principal together hold at most
    # --budget-anonymous of body memory (Scribe protocol 4's anonymous
    # share); a signed-in connection draws on the listener's budget.
    srv = echo_server("--budget", "4000000", "--budget-per-conn", "800000",
                      "--budget-anonymous", "1000000")
    big = 600_000
    a = session(srv.addr)
    b = session(srv.addr)
    a.sendall(struct.pack(">I", big) + b"a" * (big // 2))   # held while read
    time.sleep(0.3)
    b.sendall(struct.pack(">I", big))
    assert struct.unpack(">II", recv_exact(b, 8)) == (1, 0)   # over the anonymous share
    assert is_closed(b)
    alice = session(srv.addr, b"alice")
    body = b"p" * big
    assert request(alice, body) == (0, body)                  # admitted meanwhile
    a.sendall(b"a" * (big - big // 2))
    assert struct.unpack(">II", recv_exact(a, 8)) == (0, big)
    assert recv_exact(a, big) == b"a" * big
    assert request(a, b"small") == (0, b"small")              # a's reservation is back
    d = session(srv.addr)
    body = b"d" * big
    assert request(d, body) == (0, body)


def test_anonymous_permits_half_the_handshake_pool(echo_server):
    # "!anon" handshakes take an anonymous-request permit and hold it until
    # the gate opens: 4 handshake workers give 2 permits; the third is
    # refused busy while a signed-in handshake still finds a worker.
    srv = echo_server("--workers", "4")
    held = []
    for _ in range(2):
        s = dial(srv.addr)
        s.sendall(b"ECHO\x05!anon")
        held.append(s)
    wait_held(srv, 2)
    third = dial(srv.addr)
    assert hello(third, b"!anon") == b"BUSY"
    assert is_closed(third)
    alice = session(srv.addr, b"alice")
    assert request(alice, b"signed in") == (0, b"signed in")
    gate(srv, "!open")
    for s in held:
        assert recv_exact(s, 4) == b"OKAY"
        assert request(s, b"anon") == (0, b"anon")
    later = dial(srv.addr)
    assert hello(later, b"!anon") == b"OKAY"                 # the permits are back

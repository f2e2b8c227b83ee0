"""Load and limits on the Jay listener, over loopback, every loop bounded:

  * 1,000 concurrent authenticated connections are held and the 1,001st is
    answered ServerBusy (before it sends anything); the idle 1,000 add no
    thread to the server and a new request is served at once; the server's
    RSS with them is printed (recorded in docs/performance.md);
  * a flood of slow handshakes from many sources (each dribbling its hello a
    byte at a time, more of them than the handshake pool has workers) does not
    delay a legitimate client's handshake: the loop waits for a hello's bytes
    and only then hands it to a worker (src/net/hello.c);
  * a slow-metadata attacker (1 MiB metadata blocks, never finished) holds no
    more than its principal's worker share (with the defaults, 8 of the 16
    storage workers; its other requests wait in the loop) and no more than its
    share of the request-memory budget (32 MiB; the connections over it are
    refused with RateLimitExceeded), and another principal is served
    meanwhile, within 2 s.
"""
import select
import socket
import struct
import threading
import time

import pytest

from conftest import ADMIN_TOKEN, binary, ephemeral_args, run
from proofutil import (jay, jayclient, node_factory, proc_status, raise_nofile,  # noqa: F401
                       thread_count)

MIB = 1 << 20


def config(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return ephemeral_args() + ["--config", str(p)]


def handshake(addr, cred=ADMIN_TOKEN, source=None, timeout=30):
    s = socket.socket()
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect(addr)
    s.sendall(jayclient.handshake_bytes(cred))
    status, _ = jayclient.read_handshake_reply(s)
    return s, status


def test_connection_cap_and_idle_connections(node_factory, tmp_path):
    if raise_nofile(4096) < 2100:
        pytest.skip("RLIMIT_NOFILE cannot be raised to hold 1,000 connections here")
    # One principal opens every connection here: lift its own cap so that the
    # listener's global cap (1,000, the Jay contract) is what is met.
    node = node_factory(args=config(tmp_path, "cap.toml",
                                    "[jay]\nmax_connections_per_principal = 5000\n"))
    pid = node.pid
    with jay(node) as c:
        assert c.ping()
    time.sleep(0.3)
    threads0 = thread_count(pid)
    rss0 = proc_status(pid, "VmRSS")
    held = []
    try:
        t0 = time.time()
        for i in range(1000):
            s, status = handshake(node.jay)
            assert status == jayclient.HS_OK, "connection %d: handshake status %d" % (i, status)
            # A connection counts as pending (capped per source) until its
            # first request; one ping makes it an established idle one.
            s.sendall(jayclient.header(jayclient.OP["Ping"], 0, 0))
            assert jayclient.recv_exact(s, 17)[0] == jayclient.ST_OK
            held.append(s)
        t_open = time.time() - t0
        # The 1,001st is refused before it says anything.
        s = socket.create_connection(node.jay, timeout=10)
        reply = jayclient.recv_exact(s, 8)
        assert reply[:4] == jayclient.MAGIC and reply[4] == jayclient.VERSION
        assert reply[5] == jayclient.HS_SERVER_BUSY, reply
        assert reply[6:8] == b"\0\0"
        s.settimeout(5)
        assert s.recv(1) == b"", "the refused connection was not closed"
        s.close()

        time.sleep(0.5)
        threads1 = thread_count(pid)
        rss1 = proc_status(pid, "VmRSS")
        assert threads1 <= threads0, "idle connections hold threads: %d -> %d" % (
            threads0, threads1)
        # Every held connection still works, one request each, in a bounded pass.
        t1 = time.time()
        for s in held[::50]:
            s.sendall(jayclient.header(jayclient.OP["Ping"], 0, 0))
            h = jayclient.recv_exact(s, 17)
            assert h[0] == jayclient.ST_OK
        assert time.time() - t1 < 10
        print("load: 1000 idle connections opened in %.1fs; server RSS %.1f MiB -> %.1f MiB "
              "(%.1f KiB per connection); threads %d -> %d"
              % (t_open, rss0 / 1024, rss1 / 1024, (rss1 - rss0) / 1000, threads0, threads1))
        # One closes, a newcomer gets in.
        held.pop().close()
        deadline = time.time() + 10
        while True:
            s, status = handshake(node.jay)
            if status == jayclient.HS_OK:
                held.append(s)
                break
            s.close()
            assert time.time() < deadline, "no slot freed after a close"
            time.sleep(0.1)
    finally:
        for s in held:
            s.close()


class SlowHandshakeFlood:
    """Connections that dribble a handshake one byte at a time and never
    finish it, from several loopback sources, reopened as the server drops
    them."""

    def __init__(self, addr, sources, per_source, interval):
        self.addr, self.sources, self.per_source, self.interval = addr, sources, per_source, interval
        self.stop = threading.Event()
        self.dropped = 0
        self.opened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, src):
        s = socket.socket()
        s.setblocking(False)
        s.bind((src, 0))
        try:
            s.connect(self.addr)
        except BlockingIOError:
            pass
        self.opened += 1
        return s

    def run(self):
        hs = jayclient.handshake_bytes("flood:" + "x" * 40)
        socks = {}
        for src in self.sources:
            for _ in range(self.per_source):
                socks[self.open(src)] = [src, 0]
        while not self.stop.is_set():
            r, _, _ = select.select(list(socks), [], [], self.interval)
            for s in r:
                # Readable means the server gave up on it: EOF, or a refusal
                # it writes before closing.  Either way, dial again.
                try:
                    s.recv(64)
                except OSError:
                    pass
                src = socks.pop(s)[0]
                s.close()
                self.dropped += 1
                socks[self.open(src)] = [src, 0]
            for s, st in list(socks.items()):
                if st[1] < len(hs) - 1:
                    try:
                        s.send(hs[st[1]:st[1] + 1])
                        st[1] += 1
                    except OSError:
                        pass
            time.sleep(self.interval)
        for s in socks:
            s.close()


def test_slow_handshake_flood_does_not_delay_a_legitimate_client(node_factory, tmp_path):
    raise_nofile(4096)
    deadline_s = 2.0
    node = node_factory(args=config(tmp_path, "hs.toml",
                                    "[jay]\nhandshake_timeout_ms = %d\n" % (deadline_s * 1000)))
    flood = SlowHandshakeFlood(node.jay, ["127.0.0.%d" % i for i in range(2, 12)], 16, 0.25)
    flood.thread.start()
    worst = 0.0
    try:
        time.sleep(0.5)
        t_end = time.time() + 3 * deadline_s
        n = 0
        while time.time() < t_end:
            t0 = time.time()
            s, status = handshake(node.jay, timeout=30)
            s.sendall(jayclient.header(jayclient.OP["Ping"], 0, 0))
            h = jayclient.recv_exact(s, 17)
            s.close()
            took = time.time() - t0
            assert status == jayclient.HS_OK and h[0] == jayclient.ST_OK
            worst = max(worst, took)
            n += 1
            time.sleep(0.2)
    finally:
        flood.stop.set()
        flood.thread.join(30)
    print("load: slow-handshake flood of %d connections (%d dropped by the server); "
          "legitimate client: worst %.3fs over %d handshakes (deadline %.1fs)"
          % (flood.opened, flood.dropped, worst, n, deadline_s))
    assert flood.dropped > 0, "the server never cut a slow handshake"
    # Before the loop waited for hellos, every handshake worker held a
    # dribbler until its deadline and the client waited up to a deadline.
    assert worst <= deadline_s / 4, "a legitimate client waited %.2fs" % worst


def _mallory(node):
    r = run([binary("cairn"), "admin", "--data", node.data_dir, "account", "create",
             "mallory"], timeout=60)
    assert r.returncode == 0, r.stderr
    r = run([binary("cairn"), "admin", "--data", node.data_dir, "token", "create",
             "--account", "mallory"], timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _slow_metadata_attack(node, n):
    """n connections of one principal each promise a 1 MiB metadata block
    and send all but its last byte; meanwhile another principal pings, heads
    a bucket, PUTs and GETs.  Then the attacker's last bytes go out and every
    answer is read.  Returns (answer codes, server RSS growth in MiB,
    seconds for ping+head, seconds for put+get)."""
    mallory = _mallory(node)
    with jay(node) as c:
        c.create_bucket("victim")
    time.sleep(0.3)
    rss0 = proc_status(node.pid, "VmRSS")

    # Each head is sent right after its handshake: a connection counts as
    # pending for its source until it has sent one (16 per source).
    attackers = []
    for _ in range(n):
        a = jay(node, cred=mallory)
        a.sock.sendall(jayclient.header(jayclient.OP["PutObject"], MIB, 0))
        attackers.append(a)
    sent = [0] * n
    go = threading.Event()
    codes = {}
    lock = threading.Lock()

    def attack(i):
        a = attackers[i]
        try:
            # Blocks where the server does not read (a request waiting in the
            # loop for the principal's worker share): that is the point.
            for _ in range(16):
                a.sock.sendall(b"\0" * (64 << 10) if sent[i] + (64 << 10) < MIB
                               else b"\0" * (MIB - 1 - sent[i]))
                sent[i] = min(MIB - 1, sent[i] + (64 << 10))
            go.wait(60)
            a.sock.sendall(b"\0")
            h = jayclient.recv_exact(a.sock, 17)
            status, _, meta_len, _ = struct.unpack(">BIIq", h)
            rd = jayclient.Reader(jayclient.recv_exact(a.sock, meta_len))
            rd.str()
            code = rd.str() if status else "OK"
        except OSError as e:
            code = "closed: %s" % e.__class__.__name__
        with lock:
            codes[code] = codes.get(code, 0) + 1

    for a in attackers:
        a.sock.settimeout(90)
    threads = [threading.Thread(target=attack, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    # Until the attackers stop making progress (the server reads what it
    # has room and workers for), at most 30 s.
    last, still, t_end = -1, 0, time.time() + 30
    while time.time() < t_end and still < 10:
        time.sleep(0.1)
        total = sum(sent)
        still = still + 1 if total == last else 0
        last = total
    time.sleep(0.5)
    rss1 = proc_status(node.pid, "VmRSS")
    growth = (rss1 - rss0) / 1024
    try:
        # Another principal is answered meanwhile on the query pool ...
        t0 = time.time()
        with jay(node, timeout=10) as c:
            assert c.ping()
            assert c.head_bucket("victim")["name"] == "victim"
        query_s = time.time() - t0
        # ... and on the storage pool.
        t0 = time.time()
        with jay(node, timeout=10) as c:
            c.put_object("victim", "k", b"v" * 4096)
            assert c.get_object("victim", "k")[1] == b"v" * 4096
        put_s = time.time() - t0
    finally:
        go.set()
        for t in threads:
            t.join(90)
        for a in attackers:
            a.close()
    return codes, growth, query_s, put_s


def test_slow_metadata_attacker_holds_only_its_worker_share(node_factory, tmp_path):
    # 16 storage workers (the default is 64) and the default worker share,
    # 50 %.  One principal's 16 dribbling connections hold at most 8 workers;
    # the other requests of that principal wait in the loop, and another
    # principal is served at once.
    raise_nofile(4096)
    node = node_factory(args=config(tmp_path, "share.toml", "[server]\nstorage_workers = 16\n"))
    codes, growth, query_s, put_s = _slow_metadata_attack(node, 16)
    print("load: slow-metadata attacker, 16 x 1 MiB, default workers: server RSS grew %.1f "
          "MiB; another principal: ping+head %.2fs, put+get %.2fs; answers %s"
          % (growth, query_s, put_s, codes))
    assert query_s < 2 and put_s < 2
    # Every attacker request is answered in the end (its metadata is not a
    # PutObject layout): none was lost while it waited for its share.
    assert sum(codes.values()) == 16 and not any(k.startswith("closed") for k in codes), codes
    assert growth <= 8 + 12, "the attacker holds %.1f MiB" % growth


def test_slow_metadata_attacker_holds_only_its_budget_share(node_factory, tmp_path):
    raise_nofile(4096)
    # More storage workers than the attacker has connections and no worker
    # share, so that what bounds it is the memory budget.
    node = node_factory(args=config(tmp_path, "budget.toml",
                                    "[server]\nstorage_workers = 64\n"
                                    "[limits]\nworker_share_percent = 0\n"))
    codes, growth, query_s, put_s = _slow_metadata_attack(node, 48)
    refused = codes.get("RateLimitExceeded", 0)
    print("load: slow-metadata attacker, 48 x 1 MiB: %d refused, server RSS grew %.1f MiB; "
          "another principal: ping+head %.2fs, put+get %.2fs; answers %s"
          % (refused, growth, query_s, put_s, codes))
    assert refused >= 48 - 32, "only %d of 48 were refused" % refused
    assert growth <= 32 + 12, "the attacker holds %.1f MiB" % growth
    assert query_s < 5 and put_s < 5

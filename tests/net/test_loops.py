"""Several event loops (cn_server_config_t.loops; cairnd --net-loops, [server]
net_loops) against the real server, over real sockets:

  * connections are spread over the loops: each loop's gauge
    cairn_net_loop_connections{loop="N"} counts the connections living on
    it, and with two loops both hold some;
  * admission stays global: with a connection limit of 10 and two loops, the
    11th connection is refused at accept (503 SlowDown before any request is
    read, Jay's and the echo adapter's busy() likewise), and once one of the
    ten closes a newcomer is admitted again, on whichever loop;
  * every connection is served the same on either loop, and the server stops
    cleanly with connections on both;
  * a loop whose epoll set fails stops the server, and its connections are
    closed instead of stranding the stop.

Nothing here asserts how long something took."""
import http.client
import re
import socket
import struct
import subprocess
import time

from conftest import ADMIN_TOKEN, Server, assert_no_sanitizer
from cairnutil import cairnd_refuses
from test_admission import (dial, echo_server, gate, hello,  # noqa: F401 (a fixture)
                            is_closed, recv_exact, request, session)


def start_cairnd(tmp_path, loops, http_limits):
    text = "[server]\nnet_loops = %d\n[http]\n" % loops
    text += "".join("%s = %d\n" % kv for kv in http_limits.items())
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text(text)
    srv = Server(tmp_path / "data", args=["--jay", "off", "--scribe", "off", "--http",
                                          "127.0.0.1:0", "--config", str(cfg)],
                 # The file's net_loops, not a CAIRN_NET_LOOPS of the test run.
                 env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN, "CAIRN_NET_LOOPS": ""})
    return srv.start(wait_for=("http",))


def logged(srv, text, timeout=10):
    """Whether srv logged text within timeout: loop 0 logs its count from
    its own thread, which may come after the "listening" line start()
    waits for."""
    end = time.monotonic() + timeout
    while text not in srv.output():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def http_get(conn, path):
    """One GET on keep-alive connection conn (http.client): (status, body)."""
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read()


def metric(text, name, labels):
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def test_connections_spread_over_loops_and_the_limit_is_global(tmp_path):
    srv = start_cairnd(tmp_path, 2, {"max_connections": 10})
    try:
        host, port = srv.addrs["http"]
        held = []
        for _ in range(10):
            c = http.client.HTTPConnection(host, port, timeout=10)
            assert http_get(c, "/_cairn/health")[0] == 200   # no longer pending
            held.append(c)
        assert logged(srv, "2 event loop(s)"), srv.output()

        # The table is full across both loops: the 11th is answered at once.
        extra = socket.create_connection((host, port), timeout=10)
        assert recv_exact(extra, 12) == b"HTTP/1.1 503"   # before any request was sent
        extra.close()

        status, body = http_get(held[0], "/_cairn/metrics")
        assert status == 200
        text = body.decode()
        per_loop = [metric(text, "cairn_net_loop_connections", 'loop="%d"' % i)
                    for i in range(2)]
        assert None not in per_loop, text
        assert sum(per_loop) == 10, per_loop
        assert min(per_loop) >= 1, per_loop    # both loops hold connections
        assert metric(text, "cairn_connections_open", 'listener="http"') == 10
        assert metric(text, "cairn_connections_refused_total",
                      'listener="http",reason="limit"') == 1

        # Every held connection is served, whichever loop it lives on.
        for c in held:
            assert http_get(c, "/_cairn/health")[0] == 200

        # A freed slot admits a newcomer again.
        held.pop().close()
        deadline = time.time() + 30
        while True:
            c = http.client.HTTPConnection(host, port, timeout=10)
            try:
                status = http_get(c, "/_cairn/health")[0]
            except (ConnectionError, http.client.HTTPException):
                status = 0
            if status == 200:
                held.append(c)
                break
            c.close()
            assert time.time() < deadline, "the slot was not released"
            time.sleep(0.05)
    finally:
        assert srv.stop() == 0
    out = srv.output()
    assert_no_sanitizer(out)


def test_echo_limit_is_global_across_loops(echo_server):
    srv = echo_server("--loops", "2", "--max-conns", "10")
    held = []
    for i in range(10):
        s = session(srv.addr)
        assert request(s, b"n%d" % i) == (0, b"n%d" % i)
        held.append(s)
    extra = dial(srv.addr)
    assert recv_exact(extra, 4) == b"BUSY"       # refused at accept
    assert is_closed(extra)
    for i, s in enumerate(held):
        assert request(s, b"again%d" % i) == (0, b"again%d" % i)


def test_eviction_reaches_a_connection_of_another_loop(echo_server):
    # New connections go to the loop holding fewer, ties in turn: a served
    # one on loop 0, then silent ones on loops 1, 0, 1 fill the table; the
    # newcomer evicts the oldest pending one, which lives on loop 1, not on
    # the accepting loop.
    srv = echo_server("--loops", "2", "--max-conns", "4", "--max-pending-per-source", "100")
    served = session(srv.addr)
    assert request(served, b"first") == (0, b"first")
    silent = [dial(srv.addr) for _ in range(3)]
    time.sleep(0.3)  # let the server accept them in order (not a timing assertion)
    newcomer = dial(srv.addr)
    assert is_closed(silent[0]), "the oldest pending connection must be evicted"
    assert hello(newcomer) == b"OKAY"
    assert request(newcomer, b"admitted") == (0, b"admitted")


def test_net_loops_setting(tmp_path):
    cairnd_refuses(tmp_path / "d0", "--net-loops", "65",
                   says="--net-loops must be an integer from 0 to 64")
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[server]\nnet_loops = -1\n")
    cairnd_refuses(tmp_path / "d1", "--config", str(cfg),
                   says="net_loops must be an integer from 0 to 64")
    # The flag wins over the environment; one loop accepts and serves.
    srv = Server(tmp_path / "data", args=["--jay", "127.0.0.1:0", "--scribe", "off", "--http",
                                          "off", "--net-loops", "1"],
                 env={"CAIRN_NET_LOOPS": "3"})
    srv.start()
    try:
        assert logged(srv, "1 event loop(s)"), srv.output()
        s = socket.create_connection(srv.addrs["jay"], timeout=10)
        s.close()
    finally:
        assert srv.stop() == 0


def test_cairnd_runs_one_loop_per_cpu_by_default(tmp_path):
    """No flag, file key or environment: one loop per online CPU, at most 8."""
    import os
    want = min(os.sysconf("SC_NPROCESSORS_ONLN"), 8)
    srv = Server(tmp_path / "data", args=["--jay", "127.0.0.1:0", "--scribe", "off", "--http",
                                          "off"], env={"CAIRN_NET_LOOPS": ""})
    srv.start()
    try:
        assert logged(srv, "%d event loop(s)" % want), srv.output()
    finally:
        assert srv.stop() == 0


def test_a_failed_loop_other_than_loop_0_still_lets_the_server_stop(echo_server):
    # Loop 1's epoll set fails (a test hook in net_test_server): the server
    # stops by itself, and the connections living on loop 1, idle or with a
    # request on a worker, are closed rather than stranded (which once left
    # every other loop waiting for them forever).
    srv = echo_server("--loops", "2", "--grace-ms", "1000")
    conns = [session(srv.addr) for _ in range(4)]  # two on each loop
    for i, s in enumerate(conns):
        assert request(s, b"n%d" % i) == (0, b"n%d" % i)
    busy = conns[:2]  # one of loop 0, one of loop 1: a request each on a worker
    for s in busy:
        s.sendall(struct.pack(">I", 10) + b"SLEEP:300;")
    gate(srv, "!break1")
    try:
        rc = srv.proc.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError("the server did not stop after loop 1 failed:\n" + srv.output())
    assert rc == 1, srv.output()
    assert "event loop 1:" in srv.output()
    for s in conns:
        assert ends(s), "a connection was left open"


def ends(s, timeout=10):
    """True when the server closes s (EOF or reset) within timeout; what
    arrives before (the answer of a request in flight) is read past."""
    s.settimeout(timeout)
    try:
        while s.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

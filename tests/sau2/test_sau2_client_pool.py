"""libcairn's SAU2 connection pool (include/cairn/sau2_client.h; issue 20:
"pool <= 4, reuse <= 50 s, one retry on a fresh connection after the service
closed a pooled one") through a real `cairnd --auth` listener and real
sockets.  The client is tests/sau2/sau2_call --pool (libcairn's pool; its
--threads sends a burst through one pool); the connections are counted on
the service's side, from its metrics: cairn_connections_accepted_total and
cairn_connections_open of listener "auth".  The 50 s reuse window is
shortened with CAIRN_SAU2_REUSE_MS, read when the pool is made."""
import http.client
import re
import time

from conftest import binary, run
from test_sau2_listener import auth_server  # noqa: F401 (a fixture)
from test_sau2_listener import code_of


def metric(srv, name):
    """The auth listener's value of metric family name, from /_cairn/metrics:
    the sum over its series (refused has one a reason)."""
    conn = http.client.HTTPConnection(*srv.addrs["http"], timeout=10)
    try:
        conn.request("GET", "/_cairn/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    found = re.findall(r'^%s\{listener="auth"(?:,[^}]*)?\} (\S+)$' % name, text, re.M)
    assert found, (name, text)
    return int(sum(float(v) for v in found))


def accepted(srv):
    """Connections the service took: admitted, and none refused at accept
    (a refused one would also be a connection the pool opened)."""
    assert metric(srv, "cairn_connections_refused_total") == 0
    return metric(srv, "cairn_connections_accepted_total")


def pool_call(srv, *argv, threads=None, repeat=None, again_after=None, reuse_ms=None):
    """sau2_call --pool: (exit status, stdout lines)."""
    cmd = [binary("tests/sau2/sau2_call"), "--pool"]
    if threads:
        cmd += ["--threads", str(threads), "--repeat", str(repeat or 1)]
    if again_after is not None:
        cmd += ["--again-after", str(again_after)]
    env = {"CAIRN_SAU2_REUSE_MS": str(reuse_ms)} if reuse_ms else {}
    r = run(cmd + [srv.addr] + list(argv), env=env, timeout=120)
    assert "Sanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr
    return r.returncode, r.stdout.splitlines()


def settle_open(srv, want, seconds=10):
    """Waits until the listener holds want connections open; returns the count."""
    deadline = time.monotonic() + seconds
    n = metric(srv, "cairn_connections_open")
    while n != want and time.monotonic() < deadline:
        time.sleep(0.05)
        n = metric(srv, "cairn_connections_open")
    return n


def test_a_burst_never_opens_more_than_four_connections(auth_server):  # noqa: F811
    srv = auth_server(http="127.0.0.1:0")
    # 16 threads, 25 calls each, through one pool: the service accepts
    # exactly 4 connections (the burst fills the pool), never a fifth.
    rc, out = pool_call(srv, "trust-bundle", threads=16, repeat=25)
    assert rc == 0 and out == ["calls 400 ok 400"], out
    assert accepted(srv) == 4
    # the pool's process has exited: its connections are gone
    assert settle_open(srv, 0) == 0


def test_an_idle_connection_past_the_reuse_window_is_not_reused(auth_server):  # noqa: F811
    srv = auth_server(http="127.0.0.1:0")  # the listener keeps an idle one for 60 s
    # within the window (1 s): the second call reuses the first's connection
    rc, out = pool_call(srv, "trust-bundle", again_after=200, reuse_ms=1000)
    assert rc == 0 and out.count("code 0") == 2, out
    assert accepted(srv) == 1
    # past it: the pool closes the idle connection (still open at the service)
    # and opens a new one, although the service would have answered on it
    rc, out = pool_call(srv, "trust-bundle", again_after=1500, reuse_ms=1000)
    assert rc == 0 and out.count("code 0") == 2, out
    assert accepted(srv) == 3
    # the default window (50 s) reuses it after the same pause
    rc, out = pool_call(srv, "trust-bundle", again_after=1500)
    assert rc == 0 and out.count("code 0") == 2, out
    assert accepted(srv) == 4


def test_a_closed_pooled_connection_costs_one_retry_on_a_fresh_one(auth_server):  # noqa: F811
    srv = auth_server(idle_ms=500, http="127.0.0.1:0")
    # A burst leaves 4 idle connections in the pool; the service closes all
    # four after 500 ms idle.  The next call takes one (closed: CN_E_CLOSED),
    # then retries once on a new connection -- not on another of the closed
    # pooled ones -- and succeeds: one connection more at the service.
    rc, out = pool_call(srv, "trust-bundle", threads=16, repeat=10, again_after=1500)
    assert rc == 0 and out[0] == "calls 160 ok 160" and out[1] == "second", out
    assert code_of(out[2:]) == 0, out
    assert accepted(srv) == 5
    # a pooled connection the service kept costs no retry: no new connection
    rc, out = pool_call(srv, "trust-bundle", again_after=0)
    assert rc == 0 and out.count("code 0") == 2, out
    assert accepted(srv) == 6

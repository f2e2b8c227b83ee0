"""Users' upstream sessions pooled across client connections on a protocol-4
gateway (issue 23, docs/protocol/scribe-gateway.md "Protocol 4"): the
setup of test_gateway_tls.py (a SAU2 auth in storage 1, a second TLS
storage server "publishing", a gateway with its own service-writer
credential), with storage 2 restarted to serve /_cairn/metrics so that its
accepted TLS connections count the gateway's upstream handshakes there.

What each test proves: sequential client connections of one user (one
access certificate) reuse the upstream session the first one opened, so
storage sees far fewer handshakes than there were client connections; a
session kept for one user is never handed to another (another user, another
of the same user's certificates, an anonymous client): each of those opens
its own and storage applies its own role; a kept session is not reused once
older than upstream_reuse_ms."""
import re
import secrets
import threading
import time
import urllib.request

import pytest

from scribe_wire import CHUNK, b3
from test_gateway_tls import NS, NS2, gw, via  # noqa: F401 - the fixture
from test_scribe_v4 import hello4, hello_reply, raw_conn
from test_scribe_v4_auth import code, put_admission, world  # noqa: F401 - the fixture

KEPT = "a user's upstream session kept for their next connection"
REUSED = "a user's upstream session reused by their next connection"


def restart_gateway(s, reuse_ms):
    """The gateway again, logging at debug level, with upstream_reuse_ms."""
    s.gw.stop()
    text = re.sub(r"inventory_interval_ms = \d+\n", "", s.gconf.read_text())
    text = re.sub(r"upstream_reuse_ms = \d+\n", "", text)
    s.gconf.write_text("upstream_reuse_ms = %d\ninventory_interval_ms = 3600000\n" % reuse_ms
                       + text)
    if "--log-level" not in s.gw.args:
        s.gw.args += ["--log-level", "debug"]
    s.gw.start(wait_for=("scribes",))


@pytest.fixture
def pooled(gw):  # noqa: F811
    gw.gw.stop()
    # storage 2 on its own port again, now with metrics
    gw.store2.stop()
    port = gw.store2.addrs["scribes"][1]
    args = list(gw.store2.args)
    args[args.index("--http") + 1] = "127.0.0.1:0"
    args[args.index("--scribe-tls") + 1] = "127.0.0.1:%d" % port
    gw.store2.args = args
    gw.store2.start(wait_for=("scribes", "http"))
    restart_gateway(gw, 600000)
    return gw


def accepted(s):
    """TLS connections storage 2 has admitted: one per upstream handshake."""
    host, port = s.store2.addrs["http"]
    with urllib.request.urlopen("http://%s:%d/_cairn/metrics" % (host, port), timeout=30) as r:
        text = r.read().decode()
    m = re.search(r'cairn_connections_accepted_total\{listener="scribes"\} (\d+)', text)
    assert m, text
    return int(m.group(1))


def log_count(s, what):
    """Lines of the gateway's current run saying `what`."""
    return s.gw.output(s.gw.log_offset).count(what)


def wait_log(s, what, n, timeout=60):
    """Polls the gateway's log until `what` appears n times."""
    deadline = time.time() + timeout
    while log_count(s, what) < n:
        assert time.time() < deadline, "gateway never logged %r %d times" % (what, n)
        time.sleep(0.05)


def visit(s, who, expect_name=True):
    """One client connection as `who`: repo_info of news (on storage 2),
    then the connection closed (its proxy too, so the gateway sees it)."""
    c = via(s, who)
    try:
        if expect_name:
            assert c.repo_info(s.news)["name"] == "%s/news" % NS2
        else:
            assert code(c.repo_info, s.news) == "repository_not_found"
    finally:
        c.close()
        c.proxy.stop()


def test_sequential_connections_reuse_the_users_upstream_session(pooled):
    n = 8
    before = accepted(pooled)
    kept = log_count(pooled, KEPT)
    for i in range(n):
        visit(pooled, "wes")
        wait_log(pooled, KEPT, kept + i + 1)  # closed, and left in the pool
    opened = accepted(pooled) - before
    # one handshake for the first connection; the other seven reuse it
    assert opened < n and opened <= 2, opened
    assert log_count(pooled, REUSED) >= n - 2


def test_a_kept_session_serves_only_its_certificate(pooled):
    visit(pooled, "wes")
    wait_log(pooled, KEPT, 1)
    before, reused = accepted(pooled), log_count(pooled, REUSED)
    # another user without a grant there, a reader of the other namespace,
    # an anonymous client and wes under another access certificate: each its
    # own upstream session, so storage decides for each ("news" is private)
    visit(pooled, "olga", expect_name=False)
    visit(pooled, "rita", expect_name=False)
    visit(pooled, None, expect_name=False)
    other = pooled.world.access(pooled.world.credential("wes"))
    c = pooled.world.session(other, pooled.gw)
    assert c.repo_info(pooled.news)["name"] == "%s/news" % NS2
    c.close()
    c.proxy.stop()
    assert accepted(pooled) - before >= 4
    assert log_count(pooled, REUSED) == reused
    # and wes's own sessions were still there for wes: storage 1's, which
    # confirmed the certificate at the hello, and storage 2's for the request
    visit(pooled, "wes")
    assert log_count(pooled, REUSED) == reused + 2


def test_a_kept_session_is_not_reused_after_upstream_reuse_ms(pooled):
    restart_gateway(pooled, 300)
    visit(pooled, "wes")
    wait_log(pooled, KEPT, 1)
    time.sleep(0.4)  # past upstream_reuse_ms (300 ms) by the gateway's clock
    before = accepted(pooled)
    visit(pooled, "wes")
    assert accepted(pooled) - before == 1
    assert "not reusing a user's upstream session older than upstream_reuse_ms" in \
        pooled.gw.output(pooled.gw.log_offset)


def test_data_connections_bind_upstream_to_the_users_session(pooled):
    wes = via(pooled, "wes")
    data = b"read on four lanes " + secrets.token_bytes(4000)
    assert put_admission(wes, pooled.art, data) is None
    sid = wes.hello_ok["session"]
    lanes = []
    for _ in range(4):
        d = raw_conn(pooled.world.proxy(pooled.acc["wes"], pooled.gw).addr)
        assert hello_reply(d, hello4(caller=1, bind=sid, binding=wes.binding))[0] == "ok"
        d.hello_ok = dict(session=sid, compression=0)
        lanes.append(d)
    errors = []

    def read(d):
        try:
            for _ in range(10):
                assert d.get_objects(pooled.art, [(CHUNK, b3(data))]) == [(CHUNK, b3(data), data)]
            assert d.repo_info(pooled.art)["name"] == "%s/art" % NS
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=read, args=(d,)) for d in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    # each lane's requests went upstream on a data connection bound to wes's
    # upstream session with storage 1 (four at most: storage's own limit)
    out = pooled.gw.output(pooled.gw.log_offset)
    assert out.count("a user's upstream data connection bound to their session") == 4, out

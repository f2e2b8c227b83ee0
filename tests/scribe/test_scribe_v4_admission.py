"""Admission by identity on the Scribe protocol-4 listener (issue 21,
"Handshake admission" and "Memory admission"; docs/protocol/scribe.md 15.6,
"Admission"): one real cairnd serving --auth and --scribe-tls on one
auth-initialised data directory, access certificates from the SAU2
access-certificate verb, raw frames through the pq-only relay (one relay
process per identity; it opens one TLS session per accepted connection).

What each test proves: one identity holds at most max_connections_per_principal
connections — the next hello is answered busy "too many concurrent
connections for this identity" and closed, while another identity is still
admitted and a closed connection frees its place (a cap of 3 configured,
and the default of 64 on its own); connections without a principal
(anonymous sessions) together hold at most body_budget_anonymous of
request-body memory — stalled bodies fill it, the next anonymous frame is
refused busy before its body is read, a signed-in session is admitted
meanwhile, and a closed stalled one gives its share back."""
import os
import time

import pytest

from scribe_wire import ERR, FLAG_ERROR, OP, header
from test_scribe_v4 import Proxy, hello4, raw_conn
from test_scribe_v4_auth import NS, World
from test_sau2_listener import init_auth  # noqa: E402 (test_scribe_v4_auth puts it on the path)

BUSY_WHY = "too many concurrent connections for this identity"


def start(server_factory, cert, tmp_path, extra=""):
    data = tmp_path / "data"
    init_auth(data)
    conf = tmp_path / "cairnd.toml"
    conf.write_text("[scribe-tls]\nnamespace = \"%s\"\nauth_cache_ms = 500\n%s" % (NS, extra))
    srv = server_factory(args=["--jay", "off", "--http", "off", "--auth", "127.0.0.1:0",
                               "--scribe", "off", "--scribe-tls", "127.0.0.1:0",
                               "--scribe-tls-cert", cert[0], "--scribe-tls-key", cert[1],
                               "--config", str(conf)],
                         data=data, wait_for=("auth", "scribes"))
    srv.addr = "%s:%d" % srv.addrs["auth"]
    return World(srv, tmp_path, cert)


@pytest.fixture
def world_factory(server_factory, cert, tmp_path):
    made = []

    def make(extra=""):
        w = start(server_factory, cert, tmp_path, extra)
        made.append(w)
        return w
    yield make
    for w in made:
        w.stop()


def signed_in(world, name):
    """A relay presenting name's access certificate (the user is made)."""
    world.user(name)
    return world.proxy(world.access(world.credential(name)))


def hello(proxy, caller=1):
    """A protocol-4 control hello through proxy: (conn, None) when admitted,
    else (conn, (code name, message))."""
    c = raw_conn(proxy.addr)
    c.send_frame(OP["hello"], hello4(caller=caller))
    op, flags, rid, body = c.recv_frame()
    assert op == OP["hello"]
    if not flags & FLAG_ERROR:
        return c, None
    e = c.error_of(body, be=False)
    return c, ({v: k for k, v in ERR.items()}.get(e.code, e.code), e.message)


def fill(proxy, n, caller=1):
    """n admitted sessions held open."""
    held = []
    for _ in range(n):
        try:
            c, refused = hello(proxy, caller)
        except EOFError:
            raise AssertionError("closed after %d sessions" % len(held))
        assert refused is None, (len(held), refused)
        c.discover()  # one request: no longer pending, so past the source's pending share
        held.append(c)
    return held


def assert_busy_then_closed(proxy):
    c, refused = hello(proxy)
    assert refused == ("busy", BUSY_WHY), refused
    assert c.closed_by_peer(), "a refused hello is followed by the close"


def test_connections_per_principal_capped(world_factory):
    w = world_factory("max_connections_per_principal = 3\n")
    ann, bob = signed_in(w, "ann"), signed_in(w, "bob")
    held = fill(ann, 3)
    assert_busy_then_closed(ann)
    other = fill(bob, 3)  # another identity is not touched by ann's cap
    assert_busy_then_closed(bob)
    held.pop(0).close()
    c = None
    for _ in range(50):  # the server sees the close on its next read
        c, refused = hello(ann)
        if refused is None:
            break
        assert refused == ("busy", BUSY_WHY)
        time.sleep(0.1)
    assert refused is None, "a closed connection gives its place back"
    assert_busy_then_closed(ann)
    anon = fill(w.proxy(), 5, caller=0)  # anonymous sessions have no principal: no cap
    for x in held + other + anon + [c]:
        x.close()


def test_default_cap_is_64(world_factory):
    w = world_factory()
    ann = signed_in(w, "ann")
    held = fill(ann, 64)
    assert_busy_then_closed(ann)
    for x in held:
        x.close()


def stall(proxy, rid_len):
    """An anonymous session that sends a presence frame's head and part of
    its body, then stops: its reservation is held while the body is read.
    Returns (conn, refusal or None)."""
    c, refused = hello(proxy, caller=0)
    assert refused is None, refused
    c.send(header(OP["presence"], 0, 1, rid_len) + os.urandom(100))
    c.sock.settimeout(0.5)
    try:
        op, flags, rid, body = c.recv_frame()
    except OSError:  # a timeout: nothing answered, the body is awaited
        return c, None
    finally:
        c.sock.settimeout(20)
    assert flags & FLAG_ERROR
    e = c.error_of(body, be=False)
    return c, {v: k for k, v in ERR.items()}.get(e.code, e.code)


PRESENCE_IDS = 1211
PRESENCE_LEN = 16 + 4 + 33 * PRESENCE_IDS  # 39,983 bytes


def presence(c, ids):
    req = c.enc().raw(os.urandom(16)).u32(len(ids))
    for kind, oid in ids:
        req.u8(kind).raw(oid)
    rid = c.send_frame(OP["presence"], req.bytes())
    return c.recv_frame(), rid


def test_anonymous_memory_share(world_factory):
    # two stalled frames fit the anonymous share, a third does not; the
    # listener's budget and a principal's are far larger
    w = world_factory("body_budget_anonymous = 100000\n")
    anon = w.proxy()
    a1, r1 = stall(anon, PRESENCE_LEN)
    a2, r2 = stall(anon, PRESENCE_LEN)
    assert r1 is None and r2 is None
    a3, r3 = stall(anon, PRESENCE_LEN)
    assert r3 == "busy", r3
    assert a3.closed_by_peer(), "busy, then the close"
    # a signed-in session is admitted meanwhile: its frame is read and
    # answered (an unknown repository: repository_not_found, not busy)
    ann = signed_in(w, "ann")
    c, refused = hello(ann)
    assert refused is None
    (op, flags, rid, body), sent = presence(c, [(1, os.urandom(32))] * PRESENCE_IDS)
    assert rid == sent
    code = c.error_of(body).code if flags & FLAG_ERROR else None
    assert code != ERR["busy"], "the anonymous share does not hold signed-in callers back"
    # a closed stalled connection gives its share back
    a1.close()
    for _ in range(50):
        a4, r4 = stall(anon, PRESENCE_LEN)
        if r4 is None:
            break
        assert r4 == "busy"
        a4.close()
        time.sleep(0.1)
    assert r4 is None
    for x in (a2, a3, a4, c):
        x.close()

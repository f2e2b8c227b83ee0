"""The SAU2 listener's share of net's handshake admission, through a real
cairnd (`--auth`) and real sockets: an idle SAU2 connection counts as pending
again (docs/protocol/sau2.md section 11), so a source holding its pending
share (16) with idle connections gets no more, and a full connection table
closes the oldest idle connection rather than refuse a newcomer — in both
cases another source still signs in.

The flooding source is 127.0.0.2: its connections go through
tests/scribe/scribe_tls_proxy (a plaintext-to-TLS relay with
X25519MLKEM768, which Python's ssl cannot offer) told to connect from that
address; the test speaks raw SAU2 frames to the relay.  A connection the
server refuses or evicts is closed on the TLS side, which the relay passes on
as the end of the plaintext stream."""
import os
import socket
import struct
import sys
import time

import pytest
from test_sau2_listener import PASSWORD, cli, init_auth

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scribe"))
from test_scribe_v4 import Proxy  # noqa: E402

FLOOD_SOURCE = "127.0.0.2"


@pytest.fixture
def adm_server(server_factory, tmp_path):
    """cairnd serving only SAU2, with [limits] lines when asked."""
    def make(limits=None):
        data = tmp_path / "data"
        init_auth(data)
        args = ["--jay", "off", "--scribe", "off", "--http", "off", "--auth", "127.0.0.1:0",
                "--log-level", "debug"]
        if limits:
            conf = tmp_path / "cairnd.toml"
            conf.write_text("[limits]\n" + "".join("%s = %d\n" % kv for kv in limits.items()))
            args += ["--config", str(conf)]
        srv = server_factory(args=args, data=data, wait_for=("auth",))
        srv.addr = "%s:%d" % srv.addrs["auth"]
        return srv
    return make


@pytest.fixture
def relays():
    """scribe_tls_proxy relays towards the listener, their TLS side from
    `source`."""
    made = []

    def make(addr, source=FLOOD_SOURCE):
        made.append(Proxy(addr, source=source))
        return made[-1]
    yield make
    for r in made:
        r.stop()


def trust_bundle_frame():
    """A trust-bundle request: zero operation id, one argument, no secret."""
    verb = b"trust-bundle"
    payload = bytes(16) + struct.pack("<HH", 1, len(verb)) + verb + b"\x00"
    return b"SAU2" + struct.pack("<I", len(payload)) + payload


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def ask(s):
    """Sends trust-bundle on s: its reply code, or None when s was closed."""
    try:
        s.sendall(trust_bundle_frame())
        head = recv_exact(s, 8)
        if head is None:
            return None
        assert head[:4] == b"SAU2", head
        body = recv_exact(s, struct.unpack("<I", head[4:])[0])
        return None if body is None else struct.unpack("<H", body[:2])[0]
    except (ConnectionResetError, BrokenPipeError):
        return None


def idle_conn(relay):
    """A connection that completed one request and now sits idle."""
    s = socket.create_connection(relay.addr, timeout=30)
    assert ask(s) == 0
    return s


def closed(s):
    """True when the server closed s (a request on it finds the end)."""
    return ask(s) is None


def test_idle_connections_hold_their_sources_pending_share(adm_server, relays, tmp_path):
    srv = adm_server()
    flood = relays(srv.addrs["auth"])
    conns = [idle_conn(flood) for _ in range(16)]
    time.sleep(0.3)  # the last one is idle (pending again) on the server's side
    # The source holds its share with idle connections: the 17th is refused.
    extra = socket.create_connection(flood.addr, timeout=30)
    assert closed(extra)
    extra.close()
    # Another source (127.0.0.1) signs in meanwhile.
    r = cli(tmp_path, "login", srv.addr, password=PASSWORD)
    assert r.returncode == 0, r.stderr
    assert cli(tmp_path, "whoami").returncode == 0
    # The idle connections were never closed for it, and still answer.
    assert ask(conns[1]) == 0
    # One of them closed: the source's share has room again.
    conns[0].close()
    deadline = time.time() + 10
    again = None
    while again is None and time.time() < deadline:
        s = socket.create_connection(flood.addr, timeout=30)
        if ask(s) == 0:
            again = s
        else:
            s.close()
            time.sleep(0.1)
    assert again is not None, "the source's share never came back"
    for s in conns[1:] + [again]:
        s.close()


def test_a_full_table_closes_the_oldest_idle_connection(adm_server, relays, tmp_path):
    srv = adm_server(limits={"max_connections": 6})
    flood = relays(srv.addrs["auth"])
    conns = [idle_conn(flood) for _ in range(6)]
    time.sleep(0.3)
    # Every slot is held by an idle connection of 127.0.0.2; a login from
    # 127.0.0.1 (a trust-bundle connection, then the sign-in's) still gets in.
    r = cli(tmp_path, "login", srv.addr, password=PASSWORD)
    assert r.returncode == 0, r.stderr
    who = cli(tmp_path, "whoami")
    assert who.returncode == 0 and who.stdout.startswith("admin on "), who.stderr
    # The oldest idle connection made room; the youngest is still served.
    assert closed(conns[0])
    assert ask(conns[-1]) == 0
    for s in conns:
        s.close()

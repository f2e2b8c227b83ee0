"""The handshake status table, exactly: OK, AuthFailed (wrong secret, no
colon, empty credential), VersionMismatch, ServerBusy, Malformed, and no
answer at all for a torn socket."""
import socket
import struct
import time

import pytest

import jayclient as j
from conftest import ADMIN_TOKEN, connect
from jayfixtures import jay_args


@pytest.fixture
def srv(server_factory):
    return server_factory(args=jay_args())


def hello(srv, data):
    s = connect(srv.addrs["jay"])
    s.sendall(data)
    return s


def reply(s):
    r = j.recv_exact(s, 8)
    assert r[:4] == b"JAY\x00" and r[4] == 1
    assert r[6:8] == b"\x00\x00"            # reserved written as zero
    return r[5]


def test_ok(srv):
    s = hello(srv, j.handshake_bytes(ADMIN_TOKEN))
    assert reply(s) == j.HS_OK
    s.close()


def test_flags_byte_is_ignored(srv):
    for flags in (0x00, 0x01, 0xFF):
        s = hello(srv, j.handshake_bytes(ADMIN_TOKEN, flags=flags))
        assert reply(s) == j.HS_OK
        s.close()


def test_auth_failed_wrong_secret(srv):
    tid = ADMIN_TOKEN.split(":")[0]
    s = hello(srv, j.handshake_bytes(tid + ":wrong-secret"))
    assert reply(s) == j.HS_AUTH_FAILED
    assert s.recv(1) == b""       # and closed
    s.close()


def test_auth_failed_no_colon(srv):
    s = hello(srv, j.handshake_bytes("justatokenwithoutcolon"))
    assert reply(s) == j.HS_AUTH_FAILED
    s.close()


def test_auth_failed_empty_credential(srv):
    s = hello(srv, b"JAY\x00\x01\x00\x00\x00")
    assert reply(s) == j.HS_AUTH_FAILED
    s.close()


def test_secret_may_contain_colons(srv):
    tid = ADMIN_TOKEN.split(":")[0]
    s = hello(srv, j.handshake_bytes(tid + ":a:b:c"))
    assert reply(s) == j.HS_AUTH_FAILED      # wrong secret, but well shaped
    s.close()


def test_version_mismatch(srv):
    for v in (0x00, 0x02, 0xFF):
        s = hello(srv, j.handshake_bytes(ADMIN_TOKEN, version=v))
        assert reply(s) == j.HS_VERSION_MISMATCH
        s.close()


def test_malformed(srv):
    s = hello(srv, b"GET / HTTP/1.1\r\n\r\n")
    assert reply(s) == j.HS_MALFORMED
    s.close()
    s = hello(srv, b"JAX\x00\x01\x00\x00\x01a")
    assert reply(s) == j.HS_MALFORMED
    s.close()


def test_torn_socket_gets_no_answer(srv):
    # Half a handshake, then the client goes away: nothing is written.
    s = hello(srv, b"JAY\x00\x01")
    s.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    assert s.recv(8) == b""
    s.close()
    # The credential cut short.
    s = hello(srv, b"JAY\x00\x01\x00\x00\x20abc")
    s.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    assert s.recv(8) == b""
    s.close()
    # And the server is still fine.
    s = hello(srv, j.handshake_bytes(ADMIN_TOKEN))
    assert reply(s) == j.HS_OK
    s.close()


def test_server_busy_at_connection_cap(server_factory, tmp_path):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[jay]\nmax_connections = 2\n")
    srv = server_factory(args=jay_args(["--config", str(cfg)]))
    held = [j.Conn(srv.addrs["jay"], ADMIN_TOKEN) for _ in range(2)]
    for c in held:
        assert c.ping()     # settled: no longer a pending (evictable) connection
    try:
        s = connect(srv.addrs["jay"])
        # Answered before the handshake is read: we have not sent a byte.
        s.settimeout(10)
        assert reply(s) == j.HS_SERVER_BUSY
        s.close()
    finally:
        for c in held:
            c.close()
    time.sleep(0.3)
    with j.Conn(srv.addrs["jay"], ADMIN_TOKEN) as c:
        assert c.ping()


def test_one_token_may_fill_the_connection_table(server_factory):
    # ServerBusy means the server-wide connection limit was reached and no
    # credential was examined: a token's own number of connections is never
    # refused, so a client pool of any size up to the limit (1000) works.
    import concurrent.futures
    import resource
    limit = 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * limit + 200          # ours, and cairnd's (it inherits the soft limit)
    if hard != resource.RLIM_INFINITY and hard < want:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {want}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    held = []
    try:
        srv = server_factory(args=jay_args())

        def open_some(n):
            out = []
            for _ in range(n):
                c = j.Conn(srv.addrs["jay"], ADMIN_TOKEN)
                out.append(c)
                assert c.ping()     # settled: no longer pending, so never evicted
            return out

        # A few at a time: a source's pending connections are capped (16).
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for part in pool.map(open_some, [limit // 8] * 8):
                held += part
        assert len(held) == limit
        # The 1,001st is answered ServerBusy before it sends a byte.
        s = connect(srv.addrs["jay"])
        s.settimeout(30)
        assert reply(s) == j.HS_SERVER_BUSY
        s.close()
        # Every held connection still works; a freed slot admits the token again.
        for c in held[::50]:
            assert c.ping()
        held.pop().close()
        deadline = time.monotonic() + 30
        while True:
            try:
                c = j.Conn(srv.addrs["jay"], ADMIN_TOKEN)
                break
            except j.JayError as e:
                assert e.status == j.HS_SERVER_BUSY
                assert time.monotonic() < deadline, "the slot was not released"
                time.sleep(0.05)
        held.append(c)
        assert c.ping()
    finally:
        for c in held:
            c.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

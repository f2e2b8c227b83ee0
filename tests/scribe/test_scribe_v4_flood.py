"""Handshake admission on the Scribe protocol-4 listener under a handshake
flood (issue 21, "Handshake admission"; docs/architecture.md "Admission"):
silent TCP connections that never start TLS stay pending, and when the
connection table is full the oldest pending one is closed to admit a
newcomer, so a real client still completes its TLS handshake and protocol-4
hello; a source over its pending share is refused at accept; connections that
send the start of a ClientHello and stop, or finish TLS and then send no
hello, hold no handshake worker (the loop waits for each flight's records;
src/net/hello.c), so a real client is served at once.

The flood and the client share 127.0.0.1 (one source), so the table is made
small ([scribe-tls] max_connections) and the pending share large enough for
the eviction case, then small for the share case."""
import socket
import time

from cairnutil import closed_by_server
from test_scribe_v4 import Proxy, control4, hello4, hello_reply, raw_conn


def tls_server(server_factory, cert, tmp_path, limits):
    conf = tmp_path / "cairnd.toml"
    conf.write_text("[scribe-tls]\n" + limits)
    return server_factory(args=["--jay", "off", "--http", "off", "--scribe", "off",
                                "--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert", cert[0],
                                "--scribe-tls-key", cert[1], "--config", str(conf)],
                          wait_for=("scribes",))


def silent(addr, n):
    out = []
    for _ in range(n):
        s = socket.create_connection(addr, timeout=5)
        out.append(s)
        time.sleep(0.02)  # accepted in order: the first is the oldest
    return out


def closed(s, timeout=5):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_full_table_evicts_the_oldest_pending_for_a_real_client(server_factory, cert, tmp_path):
    srv = tls_server(server_factory, cert, tmp_path,
                     "max_connections = 8\nmax_pending_per_source = 64\n")
    flood = silent(srv.addrs["scribes"], 8)
    proxy = Proxy(srv.addrs["scribes"])
    try:
        c, session, binding = control4(proxy.addr)
        assert session and len(binding) == 32
        assert closed(flood[0]), "the oldest pending connection must be evicted"
        assert not closed(flood[-1], timeout=0.5), "the youngest stays"
    finally:
        proxy.stop()
        for s in flood:
            s.close()


def test_pending_share_of_one_source_refused_at_accept(server_factory, cert, tmp_path):
    srv = tls_server(server_factory, cert, tmp_path, "max_pending_per_source = 4\n")
    flood = silent(srv.addrs["scribes"], 4)
    extra = socket.create_connection(srv.addrs["scribes"], timeout=5)
    try:
        assert closed(extra), "a fifth pending connection of the source is refused"
        assert not closed(flood[0], timeout=0.5)
        # once the flood goes away, the source is admitted again
        for s in flood:
            s.close()
        time.sleep(0.3)
        proxy = Proxy(srv.addrs["scribes"])
        try:
            c = raw_conn(proxy.addr)
            kind, _ = hello_reply(c, hello4())
            assert kind == "ok"
        finally:
            proxy.stop()
    finally:
        extra.close()
        for s in flood:
            s.close()


def served_at_once(proxy, behind):
    """A real protocol-4 client through proxy completes its TLS handshake and
    hello within 2 s, behind what the server holds."""
    t0 = time.time()
    c, session, _ = control4(proxy.addr)
    took = time.time() - t0
    assert session
    assert took < 2.0, "a real client waited %.2fs behind %s" % (took, behind)


def test_dribbled_client_hellos_hold_no_handshake_worker(server_factory, cert, tmp_path):
    srv = tls_server(server_factory, cert, tmp_path,
                     "max_pending_per_source = 64\nhandshake_timeout_ms = 6000\n")
    addr = srv.addrs["scribes"]
    # Three times the handshake pool (8 workers): half stop inside a TLS
    # record's header, half after a header announcing 512 bytes and 10 of them.
    flood = []
    for i in range(24):
        s = socket.create_connection(addr, timeout=5)
        s.sendall(b"\x16\x03\x01" if i % 2 else b"\x16\x03\x01\x02\x00" + bytes(10))
        flood.append(s)
    time.sleep(0.5)
    proxy = Proxy(addr)
    try:
        served_at_once(proxy, "dribbled ClientHellos")
        assert not closed(flood[0], timeout=0.2), "the dribblers wait for their deadline"
        assert all(closed(s, timeout=10) for s in flood), "the deadline ends every dribbler"
    finally:
        proxy.stop()
        for s in flood:
            s.close()


def test_silent_after_tls_holds_no_handshake_worker(server_factory, cert, tmp_path):
    srv = tls_server(server_factory, cert, tmp_path,
                     "max_pending_per_source = 64\nhandshake_timeout_ms = 6000\n")
    addr = srv.addrs["scribes"]
    # Three times the handshake pool of connections through the proxy that
    # finish TLS (the proxy does it at once) and never send their hello.
    proxy = Proxy(addr)
    silent_ones = [socket.create_connection(proxy.addr, timeout=5) for _ in range(24)]
    try:
        time.sleep(1.0)
        served_at_once(proxy, "silent TLS sessions")
        assert all(closed_by_server(s, 10) for s in silent_ones), "the deadline ends every silent one"
    finally:
        proxy.stop()
        for s in silent_ones:
            s.close()

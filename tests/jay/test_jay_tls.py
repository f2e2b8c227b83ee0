"""The Jay listener over TLS (JAY_NATIVE_TLS_CERT / JAY_NATIVE_TLS_KEY): the
same protocol inside a TLS session, GetObject bodies included (no sendfile
there); peers that stall inside the TLS handshake, or after it before their
Jay handshake, hold no handshake worker (src/net/hello.c)."""
import hashlib
import shutil
import socket
import ssl
import subprocess
import time

import pytest

import jayclient as j
from cairnutil import closed_by_server
from conftest import ADMIN_TOKEN
from jayfixtures import jay_args


class TlsConn(j.Conn):
    def __init__(self, addr, cred, ctx):
        raw = socket.create_connection(addr, timeout=30)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.sock.sendall(j.handshake_bytes(cred))
        status, _ = j.read_handshake_reply(self.sock)
        assert status == j.HS_OK


def tls_server(server_factory, tmp_path, args=()):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    srv = server_factory(args=jay_args() + list(args),
                         env={"JAY_NATIVE_TLS_CERT": str(cert), "JAY_NATIVE_TLS_KEY": str(key)})
    return srv, ssl.create_default_context(cafile=str(cert))


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs the openssl command")
def test_tls_round_trip(server_factory, tmp_path):
    srv, ctx = tls_server(server_factory, tmp_path)
    c = TlsConn(srv.addrs["jay"], ADMIN_TOKEN, ctx)
    try:
        body = bytes(range(256)) * 5000
        c.create_bucket("tls")
        r = c.put_object("tls", "k", body)
        assert r["checksum"] == hashlib.sha256(body).hexdigest()
        info, got = c.get_object("tls", "k")
        assert got == body
        assert c.get_range("tls", "k", 100, 50)[1] == body[100:150]
    finally:
        c.close()


def stalled_tls(addr, ctx, finish):
    """A TLS client that stops after its ClientHello, or (finish) after the
    whole TLS handshake, before the Jay handshake."""
    raw = socket.create_connection(addr, timeout=5)
    if finish:
        return ctx.wrap_socket(raw, server_hostname="localhost")
    raw.setblocking(False)
    s = ctx.wrap_socket(raw, server_hostname="localhost", do_handshake_on_connect=False)
    try:
        s.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return s


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs the openssl command")
def test_stalled_tls_handshakes_hold_no_handshake_worker(server_factory, tmp_path):
    conf = tmp_path / "hs.toml"
    conf.write_text("[jay]\nhandshake_timeout_ms = 6000\nmax_pending_per_source = 64\n")
    srv, ctx = tls_server(server_factory, tmp_path, ["--config", str(conf)])
    addr = srv.addrs["jay"]
    # Three times the handshake pool's 8 workers: half stop after their
    # ClientHello (the server's flight answered, theirs never comes), half
    # after the whole TLS handshake, before the Jay handshake.
    stalled = [stalled_tls(addr, ctx, finish=i % 2 == 0) for i in range(24)]
    try:
        time.sleep(0.5)
        t0 = time.time()
        c = TlsConn(addr, ADMIN_TOKEN, ctx)
        took = time.time() - t0
        c.close()
        assert took < 2.0, "a real client waited %.2fs behind stalled TLS handshakes" % took
        assert all(closed_by_server(s, 10) for s in stalled), "the deadline ends every stalled one"
    finally:
        for s in stalled:
            s.close()

"""The Jay listener over TLS (JAY_NATIVE_TLS_CERT / JAY_NATIVE_TLS_KEY): the
same protocol inside a TLS session, GetObject bodies included (no sendfile
there)."""
import hashlib
import shutil
import socket
import ssl
import subprocess

import pytest

import jayclient as j
from conftest import ADMIN_TOKEN
from jayfixtures import jay_args


class TlsConn(j.Conn):
    def __init__(self, addr, cred, ctx):
        raw = socket.create_connection(addr, timeout=30)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.sock.sendall(j.handshake_bytes(cred))
        status, _ = j.read_handshake_reply(self.sock)
        assert status == j.HS_OK


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs the openssl command")
def test_tls_round_trip(server_factory, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    srv = server_factory(args=jay_args(), env={"JAY_NATIVE_TLS_CERT": str(cert),
                                               "JAY_NATIVE_TLS_KEY": str(key)})
    ctx = ssl.create_default_context(cafile=str(cert))
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

"""`cairn` over TLS against cairnd's Jay listener (JAY_NATIVE_TLS_CERT /
JAY_NATIVE_TLS_KEY): verified against --tls-ca / CAIRN_TLS_CA, refused
without the CA, and the same bytes whether or not the body can use sendfile."""
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client"))
from clitools import cairn, ok, sha256  # noqa: E402

pytestmark = pytest.mark.skipif(not shutil.which("openssl"), reason="needs the openssl command")


def make_cert(tmp_path, cn):
    cert, key = tmp_path / f"{cn}.pem", tmp_path / f"{cn}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={cn}",
                    "-addext", f"subjectAltName=DNS:{cn},IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_cli_over_tls(server_factory, tmp_path):
    cert, key = make_cert(tmp_path, "localhost")
    other, _ = make_cert(tmp_path, "elsewhere")
    srv = server_factory(env={"JAY_NATIVE_TLS_CERT": str(cert), "JAY_NATIVE_TLS_KEY": str(key)})
    ok(cairn(srv, "mb", "tls", "--tls-ca", str(cert)))
    data = os.urandom((6 << 20) + 3)
    f = tmp_path / "f.bin"
    f.write_bytes(data)
    env = {"CAIRN_TLS_CA": str(cert)}
    out = ok(cairn(srv, "put", str(f), "tls/one", "--tls", env=env))
    assert sha256(data) in out
    out = ok(cairn(srv, "put", str(f), "tls/parts", "--tls", "--part-size", "5M", env=env))
    assert "2 parts" in out
    for k in ("one", "parts"):
        r = cairn(srv, "cat", f"tls/{k}", "--tls", env=env)
        assert r.returncode == 0 and r.stdout == data, r.stderr
    o = tmp_path / "o"
    ok(cairn(srv, "get", "tls/one", str(o), "--tls-insecure"))
    assert o.read_bytes() == data
    # The wrong trust anchor, or plaintext against a TLS listener, never works.
    r = cairn(srv, "ls", "--tls-ca", str(other))
    assert r.returncode == 5 and b"TLS" in r.stderr, r.stderr
    r = cairn(srv, "ls", timeout=60)
    assert r.returncode == 5 and b"network failure" in r.stderr, r.stderr

"""The SAU2 listener (`cairnd --auth ADDR`) through a real cairnd and real
sockets: `cairn repo login / whoami / logout`, a wrong password, the
certificate-less caller held to five verbs, certificates that are not a
credential's (another CA's, the listener's own server certificate) refused
with `unauthenticated`, a classical-only TLS peer refused at the handshake,
the negotiated group seen from cairn's own client, the first-request and idle
deadlines (shortened by config), and no password in any log or audit row.

Raw requests go through tests/sau2/sau2_call (libcairn's SAU2 connection):
Python's ssl cannot offer X25519MLKEM768."""
import http.client
import os
import re
import secrets
import socket
import ssl
import subprocess

import pytest

from conftest import binary, run

PASSWORD = "a first admin password 7f3a"
GROUP = "X25519MLKEM768"


def init_auth(data):
    r = run([binary("cairn"), "admin", "--data", str(data), "auth", "init"],
            env={"CAIRN_AUTH_ADMIN_PASSWORD": PASSWORD})
    assert r.returncode == 0, r.stderr


@pytest.fixture
def auth_server(server_factory, tmp_path):
    """cairnd serving only SAU2 on an ephemeral port, over an initialised
    auth state; a config shortens the deadlines when asked."""
    def make(first_request_ms=None, idle_ms=None, http="off"):
        data = tmp_path / "data"
        init_auth(data)
        args = ["--jay", "off", "--scribe", "off", "--http", http,
                "--auth", "127.0.0.1:0", "--log-level", "debug"]
        if first_request_ms or idle_ms:
            conf = tmp_path / "cairnd.toml"
            lines = ["[auth]"]
            if first_request_ms:
                lines.append("first_request_ms = %d" % first_request_ms)
            if idle_ms:
                lines.append("idle_ms = %d" % idle_ms)
            conf.write_text("\n".join(lines) + "\n")
            args += ["--config", str(conf)]
        srv = server_factory(args=args, data=data,
                             wait_for=("auth",) if http == "off" else ("auth", "http"))
        srv.addr = "%s:%d" % srv.addrs["auth"]
        return srv
    return make


def call(srv, *argv, cert=None, key=None, ca=None, op=None, secret=None, wait_first=None,
         again_after=None, pool=False, timeout=60):
    """Runs sau2_call; returns (exit status, stdout lines)."""
    cmd = [binary("tests/sau2/sau2_call")]
    env = {}
    if ca:
        cmd += ["--ca", ca]
    if cert:
        cmd += ["--cert", cert, "--key", key]
    if op:
        cmd += ["--op", op]
    if secret is not None:
        env["SAU2_SECRET"] = secret
        cmd += ["--secret-env", "SAU2_SECRET"]
    if wait_first:
        cmd += ["--wait-first", str(wait_first)]
    if again_after is not None:
        cmd += ["--again-after", str(again_after)]
    if pool:
        cmd += ["--pool"]
    r = run(cmd + [srv.addr] + list(argv), env=env, timeout=timeout)
    return r.returncode, r.stdout.splitlines()


def code_of(lines):
    return int(next(l for l in lines if l.startswith("code ")).split()[1])


def rows_of(lines):
    rows, cur = [], None
    for l in lines:
        if l == "row":
            cur = []
            rows.append(cur)
        elif l.startswith("  ") and cur is not None:
            cur.append(l[2:].replace("\\n", "\n"))
    return rows


def device_key(tmp_path, name):
    """An Ed25519 key file and its public key as hex SubjectPublicKeyInfo DER."""
    path = str(tmp_path / (name + ".key"))
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", path], check=True,
                   capture_output=True)
    der = subprocess.run(["openssl", "pkey", "-in", path, "-pubout", "-outform", "DER"],
                         check=True, capture_output=True).stdout
    return path, der.hex()


def sign_in(srv, tmp_path, name="dev", verb="login"):
    """A credential certificate for admin over the raw client: (cert, key)."""
    key, spki = device_key(tmp_path, name)
    rc, out = call(srv, verb, "admin", secrets.token_hex(16), spki, op=secrets.token_hex(16),
                   secret=PASSWORD)
    assert rc == 0 and code_of(out) == 0, out
    cert = str(tmp_path / (name + ".pem"))
    open(cert, "w").write(rows_of(out)[0][0])
    return cert, key


def cli(tmp_path, *args, password=None):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "CAIRN_AUTH_CA": ""}
    if password is not None:
        env["CAIRN_PASSWORD"] = password
    return run([binary("cairn"), "repo"] + list(args), env=env, input="", timeout=60)


def test_login_whoami_logout_through_the_cli(auth_server, tmp_path):
    srv = auth_server()
    r = cli(tmp_path, "login", srv.addr, password=PASSWORD)
    assert r.returncode == 0, r.stderr
    assert "first contact" in r.stderr and "SHA-256" in r.stderr
    cfg = tmp_path / "cfg" / "cairn"
    for name in ("auth.key", "auth.cert", "auth.session"):
        assert os.stat(cfg / name).st_mode & 0o777 == 0o600, name
    assert os.stat(cfg).st_mode & 0o777 == 0o700
    who = cli(tmp_path, "whoami")
    assert who.returncode == 0, who.stderr
    assert who.stdout.startswith("admin on ") and "kind session" in who.stdout
    assert "administrator yes" in who.stdout
    old_cert, old_key = str(tmp_path / "old.pem"), str(tmp_path / "old.key")
    open(old_cert, "w").write(open(cfg / "auth.cert").read())
    open(old_key, "w").write(open(cfg / "auth.key").read())
    out = cli(tmp_path, "logout")
    assert out.returncode == 0, out.stderr
    assert cli(tmp_path, "whoami").returncode == 2
    assert not os.path.exists(cfg / "auth.key")
    # The server revoked it: the old certificate no longer signs anyone in.
    rc, lines = call(srv, "whoami", cert=old_cert, key=old_key)
    assert code_of(lines) == 3, lines
    # A second login verifies the server against the pinned bundle, silently.
    again = cli(tmp_path, "login", srv.addr, password=PASSWORD)
    assert again.returncode == 0 and "first contact" not in again.stderr, again.stderr


def test_wrong_password_is_refused_and_never_logged(auth_server, tmp_path):
    srv = auth_server()
    wrong = "not the password 9c1d"
    r = cli(tmp_path, "login", srv.addr, password=wrong)
    assert r.returncode == 4, r.stderr
    assert "unauthenticated" in r.stderr
    assert cli(tmp_path, "whoami").returncode == 2
    ok = cli(tmp_path, "login", srv.addr, password=PASSWORD)
    assert ok.returncode == 0, ok.stderr
    srv.stop()
    blobs = [srv.output().encode()]
    for root, _, files in os.walk(srv.data_dir):
        for f in files:
            blobs.append(open(os.path.join(root, f), "rb").read())
    for b in blobs:
        assert PASSWORD.encode() not in b and wrong.encode() not in b
    # The audit rows, read through SQLite: no password there either.
    db = os.path.join(srv.data_dir, "meta.db")
    dump = subprocess.run(["sqlite3", db, ".dump"], capture_output=True).stdout
    assert dump and PASSWORD.encode() not in dump and wrong.encode() not in dump


def test_certificate_less_caller_has_five_verbs(auth_server, tmp_path):
    srv = auth_server()
    rc, out = call(srv, "trust-bundle")
    assert rc == 0 and code_of(out) == 0
    assert [r[0] for r in rows_of(out)] == ["access-ca", "credential-ca", "server-ca"]
    assert out[0] == "group " + GROUP
    for verb in ("whoami", "logout", "users-list", "audit-list", "access-certificate"):
        rc, out = call(srv, verb)
        assert code_of(out) == 3, (verb, out)
        assert "a credential certificate is required" in "\n".join(out)
    # The sign-in verbs reach the service (it answers; a wrong password is its 3).
    key, spki = device_key(tmp_path, "k")
    rc, out = call(srv, "login", "admin", secrets.token_hex(16), spki,
                   op=secrets.token_hex(16), secret="wrong password")
    assert code_of(out) == 3 and "required" not in "\n".join(out)
    rc, out = call(srv, "login-outcome", "admin", secrets.token_hex(16), spki,
                   op=secrets.token_hex(16), secret=PASSWORD)
    assert code_of(out) == 4, out  # unknown operation: the service answered
    # With a credential certificate the same verbs work, over a verified server.
    cert, key = sign_in(srv, tmp_path, verb="admin-login")
    bundle = str(tmp_path / "bundle.pem")
    open(bundle, "w").write("".join(r[1] for r in rows_of(call(srv, "trust-bundle")[1])))
    rc, out = call(srv, "whoami", cert=cert, key=key, ca=bundle)
    assert rc == 0 and code_of(out) == 0 and rows_of(out)[0][1] == "user", out
    rc, out = call(srv, "users-list", "", cert=cert, key=key, ca=bundle)
    assert code_of(out) == 0, out


def test_certificates_not_from_the_credential_ca_are_refused(auth_server, tmp_path):
    srv = auth_server()
    # Another CA's Ed25519 certificate for a fresh key.
    ca_key, _ = device_key(tmp_path, "ca")
    ca_crt = str(tmp_path / "ca.pem")
    leaf_key, _ = device_key(tmp_path, "leaf")
    subprocess.run(["openssl", "req", "-x509", "-new", "-key", ca_key, "-subj", "/CN=foreign",
                    "-days", "1", "-out", ca_crt], check=True, capture_output=True)
    csr, leaf = str(tmp_path / "leaf.csr"), str(tmp_path / "leaf.pem")
    subprocess.run(["openssl", "req", "-new", "-key", leaf_key, "-subj", "/CN=admin", "-out", csr],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
                    "-CAcreateserial", "-days", "1", "-out", leaf], check=True,
                   capture_output=True)
    # The listener's own server certificate (the server CA's), with its key.
    server_cert = os.path.join(srv.data_dir, "auth", "server-tls.pem")
    server_key = os.path.join(srv.data_dir, "auth", "server-tls.key")
    for cert, key in ((leaf, leaf_key), (server_cert, server_key)):
        for verb in ("whoami", "trust-bundle"):
            rc, out = call(srv, verb, cert=cert, key=key)
            assert code_of(out) == 3, (cert, verb, out)
            assert "message a credential certificate is required" in out


def test_classical_only_peers_are_refused_at_the_handshake(auth_server):
    srv = auth_server()
    host, port = srv.addrs["auth"]
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with socket.create_connection((host, port), timeout=10) as s:
            with ctx.wrap_socket(s) as t:
                t.sendall(b"SAU2")
    r = subprocess.run(["openssl", "s_client", "-connect", "%s:%d" % (host, port),
                        "-groups", "X25519", "-tls1_3"], input=b"", capture_output=True,
                       timeout=30)
    assert r.returncode != 0
    assert b"Cipher is (NONE)" in r.stdout or b"alert" in r.stderr.lower()
    # cairn's own client gets the hybrid group.
    rc, out = call(srv, "trust-bundle")
    assert out[0] == "group " + GROUP
    assert "group " + GROUP in srv.output()


def test_first_request_deadline_closes_a_silent_connection(auth_server):
    srv = auth_server(first_request_ms=400)
    rc, out = call(srv, "trust-bundle", wait_first=1500)
    assert rc == 3 and out[-1] == "closed", out
    rc, out = call(srv, "trust-bundle")
    assert rc == 0 and code_of(out) == 0


def test_idle_connection_is_closed(auth_server):
    srv = auth_server(idle_ms=500)
    rc, out = call(srv, "trust-bundle", again_after=1500)
    assert rc == 3 and out[-2:] == ["second", "closed"], out
    rc, out = call(srv, "trust-bundle", again_after=0)
    assert rc == 0 and out.count("code 0") == 2, out


def test_the_client_pool_retries_once_when_the_service_closed_its_connection(auth_server,
                                                                              tmp_path):
    srv = auth_server(idle_ms=500)
    # The pooled connection is reused (well within 50 s), but the listener
    # closed it after 500 ms idle: the pool sends the request again on a new one.
    rc, out = call(srv, "trust-bundle", again_after=1500, pool=True)
    assert rc == 0 and out.count("code 0") == 2, out
    assert srv.output().count("group " + GROUP) == 2
    # Reused without a retry when the connection is still open: one handshake more.
    rc, out = call(srv, "trust-bundle", again_after=0, pool=True)
    assert rc == 0 and out.count("code 0") == 2, out
    assert srv.output().count("group " + GROUP) == 3


def test_the_listener_is_counted_like_the_others(auth_server):
    srv = auth_server(http="127.0.0.1:0")
    for _ in range(2):
        rc, out = call(srv, "trust-bundle")
        assert rc == 0
    conn = http.client.HTTPConnection(*srv.addrs["http"], timeout=10)
    conn.request("GET", "/_cairn/metrics")
    text = conn.getresponse().read().decode()
    m = re.search(r'^cairn_connections_accepted_total\{listener="auth"\} (\S+)$', text, re.M)
    assert m and float(m.group(1)) == 2, text

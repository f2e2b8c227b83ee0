"""One command, a secure single-machine deployment (issue 21, README's tour,
docs/cli.md): `cairnd --auth ADDR --scribe-tls ADDR` without
--scribe-tls-cert/-key serves protocol 4 with a certificate auth's server CA
issues (src/identity/auth_ca.c, cn_auth_storage_tls_files), kept in
DATA/auth/scribe-tls.pem and .key and logged with its SHA-256 fingerprint.

What each test proves: the listener starts, its certificate chains to the
server CA of the trust bundle `cairn repo login` pinned, so a signed-in
writer creates, clones and submits over scribes:// trusting only that
bundle, and another client's clone sees the bytes; a client trusting
another CA is refused at the handshake; a restart reuses the stored
certificate (same fingerprint), and one within 30 days of expiry is issued
anew; without --auth (and no files) cairnd refuses to start."""
import glob
import os
import re
import subprocess

import pytest

from conftest import Server, binary, run
from test_scribe_v4_auth import NS, USER_PASSWORD, World  # puts tests/sau2 on the path
from test_sau2_listener import init_auth  # noqa: E402

ARGS = ["--jay", "off", "--http", "off", "--scribe", "off", "--auth", "127.0.0.1:0",
        "--scribe-tls", "127.0.0.1:0"]
LOGGED = r"scribe-tls: (a new|the) certificate from auth's server CA, (\S+) \(SHA-256 ([0-9a-f]{64})\)"


def fingerprint(pem):
    out = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", pem],
                         check=True, capture_output=True, text=True).stdout
    return out.strip().split("=", 1)[1].replace(":", "").lower()


def logged(srv):
    m = re.findall(LOGGED, srv.output(srv.log_offset))
    assert len(m) == 1, srv.output(srv.log_offset)
    return m[0]


@pytest.fixture
def one(server_factory, tmp_path):
    data = tmp_path / "data"
    init_auth(data)
    srv = server_factory(args=ARGS, data=data, wait_for=("auth", "scribes"))
    srv.addr = "%s:%d" % srv.addrs["auth"]
    w = World(srv, tmp_path, None)
    w.user("wes")
    w.admin_call("namespace-admins-set", "wes", NS)
    w.admin_call("grants-set", "wes", NS, "writer")
    yield w
    w.stop()


def repo(w, home, trust, *args, cwd=None, check=True):
    env = {"XDG_CONFIG_HOME": str(w.tmp / home), "CAIRN_AUTH_CA": "",
           "CAIRN_PASSWORD": USER_PASSWORD, "CAIRN_SCRIBE_CA": trust}
    r = run([binary("cairn"), "repo"] + list(args), env=env, cwd=cwd, input="", timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_scribe_tls_beside_auth_uses_a_certificate_of_its_server_ca(one, cert):
    w = one
    kind, path, fp = logged(w.srv)
    assert kind == "a new" and path == os.path.join(w.srv.data_dir, "auth", "scribe-tls.pem")
    assert fp == fingerprint(path)
    key = os.path.join(w.srv.data_dir, "auth", "scribe-tls.key")
    assert os.stat(key).st_mode & 0o777 == 0o600 and os.stat(path).st_mode & 0o777 == 0o600
    # sign in (the trust bundle pinned at first contact), then storage over
    # scribes:// trusting that bundle alone
    repo(w, "wes", "", "login", w.srv.addr, "--user", "wes")
    trust = glob.glob(str(w.tmp / "wes" / "cairn" / "auth-trust-*.pem"))
    assert len(trust) == 1
    url = "scribes://127.0.0.1:%d/proj" % w.srv.addrs["scribes"][1]
    repo(w, "wes", trust[0], "create", url)
    d = str(w.tmp / "ws")
    repo(w, "wes", trust[0], "clone", url, d)
    with open(os.path.join(d, "hello.txt"), "w") as f:
        f.write("one command, TLS and principals\n")
    repo(w, "wes", trust[0], "submit", "-m", "first", cwd=d)
    d2 = str(w.tmp / "ws2")
    repo(w, "wes", trust[0], "clone", url, d2)
    with open(os.path.join(d2, "hello.txt")) as f:
        assert f.read() == "one command, TLS and principals\n"
    # a client that trusts another CA is refused at the handshake
    r = repo(w, "wes", cert[0], "clone", url, str(w.tmp / "ws3"), check=False)
    assert r.returncode != 0 and "TLS handshake" in r.stderr, r.stderr


def test_restart_reuses_and_renews_near_expiry(one):
    w = one
    _, path, fp = logged(w.srv)
    w.srv.stop()
    w.srv.start(wait_for=("auth", "scribes"))
    kind, _, fp2 = logged(w.srv)
    assert kind == "the" and fp2 == fp
    # a certificate of the same server CA expiring in 10 days is issued anew
    auth = os.path.join(w.srv.data_dir, "auth")
    ca = str(w.tmp / "server-ca.pem")
    with open(path) as f:
        blocks = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", f.read(),
                            re.S)
    open(ca, "w").write(blocks[1] + "\n")
    csr = subprocess.run(["openssl", "req", "-new", "-key", os.path.join(auth, "scribe-tls.key"),
                          "-subj", "/CN=soon"], check=True, capture_output=True).stdout
    ext = str(w.tmp / "ext.cnf")
    open(ext, "w").write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    soon = subprocess.run(["openssl", "x509", "-req", "-CA", ca, "-CAkey",
                           os.path.join(auth, "server-ca.key"), "-days", "10", "-set_serial", "7",
                           "-extfile", ext], input=csr, check=True, capture_output=True).stdout
    w.srv.stop()
    open(path, "wb").write(soon + open(ca, "rb").read())
    w.srv.start(wait_for=("auth", "scribes"))
    kind, _, fp3 = logged(w.srv)
    assert kind == "a new" and fp3 not in (fp, fingerprint_of_bytes(soon, w.tmp))
    assert fp3 == fingerprint(path)
    end = subprocess.run(["openssl", "x509", "-noout", "-checkend", str(300 * 86400), "-in", path],
                         capture_output=True)
    assert end.returncode == 0  # valid for about a year again


def fingerprint_of_bytes(pem, tmp):
    p = str(tmp / "soon.pem")
    open(p, "wb").write(pem)
    return fingerprint(p)


def test_scribe_tls_without_files_or_auth_refuses_to_start(tmp_path):
    s = Server(tmp_path / "data", args=["--jay", "off", "--http", "off", "--scribe", "off",
                                        "--scribe-tls", "127.0.0.1:0"])
    with pytest.raises(Exception):
        s.start(wait_for=("scribes",), timeout=10)
    assert "--scribe-tls-cert and --scribe-tls-key" in s.output(), s.output()
    s.stop()

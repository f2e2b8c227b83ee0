"""Scribe protocol 4 over TLS through a real cairnd (issue 21): the
--scribe-tls listener beside the plaintext --scribe one on one data
directory, anonymous sessions, binding secrets, upload admission, and the
`cairn repo` verbs over scribes:// URLs.  Principals and roles (a data
directory with auth): test_scribe_v4_auth.py.

Python's ssl cannot offer X25519MLKEM768, so raw frames go through
tests/scribe/scribe_tls_proxy (a plaintext-to-TLS relay made with cairn's
pq-only client context); Python's ssl itself is the classical-only peer that
must be refused."""
import os
import socket
import ssl
import struct
import subprocess

import pytest

from conftest import binary, run
from scribe_wire import ERR, FLAG_ERROR, FLAG_STREAM, OP, Conn, hello_payload, \
    CHUNK, b3


@pytest.fixture
def srv(server_factory, cert):
    return server_factory(args=["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0",
                                "--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert", cert[0],
                                "--scribe-tls-key", cert[1]],
                          wait_for=("scribe", "scribes"))


class Proxy:
    """scribe_tls_proxy towards addr; source: the address its TLS side
    connects from (another source for the server's admission)."""

    def __init__(self, addr, client_cert=None, source=None):
        args = [binary("tests/scribe/scribe_tls_proxy"), addr[0], str(addr[1])]
        args += list(client_cert or ())
        env = dict(os.environ, SCRIBE_TLS_PROXY_SOURCE=source) if source else None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        assert line.startswith("port "), line
        self.addr = ("127.0.0.1", int(line.split()[1]))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def proxy(srv):
    p = Proxy(srv.addrs["scribes"])
    yield p
    p.stop()


def hello4(caller=0, bind=0, binding=bytes(32), client="pytest/4", version=4):
    return hello_payload(version, 1, 0, bind, client) + bytes([caller]) + binding


def raw_conn(addr):
    return Conn(addr, hello=False)


def hello_reply(c, payload):
    """Sends a hello; returns ("ok", body) or ("error", code)."""
    c.send_frame(OP["hello"], payload)
    op, flags, rid, body = c.recv_frame()
    assert op == OP["hello"]
    if flags & FLAG_ERROR:
        return "error", c.error_of(body, be=False).code
    return "ok", body


def control4(addr):
    """A protocol-4 control connection: (conn, session, binding)."""
    c = raw_conn(addr)
    kind, body = hello_reply(c, hello4())
    assert kind == "ok", body
    assert len(body) == 16 + 32
    ver, codec, session, timeout, comp = struct.unpack("<HBQIB", body[:16])
    assert ver == 4 and session != 0 and timeout > 0
    c.hello_ok = dict(version=ver, codec=codec, session=session, timeout=timeout,
                      compression=comp)
    return c, session, body[16:]


# ---- the listeners ---------------------------------------------------------------
def test_v2_hello_on_tls_and_v4_on_plaintext_refused(srv, proxy):
    c = raw_conn(proxy.addr)
    assert hello_reply(c, hello_payload(2)) == ("error", ERR["unsupported_version"])
    assert c.closed_by_peer()
    c = raw_conn(srv.addrs["scribe"])
    assert hello_reply(c, hello4()) == ("error", ERR["unsupported_version"])
    assert c.closed_by_peer()


def test_classical_only_tls_peer_refused(srv):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection(srv.addrs["scribes"], timeout=10) as s:
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            with ctx.wrap_socket(s) as t:
                t.send(b"x")


def test_client_certificate_refused_without_auth(srv, cert):
    # This data directory has no auth state (`cairn admin auth init`), so the
    # listener resolves no principal: a certificate is refused.  With auth:
    # test_scribe_v4_auth.py.
    p = Proxy(srv.addrs["scribes"], client_cert=cert)
    try:
        c = raw_conn(p.addr)
        assert hello_reply(c, hello4()) == ("error", ERR["unauthenticated"])
        assert c.closed_by_peer()
    finally:
        p.stop()


def test_caller_tags(proxy):
    # direct (1) needs a certificate: unauthenticated; 3 is malformed
    c = raw_conn(proxy.addr)
    assert hello_reply(c, hello4(caller=1)) == ("error", ERR["unauthenticated"])
    c = raw_conn(proxy.addr)
    assert hello_reply(c, hello4(caller=3)) == ("error", ERR["malformed"])
    # a control connection's binding is zero
    c = raw_conn(proxy.addr)
    assert hello_reply(c, hello4(binding=b"\1" * 32)) == ("error", ERR["malformed"])


@pytest.mark.parametrize("where", ["scribe", "scribes"])
def test_long_client_string_answered_malformed_then_closed(srv, proxy, where):
    addr = srv.addrs["scribe"] if where == "scribe" else proxy.addr
    payload = (hello_payload(2, client="c" * 300) if where == "scribe"
               else hello4(client="c" * 300))
    c = raw_conn(addr)
    assert hello_reply(c, payload) == ("error", ERR["malformed"])
    assert c.closed_by_peer()


# ---- binding secrets -------------------------------------------------------------
def test_data_connection_binding(srv, proxy):
    ctl, session, binding = control4(proxy.addr)
    assert binding != bytes(32)
    # the right secret: bound, the control session's id back, no secret
    d = raw_conn(proxy.addr)
    kind, body = hello_reply(d, hello4(bind=session, binding=binding))
    assert kind == "ok" and len(body) == 16
    assert struct.unpack("<HBQIB", body)[2] == session
    d.close()
    wrong = bytes([binding[0] ^ 1]) + binding[1:]
    for b in (wrong, bytes(32)):
        d = raw_conn(proxy.addr)
        assert hello_reply(d, hello4(bind=session, binding=b)) == \
            ("error", ERR["unauthenticated"])
        assert d.closed_by_peer()
    # another version: a protocol-2 hello naming the session on the
    # plaintext listener finds no protocol-2 session
    d = raw_conn(srv.addrs["scribe"])
    assert hello_reply(d, hello_payload(2, bind=session)) == ("error", ERR["malformed"])
    # another caller mode than the control session's
    d = raw_conn(proxy.addr)
    assert hello_reply(d, hello4(caller=1, bind=session, binding=binding))[0] == "error"
    # a dead control session
    # (the close reaches the server through the relay: retry until it has)
    ctl.close()
    for _ in range(200):
        d = raw_conn(proxy.addr)
        r = hello_reply(d, hello4(bind=session, binding=binding))
        if r[0] == "error":
            break
        d.close()
    assert r == ("error", ERR["unauthenticated"])


def test_two_sessions_have_different_secrets(proxy):
    _, s1, b1 = control4(proxy.addr)
    _, s2, b2 = control4(proxy.addr)
    assert s1 != s2 and b1 != b2


# ---- upload admission ------------------------------------------------------------
def test_upload_admission(proxy):
    c, _, _ = control4(proxy.addr)
    repo = c.repo_create("adm")["id"]
    data = b"admitted bytes"
    req = c.enc().raw(repo).u32(1).u8(CHUNK).raw(b3(data)).u64(len(data)).bytes()
    # admitted: an empty non-STREAM reply before any body byte, then the put
    rid = c.send_frame(OP["put_objects"], req, FLAG_STREAM)
    op, flags, rrid, body = c.recv_frame()
    assert (op, flags, rrid, body) == (OP["put_objects"], 0, rid, b"")
    c.send(data)
    op, flags, rrid, body = c.recv_frame()
    assert rrid == rid and not flags & FLAG_ERROR
    assert c.dec(body).u32() == 1
    # refused (no such repository): an error frame, and the client sends no
    # body byte; the connection stays usable with nothing to drain
    ghost = bytes(16)
    req = c.enc().raw(ghost).u32(1).u8(CHUNK).raw(b3(data)).u64(len(data)).bytes()
    rid = c.send_frame(OP["put_objects"], req, FLAG_STREAM)
    op, flags, rrid, body = c.recv_frame()
    assert rrid == rid and flags & FLAG_ERROR
    assert c.error_of(body).code == ERR["repository_not_found"]
    rows, _ = c.repo_list()
    assert [r["name"] for r in rows] == ["adm"]


# ---- the CLI over scribes:// -----------------------------------------------------
def repo(args, cert, cwd=None, check=True):
    r = run([binary("cairn"), "repo"] + args, env={"CAIRN_SCRIBE_CA": cert[0]}, cwd=cwd)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_cli_over_tls_and_plaintext_one_history(srv, cert, tmp_path):
    tls = "scribes://127.0.0.1:%d" % srv.addrs["scribes"][1]
    plain = "scribe://127.0.0.1:%d" % srv.addrs["scribe"][1]
    repo(["create", "r", "--endpoint", tls], cert)
    w4, w2 = str(tmp_path / "w4"), str(tmp_path / "w2")
    repo(["clone", tls + "/r", w4], cert)
    with open(os.path.join(w4, "a.txt"), "w") as f:
        f.write("over tls\n" * 1000)
    repo(["submit", "-m", "v4 change"], cert, cwd=w4)
    repo(["clone", plain + "/r", w2], cert)
    with open(os.path.join(w2, "a.txt")) as f:
        assert f.read() == "over tls\n" * 1000
    with open(os.path.join(w2, "b.txt"), "w") as f:
        f.write("over plaintext\n")
    repo(["submit", "-m", "v2 change"], cert, cwd=w2)
    repo(["sync"], cert, cwd=w4)
    with open(os.path.join(w4, "b.txt")) as f:
        assert f.read() == "over plaintext\n"
    log = repo(["log"], cert, cwd=w4).stdout
    assert "v4 change" in log and "v2 change" in log
    # locks are shared: taken over v2, held against v4
    repo(["lock", "a.txt"], cert, cwd=w2)
    locks = repo(["locks"], cert, cwd=w4).stdout
    assert "a.txt" in locks


def test_cli_refuses_unverified_server(srv, cert, tmp_path):
    tls = "scribes://127.0.0.1:%d" % srv.addrs["scribes"][1]
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=x",
                    "-keyout", str(tmp_path / "ok.pem"), "-out", str(other)],
                   check=True, capture_output=True)
    r = repo(["create", "r", "--endpoint", tls], (str(other),), check=False)
    assert r.returncode != 0
    assert "certificate verify failed" in r.stderr

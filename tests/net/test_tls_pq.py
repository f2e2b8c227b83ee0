"""The X25519MLKEM768 key exchange through a real cairnd (issue 21's TLS rule).

A TLS listener restricted to the hybrid group (CAIRN_TLS_GROUPS=pq-only) serves
Chromium, whose BoringSSL nobody here wrote, and cairn's own client
(tests/crypto/tls_pq_client over cn_tls_client_ctx_new); it refuses Debian's
OpenSSL 3.0 offering X25519 only, and Python's ssl.  The default listener keeps
the classical groups and still prefers the hybrid one.  The negotiated group is
asserted from both ends: the server's debug log line, and Chromium's NetLog or
the client's own report."""
import json
import shutil
import socket
import ssl
import subprocess

import pytest

from conftest import binary

GROUP = "X25519MLKEM768"
CODEPOINT = 0x11EC


def tls_http(server_factory, cert, groups=None):
    env = {"CAIRN_TLS_GROUPS": groups} if groups else {}
    return server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0",
                                "--http-tls-cert", cert[0], "--http-tls-key", cert[1],
                                "--log-level", "debug"],
                          env=env, wait_for=("http",))


def server_groups(srv):
    """The groups of the server's completed handshakes, from its debug log."""
    out = srv.output()
    return [line.rsplit("group ", 1)[1].strip() for line in out.splitlines()
            if "TLS handshake with" in line and ", group " in line]


def chromium_get(tmp_path, port, path="/_cairn/health"):
    """Headless Chromium fetches https://127.0.0.1:port/path; returns the page
    and the key-exchange groups its NetLog recorded."""
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.fail("chromium is not installed; run scripts/deps.sh test")
    netlog = tmp_path / "netlog.json"
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--user-data-dir=" + str(tmp_path / "chromium"),
                        "--ignore-certificate-errors", "--log-net-log=" + str(netlog),
                        "--dump-dom", f"https://127.0.0.1:{port}{path}"],
                       capture_output=True, text=True, timeout=120)
    groups = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "key_exchange_group":
                    groups.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    if netlog.exists():
        text = netlog.read_text()
        try:
            walk(json.loads(text))
        except ValueError:  # a log cut short still names the groups it saw
            walk(json.loads(text.rstrip().rstrip(",") + "]}"))
    return r.stdout, groups


def cairn_client(rule, port, path="/_cairn/health"):
    return subprocess.run([binary("tests/crypto/tls_pq_client"), rule, "127.0.0.1", str(port), path],
                          capture_output=True, text=True, timeout=30)


def s_client_x25519(port):
    return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-tls1_3",
                           "-groups", "X25519"], input="", capture_output=True, text=True,
                          timeout=30)


def test_chromium_completes_the_hybrid_handshake(server_factory, cert, tmp_path):
    srv = tls_http(server_factory, cert, "pq-only")
    page, groups = chromium_get(tmp_path, srv.addrs["http"][1])
    assert ">ok<" in page, page
    assert groups and all(g == CODEPOINT for g in groups), groups
    assert server_groups(srv) and set(server_groups(srv)) == {GROUP}, srv.output()


def test_cairn_client_and_server_agree_on_the_group(server_factory, cert):
    srv = tls_http(server_factory, cert, "pq-only")
    r = cairn_client("pq-only", srv.addrs["http"][1])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"group {GROUP}\n"), r.stdout
    assert "HTTP/1.1 200" in r.stdout and r.stdout.rstrip().endswith("ok"), r.stdout
    assert server_groups(srv) == [GROUP], srv.output()


def test_classical_only_peers_are_refused(server_factory, cert):
    srv = tls_http(server_factory, cert, "pq-only")
    port = srv.addrs["http"][1]
    r = s_client_x25519(port)
    assert r.returncode != 0
    assert "handshake failure" in r.stdout + r.stderr, r.stdout + r.stderr
    # Python's ssl (Debian's OpenSSL 3.0) offers only classical groups.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(s).do_handshake()
    # Neither got a completed handshake; the hybrid client still does.
    assert server_groups(srv) == [], srv.output()
    assert "no suitable key share" in srv.output()
    assert cairn_client("pq-only", port).returncode == 0
    assert server_groups(srv) == [GROUP]


def test_default_listener_keeps_classical_groups_and_prefers_hybrid(server_factory, cert,
                                                                     tmp_path):
    srv = tls_http(server_factory, cert)
    port = srv.addrs["http"][1]
    r = s_client_x25519(port)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Server Temp Key: X25519" in r.stdout, r.stdout
    r = cairn_client("hybrid-first", port)
    assert r.returncode == 0 and r.stdout.startswith(f"group {GROUP}\n"), r.stdout + r.stderr
    page, groups = chromium_get(tmp_path, port)
    assert ">ok<" in page and groups and set(groups) == {CODEPOINT}, (page, groups)
    assert server_groups(srv)[:2] == ["x25519", GROUP], srv.output()
    assert set(server_groups(srv)[2:]) == {GROUP}, srv.output()


def test_an_unknown_group_rule_stops_the_listener(server_factory, cert):
    with pytest.raises(RuntimeError) as e:
        tls_http(server_factory, cert, "classical")
    assert "CAIRN_TLS_GROUPS=classical" in str(e.value)

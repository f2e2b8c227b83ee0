"""The web console's framework against a real cairnd (docs/console.md): the
embedded files (hashed names, immutable, gzip), the security headers of every
console answer, sign-in and its cookie, the failed-login limit, sessions
(idle expiry, revocation, a disabled account), the mutation guards,
--console off and --console ADDR, and the sandbox headers on stored bytes."""
import gzip
import hashlib
import http.client
import json
import os
import re
import ssl
import subprocess
import time
import urllib.parse

import boto3
import pytest
from botocore.config import Config

from cairnutil import no_sanitizer_report
from conftest import ADMIN_TOKEN, binary, run
import fleetmode

ROOT = "/_cairn/console/"
API = ROOT + "api/"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HASHED = re.compile(r"^[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*-[0-9a-f]{8}\.[a-z0-9]+$")


def http_args(extra=()):
    return ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"] + list(extra)


class Console:
    """One origin serving the console: raw HTTP requests with full control
    of the headers (http.client adds none of its own but Host and
    Accept-Encoding: identity)."""

    def __init__(self, addr, tls=False):
        self.host, self.port = addr
        self.tls = tls
        self.origin = "%s://%s:%d" % ("https" if tls else "http", self.host, self.port)
        self.cookie = None

    def request(self, method, path, body=None, headers=None, cookie=True):
        if self.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            c = http.client.HTTPSConnection(self.host, self.port, timeout=20, context=ctx)
        else:
            c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        h = dict(headers or {})
        if cookie and self.cookie:
            h.setdefault("Cookie", "cairn_session=" + self.cookie)
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, r.headers, data
        finally:
            c.close()

    def mutate(self, method, path, doc=None, headers=None, cookie=True):
        """A mutation with the three guard headers (overridable)."""
        h = {"X-Cairn-Console": "1", "Origin": self.origin}
        if doc is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        return self.request(method, path, body=doc, headers=h, cookie=cookie)

    def login(self, token=ADMIN_TOKEN, keep=True):
        st, hd, body = self.mutate("POST", API + "session", {"token": token}, cookie=False)
        if st == 200 and keep:
            m = re.match(r"cairn_session=([0-9a-f]{64});", hd["Set-Cookie"])
            assert m, hd["Set-Cookie"]
            self.cookie = m.group(1)
        return st, hd, body

    def session(self):
        return self.request("GET", API + "session")[0]


def check_headers(hd, api):
    assert hd["Content-Security-Policy"] == CSP
    assert hd["X-Content-Type-Options"] == "nosniff"
    assert hd["Referrer-Policy"] == "no-referrer"
    assert hd["Cross-Origin-Opener-Policy"] == "same-origin"
    if api:
        assert hd["Cache-Control"] == "no-store"


def error_of(body):
    doc = json.loads(body)
    assert set(doc) == {"error", "message"}, doc
    return doc["error"]


def admin_cli(srv, *args):
    r = run([binary("cairn"), "admin", "--data", srv.data_dir] + list(args),
            env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    no_sanitizer_report(r.stderr)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def new_token(srv, account, perms=("object:get",)):
    run([binary("cairn"), "admin", "--data", srv.data_dir, "account", "create", account],
        env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    args = ["token", "create", "--account", account]
    for p in perms:
        args += ["--perm", p]
    return admin_cli(srv, *args).splitlines()[-1].strip()


@pytest.fixture
def con(server_factory):
    srv = server_factory(args=http_args(), wait_for=("http",))
    c = Console(srv.addrs["http"])
    c.srv = srv
    return c


# ---- the embedded files ------------------------------------------------------------------

def asset_refs(html):
    return re.findall(r'(?:href|src)="(assets/[^"]+)"', html)


def test_index_and_hashed_assets(con):
    for path in (ROOT, ROOT + "index.html"):
        st, hd, body = con.request("GET", path)
        assert st == 200
        check_headers(hd, api=False)
        assert hd["Cache-Control"] == "no-cache"
        assert hd["Content-Type"].startswith("text/html")
    html = body.decode()
    refs = asset_refs(html)
    assert refs, html
    # every literal reference was rewritten: no plain relative name is left
    assert not re.search(r'(?:href|src)="(?!assets/)[^"#:]+\.(?:js|css)"', html), html
    seen_js = False
    for ref in refs:
        name = ref[len("assets/"):]
        assert HASHED.match(name), name
        st, hd, plain = con.request("GET", ROOT + ref)
        assert st == 200, ref
        check_headers(hd, api=False)
        assert hd["Cache-Control"] == "public, max-age=31536000, immutable"
        assert "Content-Encoding" not in hd
        if name.endswith(".js"):
            seen_js = True
            assert hd["Content-Type"].startswith("text/javascript")
            # a module's relative imports name hashed files that are served
            for spec in re.findall(r"""from\s*['"](\.[^'"]+)['"]""", plain.decode()):
                assert spec.startswith("./") and HASHED.match(spec[2:]), spec
                assert con.request("GET", ROOT + "assets/" + spec[2:])[0] == 200, spec
        elif name.endswith(".css"):
            assert hd["Content-Type"].startswith("text/css")
        st, hd, packed = con.request("GET", ROOT + ref, headers={"Accept-Encoding": "gzip"})
        assert st == 200
        assert hd["Vary"] == "Accept-Encoding"
        if len(plain) > 256:
            assert hd["Content-Encoding"] == "gzip", ref
            assert gzip.decompress(packed) == plain
        etag = hd["ETag"]
        st, _, _ = con.request("GET", ROOT + ref, headers={"If-None-Match": etag})
        assert st == 304
    assert seen_js


def test_unknown_paths(con):
    for path in (ROOT + "assets/nope-00000000.js", ROOT + "app.css", ROOT + "js/app.js",
                 ROOT + "assets/index.html", ROOT + "x"):
        st, hd, body = con.request("GET", path)
        assert st == 404, path
        check_headers(hd, api=False)
        assert error_of(body) == "NotFound"
    st, hd, _ = con.request("GET", "/_cairn/console")
    assert st == 301 and hd["Location"] == ROOT


# ---- the API's framework ------------------------------------------------------------------

def test_every_api_answer_has_the_headers(con):
    st, hd, body = con.request("GET", API + "session")
    assert st == 401 and error_of(body) == "Unauthorized"
    check_headers(hd, api=True)
    st, hd, body = con.request("GET", API + "buckets")
    assert st == 401
    check_headers(hd, api=True)
    st, hd, body = con.login()
    assert st == 200
    check_headers(hd, api=True)
    for method, path, code, want in (("GET", API + "no-such-call", 404, "NotFound"),
                                     ("GET", API + "session/extra", 404, "NotFound"),
                                     ("PUT", API + "session", 405, "MethodNotAllowed")):
        st, hd, body = con.mutate(method, path) if method != "GET" else con.request(method, path)
        assert st == code, (method, path, body)
        check_headers(hd, api=True)
        assert error_of(body) == want
    st, hd, body = con.request("GET", API + "session")
    assert st == 200
    check_headers(hd, api=True)
    # a body past 1 MiB is refused before it is read
    st, hd, body = con.mutate("POST", API + "session", {"token": "x" * (1 << 20)}, cookie=False)
    assert st == 413
    check_headers(hd, api=True)


def test_malformed_json_body(con):
    st, _, body = con.request("POST", API + "session", body=b"{not json",
                              headers={"X-Cairn-Console": "1", "Origin": con.origin,
                                       "Content-Type": "application/json"})
    assert st == 400 and error_of(body) == "BadRequest"


# ---- sign-in, the cookie, the session -----------------------------------------------------

def test_login_wrong_then_right(con):
    key = ADMIN_TOKEN.split(":", 1)[0]
    for wrong in (key + ":not-the-secret", "nobody:secret", "no-colon"):
        st, hd, body = con.login(wrong)
        assert st == 401, wrong
        assert error_of(body) == "Unauthorized"
        assert "Set-Cookie" not in hd
    st, hd, body = con.login()
    assert st == 200
    doc = json.loads(body)
    assert doc["account"] == "admin" and doc["token_id"] == key
    assert doc["admin"] is True and "admin" in doc["perms"] and "object:get" in doc["perms"]
    assert doc["idle_s"] == 1800 and doc["max_s"] == 43200
    assert isinstance(doc["node"], str) and doc["node"]
    cookie = hd["Set-Cookie"]
    parts = [p.strip() for p in cookie.split(";")]
    assert re.fullmatch(r"cairn_session=[0-9a-f]{64}", parts[0])
    assert set(parts[1:]) == {"HttpOnly", "SameSite=Strict", "Path=/_cairn/console/"}
    assert ADMIN_TOKEN.split(":", 1)[1] not in cookie
    st, _, body = con.request("GET", API + "session")
    assert st == 200 and json.loads(body) == doc
    # the cookie is stored as its hash only
    assert con.cookie.encode() not in stored_sessions(con.srv.data_dir)


def stored_sessions(data_dir):
    """The bytes the server keeps its console sessions in: the SQLite file,
    or on the fleet engines (tests/fleetmode.py) the rows of its database."""
    if not fleetmode.active():
        return open(data_dir + "/meta.db", "rb").read()
    r = subprocess.run(["psql", "-Atc", "SELECT * FROM console_sessions",
                        fleetmode.meta_uri(data_dir)], capture_output=True, timeout=30)
    assert r.returncode == 0 and r.stdout, r.stderr
    return r.stdout


def test_session_needs_the_cookie(con):
    assert con.login()[0] == 200
    good = con.cookie
    con.cookie = "0" * 64
    assert con.session() == 401
    con.cookie = good[:-1]
    assert con.session() == 401
    con.cookie = good
    assert con.session() == 200
    st, hd, _ = con.request("GET", API + "session",
                            headers={"Cookie": "other=1; cairn_session=" + good + "; x=y"},
                            cookie=False)
    assert st == 200


def test_logout(con):
    assert con.login()[0] == 200
    st, hd, body = con.mutate("DELETE", API + "session")
    assert st == 204, body
    check_headers(hd, api=True)
    parts = [p.strip() for p in hd["Set-Cookie"].split(";")]
    assert parts[0] == "cairn_session=" and "Max-Age=0" in parts
    assert con.session() == 401
    st, _, _ = con.mutate("DELETE", API + "session")
    assert st == 401


def test_two_sessions_are_independent(con):
    other = Console((con.host, con.port))
    assert con.login()[0] == 200 and other.login()[0] == 200
    assert con.cookie != other.cookie
    assert con.mutate("DELETE", API + "session")[0] == 204
    assert other.session() == 200


def test_failed_logins_limited(con):
    for _ in range(5):
        assert con.login("cnadmin:wrong")[0] == 401
    st, hd, body = con.login()  # even the right token waits now
    assert st == 429
    assert error_of(body) == "TooManyRequests"
    assert 1 <= int(hd["Retry-After"]) <= 60
    check_headers(hd, api=True)
    assert con.login("cnadmin:wrong")[0] == 429


def login_from(c, xff, token="cnadmin:wrong"):
    """A sign-in carrying X-Forwarded-For: xff; its status."""
    return c.mutate("POST", API + "session", {"token": token}, cookie=False,
                    headers={"X-Forwarded-For": xff})[0]


@pytest.fixture
def proxied(server_factory):
    """A console behind a trusted proxy (JAY_TRUST_PROXY_HEADERS=1)."""
    srv = server_factory(args=http_args(), wait_for=("http",),
                         env={"JAY_TRUST_PROXY_HEADERS": "1"})
    c = Console(srv.addrs["http"])
    c.srv = srv
    return c


def test_failed_logins_ignore_spoofed_forwarded_entries(proxied):
    """The limit keys on the entry the trusted proxy appended (the rightmost):
    a client that writes its own leftmost entries neither evades it nor
    resets it, and another real client is not blocked by it."""
    for i in range(5):
        assert login_from(proxied, "198.51.100.%d, 203.0.113.9" % i) == 401
    assert login_from(proxied, "198.51.100.77, 203.0.113.9", ADMIN_TOKEN) == 429
    assert login_from(proxied, "203.0.113.9") == 429
    assert login_from(proxied, "203.0.113.10", ADMIN_TOKEN) == 200
    # the leftmost entry the client wrote is not the source either
    assert login_from(proxied, "203.0.113.9, 203.0.113.11") == 401
    # a rightmost entry that is no address leaves the peer (not the entry before)
    assert login_from(proxied, "203.0.113.12, garbage", ADMIN_TOKEN) == 200
    st, _, body = proxied.login()
    assert st == 200  # the peer (127.0.0.1) has no failures
    assert proxied.login(keep=False)[0] == 200
    rows = json.loads(proxied.request("GET", API + "sessions")[2])["sessions"]
    assert {r["source"] for r in rows} >= {"203.0.113.10", "127.0.0.1"}


def test_failed_logins_share_an_ipv6_64(proxied):
    for i in range(5):
        assert login_from(proxied, "2001:db8:1:2::%x" % (i + 1)) == 401
    assert login_from(proxied, "2001:db8:1:2:ffff:ffff:ffff:ffff", ADMIN_TOKEN) == 429
    assert login_from(proxied, "2001:db8:1:3::1", ADMIN_TOKEN) == 200  # the next /64


def test_failed_logins_mapped_ipv4_is_ipv4(proxied):
    for i in range(3):
        assert login_from(proxied, "::ffff:192.0.2.7") == 401
    for i in range(2):
        assert login_from(proxied, "192.0.2.7") == 401
    assert login_from(proxied, "::ffff:192.0.2.7", ADMIN_TOKEN) == 429
    assert login_from(proxied, "192.0.2.7", ADMIN_TOKEN) == 429
    assert login_from(proxied, "192.0.2.8", ADMIN_TOKEN) == 200


def test_idle_expiry(server_factory):
    srv = server_factory(args=http_args(), wait_for=("http",),
                         env={"CAIRN_CONSOLE_IDLE_MS": "1500"})
    c = Console(srv.addrs["http"])
    st, _, body = c.login()
    assert st == 200 and json.loads(body)["idle_s"] == 1
    # activity keeps it alive past the idle timeout ...
    t0 = time.time()
    while time.time() - t0 < 3:
        assert c.session() == 200
        time.sleep(0.3)
    # ... and idleness ends it
    time.sleep(2)
    assert c.session() == 401


def test_absolute_expiry(server_factory):
    srv = server_factory(args=http_args(), wait_for=("http",),
                         env={"CAIRN_CONSOLE_MAX_MS": "1500"})
    c = Console(srv.addrs["http"])
    assert c.login()[0] == 200
    t0 = time.time()
    while c.session() == 200:
        assert time.time() - t0 < 4
        time.sleep(0.2)
    assert time.time() - t0 >= 1.2


def wait_401(c, within):
    t0 = time.time()
    while c.session() == 200:
        assert time.time() - t0 < within, "the session outlived its token"
        time.sleep(0.1)


def test_revocation_ends_the_session(con):
    cred = new_token(con.srv, "rita")
    st, _, body = con.login(cred)
    assert st == 200 and json.loads(body)["admin"] is False
    admin_cli(con.srv, "token", "revoke", cred.split(":", 1)[0])
    wait_401(con, 2)
    assert con.login(cred)[0] == 401


def test_revocation_through_the_admin_api(con):
    """The console's own admin call (DATA's) revokes; the other session ends."""
    cred = new_token(con.srv, "rob")
    user = Console((con.host, con.port))
    assert user.login(cred)[0] == 200
    assert con.login()[0] == 200
    st, _, body = con.mutate("DELETE", API + "tokens/" + cred.split(":", 1)[0])
    assert st == 204, body
    wait_401(user, 2)


def test_disabled_account_ends_the_session(con):
    cred = new_token(con.srv, "dora")
    assert con.login(cred)[0] == 200
    admin_cli(con.srv, "account", "disable", "dora")
    wait_401(con, 2)
    admin_cli(con.srv, "account", "enable", "dora")
    assert con.session() == 401  # the row is gone, not merely suspended
    assert con.login(cred)[0] == 200


def session_ids(admin, account=None):
    """The ids of the live session rows (the admin list), of one account."""
    st, _, body = admin.request("GET", API + "sessions")
    assert st == 200, body
    return {s["id"] for s in json.loads(body)["sessions"]
            if account is None or s["account"] == account}


def test_disable_then_enable_with_no_request_between(con):
    """Disabling deletes the account's sessions at once, on the CLI path: an
    enable that follows before the browser's next request revives nothing."""
    cred = new_token(con.srv, "dana")
    user = Console((con.host, con.port))
    assert user.login(cred)[0] == 200
    other = Console((con.host, con.port))
    assert other.login(cred)[0] == 200
    assert con.login()[0] == 200
    assert len(session_ids(con, "dana")) == 2
    admin_cli(con.srv, "account", "disable", "dana")
    assert session_ids(con, "dana") == set()  # gone before any request of theirs
    admin_cli(con.srv, "account", "enable", "dana")
    assert user.session() == 401 and other.session() == 401
    assert con.session() == 200  # another account's session is untouched
    assert user.login(cred)[0] == 200  # the token itself lives again


def test_disable_through_the_admin_api_ends_sessions(con):
    cred = new_token(con.srv, "dirk")
    user = Console((con.host, con.port))
    assert user.login(cred)[0] == 200
    assert con.login()[0] == 200
    for off in (True, False):
        st, _, body = con.mutate("PUT", API + "accounts/dirk/disabled", {"disabled": off})
        assert st in (200, 204), body
    assert user.session() == 401
    # enabling alone deletes nothing
    assert user.login(cred)[0] == 200
    st, _, _ = con.mutate("PUT", API + "accounts/dirk/disabled", {"disabled": False})
    assert st in (200, 204) and user.session() == 200


def test_revocation_deletes_the_tokens_sessions_at_once(con):
    cred, keep = new_token(con.srv, "remy"), new_token(con.srv, "remy")
    user, stays = Console((con.host, con.port)), Console((con.host, con.port))
    assert user.login(cred)[0] == 200 and stays.login(keep)[0] == 200
    assert con.login()[0] == 200
    assert len(session_ids(con, "remy")) == 2
    admin_cli(con.srv, "token", "revoke", cred.split(":", 1)[0])
    assert len(session_ids(con, "remy")) == 1  # the row went with the revocation
    assert user.session() == 401 and stays.session() == 200
    # through the console's own call too
    st, _, _ = con.mutate("DELETE", API + "tokens/" + keep.split(":", 1)[0])
    assert st == 204 and session_ids(con, "remy") == set()


def test_need_gate_admin(con):
    cred = new_token(con.srv, "nina")
    assert con.login(cred)[0] == 200
    st, hd, body = con.request("GET", API + "accounts")
    assert st == 403 and error_of(body) == "Forbidden"
    check_headers(hd, api=True)


# ---- the mutation guards ----------------------------------------------------------------------

def test_guards(con):
    token = {"token": ADMIN_TOKEN}
    cases = [
        {"X-Cairn-Console": None},
        {"X-Cairn-Console": "0"},
        {"Origin": None},
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "https://%s:%d" % (con.host, con.port)},
        {"Origin": "null"},
        {"Content-Type": "text/plain"},
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": None},
    ]
    for case in cases:
        h = {"X-Cairn-Console": "1", "Origin": con.origin, "Content-Type": "application/json"}
        h.update(case)
        h = {k: v for k, v in h.items() if v is not None}
        st, hd, body = con.request("POST", API + "session", body=json.dumps(token).encode(),
                                   headers=h)
        assert st == 403, case
        assert error_of(body) == "Forbidden"
        check_headers(hd, api=True)
        assert "Set-Cookie" not in hd
    assert con.login()[0] == 200
    # a DELETE without a body needs the two headers but no content type
    st, _, _ = con.request("DELETE", API + "session", headers={"Origin": con.origin})
    assert st == 403
    st, _, _ = con.request("DELETE", API + "session", headers={"X-Cairn-Console": "1"})
    assert st == 403
    assert con.session() == 200
    st, _, _ = con.request("DELETE", API + "session",
                           headers={"X-Cairn-Console": "1", "Origin": con.origin})
    assert st == 204
    # charset parameters are fine
    st, _, _ = con.mutate("POST", API + "session", token,
                          headers={"Content-Type": "application/json; charset=utf-8"},
                          cookie=False)
    assert st == 200


def test_tls_cookie_is_secure(server_factory, cert):
    c_file, k_file = cert
    srv = server_factory(args=http_args(["--http-tls-cert", c_file, "--http-tls-key", k_file]),
                         wait_for=("http",))
    c = Console(srv.addrs["http"], tls=True)
    st, hd, _ = c.login()
    assert st == 200
    assert "Secure" in [p.strip() for p in hd["Set-Cookie"].split(";")]
    assert c.session() == 200
    # the origin's scheme counts: http:// is another origin
    st, _, _ = c.mutate("POST", API + "session", {"token": ADMIN_TOKEN},
                        headers={"Origin": "http://%s:%d" % (c.host, c.port)}, cookie=False)
    assert st == 403


# ---- --console off | ADDR -------------------------------------------------------------------

def test_console_off(server_factory):
    srv = server_factory(args=http_args(["--console", "off"]), wait_for=("http",))
    c = Console(srv.addrs["http"])
    assert c.request("GET", ROOT)[0] == 404
    assert c.login()[0] == 404
    assert c.request("GET", "/_cairn/health")[0] == 200


def test_console_bad_flag(tmp_path):
    r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--console", "maybe"])
    no_sanitizer_report(r.stderr)
    assert r.returncode == 2 and "--console" in r.stderr


def test_console_on_its_own_listener(server_factory):
    srv = server_factory(args=http_args(["--console", "127.0.0.1:0"]),
                         wait_for=("http", "console"))
    assert srv.addrs["console"] != srv.addrs["http"]
    own = Console(srv.addrs["console"])
    main = Console(srv.addrs["http"])
    st, hd, _ = own.request("GET", ROOT)
    assert st == 200
    check_headers(hd, api=False)
    assert main.request("GET", ROOT)[0] == 404
    assert own.login()[0] == 200
    assert own.session() == 200
    # the guard compares with the console's own origin, not the S3 listener's
    st, _, _ = own.mutate("POST", API + "session", {"token": ADMIN_TOKEN},
                          headers={"Origin": main.origin}, cookie=False)
    assert st == 403
    # the console's listener carries no S3 but uploads: the rest is not found
    st, _, body = own.request("GET", "/", headers={"Authorization": "Bearer " + ADMIN_TOKEN})
    assert st == 404 and b"ListAllMyBucketsResult" not in body
    assert main.request("GET", "/", headers={"Authorization": "Bearer " + ADMIN_TOKEN})[0] == 200


def api_json(c, method, path, doc=None, want=200):
    """A console call on c (guard headers on mutations); its JSON answer."""
    if method == "GET":
        st, _, body = c.request(method, API + path)
    else:
        st, _, body = c.mutate(method, API + path, doc)
    assert st == want, (method, path, st, body)
    return json.loads(body) if body else None


def test_console_listener_takes_the_uploads_its_links_carry(server_factory):
    """--console ADDR: the page's CSP lets it connect to its own origin only,
    so PUT links (object and part) are minted relative to that origin and its
    listener accepts exactly those uploads, SigV4-verified against its own
    Host; download links point at the HTTP listener, and no read of stored
    bytes (nor any other S3 call) is served on the console's origin."""
    srv = server_factory(args=http_args(["--console", "127.0.0.1:0"]),
                         wait_for=("http", "console"))
    own = Console(srv.addrs["console"])
    main = Console(srv.addrs["http"])
    assert own.login()[0] == 200
    api_json(own, "POST", "buckets", {"name": "drop"}, want=201)
    key = "in box/a+b.bin"
    put = api_json(own, "POST", "buckets/drop/presign", {"method": "PUT", "key": key,
                                                         "expires": 300})["url"]
    assert put.startswith("/drop/in%20box/a%2Bb.bin?X-Amz-"), put
    data = os.urandom(70000)
    st, hd, _ = own.request("PUT", put, body=data, cookie=False)
    assert st == 200 and hd["ETag"].strip('"') == hashlib.md5(data).hexdigest()
    # a tampered link is refused by the signature check, not let through
    st, _, _ = own.request("PUT", put.replace("in%20box", "in%20bag"), body=b"x", cookie=False)
    assert st == 403
    get = api_json(own, "POST", "buckets/drop/presign", {"method": "GET", "key": key,
                                                         "expires": 300})["url"]
    assert get.startswith(main.origin + "/drop/"), get
    rel = get[len(main.origin):]
    st, _, body = main.request("GET", rel, cookie=False)
    assert st == 200 and body == data
    # the same download, the same object on the console's origin: not found
    for method in ("GET", "HEAD"):
        st, hd, body = own.request(method, rel, cookie=False)
        assert st == 404 and data[:64] not in body, method
    bearer = {"Authorization": "Bearer " + ADMIN_TOKEN}
    for method, path, extra in (("GET", "/drop/in%20box/a%2Bb.bin", {}),
                                ("PUT", "/drop/other.bin", {}),  # not a presigned upload
                                ("PUT", "/newbucket", {}),
                                ("DELETE", "/drop/in%20box/a%2Bb.bin", {}),
                                ("POST", "/drop?delete", {}),
                                ("GET", "/_cairn/ready", {}),
                                ("GET", "/_cairn/ops/", {}),
                                ("OPTIONS", "/drop/x", {})):
        h = dict(bearer, **extra)
        st, hd, body = own.request(method, path, body=b"" if method == "PUT" else None,
                                   headers=h, cookie=False)
        assert st == 404, (method, path, st)
        if method != "HEAD":
            assert error_of(body) == "NotFound"
    # a copy or another subresource rides no upload link
    copy = api_json(own, "POST", "buckets/drop/presign", {"method": "PUT", "key": "copy.bin",
                                                          "expires": 300})["url"]
    src = {"x-amz-copy-source": "/drop/in%20box/a%2Bb.bin"}
    assert own.request("PUT", copy, body=b"", headers=src, cookie=False)[0] == 404
    assert own.request("PUT", copy + "&tagging", body=b"", cookie=False)[0] == 404
    assert main.request("HEAD", "/drop/copy.bin", headers=bearer)[0] == 404
    assert own.request("GET", "/_cairn/health")[0] == 200
    # a multipart upload: parts through the console's origin, their ETags readable
    up = api_json(own, "POST", "buckets/drop/uploads", {"key": "big.bin"})["upload_id"]
    parts, done = [os.urandom(5 << 20), os.urandom(1000)], []
    for n, part in enumerate(parts, 1):
        url = api_json(own, "POST", "buckets/drop/presign",
                       {"method": "PUT", "key": "big.bin", "expires": 300, "part": n,
                        "upload_id": up})["url"]
        assert url.startswith("/drop/big.bin?"), url
        st, hd, _ = own.request("PUT", url, body=part, cookie=False)
        assert st == 200, st
        done.append({"part": n, "etag": hd["ETag"].strip('"')})
    api_json(own, "POST", "buckets/drop/uploads/complete",
             {"key": "big.bin", "upload_id": up, "parts": done})
    st, _, body = main.request("GET", "/drop/big.bin", headers=bearer)
    assert st == 200 and body == b"".join(parts)


def test_query_is_form_decoded(con):
    """Console query values decode as application/x-www-form-urlencoded,
    which URLSearchParams writes: '+' is a space, %2B a plus, %20 a space."""
    assert con.login()[0] == 200
    api_json(con, "POST", "buckets", {"name": "spaces"}, want=201)
    bearer = {"Authorization": "Bearer " + ADMIN_TOKEN}
    keys = ["a dir/x+y z.txt", "a dir/x y z.txt", "a+dir/plus.txt"]
    for k in keys:
        st, _, _ = con.request("PUT", "/spaces/" + urllib.parse.quote(k), body=k.encode(),
                               headers=bearer, cookie=False)
        assert st == 200, k
    for k in keys:
        form = urllib.parse.urlencode({"key": k})  # spaces as '+', '+' as %2B
        assert api_json(con, "GET", "buckets/spaces/object?" + form)["key"] == k, form
        pct = urllib.parse.urlencode({"key": k}, quote_via=urllib.parse.quote)  # %20
        assert api_json(con, "GET", "buckets/spaces/object?" + pct)["key"] == k, pct
    form = urllib.parse.urlencode({"prefix": "a dir/", "delimiter": "/"})
    listed = api_json(con, "GET", "buckets/spaces/objects?" + form)
    assert sorted(o["key"] for o in listed["objects"]) == sorted(keys[:2]), listed
    listed = api_json(con, "GET", "buckets/spaces/objects?delimiter=%2F&prefix=a%2Bdir%2F")
    assert [o["key"] for o in listed["objects"]] == [keys[2]], listed
    listed = api_json(con, "GET", "buckets/spaces/objects?delimiter=/")
    assert sorted(listed["prefixes"]) == ["a dir/", "a+dir/"], listed
    # a malformed escape never reaches a call: the framework refuses the URI,
    # worded by the console's route (JSON, the console's headers), not in S3 XML
    for bad in ("buckets/spaces/object?key=%ZZ", "buckets/spaces/objects?prefix=a%2"):
        st, hd, body = con.request("GET", API + bad)
        assert st == 400 and error_of(body) == "BadRequest", (bad, body)
        check_headers(hd, api=True)
    st, hd, body = con.mutate("POST", API + "buckets?x=%ZZ", {"name": "nope"})
    assert st == 400 and error_of(body) == "BadRequest", body
    assert con.request("GET", "/spaces/k?x=%ZZ")[2].startswith(b"<?xml")  # S3 still XML


# ---- stored bytes are sandboxed -----------------------------------------------------------

def test_s3_bytes_are_sandboxed(con):
    key, secret = ADMIN_TOKEN.split(":", 1)
    s3 = boto3.client("s3", endpoint_url="http://%s:%d" % (con.host, con.port),
                      aws_access_key_id=key, aws_secret_access_key=secret,
                      region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 0}, signature_version="s3v4"))
    s3.create_bucket(Bucket="pages")
    page = b"<html><script>fetch('/_cairn/console/api/session')</script></html>"
    big = page + b"<!--" + b"x" * (64 << 10) + b"-->"
    s3.put_object(Bucket="pages", Key="small.html", Body=page, ContentType="text/html")
    s3.put_object(Bucket="pages", Key="big.html", Body=big, ContentType="text/html")
    for name, body in (("small.html", page), ("big.html", big)):
        for _ in range(3):  # the second read may come from the loop's cache
            r = s3.get_object(Bucket="pages", Key=name)
            assert r["Body"].read() == body
            h = r["ResponseMetadata"]["HTTPHeaders"]
            assert h["content-security-policy"] == "sandbox", name
            assert h["x-content-type-options"] == "nosniff"
            assert h["content-type"] == "text/html"
        h = s3.head_object(Bucket="pages", Key=name)["ResponseMetadata"]["HTTPHeaders"]
        assert h["content-security-policy"] == "sandbox"
        assert h["x-content-type-options"] == "nosniff"
    r = s3.get_object(Bucket="pages", Key="big.html", Range="bytes=0-9")
    h = r["ResponseMetadata"]["HTTPHeaders"]
    assert r["Body"].read() == big[:10] and h["content-security-policy"] == "sandbox"

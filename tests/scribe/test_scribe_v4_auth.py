"""Signed-in principals and the role table on Scribe protocol 4 (issue 21,
docs/protocol/scribe.md 15.6) through one real cairnd serving --auth and
--scribe-tls on one data directory: `cairn admin auth init`, users, grants
and visibility made with the SAU2 administrative verbs, access certificates
from the access-certificate verb, raw frames through the pq-only relay
(tests/scribe/scribe_tls_proxy, which presents a client certificate), and
`cairn repo` signed in with `cairn repo login`.

What each test proves: a reader reads but cannot write (forbidden); a writer
writes; an anonymous caller and a user without grants see only the
public-read repository (a private one answers repository_not_found, as an
absent one does); repo_list is filtered; repo_create needs the namespace
administrator; a credential certificate (not an access one) is refused; a
revoked credential is refused at the next session; a data connection of
another principal is refused; a storage server apart from its auth (the
remote provider: SAU2 over TLS with its own server credential) applies the
same rules, refuses to start for a namespace auth does not give it, and
answers auth_unavailable once its own credential is revoked; an auth whose
files were put back to an older revision is auth_unavailable (rollback
check)."""
import os
import secrets
import struct
import sys
import time

import pytest

from conftest import binary, free_port, run
from scribe_wire import ERR, FLAG_ERROR, FLAG_STREAM, OP, CHUNK, ScribeError, b3
from test_scribe_v4 import Proxy, control4, hello4, hello_reply, raw_conn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sau2"))
from test_sau2_listener import PASSWORD, call, code_of, device_key, init_auth, rows_of  # noqa: E402

NS = "default"
USER_PASSWORD = "a user password 41c9e"


@pytest.fixture
def world(server_factory, cert, tmp_path):
    """cairnd with --auth, --scribe and --scribe-tls over one auth-initialised
    data directory; identity confirmations reused for 500 ms at most."""
    data = tmp_path / "data"
    init_auth(data)
    conf = tmp_path / "cairnd.toml"
    conf.write_text("[scribe-tls]\nnamespace = \"%s\"\nauth_cache_ms = 500\n" % NS)
    srv = server_factory(args=["--jay", "off", "--http", "off", "--auth", "127.0.0.1:0",
                               "--scribe", "127.0.0.1:0", "--scribe-tls", "127.0.0.1:0",
                               "--scribe-tls-cert", cert[0], "--scribe-tls-key", cert[1],
                               "--config", str(conf)],
                         data=data, wait_for=("auth", "scribe", "scribes"))
    srv.addr = "%s:%d" % srv.addrs["auth"]
    w = World(srv, tmp_path, cert)
    yield w
    w.stop()


class World:
    def __init__(self, srv, tmp_path, cert):
        self.srv, self.tmp, self.cert = srv, tmp_path, cert
        self.proxies = []
        self.admin = self.credential("admin", PASSWORD, verb="admin-login")

    def stop(self):
        for p in self.proxies:
            p.stop()

    def admin_call(self, *argv):
        op = None if argv[0].endswith("-list") else secrets.token_hex(16)
        rc, out = call(self.srv, *argv, cert=self.admin[0], key=self.admin[1], op=op)
        assert rc == 0 and code_of(out) == 0, (argv, out)
        return rows_of(out)

    def user(self, name):
        """A person with a password; its grants are the caller's to set."""
        self.admin_call("users-add", name, "id-" + name, "0", "person")
        rc, out = call(self.srv, "users-password", name, "1", cert=self.admin[0],
                       key=self.admin[1], op=secrets.token_hex(16), secret=USER_PASSWORD)
        assert rc == 0 and code_of(out) == 0, out

    def credential(self, name, password=USER_PASSWORD, verb="login"):
        """Signs name in: (credential certificate path, device key path, credential id)."""
        key, spki = device_key(self.tmp, name + "-" + secrets.token_hex(4))
        cred = secrets.token_hex(16)
        rc, out = call(self.srv, verb, name, cred, spki, op=secrets.token_hex(16),
                       secret=password)
        assert rc == 0 and code_of(out) == 0, out
        path = key + ".cred.pem"
        open(path, "w").write(rows_of(out)[0][0])
        return path, key, cred

    def access(self, cred):
        """An access certificate for a credential: (certificate path, key path)."""
        rc, out = call(self.srv, "access-certificate", cert=cred[0], key=cred[1])
        assert rc == 0 and code_of(out) == 0, out
        path = cred[1] + ".access.pem"
        open(path, "w").write(rows_of(out)[0][0])
        return path, cred[1]

    def proxy(self, client_cert=None, srv=None):
        p = Proxy((srv or self.srv).addrs["scribes"], client_cert=client_cert)
        self.proxies.append(p)
        return p

    def session(self, who=None, srv=None):
        """A protocol-4 control connection (to srv, default the one cairnd):
        anonymous, or as `who` (an access certificate pair)."""
        p = self.proxy(who, srv)
        c = raw_conn(p.addr)
        kind, body = hello_reply(c, hello4(caller=1 if who else 0))
        assert kind == "ok", ERR_NAME.get(body, body)
        c.hello_ok = dict(session=struct.unpack("<HBQIB", body[:16])[2])
        c.binding = body[16:]
        c.proxy = p
        return c


ERR_NAME = {v: k for k, v in ERR.items()}


def code(fn, *a):
    with pytest.raises(ScribeError) as e:
        fn(*a)
    return ERR_NAME.get(e.value.code, e.value.code)


def put_admission(c, repo, data=b"role-checked bytes"):
    """Sends a put_objects request; returns None when admitted (and finishes
    the upload), else the refusal's code name."""
    req = c.enc().raw(repo).u32(1).u8(CHUNK).raw(b3(data)).u64(len(data)).bytes()
    rid = c.send_frame(OP["put_objects"], req, FLAG_STREAM)
    op, flags, rrid, body = c.recv_frame()
    assert rrid == rid
    if flags & FLAG_ERROR:
        return ERR_NAME[c.error_of(body).code]
    c.send(data)
    op, flags, rrid, body = c.recv_frame()
    assert not flags & FLAG_ERROR
    return None


@pytest.fixture
def roles(world):
    """boss (namespace administrator), rita (reader), wes (writer), olga (no
    grant); repositories priv (private) and pub (public-read)."""
    for name in ("boss", "rita", "wes", "olga"):
        world.user(name)
    world.admin_call("namespace-admins-set", "boss", NS)
    world.admin_call("grants-set", "rita", NS, "reader")
    world.admin_call("grants-set", "wes", NS, "writer")
    world.admin_call("visibility-set", NS, "pub", "public-read")
    acc = {n: world.access(world.credential(n)) for n in ("boss", "rita", "wes", "olga")}
    boss = world.session(acc["boss"])
    repos = {n: boss.repo_create(n)["id"] for n in ("priv", "pub")}
    return acc, repos


def test_discover_reports_authentication_and_namespace(world):
    c = world.session()
    # role storage, authentication 1, one server, its namespace (str16)
    assert c.discover() == bytes.fromhex("01 01 01000000 0700") + b"default"


def test_reader_reads_writer_writes(world, roles):
    acc, repos = roles
    rita = world.session(acc["rita"])
    assert rita.repo_info(repos["priv"])["name"] == "priv"
    assert rita.repo_usage(repos["priv"]) >= 0
    assert put_admission(rita, repos["priv"]) == "forbidden"
    wes = world.session(acc["wes"])
    assert put_admission(wes, repos["priv"]) is None
    assert wes.repo_info(name="priv")["id"] == repos["priv"]


def test_private_repositories_look_absent(world, roles):
    acc, repos = roles
    for c in (world.session(), world.session(acc["olga"])):
        rows, _ = c.repo_list()
        assert [r["name"] for r in rows] == ["pub"]
        assert code(c.repo_info, repos["priv"]) == "repository_not_found"
        assert code(c.repo_info, None, "priv") == "repository_not_found"
        assert code(c.repo_usage, repos["priv"]) == "repository_not_found"
        # the same answer as a repository that does not exist
        assert code(c.repo_info, b"\x42" * 16) == "repository_not_found"
        assert c.repo_info(repos["pub"])["name"] == "pub"
    # public-read is read only: the anonymous caller is asked to sign in,
    # a signed-in user without a grant is forbidden
    assert put_admission(world.session(), repos["pub"]) == "unauthenticated"
    assert put_admission(world.session(acc["olga"]), repos["pub"]) == "forbidden"
    rows, _ = world.session(acc["rita"]).repo_list()
    assert sorted(r["name"] for r in rows) == ["priv", "pub"]


def test_repo_create_needs_the_namespace_administrator(world, roles):
    acc, _ = roles
    assert code(world.session().repo_create, "x1") == "unauthenticated"
    assert code(world.session(acc["wes"]).repo_create, "x2") == "forbidden"
    assert world.session(acc["boss"]).repo_create("x3")["name"] == "x3"
    assert code(world.session(acc["wes"]).instance_status) == "forbidden"
    assert world.session(acc["boss"]).instance_status()["total"] == 3


def test_credential_certificate_and_caller_tags_refused(world, roles):
    acc, _ = roles
    cred = world.credential("wes")
    # a credential certificate is not an access certificate
    c = raw_conn(world.proxy(cred[:2]).addr)
    assert hello_reply(c, hello4(caller=1)) == ("error", ERR["unauthenticated"])
    assert c.closed_by_peer()
    # a certificate with caller 0, or none with caller 1, is refused
    c = raw_conn(world.proxy(acc["wes"]).addr)
    assert hello_reply(c, hello4(caller=0)) == ("error", ERR["unauthenticated"])
    c = raw_conn(world.proxy().addr)
    assert hello_reply(c, hello4(caller=1)) == ("error", ERR["unauthenticated"])
    # a delegated hello whose forwarded certificate is garbage is refused
    # (delegated callers themselves: tests/scribe/test_gateway_v4.py)
    c = raw_conn(world.proxy(acc["wes"]).addr)
    payload = hello4(caller=2)[:-32] + struct.pack("<H", 3) + b"crt" + bytes(32)
    assert hello_reply(c, payload) == ("error", ERR["unauthenticated"])


def test_revoked_credential_refused_at_next_session(world, roles):
    cred = world.credential("wes")
    acc = world.access(cred)
    world.session(acc).repo_list()
    world.admin_call("credentials-revoke", cred[2])
    time.sleep(0.7)  # past auth_cache_ms (500): the next session asks auth again
    c = raw_conn(world.proxy(acc).addr)
    assert hello_reply(c, hello4(caller=1)) == ("error", ERR["unauthenticated"])


def test_data_connection_of_another_principal_refused(world, roles):
    acc, _ = roles
    rita = world.session(acc["rita"])
    session, binding = rita.hello_ok["session"], rita.binding
    d = raw_conn(world.proxy(acc["wes"]).addr)
    assert hello_reply(d, hello4(caller=1, bind=session, binding=binding)) == \
        ("error", ERR["unauthenticated"])
    assert d.closed_by_peer()
    d = raw_conn(rita.proxy.addr)
    kind, body = hello_reply(d, hello4(caller=1, bind=session, binding=binding))
    assert kind == "ok" and struct.unpack("<HBQIB", body)[2] == session


# ---- the CLI signed in with `cairn repo login` -------------------------------------------
def cli(world, home, *args, check=True):
    env = {"XDG_CONFIG_HOME": str(world.tmp / home), "CAIRN_AUTH_CA": "",
           "CAIRN_PASSWORD": USER_PASSWORD, "CAIRN_SCRIBE_CA": world.cert[0]}
    r = run([binary("cairn"), "repo"] + list(args), env=env, input="", timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def cli_in(world, home, cwd, *args, check=True):
    env = {"XDG_CONFIG_HOME": str(world.tmp / home), "CAIRN_SCRIBE_CA": world.cert[0]}
    r = run([binary("cairn"), "repo"] + list(args), env=env, cwd=cwd, timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_cli_signed_in_reader_and_writer(world, roles):
    url = "scribes://127.0.0.1:%d/priv" % world.srv.addrs["scribes"][1]
    for name in ("wes", "rita"):
        cli(world, name, "login", world.srv.addr, "--user", name)
    w, r, a = (str(world.tmp / d) for d in ("w-wes", "w-rita", "w-anon"))
    cli_in(world, "wes", None, "clone", url, w)
    with open(os.path.join(w, "a.txt"), "w") as f:
        f.write("by a writer\n")
    cli_in(world, "wes", w, "submit", "-m", "writer change")
    cfg = world.tmp / "wes" / "cairn"
    assert os.stat(cfg / "auth.access").st_mode & 0o777 == 0o600
    cli_in(world, "rita", None, "clone", url, r)
    with open(os.path.join(r, "a.txt")) as f:
        assert f.read() == "by a writer\n"
    with open(os.path.join(r, "b.txt"), "w") as f:
        f.write("by a reader\n")
    out = cli_in(world, "rita", r, "submit", "-m", "reader change", check=False)
    assert out.returncode == 4 and "needs Writer" in out.stderr, out.stderr  # forbidden
    # not signed in: anonymous, and priv looks absent
    out = cli_in(world, "nobody", None, "clone", url, a, check=False)
    assert out.returncode != 0 and "not found" in out.stderr, out.stderr
    # signed in but asking to be anonymous: the same
    env = {"XDG_CONFIG_HOME": str(world.tmp / "wes"), "CAIRN_SCRIBE_CA": world.cert[0],
           "CAIRN_SCRIBE_ANONYMOUS": "1"}
    out = run([binary("cairn"), "repo", "clone", url, a], env=env, timeout=120)
    assert out.returncode != 0 and "not found" in out.stderr, out.stderr
    # logout drops the cached access certificate too
    cli(world, "wes", "logout")
    assert not os.path.exists(cfg / "auth.access")


# ---- a storage server apart from its auth (the remote provider) -------------------------
def test_separate_storage_server_asks_a_remote_auth(world, roles, server_factory, cert,
                                                    tmp_path):
    acc, _ = roles
    world.admin_call("servers-add", "store2", NS, "id-store2")
    key, spki = device_key(tmp_path, "store2")
    expires = str(int(time.time() * 1000) + 86400000)
    store_cred = secrets.token_hex(16)
    rows = world.admin_call("credentials-add", "server", "store2", store_cred, spki, expires,
                            "storage 2")
    cred = tmp_path / "store2-credential.pem"
    cred.write_text(rows[0][0] + open(key).read())
    rc, out = call(world.srv, "trust-bundle")
    trust = tmp_path / "trust.pem"
    trust.write_text("".join(r[1] for r in rows_of(out)))
    conf = tmp_path / "store2.toml"
    conf.write_text("[scribe-tls]\nnamespace = \"%s\"\nauth_server = \"%s\"\n"
                    "auth_trust = \"%s\"\nauth_credential = \"%s\"\nauth_cache_ms = 500\n"
                    % (NS, world.srv.addr, trust, cred))
    store = server_factory(args=["--jay", "off", "--http", "off", "--scribe", "off",
                                 "--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert", cert[0],
                                 "--scribe-tls-key", cert[1], "--config", str(conf)],
                           data=tmp_path / "store2", wait_for=("scribes",))
    assert "principals from a remote auth" in store.output()
    boss = world.session(acc["boss"], store)
    priv, pub = boss.repo_create("priv")["id"], boss.repo_create("pub")["id"]
    assert code(world.session(acc["wes"], store).repo_create, "x") == "forbidden"
    rita = world.session(acc["rita"], store)
    assert rita.repo_info(priv)["name"] == "priv"
    assert put_admission(rita, priv) == "forbidden"
    assert put_admission(world.session(acc["wes"], store), priv) is None
    anon = world.session(None, store)
    assert [r["name"] for r in anon.repo_list()[0]] == ["pub"]
    assert code(anon.repo_info, priv) == "repository_not_found"
    assert anon.repo_info(pub)["name"] == "pub"
    # a namespace auth does not give this server: cairnd does not start (the
    # auth service named by the flags this time, not the config keys)
    bad = tmp_path / "bad.toml"
    bad.write_text("[scribe-tls]\nnamespace = \"other\"\n")
    r = run([binary("cairnd"), "--data", str(tmp_path / "store3"), "--jay", "off", "--http",
             "off", "--scribe", "off", "--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert",
             cert[0], "--scribe-tls-key", cert[1], "--config", str(bad),
             "--auth-server", world.srv.addr, "--auth-trust", str(trust),
             "--auth-credential", str(cred)], timeout=60)
    assert r.returncode != 0 and "namespace other" in r.stderr, r.stderr
    r = run([binary("cairnd"), "--data", str(tmp_path / "store4"), "--jay", "off", "--http",
             "off", "--scribe", "off", "--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert",
             cert[0], "--scribe-tls-key", cert[1], "--auth-server", world.srv.addr],
            timeout=60)
    assert r.returncode != 0 and "--auth-trust" in r.stderr, r.stderr
    # the storage server's own credential revoked: auth no longer answers it,
    # which is auth_unavailable for the caller, not the caller's fault
    world.admin_call("credentials-revoke", store_cred)
    time.sleep(0.7)
    c = raw_conn(world.proxy(acc["rita"], store).addr)
    assert hello_reply(c, hello4(caller=1)) == ("error", ERR["auth_unavailable"])



def test_auth_rolled_back_to_an_older_revision_is_auth_unavailable(server_factory, cert,
                                                                   tmp_path):
    """The auth's files put back as they were (same incarnation, lower
    revision) while a storage server remembers a higher one: its next answer
    is refused (auth_unavailable), not acted on."""
    import shutil
    data, old = tmp_path / "auth", tmp_path / "auth-old"
    init_auth(data)
    port = free_port()
    args = ["--jay", "off", "--http", "off", "--scribe", "off", "--auth", "127.0.0.1:%d" % port]

    def start_auth():
        srv = server_factory(args=args, data=data, wait_for=("auth",))
        srv.addr = "127.0.0.1:%d" % port
        return srv
    a = start_auth()
    w = World(a, tmp_path, cert)
    try:
        w.user("boss")
        w.admin_call("namespace-admins-set", "boss", NS)
        w.admin_call("servers-add", "store2", NS, "id-store2")
        key, spki = device_key(tmp_path, "store2")
        expires = str(int(time.time() * 1000) + 86400000)
        rows = w.admin_call("credentials-add", "server", "store2", secrets.token_hex(16), spki,
                            expires, "storage 2")
        cred = tmp_path / "store2-credential.pem"
        cred.write_text(rows[0][0] + open(key).read())
        boss = w.access(w.credential("boss"))
        rc, out = call(a, "trust-bundle")
        trust = tmp_path / "trust.pem"
        trust.write_text("".join(r[1] for r in rows_of(out)))
        a.stop()
        shutil.copytree(data, old)  # the auth as it is now: revision R
        a = start_auth()
        w.srv = a
        w.admin_call("visibility-set", NS, "pub", "public-read")  # revision R + 1
        conf = tmp_path / "store2.toml"
        conf.write_text("[scribe-tls]\nnamespace = \"%s\"\nauth_server = \"%s\"\n"
                        "auth_trust = \"%s\"\nauth_credential = \"%s\"\nauth_cache_ms = 1\n"
                        % (NS, a.addr, trust, cred))
        store = server_factory(args=["--jay", "off", "--http", "off", "--scribe", "off",
                                     "--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert", cert[0],
                                     "--scribe-tls-key", cert[1], "--config", str(conf)],
                               data=tmp_path / "store2", wait_for=("scribes",))
        w.session(boss, store).repo_create("pub")
        assert [r["name"] for r in w.session(None, store).repo_list()[0]] == ["pub"]  # saw R + 1
        a.stop()
        shutil.rmtree(data)
        shutil.copytree(old, data)  # rolled back: the same incarnation at revision R
        w.srv = start_auth()
        assert code(w.session(None, store).repo_list) == "auth_unavailable"
        assert "seen: refused" in store.output()
    finally:  # its relays are stopped however the test ends
        w.stop()


def test_tree_proof_names_its_repository_inside_the_page(world, roles):
    """tree_proof begins with a bytes32 tree_page request: the role is the
    one of the repository inside it."""
    acc, repos = roles
    rita = world.session(acc["rita"])
    main = rita.repo_info(repos["priv"])["main"]
    page = repos["priv"] + main + struct.pack("<QHI", 0, 0, 100) + b"\x00"
    proof = struct.pack("<I", len(page)) + page + b"\x00" + struct.pack("<I", 0) + b"\x00"
    try:
        rita.call(OP["tree_proof"], proof)
    except ScribeError as e:  # the handler's answer, not the role table's
        assert ERR_NAME.get(e.code) not in ("forbidden", "repository_not_found",
                                            "unauthenticated"), e
    assert code(world.session(acc["olga"]).call, OP["tree_proof"], proof) == \
        "repository_not_found"

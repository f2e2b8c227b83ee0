"""`cairn repo automation create|derive`, `cairn repo auth ...` and the
listener's own-connection rule for automation-create, through a real cairnd
(`--auth`) and the real `cairn` command; and `cairn admin auth restore`
refused while a cairnd holds the data directory.

The automation credential file the commands write is used as it is: as
CAIRN_AUTH_CREDENTIAL for the commands, and as certificate, key and trust
file for raw requests (tests/sau2/sau2_call).  Lost replies are stood in for by
a request that could not finish (an output path that is a directory, a server
that cannot be reached): the pending request's persisted operation id then
gets the recorded answer."""
import datetime
import json
import os
import re
import secrets
import subprocess

from conftest import binary, free_port, run
from test_sau2_listener import (PASSWORD, auth_server, call, code_of, device_key,  # noqa: F401
                                init_auth, rows_of, sign_in)


def cli(tmp_path, *args, env=None, input=""):
    e = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "CAIRN_AUTH_CA": "",
         "CAIRN_AUTH_CREDENTIAL": "", "CAIRN_AUTH_KEY": ""}
    e.update(env or {})
    return run([binary("cairn"), "repo"] + list(args), env=e, input=input, timeout=60)


def login(tmp_path, srv, admin=False, user="admin", password=PASSWORD):
    args = ["login", srv.addr, "--user", user] + (["--admin"] if admin else [])
    r = cli(tmp_path, *args, env={"CAIRN_PASSWORD": password})
    assert r.returncode == 0, r.stderr


def public_key(tmp_path, name):
    """A runner's key pair: (private key file, public key PEM file)."""
    key, _ = device_key(tmp_path, name)
    pub = str(tmp_path / (name + ".pub"))
    subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-out", pub], check=True,
                   capture_output=True)
    return key, pub


def field(out, name):
    m = re.search(r"^%s (\S+)$" % name, out, re.M)
    assert m, out
    return m.group(1)


def test_automation_create_and_derive_end_to_end(auth_server, tmp_path):
    srv = auth_server()
    login(tmp_path, srv)
    cred = str(tmp_path / "ci.cred")
    r = cli(tmp_path, "automation", "create", "--role", "writer", "--expires", "30d",
            "--label", "ci", "--out", cred)
    assert r.returncode == 0, r.stderr
    assert field(r.stdout, "kind") == "automation-write"
    parent = field(r.stdout, "credential")
    assert os.stat(cred).st_mode & 0o777 == 0o600
    text = open(cred).read()
    assert "server %s" % srv.addr in text and "PRIVATE KEY" in text
    assert not os.path.exists(tmp_path / "cfg" / "cairn" / "automation-create.pending")

    # The file alone is the runner's identity: whoami, and an access certificate.
    as_parent = {"CAIRN_AUTH_CREDENTIAL": cred}
    who = cli(tmp_path, "whoami", env=as_parent)
    assert who.returncode == 0 and "kind automation-write" in who.stdout, who.stderr
    assert parent in who.stdout
    rc, out = call(srv, "access-certificate", cert=cred, key=cred, ca=cred)
    assert rc == 0 and code_of(out) == 0, out

    # derive: a child for a runner's public key, with the parent's kind.
    runner_key, runner_pub = public_key(tmp_path, "runner")
    child = str(tmp_path / "child.cred")
    r = cli(tmp_path, "automation", "derive", "--public-key", runner_pub, "--out", child,
            env=as_parent)
    assert r.returncode == 0, r.stderr
    assert field(r.stdout, "kind") == "automation-write"
    assert "PRIVATE KEY" not in open(child).read()
    as_child = {"CAIRN_AUTH_CREDENTIAL": child, "CAIRN_AUTH_KEY": runner_key}
    who = cli(tmp_path, "whoami", env=as_child)
    assert who.returncode == 0 and "kind automation-write" in who.stdout, who.stderr
    rc, out = call(srv, "access-certificate", cert=child, key=runner_key, ca=child)
    assert rc == 0 and code_of(out) == 0, out

    # A derived credential cannot derive; a session cannot derive.
    _, other_pub = public_key(tmp_path, "other")
    r = cli(tmp_path, "automation", "derive", "--public-key", other_pub, env=as_child)
    assert r.returncode == 4 and "not derived may derive" in r.stderr, r.stderr
    r = cli(tmp_path, "automation", "derive", "--public-key", other_pub)
    assert r.returncode == 4, r.stderr

    # Revoking the parent (its logout) revokes the child.
    r = cli(tmp_path, "logout", env=as_parent)
    assert r.returncode == 0, r.stderr
    assert cli(tmp_path, "whoami", env=as_child).returncode == 4
    assert cli(tmp_path, "whoami", env=as_parent).returncode == 4
    assert cli(tmp_path, "whoami").returncode == 0  # the session is untouched


def test_automation_create_refusals(auth_server, tmp_path):
    srv = auth_server()
    login(tmp_path, srv)
    # Over a year: refused by the service (malformed: exit 2).
    r = cli(tmp_path, "automation", "create", "--role", "reader", "--expires", "400d")
    assert r.returncode == 2 and "within one year" in r.stderr, r.stderr
    # Not a time ahead, or no role: refused before anything is sent.
    r = cli(tmp_path, "automation", "create", "--role", "reader", "--expires", "2000-01-01")
    assert r.returncode == 2 and "not a time ahead" in r.stderr
    assert cli(tmp_path, "automation", "create", "--expires", "1d").returncode == 2
    r = cli(tmp_path, "automation", "create", "--role", "boss", "--expires", "1d")
    assert r.returncode == 2, r.stderr
    # The date forms within the year work too.
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)
    for d in (when.strftime("%Y-%m-%d"), when.strftime("%Y-%m-%dT%H:%M:%SZ")):
        r = cli(tmp_path, "automation", "create", "--role", "reader", "--expires", d)
        assert r.returncode == 0, (d, r.stderr)
        ms = int(field(r.stdout, "expires-ms"))
        assert abs(ms / 1000 - when.replace(hour=0, minute=0, second=0).timestamp()
                   if "T" not in d else ms / 1000 - int(when.timestamp())) < 2, (d, ms)
    # --out -: the credential file on standard output, nothing else there.
    r = cli(tmp_path, "automation", "create", "--role", "reader", "--expires", "12h",
            "--out", "-")
    assert r.returncode == 0 and r.stdout.startswith("# cairn credential file"), r.stderr
    cred = str(tmp_path / "auto.cred")
    open(cred, "w").write(r.stdout)
    # Only from a password session: an automation credential may not create.
    r = cli(tmp_path, "automation", "create", "--role", "reader", "--expires", "1d",
            env={"CAIRN_AUTH_CREDENTIAL": cred})
    assert r.returncode == 4 and "password session" in r.stderr, r.stderr
    # Not signed in at all.
    cli(tmp_path, "logout")
    r = cli(tmp_path, "automation", "create", "--role", "reader", "--expires", "1d")
    assert r.returncode == 2 and "not signed in" in r.stderr


def test_automation_create_finishes_a_request_left_pending(auth_server, tmp_path):
    srv = auth_server()
    login(tmp_path, srv)
    out = tmp_path / "blocked.cred"
    out.mkdir()  # the credential file cannot be written: the reply is lost locally
    args = ["automation", "create", "--role", "maintainer", "--expires", "7d",
            "--out", str(out)]
    r = cli(tmp_path, *args)
    assert r.returncode == 7, r.stderr
    pending = tmp_path / "cfg" / "cairn" / "automation-create.pending"
    text = pending.read_text()
    cred_id = re.findall(r"^arg (\S+)$", text, re.M)[2]
    out.rmdir()
    # The same command again sends the persisted request with its operation id:
    # the service answers the recorded certificate (a new issue of the same
    # credential id would be refused as registered).
    r = cli(tmp_path, *args)
    assert r.returncode == 0, r.stderr
    assert "left pending" in r.stderr
    assert field(r.stdout, "credential") == cred_id
    assert not pending.exists()
    who = cli(tmp_path, "whoami", env={"CAIRN_AUTH_CREDENTIAL": str(out)})
    assert who.returncode == 0 and cred_id in who.stdout, who.stderr


def test_automation_create_only_over_its_own_connection(auth_server, tmp_path):
    srv = auth_server()
    cert, key = sign_in(srv, tmp_path, verb="login")  # a password session

    def create_args():
        _, spki = device_key(tmp_path, "auto" + secrets.token_hex(4))
        return ["automation-create", "reader", str(int(1e3 * (__import__("time").time()))
                                                   + 86400000),
                secrets.token_hex(16), spki, "ci"]

    # Alone on its connection: issued; anything after it on that connection: refused.
    rc, out = call(srv, *create_args(), cert=cert, key=key, op=secrets.token_hex(16),
                   again_after=0)
    codes = [int(l.split()[1]) for l in out if l.startswith("code ")]
    assert codes == [0, 4], out
    assert "message this connection carried automation-create: open a new one" in out
    # Other verbs share a connection as before.
    rc, out = call(srv, "whoami", cert=cert, key=key, again_after=0)
    assert rc == 0 and out.count("code 0") == 2, out
    # The pooled client reuses its connection for the second request.
    rc, out = call(srv, *create_args(), cert=cert, key=key, op=secrets.token_hex(16),
                   again_after=0, pool=True)
    codes = [int(l.split()[1]) for l in out if l.startswith("code ")]
    assert codes == [0, 4], out


def auth(tmp_path, *args, env=None):
    return cli(tmp_path, "auth", *args, env=env)


def ok(r):
    assert r.returncode == 0, (r.args, r.stderr)
    return r.stdout


def test_every_auth_subverb(auth_server, tmp_path):
    srv = auth_server()
    login(tmp_path, srv, admin=True)
    pw = {"CAIRN_NEW_PASSWORD": "bob's first password"}
    # users
    assert ok(auth(tmp_path, "users", "add", "bob", "bob-id")).startswith("name")
    assert auth(tmp_path, "users", "add", "bob", "bob-2").returncode == 4
    ok(auth(tmp_path, "users", "add", "svc", "svc-id", "--kind", "service"))
    ok(auth(tmp_path, "users", "password", "bob", "1", env=pw))
    r = auth(tmp_path, "users", "password", "bob", "1", env=pw)
    assert r.returncode == 4 and "generation must be 2" in r.stderr
    assert auth(tmp_path, "users", "password", "bob", "2",
                env={"CAIRN_NEW_PASSWORD": "short"}).returncode == 2
    ok(auth(tmp_path, "users", "disable", "bob"))
    ok(auth(tmp_path, "users", "enable", "bob"))
    assert auth(tmp_path, "users", "enable", "ghost").returncode == 3
    users = json.loads(ok(auth(tmp_path, "users", "list", "--json")))
    bob = next(u for u in users if u["name"] == "bob")
    assert bob["id"] == "bob-id" and bob["generation"] == "1" and bob["disabled"] == "0"
    text = ok(auth(tmp_path, "users"))
    assert text.splitlines()[0].split() == ["name", "id", "kind", "administrator", "disabled",
                                            "generation"]
    assert auth(tmp_path, "users", "add", "Bad Name", "x").returncode == 2
    # servers
    ok(auth(tmp_path, "servers", "add", "s1", "ns1", "s1-id"))
    assert auth(tmp_path, "servers", "add", "s1", "ns1", "s1-id").returncode == 4
    ok(auth(tmp_path, "servers", "disable", "s1"))
    assert auth(tmp_path, "servers", "enable", "ghost").returncode == 3
    assert re.search(r"^s1\s+ns1\s+s1-id\s+1$", ok(auth(tmp_path, "servers", "list")), re.M)
    # credentials
    _, pub = public_key(tmp_path, "svc")
    pem = ok(auth(tmp_path, "credentials", "add", "service-reader", "svc", "--public-key", pub,
                  "--expires", "30d", "--label", "gateway"))
    assert pem.startswith("-----BEGIN CERTIFICATE-----")
    r = auth(tmp_path, "credentials", "add", "user", "svc", "--public-key", pub, "--expires", "1d")
    assert r.returncode == 3, r.stderr  # no person of that name
    creds = json.loads(ok(auth(tmp_path, "credentials", "list", "svc", "--json")))
    assert [c["label"] for c in creds] == ["gateway"]
    cid = creds[0]["credential"]
    assert ok(auth(tmp_path, "credentials", "certificate", cid)) == pem
    assert auth(tmp_path, "credentials", "certificate", "0" * 32).returncode == 3
    ok(auth(tmp_path, "credentials", "revoke", cid))
    assert cid in ok(auth(tmp_path, "credentials", "list"))
    assert auth(tmp_path, "credentials", "revoke", "f" * 32).returncode == 3
    # grants
    ok(auth(tmp_path, "grants", "set", "bob", "ns1", "writer"))
    assert auth(tmp_path, "grants", "set", "bob", "ns1", "boss").returncode == 2
    assert re.search(r"^ns1\s+bob\s+writer$", ok(auth(tmp_path, "grants", "list", "ns1")), re.M)
    ok(auth(tmp_path, "grants", "revoke", "bob", "ns1"))
    assert auth(tmp_path, "grants", "revoke", "bob", "ns1").returncode == 3
    # namespace administrators and readers, delegates
    for group, user in (("namespace-admins", "bob"), ("namespace-readers", "bob"),
                        ("delegates", "svc")):
        ok(auth(tmp_path, group, "set", user, "ns1"))
        assert re.search(r"^ns1\s+%s$" % user, ok(auth(tmp_path, group, "list")), re.M), group
        ok(auth(tmp_path, group, "revoke", user, "ns1"))
        assert auth(tmp_path, group, "revoke", user, "ns1").returncode == 3, group
        assert auth(tmp_path, group, "set", "ghost", "ns1").returncode == 3, group
    r = auth(tmp_path, "delegates", "set", "bob", "ns1")
    assert r.returncode == 4 and "service user" in r.stderr
    # visibility
    ok(auth(tmp_path, "visibility", "set", "ns1", "games/art", "public-read"))
    assert ok(auth(tmp_path, "visibility", "get", "ns1", "games/art")).splitlines()[1].split() \
        == ["ns1", "games/art", "public-read"]
    assert auth(tmp_path, "visibility", "set", "ns1", "r", "open").returncode == 2
    # outcome: the operation id a mutation printed answers its recorded rows
    r = auth(tmp_path, "users", "add", "carol", "carol-id")
    op = re.search(r"operation ([0-9a-f]{32})", r.stderr).group(1)
    assert re.search(r"^carol\s+carol-id$", ok(auth(tmp_path, "outcome", op)), re.M)
    assert auth(tmp_path, "outcome", secrets.token_hex(16)).returncode == 3
    assert auth(tmp_path, "outcome", "xyz").returncode == 2
    # audit: applied and refused requests, the refusal's code kept
    audit = json.loads(ok(auth(tmp_path, "audit", "--json")))
    assert any(a["verb"] == "users-add" and a["code"] == "0" for a in audit)
    assert any(a["verb"] == "delegates-set" and a["code"] == "4" for a in audit)
    assert not any("password" in a["arguments"] for a in audit)
    # usage
    assert auth(tmp_path, "users", "frobnicate").returncode == 2
    assert auth(tmp_path, "servers", "add", "only-a-name").returncode == 2


def test_auth_commands_need_an_administrator(auth_server, tmp_path):
    srv = auth_server()
    login(tmp_path, srv)  # a session: not a user credential
    r = auth(tmp_path, "users", "list")
    assert r.returncode == 4 and "need a user credential" in r.stderr, r.stderr
    r = auth(tmp_path, "users", "add", "dave", "dave-id")
    assert r.returncode == 4
    # Not signed in.
    cli(tmp_path, "logout")
    assert auth(tmp_path, "users", "list").returncode == 2


def test_restore_is_refused_while_cairnd_runs(auth_server, tmp_path):
    srv = auth_server()
    backup = str(tmp_path / "auth.bak")
    admin = [binary("cairn"), "admin", "--data", str(srv.data_dir), "auth"]
    r = run(admin + ["backup", backup])
    assert r.returncode == 0, r.stderr
    r = run(admin + ["restore", backup])
    assert r.returncode == 1 and "stop it first" in r.stderr, r.stderr
    rc, out = call(srv, "trust-bundle")  # the running listener is untouched
    assert rc == 0 and code_of(out) == 0
    srv.stop()
    r = run(admin + ["restore", backup])
    assert r.returncode == 0 and "incarnation:" in r.stdout, r.stderr


def test_auth_mutation_reuses_its_pending_operation(auth_server, tmp_path):
    srv = auth_server()
    login(tmp_path, srv, admin=True)
    cfg = tmp_path / "cfg" / "cairn"
    session = (cfg / "auth.session").read_text()
    # The server cannot be reached: the operation stays pending (exit 5).
    dead = "127.0.0.1:%d" % free_port()
    (cfg / "auth.session").write_text(session.replace(srv.addr, dead))
    cmd = ("users", "add", "erin", "erin-id")
    r = auth(tmp_path, *cmd)
    assert r.returncode == 5, r.stderr
    op = re.search(r"operation ([0-9a-f]{32})", r.stderr).group(1)
    pending = (cfg / "auth-admin.pending").read_text()
    assert pending.startswith("op " + op)
    (cfg / "auth.session").write_text(session)
    # The same command sends the persisted id; a different one would not.
    r = auth(tmp_path, *cmd)
    assert r.returncode == 0 and "sending again" in r.stderr and op in r.stderr, r.stderr
    assert not (cfg / "auth-admin.pending").exists()
    # Sent once more with that id (a reply lost after it was applied): the
    # recorded answer, not "a user of that name exists".
    (cfg / "auth-admin.pending").write_text(pending)
    r = auth(tmp_path, *cmd)
    assert r.returncode == 0 and re.search(r"^erin\s+erin-id$", r.stdout, re.M), r.stderr
    # Without the pending id it is a new request, refused as a duplicate.
    assert auth(tmp_path, *cmd).returncode == 4
    # The pending id reused for another request: operation_intent_mismatch (exit 6).
    (cfg / "auth-admin.pending").write_text(pending.replace("erin-id", "erin-2"))
    r = auth(tmp_path, "users", "add", "erin", "erin-2")
    assert r.returncode == 6 and "operation_intent_mismatch" in r.stderr, r.stderr

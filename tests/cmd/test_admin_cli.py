"""`cairn admin --data DIR ...` on a data directory, without a server:
accounts, tokens, grants, exit codes and file modes."""
import os
import re
import stat

import pytest

from conftest import binary, run

CRED = re.compile(r"^[A-Za-z0-9._-]+:[!-~]+\n$")


def admin(data, *args, env=None):
    # No CAIRN_ADMIN_TOKEN: the first run must create admin.token itself.
    full = {"CAIRN_ADMIN_TOKEN": ""}
    full.update(env or {})
    return run([binary("cairn"), "admin", "--data", str(data)] + list(args), env=full)


def ok(data, *args):
    r = admin(data, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_first_run_creates_private_files(data):
    assert ok(data, "account", "list").splitlines()[0].split("\t")[0] == "admin"
    assert mode(data) == 0o700
    assert mode(data / "admin.token") == 0o600
    assert mode(data / "identity.key") == 0o600
    assert mode(data / "meta.db") == 0o600
    cred = (data / "admin.token").read_text()
    assert CRED.match(cred)
    token_id = cred.split(":", 1)[0]
    tokens = ok(data, "token", "list")
    assert token_id in tokens
    # Never a secret in any listing.
    assert cred.strip().split(":", 1)[1] not in tokens
    # Idempotent: a second run keeps the same credential.
    ok(data, "account", "list")
    assert (data / "admin.token").read_text() == cred


def test_accounts(data):
    assert ok(data, "account", "create", "alice", "--email", "Alice@Example.com") == ""
    ok(data, "account", "create", "bob")
    rows = [line.split("\t") for line in ok(data, "account", "list").splitlines()]
    names = [r[0] for r in rows]
    assert names == ["admin", "alice", "bob"]
    alice = rows[1]
    assert alice[1] == "alice@example.com" and alice[2] == "active"
    # Duplicates fail with status 1.
    r = admin(data, "account", "create", "alice")
    assert r.returncode == 1 and "exists" in r.stderr
    r = admin(data, "account", "create", "carol", "--email", "alice@example.com")
    assert r.returncode == 1
    r = admin(data, "account", "create", "bad name")
    assert r.returncode == 1
    ok(data, "account", "disable", "bob")
    rows = dict((line.split("\t")[0], line.split("\t")) for line in
                ok(data, "account", "list").splitlines())
    assert rows["bob"][2] == "disabled"
    ok(data, "account", "enable", "bob")
    r = admin(data, "account", "disable", "nobody")
    assert r.returncode == 1 and "nobody" in r.stderr


def test_tokens(data):
    ok(data, "account", "create", "alice")
    r = admin(data, "token", "create", "--account", "alice", "--perm", "object:get",
              "--perm", "blobs:read")
    assert r.returncode == 0, r.stderr
    assert CRED.match(r.stdout), repr(r.stdout)        # exactly id:secret, nothing else
    token_id, secret = r.stdout.strip().split(":", 1)
    listing = ok(data, "token", "list")
    assert secret not in listing
    row = [line.split("\t") for line in listing.splitlines() if line.startswith(token_id)][0]
    assert row[1] == "alice" and row[2] == "active"
    assert row[4] == "object:get blobs:read"
    # The default set: everything but admin.
    out = ok(data, "token", "create", "--account", "alice")
    default_id = out.split(":", 1)[0]
    row = [line.split("\t") for line in ok(data, "token", "list", "--account", "alice")
           .splitlines() if line.startswith(default_id)][0]
    assert "admin" not in row[4].split() and "object:put" in row[4].split()
    # Two tokens are distinct.
    assert default_id != token_id
    # Revoke.
    assert ok(data, "token", "revoke", token_id) == ""
    row = [line.split("\t") for line in ok(data, "token", "list").splitlines()
           if line.startswith(token_id)][0]
    assert row[2] == "revoked"
    r = admin(data, "token", "revoke", "NO-SUCH-TOKEN")
    assert r.returncode == 1
    r = admin(data, "token", "create", "--account", "nobody")
    assert r.returncode == 1 and r.stdout == ""


def test_grants(data):
    ok(data, "account", "create", "alice")
    ok(data, "grant", "--namespace", "builds", "--account", "alice", "--action", "read")
    ok(data, "grant", "--namespace", "builds", "--account", "alice", "--action", "write")
    ok(data, "grant", "--namespace", "other", "--account", "alice", "--action", "read")
    assert ok(data, "grants", "--namespace", "builds") == "builds\talice\tread,write\n"
    assert len(ok(data, "grants").splitlines()) == 2
    ok(data, "revoke", "--namespace", "builds", "--account", "alice", "--action", "write")
    assert ok(data, "grants", "--namespace", "builds") == "builds\talice\tread\n"
    ok(data, "revoke", "--namespace", "builds", "--account", "alice")
    assert ok(data, "grants", "--namespace", "builds") == ""
    r = admin(data, "revoke", "--namespace", "builds", "--account", "alice")
    assert r.returncode == 1
    r = admin(data, "grant", "--namespace", "x", "--account", "nobody", "--action", "read")
    assert r.returncode == 1


@pytest.mark.parametrize("args", [
    [],
    ["account"],
    ["account", "frobnicate", "x"],
    ["account", "create"],
    ["account", "create", "a", "b"],
    ["account", "list", "extra"],
    ["token", "create"],                                  # --account missing
    ["token", "create", "--account", "admin", "--perm", "object:fly"],
    ["token", "revoke"],
    ["grant", "--namespace", "n", "--account", "admin"],  # --action missing
    ["grant", "--namespace", "n", "--account", "admin", "--action", "delete"],
    ["nonsense"],
    ["account", "list", "--bogus"],
])
def test_usage_errors_exit_2(data, args):
    r = admin(data, *args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert "usage:" in r.stderr
    assert r.stdout == ""


def test_data_is_required(tmp_path):
    r = run([binary("cairn"), "admin", "account", "list"], env={"CAIRN_ADMIN_TOKEN": ""})
    assert r.returncode == 2


def test_env_admin_token(data):
    env = {"CAIRN_ADMIN_TOKEN": "cliadmin:cli-secret:with-colon"}
    r = admin(data, "token", "list", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("cliadmin\tadmin\tactive")
    assert not (data / "admin.token").exists()
    assert "cli-secret" not in r.stdout + r.stderr

"""One identity key for a fleet (issue 24, docs/fleet.md "One identity key"),
and `cairn admin --meta` on a fleet's PostgreSQL.

Token secrets are sealed with the identity key; the metadata database keeps
a check value of the key it was first used with.  Nodes started with
`--identity-key FILE` (or `[server] identity_key`) on one database share
tokens; a node with another key refuses to start (exit 1, the message names
the key) instead of answering InvalidAccessKeyId later.  `cairn admin
--meta URL --identity-key FILE` works on the fleet's database without a data
directory."""
import os
import sys

import pytest

from conftest import ADMIN_TOKEN, Server, binary, run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleetutil import key_file, needs_pg, pg  # noqa: E402,F401
from s3fixtures import S3Server, s3_args  # noqa: E402

REFUSED = "is not the key this metadata database was first used with"


def node(tmp_path, name, uri, key, extra=()):
    return Server(tmp_path / name, args=s3_args(["--meta", uri, "--identity-key", key] +
                                                list(extra)))


def admin(*args, env=None):
    return run([binary("cairn"), "admin"] + list(args), env=env or {})


def refused_start(srv):
    with pytest.raises(RuntimeError) as err:
        srv.start(wait_for=("http", "jay"), timeout=30)
    assert srv.proc.returncode == 1
    return str(err.value)


@needs_pg
def test_shared_key_across_nodes(pg, tmp_path):
    """Two nodes on one key (one by flag, one by its config file): a token
    made through one node's data dir works on the other; neither writes a
    DATA/identity.key; a third node with another key refuses and records
    nothing."""
    uri = pg.create_db("shared")
    key = key_file(tmp_path / "fleet.key")
    a = S3Server(node(tmp_path, "a", uri, key).start(wait_for=("http", "jay")))
    conf = tmp_path / "b.toml"
    conf.write_text('[server]\nidentity_key = "%s"\n' % key)
    b = S3Server(Server(tmp_path / "b", args=s3_args(["--meta", uri, "--config", str(conf)]))
                 .start(wait_for=("http", "jay")))
    c = None
    try:
        for n in (a, b):
            assert not os.path.exists(os.path.join(n.data_dir, "identity.key"))
        r = admin("--data", a.data_dir, "--meta", uri, "--identity-key", key,
                  "account", "create", "bob")
        assert r.returncode == 0, r.stderr
        r = admin("--data", a.data_dir, "--meta", uri, "--identity-key", key,
                  "token", "create", "--account", "bob", "--perm", "all")
        assert r.returncode == 0, r.stderr
        tid, secret = r.stdout.strip().split(":", 1)
        a.client(tid, secret).create_bucket(Bucket="shared")
        b.client(tid, secret).put_object(Bucket="shared", Key="k", Body=b"via b")
        # Blobs are each node's own here (no --blob-store): metadata through a.
        listed = a.client(tid, secret).list_objects_v2(Bucket="shared")["Contents"]
        assert [(o["Key"], o["Size"]) for o in listed] == [("k", 5)]
        # The administrator (CAIRN_ADMIN_TOKEN, re-sealed by each node's
        # bootstrap under the one key) works on both.
        a.client().create_bucket(Bucket="admins")
        assert [x["Name"] for x in b.client().list_buckets()["Buckets"]] == ["admins"]

        before = pg.psql("SELECT kcv FROM cn_identity_key", db="shared").strip()
        assert len(before) == 64
        c = node(tmp_path, "c", uri, key_file(tmp_path / "other.key"))
        out = refused_start(c)
        assert REFUSED in out and "other.key" in out
        assert pg.psql("SELECT kcv FROM cn_identity_key", db="shared").strip() == before
        # The running nodes still serve the token.
        assert b.client(tid, secret).get_object(Bucket="shared",
                                                Key="k")["Body"].read() == b"via b"
        assert a.client(tid, secret).list_objects_v2(Bucket="shared")["KeyCount"] == 1
    finally:
        for n in (a, b):
            n.server.stop()


@needs_pg
def test_key_flag_errors(pg, tmp_path):
    """A named key file that is missing stops cairnd (exit 1, never created);
    an empty --identity-key is a usage error (exit 2)."""
    uri = pg.create_db("flags")
    missing = tmp_path / "nokey"
    out = refused_start(node(tmp_path, "m", uri, str(missing)))
    assert "identity key %s: no such file" % missing in out
    assert not missing.exists()
    r = run([binary("cairnd"), "--data", str(tmp_path / "e"), "--identity-key", ""])
    assert r.returncode == 2 and "--identity-key needs a file" in r.stderr


def test_sqlite_key_checked(tmp_path):
    """On the embedded engine nothing changes for a data dir that keeps its
    key (a restart serves as before); a replaced DATA/identity.key is now
    refused at start instead of failing every token later."""
    data = tmp_path / "solo"
    srv = S3Server(Server(data, args=s3_args()).start(wait_for=("http", "jay")))
    srv.client().create_bucket(Bucket="solo")
    srv.server.stop()
    srv = S3Server(srv.server.start(wait_for=("http", "jay")))
    assert "solo" in [x["Name"] for x in srv.client().list_buckets()["Buckets"]]
    srv.server.stop()
    os.unlink(str(data / "identity.key"))
    key_file(data / "identity.key")
    out = refused_start(Server(data, args=s3_args()))
    assert REFUSED in out


@needs_pg
def test_admin_meta(pg, tmp_path):
    """cairn admin --meta URL --identity-key FILE without a data directory
    (and its CAIRN_META / CAIRN_IDENTITY_KEY forms): accounts and tokens on
    the fleet's database, served by a node at once; a revoked token is
    listed as revoked and refused by a node that had not cached it; the
    wrong key is refused with exit 1; usage errors exit 2."""
    uri = pg.create_db("admin")
    key = key_file(tmp_path / "fleet.key")
    a = S3Server(node(tmp_path, "a", uri, key).start(wait_for=("http", "jay")))
    try:
        r = admin("--meta", uri, "--identity-key", key, "account", "create", "carol")
        assert r.returncode == 0, r.stderr
        env = {"CAIRN_META": uri, "CAIRN_IDENTITY_KEY": key}
        r = admin("token", "create", "--account", "carol", "--perm", "all", env=env)
        assert r.returncode == 0, r.stderr
        tid, secret = r.stdout.strip().split(":", 1)
        a.client(tid, secret).create_bucket(Bucket="carols")
        r = admin("--meta", uri, "--identity-key", key, "account", "list")
        assert r.returncode == 0 and "carol\t" in r.stdout and "admin\t" in r.stdout

        r = admin("--meta", uri, "--identity-key", key, "token", "create", "--account", "carol")
        assert r.returncode == 0, r.stderr
        tid2, secret2 = r.stdout.strip().split(":", 1)
        r = admin("--meta", uri, "--identity-key", key, "token", "revoke", tid2)
        assert r.returncode == 0, r.stderr
        r = admin("token", "list", "--account", "carol", env=env)
        rows = dict((line.split("\t")[0], line.split("\t")[2]) for line in r.stdout.splitlines())
        assert rows == {tid: "active", tid2: "revoked"}
        with pytest.raises(Exception) as err:
            a.client(tid2, secret2).list_buckets()
        assert "InvalidAccessKeyId" in str(err.value)

        r = admin("--meta", uri, "--identity-key", key_file(tmp_path / "bad.key"),
                  "account", "list")
        assert r.returncode == 1 and REFUSED in r.stderr and "carol" not in r.stdout
        r = admin("--meta", uri, "account", "list")
        assert r.returncode == 2 and "needs --identity-key" in r.stderr
        r = admin("--meta", "mysql://x", "--identity-key", key, "account", "list")
        assert r.returncode == 2 and "--meta wants" in r.stderr
        r = admin("account", "list")
        assert r.returncode == 2 and "--data DIR or --meta URL" in r.stderr
    finally:
        a.server.stop()


def test_admin_meta_sqlite(tmp_path):
    """--meta sqlite:PATH with --data: the metadata there, the key from DATA
    (the embedded form of the same flag)."""
    data = tmp_path / "d"
    db = tmp_path / "elsewhere.db"
    env = {"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN}
    r = admin("--data", str(data), "--meta", "sqlite:%s" % db, "account", "create", "dave",
              env=env)
    assert r.returncode == 0, r.stderr
    assert db.exists() and not (data / "meta.db").exists()
    r = admin("--data", str(data), "--meta", "sqlite:%s" % db, "account", "list", env=env)
    assert "dave\t" in r.stdout

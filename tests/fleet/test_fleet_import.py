"""`cairn admin fleet import --from DATA` (issue 24, docs/fleet.md "Moving an
embedded deployment in"): a stopped embedded cairnd (buckets and objects,
blob-op namespaces, a Scribe repository with two commits, a token) moved
into PostgreSQL and a blob tier (a backend cairnd, as test_blob_tier.py);
a fleet node started on it serves every object byte-identical, the blobs,
the repository's history and contents, and the token.  An import stopped
midway (CAIRN_IMPORT_STOP_AFTER, the command's test hook) resumes to the
same result; a finished or used target is refused."""
import os
import re
import shutil
import sys

import pytest

from conftest import ADMIN_TOKEN, Server, binary, run

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scribe"))
from fleetutil import list_keys, needs_pg, pg  # noqa: E402,F401
from s3fixtures import S3Server, s3_args  # noqa: E402
from blobsclient import Ops, b3  # noqa: E402
from scribe_wire import CHUNK, Conn, chunk_id, file_objects  # noqa: E402
import test_fleet_three as three  # noqa: E402

pytestmark = needs_pg

FACES = ["--jay", "127.0.0.1:0", "--scribe", "127.0.0.1:0", "--http", "127.0.0.1:0"]
BUCKET = "tier"


class Source:
    """The embedded deployment, filled once and stopped."""

    def __init__(self, base):
        self.dir = base / "src"
        srv = Server(self.dir, args=FACES).start(wait_for=("http", "jay", "scribe"))
        try:
            s3 = S3Server(srv)
            c = s3.client()
            c.create_bucket(Bucket="moved")
            # Small ones go to pack files, larger ones to files of their own.
            self.objects = {"k/%d" % i: os.urandom(n) for i, n in
                            enumerate((0, 100, 5000, 70000, 300000, 1500000))}
            for k, v in self.objects.items():
                c.put_object(Bucket="moved", Key=k, Body=v, ContentType="text/x-" + k[-1])
            ops = Ops(srv)
            self.blobs = [os.urandom(n) for n in (10, 40000, 250000)]
            for b in self.blobs:
                st, body = ops.put("moved/ns", b)
                assert st == 200, body
            conn = Conn(srv.addrs["scribe"])
            repo = three.ScribeRepo(conn, conn.repo_create("moved"))
            self.files = {"a.txt": b"alpha\n" * 50, "big.bin": os.urandom(1 << 20)}
            assert repo.submit(self.files, message="first")["change"] == 1
            assert repo.submit({"b.txt": b"beta"}, base=1, message="second")["change"] == 2
            conn.close()
            self.key, self.secret = s3.new_account("dave", ["all"])
        finally:
            srv.stop()


@pytest.fixture(scope="module")
def env(pg, tmp_path_factory):
    base = tmp_path_factory.mktemp("import")
    src = Source(base)
    backend = S3Server(Server(base / "backend", args=s3_args()).start(wait_for=("http", "jay")))
    backend.client().create_bucket(Bucket=BUCKET)
    creds = base / "blob.creds"
    creds.write_text(ADMIN_TOKEN + "\n")
    key = base / "fleet.key"  # the fleet keeps the source's key
    shutil.copy(src.dir / "identity.key", key)
    os.chmod(key, 0o600)
    try:
        yield dict(base=base, src=src, backend=backend, creds=str(creds), key=str(key), pg=pg)
    finally:
        backend.server.stop()


def tier(env, prefix):
    """The blob tier's flags (prefix None: the node's local store)."""
    if prefix is None:
        return []
    return ["--blob-store", "s3://%s/%s" % (BUCKET, prefix),
            "--blob-endpoint", env["backend"].endpoint, "--blob-credentials", env["creds"]]


def do_import(env, uri, prefix, stop=None, key=None, blob_dir=None):
    extra = {"CAIRN_IMPORT_STOP_AFTER": str(stop)} if stop else {}
    blobs = ["--blob-dir", str(blob_dir)] if blob_dir else tier(env, prefix)
    return run([binary("cairn"), "admin", "--meta", uri, "--identity-key", key or env["key"],
                "fleet", "import", "--from", str(env["src"].dir)] + blobs,
               env=extra, timeout=120)


def check_node(env, uri, prefix, name):
    """A fleet node on the imported database serves all of the source."""
    src = env["src"]
    srv = Server(env["base"] / name, args=FACES + [
        "--meta", uri, "--identity-key", env["key"], "--node-id", name] + tier(env, prefix))
    node = S3Server(srv.start(wait_for=("http", "jay", "scribe")))
    try:
        c = node.client()
        listed = c.list_objects_v2(Bucket="moved")["Contents"]
        assert [(o["Key"], o["Size"]) for o in listed] == \
            sorted((k, len(v)) for k, v in src.objects.items())
        for k, v in src.objects.items():
            r = c.get_object(Bucket="moved", Key=k)
            assert r["Body"].read() == v and r["ContentType"] == "text/x-" + k[-1], k
        ops = Ops(srv)
        assert ops.have("moved/ns", [b3(b) for b in src.blobs]) == [True] * len(src.blobs)
        for b in src.blobs:
            r = ops.fetch("moved/ns", b3(b))
            assert r.status_code == 200 and r.content == b
        # The repository: its history, its tree and a clone's reads.
        conn = Conn(srv.addrs["scribe"])
        try:
            repo = three.ScribeRepo(conn, conn.repo_info(name="moved"))
            assert [(x["change"], x["message"]) for x in conn.log(repo.id, repo.main)] == \
                [(2, "second"), (1, "first")]
            tree, more, _, _ = conn.tree_page(repo.id, repo.main, 2)
            sizes = dict(src.files, **{"b.txt": b"beta"})
            assert {t["path"]: t["size"] for t in tree} == {p: len(v) for p, v in sizes.items()}
            chunks, _, _ = file_objects(src.files["big.bin"])
            got = conn.get_objects(repo.id, [(CHUNK, chunk_id(ch)) for ch in chunks])
            assert b"".join(g[2] for g in got) == src.files["big.bin"]
            # Submits go on from the imported head, numbered after it.
            assert repo.submit({"c.txt": b"gamma"}, base=2)["change"] == 3
        finally:
            conn.close()
        # The token made on the embedded deployment signs requests (a wrong
        # one is InvalidAccessKeyId); rows made now take ids after the
        # imported ones (buckets, accounts, tokens).
        c2 = node.client(src.key, src.secret)
        assert c2.list_buckets()["Buckets"] == []
        c2.create_bucket(Bucket="daves-" + name)
        c2.put_object(Bucket="daves-" + name, Key="x", Body=b"new")
        assert c2.get_object(Bucket="daves-" + name, Key="x")["Body"].read() == b"new"
        admin = [binary("cairn"), "admin", "--meta", uri, "--identity-key", env["key"]]
        assert run(admin + ["account", "create", "erin"]).returncode == 0
        r = run(admin + ["token", "create", "--account", "erin", "--perm", "all"])
        assert r.returncode == 0, r.stderr
        tid, secret = r.stdout.strip().split(":", 1)
        assert node.client(tid, secret).list_buckets()["Buckets"] == []
        # The blobs went to the tier (or the node's own store).
        assert prefix is None or list_keys(env["backend"].client(), BUCKET, prefix + "/")
    finally:
        srv.stop()


def summary(out):
    """(blobs, uploaded) of the last line: "imported ID: N blobs (U uploaded, B bytes)"."""
    m = re.search(r"^imported import-[0-9a-f]{32}: (\d+) blobs \((\d+) uploaded", out, re.M)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def test_import_and_serve(env):
    uri = env["pg"].create_db("imp1")
    r = do_import(env, uri, "p1")
    assert r.returncode == 0, r.stderr
    blobs, uploaded = summary(r.stdout)
    assert blobs == uploaded and blobs >= 3 + 5  # the blob ops, the objects, the repo's
    tables = [ln for ln in r.stdout.splitlines() if ln.startswith("table ")]
    assert "table cn_accounts: 2 rows" in tables and "table obj_bucket: 1 rows" in tables
    env["tables"] = len(tables)
    check_node(env, uri, "p1", "n1")
    # Twice into the same (now used) database: refused, nothing changed.
    r = do_import(env, uri, "p1")
    assert r.returncode == 6 and "not empty" in r.stderr, (r.returncode, r.stderr)


def test_import_stopped_midway_resumes(env):
    uri = env["pg"].create_db("imp2")
    r = do_import(env, uri, "p2", stop=4)
    assert r.returncode == 1 and "stopped after 4 steps" in r.stderr, r.stderr
    copied = [ln for ln in r.stdout.splitlines() if ln.startswith("table ")]
    assert len(copied) == 4
    if "tables" not in env:  # run alone: count them on a scratch import
        r = do_import(env, env["pg"].create_db("imp0"), "p0")
        env["tables"] = r.stdout.count("\ntable ") + r.stdout.startswith("table ")
    # Past every table and two blobs uploaded; then to the end.
    r = do_import(env, uri, "p2", stop=env["tables"] - 4 + 2)
    assert r.returncode == 1 and "stopped after" in r.stderr, r.stderr
    assert r.stdout.count("copied before") == 4
    assert r.stdout.count(" rows\n") == env["tables"] - 4
    r = do_import(env, uri, "p2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("copied before") == env["tables"] and " rows" not in r.stdout
    blobs, uploaded = summary(r.stdout)
    assert uploaded == blobs - 2  # the two already there were checked, not sent
    check_node(env, uri, "p2", "n2")


def test_import_into_local_blobs(env):
    """--blob-dir: PostgreSQL metadata with blobs in a node's own store."""
    uri = env["pg"].create_db("imp5")
    r = do_import(env, uri, None, blob_dir=env["base"] / "n5")
    assert r.returncode == 0, r.stderr
    check_node(env, uri, None, "n5")


def test_import_refusals(env, tmp_path):
    # A database a node already runs on (another deployment) is refused.
    uri = env["pg"].create_db("imp3")
    srv = Server(tmp_path / "other", args=s3_args(["--meta", uri, "--identity-key", env["key"]]))
    srv.start(wait_for=("http", "jay"))
    srv.stop()
    r = do_import(env, uri, "p3")
    assert r.returncode == 6 and "not empty" in r.stderr, (r.returncode, r.stderr)
    # Another identity key than the source's: token secrets are not resealed.
    other = tmp_path / "other.key"
    other.write_text(os.urandom(32).hex() + "\n")
    r = do_import(env, env["pg"].create_db("imp4"), "p4", key=str(other))
    assert r.returncode == 1 and "is not the key of" in r.stderr, r.stderr
    # Usage: no --from, no blob target, no --meta.
    for args in (["fleet", "import"], ["fleet", "import", "--from", "x"]):
        r = run([binary("cairn"), "admin", "--meta", uri] + args)
        assert r.returncode == 2, args
    r = run([binary("cairn"), "admin", "fleet", "import", "--from", "x", "--blob-dir", "y"])
    assert r.returncode == 2

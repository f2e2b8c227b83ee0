"""Rotating the identity key (issue 24, docs/identity.md "Rotating the
identity key"), through real cairnd and `cairn admin` processes.

The runbook: (1) restart the nodes with the new key as --identity-key and the
old one as --identity-key-previous, (2) run `cairn admin identity rotate-key
--new NEW --old OLD`, (3) restart without the previous key.  Tokens made
under the old key sign S3 requests at every step, a token made mid-rotation
too; a rotation killed mid-pass and run again completes; after it a node
holding only the old key is refused with a message that says so.  Once on
the embedded engine (one data dir, its own identity.key as the old key) and
once on PostgreSQL with two nodes."""
import hashlib
import hmac
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import Server, binary, run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleetutil import key_file, needs_pg, pg  # noqa: E402,F401
from s3fixtures import S3Server, s3_args  # noqa: E402

REFUSED = "is not the key this metadata database was first used with or rotated to"


def kcv_of(path):
    key = bytes.fromhex(open(path).read().strip())
    return hmac.new(key, b"cairn identity key check v1", hashlib.sha256).hexdigest()


def admin(*args, env=None):
    return run([binary("cairn"), "admin"] + list(args), env=env or {}, timeout=120)


def key_args(current, previous=None):
    a = ["--identity-key", current] if current else []
    return a + (["--identity-key-previous", previous] if previous else [])


def make_tokens(base, n):
    """Account bob and n tokens through `cairn admin` (base: its global options)."""
    r = admin(*base, "account", "create", "bob")
    assert r.returncode == 0 or "exists" in r.stderr, r.stderr
    toks = []
    for _ in range(n):
        r = admin(*base, "token", "create", "--account", "bob", "--perm", "all")
        assert r.returncode == 0, r.stderr
        toks.append(tuple(r.stdout.strip().split(":", 1)))
    return toks


def signs(node, toks, bucket):
    """Every token signs a listing of bucket (SigV4: the node opened its secret)."""
    for tid, secret in toks:
        assert node.client(tid, secret).list_objects_v2(Bucket=bucket)["KeyCount"] == 1, tid


def rotate(base, new, old, env=None, batch="2"):
    return admin(*base, "identity", "rotate-key", "--new", new, "--old", old, "--batch", batch,
                 env=env)


def rotate_killed_midway(base, new, old):
    """A rotate-key paused after two committed batches (CAIRN_ROTATE_PAUSE_AFTER),
    then killed with SIGKILL, as a crash would."""
    env = dict(os.environ, CAIRN_ROTATE_PAUSE_AFTER="2")
    p = subprocess.Popen([binary("cairn"), "admin"] + list(base) +
                         ["identity", "rotate-key", "--new", new, "--old", old, "--batch", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = ""
    deadline = time.time() + 120
    while "rotate-key: paused" not in seen and time.time() < deadline:
        line = p.stderr.readline()
        if not line and p.poll() is not None:
            break
        seen += line
    assert "rotate-key: paused" in seen, seen
    p.send_signal(signal.SIGKILL)
    p.wait()
    p.stdout.close()
    p.stderr.close()
    assert "rotate-key: 4 tokens read" in seen, seen  # two batches of two committed


def counts(stdout):
    w = stdout.split()
    return dict(zip(w[0::2], map(int, w[1::2])))


def refused_start(srv):
    with pytest.raises(RuntimeError) as err:
        srv.start(wait_for=("http", "jay"), timeout=60)
    assert srv.proc.returncode == 1
    return str(err.value)


def test_rotate_embedded(tmp_path):
    data = tmp_path / "solo"
    base = ["--data", str(data)]
    srv = S3Server(Server(data, args=s3_args()).start(wait_for=("http", "jay")))
    old = str(data / "identity.key")
    new = key_file(tmp_path / "new.key")
    toks = make_tokens(base, 6)
    srv.client(*toks[0]).create_bucket(Bucket="rot")
    srv.client(*toks[0]).put_object(Bucket="rot", Key="k", Body=b"x")
    signs(srv, toks, "rot")
    srv.server.stop()
    kcv = str(data / "meta.db")

    def recorded():
        with sqlite3.connect(kcv) as db:
            return db.execute("SELECT kcv FROM cn_identity_key").fetchone()[0]

    assert recorded() == kcv_of(old)
    # (1) new as current, old as previous: old tokens sign; one made now too.
    srv = S3Server(Server(data, args=s3_args(key_args(new, old))).start(wait_for=("http", "jay")))
    assert "identity key rotation in progress" in srv.server.output(srv.server.log_offset)
    signs(srv, toks, "rot")
    # Without the previous key, cairn admin is refused (the recorded value is old's).
    r = admin(*base, *key_args(new), "token", "list")
    assert r.returncode == 1 and REFUSED in r.stderr, r.stderr
    toks += make_tokens(base + key_args(new, old), 1)
    signs(srv, toks[-1:], "rot")
    # (2) killed mid-pass: nothing recorded yet, every token still signs.
    rotate_killed_midway(base, new, old)
    assert recorded() == kcv_of(old)
    signs(srv, toks, "rot")
    r = rotate(base, new, old)
    assert r.returncode == 0, r.stderr
    c = counts(r.stdout)
    # 7 tokens and the administrator; 4 re-sealed before the kill, 1 made new.
    assert c["read"] == 8 and c["unreadable"] == 0, c
    assert c["current"] >= 5 and c["resealed"] + c["current"] == 8, c
    assert recorded() == kcv_of(new)
    signs(srv, toks, "rot")
    r = rotate(base, new, old)  # again: nothing left to do
    assert r.returncode == 0 and counts(r.stdout)["resealed"] == 0, r.stdout + r.stderr
    srv.server.stop()
    # (3) the previous key dropped: everything still signs.
    srv = S3Server(Server(data, args=s3_args(key_args(new))).start(wait_for=("http", "jay")))
    signs(srv, toks, "rot")
    assert "rotation in progress" not in srv.server.output(srv.server.log_offset)
    srv.server.stop()
    # A node with only the old key (DATA/identity.key) is refused, clearly.
    out = refused_start(Server(data, args=s3_args()))
    assert REFUSED in out and "identity.key" in out, out
    # A rotation whose --old is not the fleet's key is refused, changing nothing.
    other = key_file(tmp_path / "other.key")
    r = rotate(base, other, str(tmp_path / "other.key"))
    assert r.returncode == 1, r.stderr
    r = rotate(base, key_file(tmp_path / "third.key"), other)
    assert r.returncode == 1 and "neither" in r.stderr, r.stderr
    assert recorded() == kcv_of(new)


def test_rotate_usage(tmp_path):
    r = admin("--data", str(tmp_path / "d"), "identity", "rotate-key", "--new", "x")
    assert r.returncode == 2 and "--new FILE and --old FILE" in r.stderr, r.stderr
    r = admin("identity", "rotate-key", "--new", "x", "--old", "y", env={"CAIRN_META": ""})
    assert r.returncode == 2, r.stderr
    r = run([binary("cairnd"), "--data", str(tmp_path / "e"), "--identity-key-previous", ""])
    assert r.returncode == 2 and "--identity-key-previous needs a file" in r.stderr
    conf = tmp_path / "c.toml"
    conf.write_text("[server]\nidentity_key_previous = 5\n")
    r = run([binary("cairnd"), "--data", str(tmp_path / "e"), "--config", str(conf)])
    assert r.returncode == 2 and "identity_key_previous must be" in r.stderr, r.stderr


@needs_pg
def test_rotate_fleet_pg(pg, tmp_path):
    """Two nodes on PostgreSQL: the same runbook, a node restarted at a time,
    tokens made through either node before and during the rotation."""
    uri = pg.create_db("keyrot")
    old = key_file(tmp_path / "old.key")
    new = key_file(tmp_path / "new.key")
    names = ("a", "b")

    def node(name, keys):
        return S3Server(Server(tmp_path / name, args=s3_args(["--meta", uri] + keys))
                        .start(wait_for=("http", "jay")))

    nodes = [node(n, key_args(old)) for n in names]
    base = ["--meta", uri]
    try:
        toks = make_tokens(base + key_args(old), 4)
        nodes[0].client(*toks[0]).create_bucket(Bucket="rot")
        nodes[1].client(*toks[0]).put_object(Bucket="rot", Key="k", Body=b"x")
        # (1) one node at a time: the fleet keeps serving every token.  Node b
        # takes its keys from its config file (an array of previous keys).
        conf = tmp_path / "b.toml"
        conf.write_text('[server]\nidentity_key = "%s"\nidentity_key_previous = ["%s"]\n'
                        % (new, old))
        for i, n in enumerate(names):
            nodes[i].server.stop()
            nodes[i] = node(n, key_args(new, old) if n == "a" else ["--config", str(conf)])
            for s in nodes:
                signs(s, toks, "rot")
        toks += make_tokens(base + key_args(new, old), 1)
        # (2) killed mid-pass, then run to the end, while both nodes serve.
        rotate_killed_midway(base, new, old)
        for s in nodes:
            signs(s, toks, "rot")
        r = rotate(base, new, old)
        assert r.returncode == 0, r.stderr
        c = counts(r.stdout)
        assert c["read"] == 6 and c["unreadable"] == 0 and c["current"] >= 5, c
        assert pg.psql("SELECT kcv FROM cn_identity_key", db="keyrot").strip() == kcv_of(new)
        for s in nodes:
            signs(s, toks, "rot")
        # (3) the previous key dropped, a node at a time.
        for i, n in enumerate(names):
            nodes[i].server.stop()
            nodes[i] = node(n, key_args(new))
            for s in nodes:
                signs(s, toks, "rot")
        out = refused_start(Server(tmp_path / "c", args=s3_args(["--meta", uri] +
                                                                 key_args(old))))
        assert REFUSED in out and "old.key" in out, out
    finally:
        for s in nodes:
            s.server.stop()

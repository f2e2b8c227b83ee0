"""A public clone without a credential (issue 22, docs/protocol/scribe.md
16.1, docs/workspace.md "Public clones"): `cairn repo clone scribes://...`
by a caller that is not signed in fetches every file chunk with get_chunks
(30), each chunk with its file's manifest as witness, through one real
cairnd serving --auth, --scribe-tls and --http (for /_cairn/metrics, whose
per-opcode request counts show which opcode carried the chunks) on one
auth-initialised data directory.

What each test proves: an anonymous clone of a public-read repository is
byte-identical to the writer's workspace (contents, the executable bit,
links, an empty file) and was served by get_chunks in requests of at most
1,024 witnesses, while a signed-in reader's clone of the same repository
keeps get_objects; an anonymous clone of a private repository and of an
absent one fail with the same access error and create nothing; a chunk the
repository no longer holds (its membership row removed while cairnd was
down) fails the anonymous clone with an error naming the file, and the
signed-in one too."""
import os
import re
import sqlite3
import urllib.request

import pytest

from conftest import binary, run
from scribe_wire import chunk_id
from test_scribe_v4_auth import NS, World, cli, cli_in, free_port
from test_sau2_listener import init_auth

LONELY = b"a chunk no other file shares 7d1f\n"


@pytest.fixture
def pworld(server_factory, cert, tmp_path):
    """cairnd with --auth, --scribe-tls and --http on one data directory; auth
    on a port of its own, kept across a restart (sign-ins name it)."""
    data = tmp_path / "data"
    init_auth(data)
    conf = tmp_path / "cairnd.toml"
    conf.write_text("[scribe-tls]\nnamespace = \"%s\"\nauth_cache_ms = 500\n" % NS)
    srv = server_factory(args=["--jay", "off", "--http", "127.0.0.1:0", "--auth",
                               "127.0.0.1:%d" % free_port(),
                               "--scribe", "off", "--scribe-tls", "127.0.0.1:0",
                               "--scribe-tls-cert", cert[0], "--scribe-tls-key", cert[1],
                               "--config", str(conf)],
                         data=data, wait_for=("auth", "scribes", "http"))
    srv.addr = "%s:%d" % srv.addrs["auth"]
    w = World(srv, tmp_path, cert)
    yield w
    w.stop()


def url(w, name):
    return "scribes://127.0.0.1:%d/%s" % (w.srv.addrs["scribes"][1], name)


def anon(w, *args, cwd=None):
    """`cairn repo ARGS` on a machine that never signed in."""
    env = {"XDG_CONFIG_HOME": str(w.tmp / "nobody"), "CAIRN_SCRIBE_CA": w.cert[0]}
    return run([binary("cairn"), "repo"] + list(args), env=env, cwd=cwd, timeout=300)


def requests_by_op(w):
    """Scribe requests served so far, by opcode name (the request-duration
    histogram's counts)."""
    host, port = w.srv.addrs["http"]
    with urllib.request.urlopen("http://%s:%d/_cairn/metrics" % (host, port), timeout=30) as r:
        text = r.read().decode()
    out = {}
    for m in re.finditer(r'cairn_request_duration_seconds_count\{face="scribe",op="(\w+)"\} (\d+)',
                         text):
        out[m.group(1)] = int(m.group(2))
    return out


def delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}


def write_tree(d, small):
    """`small` one-chunk files in 10 directories, a 1 MiB random file (several
    chunks), an empty file, an executable, a link and LONELY."""
    for i in range(small):
        sub = os.path.join(d, "s%d" % (i % 10))
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "f%04d.txt" % i), "wb") as f:
            f.write(b"small file %d\n" % i)
    os.makedirs(os.path.join(d, "big"), exist_ok=True)
    with open(os.path.join(d, "big", "blob.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    open(os.path.join(d, "empty"), "wb").close()
    with open(os.path.join(d, "run.sh"), "w") as f:
        f.write("#!/bin/sh\necho public\n")
    os.chmod(os.path.join(d, "run.sh"), 0o755)
    os.symlink("big/blob.bin", os.path.join(d, "link"))
    with open(os.path.join(d, "lonely.txt"), "wb") as f:
        f.write(LONELY)


def snapshot(d):
    """{path: (kind, bytes or link target, executable)} of a workspace's files."""
    out = {}
    for root, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x != ".cairn"]
        for n in files:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, d)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p), False)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", f.read(), bool(os.stat(p).st_mode & 0o100))
    return out


@pytest.fixture
def published(pworld):
    """pub (public-read) and priv, each with files wes (a writer) submitted
    through `cairn repo`; returns (world, {name: repository id}, wes's pub
    workspace)."""
    w = pworld
    for name in ("boss", "wes", "rita"):
        w.user(name)
    w.admin_call("namespace-admins-set", "boss", NS)
    w.admin_call("grants-set", "wes", NS, "writer")
    w.admin_call("grants-set", "rita", NS, "reader")
    w.admin_call("visibility-set", NS, "pub", "public-read")
    boss = w.session(w.access(w.credential("boss")))
    ids = {n: boss.repo_create(n)["id"] for n in ("pub", "priv")}
    for name in ("wes", "rita"):
        cli(w, name, "login", w.srv.addr, "--user", name)
    ws = {}
    for name, small in (("pub", 1100), ("priv", 3)):
        d = str(w.tmp / ("wes-" + name))
        cli_in(w, "wes", None, "clone", url(w, name), d)
        write_tree(d, small)
        cli_in(w, "wes", d, "submit", "-m", "files of " + name)
        ws[name] = d
    return w, ids, ws["pub"]


def test_anonymous_clone_of_a_public_repository_uses_get_chunks(published):
    w, _, src = published
    before = requests_by_op(w)
    d = str(w.tmp / "anon-pub")
    r = anon(w, "clone", url(w, "pub"), d)
    assert r.returncode == 0, r.stdout + r.stderr
    used = delta(before, requests_by_op(w))
    assert snapshot(d) == snapshot(src)
    assert len(snapshot(d)) == 1105
    # 1,100 one-chunk files, a link and the 1 MiB file's chunks: over 1,024
    # witnesses, so at least two get_chunks requests (a request holds 1,024)
    assert used.get("get_chunks", 0) >= 2, used
    # get_objects still carried the manifests and the commits, nothing else:
    # far fewer requests than get_chunks needs for the chunks
    assert used.get("get_objects", 0) >= 1, used
    # a sync with nothing new fetches nothing
    r = anon(w, "sync", cwd=d)
    assert r.returncode == 0, r.stdout + r.stderr
    # a signed-in reader keeps raw-object access: its clone sends no get_chunks
    before = requests_by_op(w)
    env = {"XDG_CONFIG_HOME": str(w.tmp / "rita"), "CAIRN_SCRIBE_CA": w.cert[0]}
    r = run([binary("cairn"), "repo", "clone", url(w, "pub"), str(w.tmp / "rita-pub")], env=env,
            timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    used = delta(before, requests_by_op(w))
    assert used.get("get_chunks", 0) == 0 and used.get("get_objects", 0) >= 1, used
    assert snapshot(str(w.tmp / "rita-pub")) == snapshot(src)


def test_anonymous_sync_fetches_new_files_with_get_chunks(published):
    w, _, src = published
    d = str(w.tmp / "anon-pub")
    assert anon(w, "clone", url(w, "pub"), d).returncode == 0
    with open(os.path.join(src, "s0", "f0000.txt"), "wb") as f:
        f.write(b"changed by the writer\n")
    with open(os.path.join(src, "new.txt"), "wb") as f:
        f.write(b"new file\n")
    cli_in(w, "wes", src, "submit", "-m", "two more")
    before = requests_by_op(w)
    r = anon(w, "sync", cwd=d)
    assert r.returncode == 0, r.stdout + r.stderr
    assert delta(before, requests_by_op(w)).get("get_chunks", 0) == 1
    assert snapshot(d) == snapshot(src)


def test_private_and_absent_repositories_give_one_access_error(published):
    w, _, _ = published
    errors = []
    for name in ("priv", "nosuch"):
        d = str(w.tmp / ("anon-" + name))
        r = anon(w, "clone", url(w, name), d)
        assert r.returncode != 0 and not os.path.exists(d), r.stdout + r.stderr
        errors.append((r.returncode, r.stderr.replace(name, "NAME")))
    assert errors[0] == errors[1], errors
    assert "repository not found" in errors[0][1], errors


def test_a_chunk_the_repository_lacks_names_the_file(published):
    w, ids, _ = published
    w.srv.stop()
    db = sqlite3.connect(os.path.join(w.srv.data_dir, "meta.db"))
    try:
        cur = db.execute("DELETE FROM repos_object WHERE repo = ? AND kind = 1 AND id = ?",
                         (ids["pub"], chunk_id(LONELY)))
        assert cur.rowcount == 1
        db.commit()
    finally:
        db.close()
    w.srv.start(wait_for=("auth", "scribes", "http"))
    w.srv.addr = "%s:%d" % w.srv.addrs["auth"]
    r = anon(w, "clone", url(w, "pub"), str(w.tmp / "anon-broken"))
    assert r.returncode != 0, r.stdout
    assert "lonely.txt" in r.stderr and "get_chunks" in r.stderr, r.stderr
    assert not os.path.exists(str(w.tmp / "anon-broken" / "lonely.txt"))
    # the signed-in fetch (get_objects) names the file too
    env = {"XDG_CONFIG_HOME": str(w.tmp / "rita"), "CAIRN_SCRIBE_CA": w.cert[0]}
    r = run([binary("cairn"), "repo", "clone", url(w, "pub"), str(w.tmp / "rita-broken")],
            env=env, timeout=300)
    assert r.returncode != 0 and "lonely.txt" in r.stderr, r.stderr

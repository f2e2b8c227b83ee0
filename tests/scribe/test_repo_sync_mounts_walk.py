"""Two refinements of verified sync with mounts (issue 22, docs/workspace.md
"Mounts" and "Verified sync"), through one real cairnd (plaintext Scribe and
--http for /_cairn/metrics) and `cairn repo`.

What each test proves: a mount dropped from `.scribe/config.toml` at a later
change has its nested workspace removed by the next sync when it is clean
(and said on stderr), while one with a local edit is kept, said, and its
edit left alone, and the parent's sync still succeeds; a mount the
workspace's own submit drops is pruned by that submit (not at the next
change); the commit walk of a sync across 40 changes is prefetched (one log
page, one get_objects for the commits) instead of one get_objects per
commit, and still lands on the same files; a walk longer than one prefetch
batch (CAIRN_WALK_BATCH=8 here; 5,001 commits against the real 4,096 with
CAIRN_SLOW_TESTS=1) is fetched batch after batch."""
import os
import re
import urllib.request

import pytest

from conftest import assert_no_sanitizer, binary, run
from scribe_wire import ADD, CHANGESET, CHUNK, MANIFEST, MODIFY, Conn, changeset_encode, \
    changeset_id, chunk_id, manifest_encode, manifest_id

ARGS = ["--jay", "off", "--http", "127.0.0.1:0", "--scribe", "127.0.0.1:0"]


def ep_of(s):
    return "%s:%d" % s.addrs["scribe"]


def repo(ep, *args, check=True, env=None):
    r = run([binary("cairn"), "repo"] + list(args) + ["--endpoint", ep], timeout=600, env=env)
    assert_no_sanitizer(r.stderr)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def info(ep, name):
    out = repo(ep, "info", name).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def mounts_config(*mounts):
    text = "version = 1\n"
    for name, path, rid, bid, rev in mounts:
        text += (f'\n[mounts.{name}]\npath = "{path}"\nrepository = "{rid}"\n'
                 f'branch = "{bid}"\nrevision = "{rev}"\n')
    return text.encode()


def requests_by_op(s):
    host, port = s.addrs["http"]
    with urllib.request.urlopen("http://%s:%d/_cairn/metrics" % (host, port), timeout=30) as r:
        text = r.read().decode()
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r'cairn_request_duration_seconds_count\{face="scribe",op="(\w+)"\} (\d+)', text)}


def test_a_mount_dropped_from_the_config_is_removed_when_clean(server_factory, tmp_path):
    s = server_factory(args=ARGS, wait_for=("scribe", "http"))
    ep = ep_of(s)
    for name in ("lib", "tools", "app"):
        repo(ep, "create", name)
    for name in ("lib", "tools"):
        w = str(tmp_path / ("w-" + name))
        repo(ep, "clone", name, w)
        write(os.path.join(w, name + ".txt"), name.encode() + b" v1\n")
        repo(ep, "submit", w, "-m", name + " 1")
    li, ti = info(ep, "lib"), info(ep, "tools")
    lib = ("lib", "vendor/lib", li["id"], li["main"], 1)
    tools = ("tools", "vendor/tools", ti["id"], ti["main"], 1)
    aw, b = str(tmp_path / "aw"), str(tmp_path / "b")
    repo(ep, "clone", "app", aw)
    write(os.path.join(aw, "main.c"), b"int main;\n")
    write(os.path.join(aw, ".scribe/config.toml"), mounts_config(lib, tools))
    repo(ep, "submit", aw, "-m", "two mounts")
    repo(ep, "clone", "app", b)
    for m in ("vendor/lib/lib.txt", "vendor/tools/tools.txt"):
        assert os.path.exists(os.path.join(b, m))

    # lib dropped: the clean nested workspace goes, tools stays
    write(os.path.join(aw, ".scribe/config.toml"), mounts_config(tools))
    repo(ep, "submit", aw, "-m", "drop lib")
    r = repo(ep, "sync", b)
    assert "vendor/lib: mount lib is no longer declared: removed" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(b, "vendor/lib"))
    assert open(os.path.join(b, "vendor/tools/tools.txt"), "rb").read() == b"tools v1\n"
    assert open(os.path.join(b, "main.c"), "rb").read() == b"int main;\n"

    # tools dropped while it holds a local edit: kept, said, the edit intact
    write(os.path.join(b, "vendor/tools/tools.txt"), b"edited here\n")
    write(os.path.join(aw, ".scribe/config.toml"), mounts_config())
    repo(ep, "submit", aw, "-m", "drop tools")
    r = repo(ep, "sync", b)
    assert ("vendor/tools: mount tools is no longer declared: kept, it has local changes"
            in r.stderr), r.stderr
    assert open(os.path.join(b, "vendor/tools/tools.txt"), "rb").read() == b"edited here\n"
    # the parent reached its change all the same
    assert "vendor" not in repo(ep, "status", b).stdout


def test_a_mount_dropped_by_the_workspaces_own_submit_is_pruned_by_that_submit(
        server_factory, tmp_path):
    s = server_factory(args=ARGS, wait_for=("scribe", "http"))
    ep = ep_of(s)
    for name in ("lib", "app"):
        repo(ep, "create", name)
    lw = str(tmp_path / "lw")
    repo(ep, "clone", "lib", lw)
    write(os.path.join(lw, "lib.txt"), b"lib v1\n")
    repo(ep, "submit", lw, "-m", "lib 1")
    li = info(ep, "lib")
    lib = ("lib", "vendor/lib", li["id"], li["main"], 1)
    aw = str(tmp_path / "aw")
    repo(ep, "clone", "app", aw)
    write(os.path.join(aw, "main.c"), b"int main;\n")
    write(os.path.join(aw, ".scribe/config.toml"), mounts_config(lib))
    repo(ep, "submit", aw, "-m", "one mount")
    declared_at = int(info(ep, "app")["head"])
    repo(ep, "sync", aw)  # materialises the mount in the submitting workspace
    assert open(os.path.join(aw, "vendor/lib/lib.txt"), "rb").read() == b"lib v1\n"

    # this workspace drops the mount: its own submit removes the clean nested one
    write(os.path.join(aw, ".scribe/config.toml"), mounts_config())
    r = repo(ep, "submit", aw, "-m", "drop lib")
    assert "vendor/lib: mount lib is no longer declared: removed" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(aw, "vendor"))
    # the submit landed, and the workspace is clean at its change
    assert int(info(ep, "app")["head"]) == declared_at + 1
    assert "vendor" not in repo(ep, "status", aw).stdout
    # a later sync at that same change has nothing left to prune
    r = repo(ep, "sync", aw)
    assert "no longer declared" not in r.stderr, r.stderr
    # the mount's own repository is untouched
    assert info(ep, "lib")["head"] == "1"


def walk_history(s, ep, w, changes):
    """Repository "walk": f.txt added at change 1, w cloned (anchored) there,
    then `changes` more changes rewriting f.txt; the last change."""
    repo(ep, "create", "walk")
    with Conn(s.addrs["scribe"]) as c:
        i = c.repo_info(None, "walk")
        rid, main, inc, ws = i["id"], i["main"], i["incarnation"], os.urandom(16)

        def submit(kind, n, head):
            data = b"revision %d\n" % n
            enc = manifest_encode([data])
            mid = manifest_id(enc)
            cs = changeset_encode([(kind, "f.txt", mid, 0, None)])
            c.put_objects(rid, [(CHUNK, chunk_id(data), data), (MANIFEST, mid, enc),
                                (CHANGESET, changeset_id(cs), cs)])
            o = c.submit(rid, inc, os.urandom(16), main, ws, head, changeset_id(cs), "t", "m")
            assert o["outcome"] == 1, o
            return o["change"]

        last = submit(ADD, 0, c.repo_info(rid)["head"])
        repo(ep, "clone", "walk", w)  # anchored at change 1
        for n in range(1, changes + 1):
            last = submit(MODIFY, n, last)
    return last


def test_the_commit_walk_is_prefetched(server_factory, tmp_path):
    s = server_factory(args=ARGS, wait_for=("scribe", "http"))
    ep = ep_of(s)
    w = str(tmp_path / "w")
    last = walk_history(s, ep, w, 40)
    before = requests_by_op(s)
    r = repo(ep, "sync", w)
    used = {k: v - before.get(k, 0) for k, v in requests_by_op(s).items()}
    assert "at change %d" % last in r.stdout, r.stdout
    assert open(os.path.join(w, "f.txt"), "rb").read() == b"revision 40\n"
    # 41 commits walked: one prefetch request for them, one for the manifest,
    # one for the chunk (one by one it would take 41 for the commits alone)
    assert used.get("get_objects", 0) <= 4, used
    # a second sync with nothing new walks nothing
    before = requests_by_op(s)
    repo(ep, "sync", w)
    used = {k: v - before.get(k, 0) for k, v in requests_by_op(s).items()}
    assert used.get("get_objects", 0) <= 1, used


def test_the_commit_walk_crosses_prefetch_batches(server_factory, tmp_path):
    # CAIRN_WALK_BATCH=8 makes a batch 8 commits, so 41 commits take six
    # batches: six log pages and six get_objects for the commits, each batch
    # fetched when the walk used up the one before
    s = server_factory(args=ARGS, wait_for=("scribe", "http"))
    ep = ep_of(s)
    w = str(tmp_path / "w")
    last = walk_history(s, ep, w, 40)
    before = requests_by_op(s)
    r = repo(ep, "sync", w, env={"CAIRN_WALK_BATCH": "8"})
    used = {k: v - before.get(k, 0) for k, v in requests_by_op(s).items()}
    assert "at change %d" % last in r.stdout, r.stdout
    assert open(os.path.join(w, "f.txt"), "rb").read() == b"revision 40\n"
    # six batches plus the manifest and the chunk (one by one: 41 + 2)
    assert 6 <= used.get("get_objects", 0) <= 9, used
    assert used.get("log", 0) >= 6, used


SLOW = pytest.mark.skipif(os.environ.get("CAIRN_SLOW_TESTS") != "1",
                          reason="5,000 changes: CAIRN_SLOW_TESTS=1 (make test-slow)")


@SLOW
def test_a_walk_longer_than_one_batch_is_prefetched_in_batches(server_factory, tmp_path):
    # 5,001 commits with the real batch of 4,096: two batches, not 5,001 fetches
    s = server_factory(args=ARGS, wait_for=("scribe", "http"))
    ep = ep_of(s)
    w = str(tmp_path / "w")
    last = walk_history(s, ep, w, 5000)
    before = requests_by_op(s)
    r = repo(ep, "sync", w)
    used = {k: v - before.get(k, 0) for k, v in requests_by_op(s).items()}
    assert "at change %d" % last in r.stdout, r.stdout
    assert open(os.path.join(w, "f.txt"), "rb").read() == b"revision 5000\n"
    assert 2 <= used.get("get_objects", 0) <= 5, used

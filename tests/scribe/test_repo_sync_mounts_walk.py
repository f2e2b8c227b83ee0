"""Two refinements of verified sync with mounts (issue 22, docs/workspace.md
"Mounts" and "Verified sync"), through one real cairnd (plaintext Scribe and
--http for /_cairn/metrics) and `cairn repo`.

What each test proves: a mount dropped from `.scribe/config.toml` at a later
change has its nested workspace removed by the next sync when it is clean
(and said on stderr), while one with a local edit is kept, said, and its
edit left alone, and the parent's sync still succeeds; the commit walk of a
sync across 40 changes is prefetched (one log page, one get_objects for the
commits) instead of one get_objects per commit, and still lands on the
same files."""
import os
import re
import urllib.request

from conftest import binary, run
from scribe_wire import ADD, CHANGESET, CHUNK, MANIFEST, MODIFY, Conn, changeset_encode, \
    changeset_id, chunk_id, manifest_encode, manifest_id

ARGS = ["--jay", "off", "--http", "127.0.0.1:0", "--scribe", "127.0.0.1:0"]


def ep_of(s):
    return "%s:%d" % s.addrs["scribe"]


def repo(ep, *args, check=True):
    r = run([binary("cairn"), "repo"] + list(args) + ["--endpoint", ep], timeout=120)
    assert "runtime error:" not in r.stderr and "AddressSanitizer" not in r.stderr, r.stderr
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


def test_the_commit_walk_is_prefetched(server_factory, tmp_path):
    s = server_factory(args=ARGS, wait_for=("scribe", "http"))
    ep = ep_of(s)
    w = str(tmp_path / "w")
    repo(ep, "create", "walk")
    with Conn(s.addrs["scribe"]) as c:
        i = c.repo_info(None, "walk")
        rid, main, inc, ws = i["id"], i["main"], i["incarnation"], os.urandom(16)

        def submit(kind, n):
            data = b"revision %d\n" % n
            enc = manifest_encode([data])
            mid = manifest_id(enc)
            cs = changeset_encode([(kind, "f.txt", mid, 0, None)])
            c.put_objects(rid, [(CHUNK, chunk_id(data), data), (MANIFEST, mid, enc),
                                (CHANGESET, changeset_id(cs), cs)])
            head = c.repo_info(rid)["head"]
            o = c.submit(rid, inc, os.urandom(16), main, ws, head, changeset_id(cs), "t", "m")
            assert o["outcome"] == 1, o
            return o["change"]

        submit(ADD, 0)
        repo(ep, "clone", "walk", w)  # anchored at change 1
        for n in range(1, 41):
            last = submit(MODIFY, n)
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

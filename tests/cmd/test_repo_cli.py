"""`cairn repo` through the real cairnd: create, clone, status, submit of a
working directory (content-defined chunks, only absent objects uploaded, one
atomic submit), sync between two workspaces, log, and resolving a submit
whose outcome was lost."""
import os
import re
import sys

from conftest import binary, run
from cairnutil import ep, read, repo, tree, write  # noqa: F401 (ep: the fixture; re-exported)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scribe"))


def test_create_list_info(ep):
    assert "art" in repo(ep, "create", "art").stdout
    repo(ep, "create", "music", "--lz4-storage")
    out = repo(ep, "list").stdout
    assert out.index("art") < out.index("music")
    info = repo(ep, "info", "music").stdout
    assert "head 0" in info and "storage lz4" in info
    r = repo(ep, "create", "art", check=False)
    assert r.returncode == 6 and "exists" in r.stderr
    r = repo(ep, "info", "nope", check=False)
    assert r.returncode == 3


def test_clone_submit_sync_log(ep, tmp_path):
    repo(ep, "create", "game")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "clone", "game", a)
    assert tree(a) == {}
    big = os.urandom(6 << 20)
    write(os.path.join(a, "assets/big.bin"), big)
    write(os.path.join(a, "README"), b"hello\n")
    write(os.path.join(a, "src/main.c"), b"int main(void) { return 0; }\n")
    write(os.path.join(a, "empty"), b"")
    st = repo(ep, "status", a).stdout
    assert "A assets/big.bin" in st and "A README" in st and "A empty" in st
    out = repo(ep, "submit", a, "-m", "first import").stdout
    assert "change 1" in out
    assert "clean at change 1" in repo(ep, "status", a).stdout
    assert "nothing to submit" in repo(ep, "submit", a, "-m", "again").stdout

    # a second workspace gets the same bytes
    repo(ep, "clone", "game", b)
    assert tree(b) == tree(a)

    # edit 64 KiB inside the big file: only the chunks around it go up
    edited = bytearray(big)
    edited[3 << 20:(3 << 20) + 65536] = os.urandom(65536)
    write(os.path.join(b, "assets/big.bin"), bytes(edited))
    os.remove(os.path.join(b, "README"))
    out = repo(ep, "submit", b, "-m", "edit big, drop readme").stdout
    m = re.search(r"change 2: (\d+) path\(s\), (\d+) object\(s\) uploaded \((\d+) bytes\)", out)
    assert m, out
    assert int(m.group(1)) == 2
    assert int(m.group(3)) < 1200000, out     # far less than the 6 MiB file

    # the first workspace syncs: only what changed is fetched
    out = repo(ep, "sync", a).stdout
    assert "at change 2" in out and "1 file(s) fetched" in out and "1 removed" in out
    assert tree(a) == tree(b)
    assert "up to date" in repo(ep, "sync", a).stdout
    # an older change, then back
    repo(ep, "sync", a, "--change", "1")
    assert read(os.path.join(a, "assets/big.bin")) == big
    assert os.path.exists(os.path.join(a, "README"))
    repo(ep, "sync", a)
    assert tree(a) == tree(b)

    log = repo(ep, "log", a).stdout
    assert log.index("change 2") < log.index("change 1")
    assert "edit big, drop readme" in log and "first import" in log
    plog = repo(ep, "log", a, "README").stdout
    assert "delete README" in plog and "add README" in plog

    # descriptions overlay a change's message, revision by revision
    assert "revision 1" in repo(ep, "describe", a, "1", "-m", "the first import").stdout
    assert "revision 2" in repo(ep, "describe", a, "1", "-m", "the very first import").stdout
    r = repo(ep, "describe", a, "99", "-m", "x", check=False)
    assert r.returncode == 3

    # a stale workspace whose path changed since its base: refused, recorded
    write(os.path.join(b, "src/main.c"), b"int main(void) { return 1; }\n")
    repo(ep, "submit", b, "-m", "b edits main")
    repo(ep, "sync", a, "--change", "2")
    write(os.path.join(a, "src/main.c"), b"int main(void) { return 2; }\n")
    r = repo(ep, "submit", a, "-m", "a edits main", check=False)
    assert r.returncode == 6 and "src/main.c" in r.stderr, r.stderr


def test_lost_outcome_resolved(ep, tmp_path):
    """A submit whose reply never arrived leaves its operation id pending in
    the workspace; the next command settles it through operation_outcome."""
    from scribe_wire import ADD, CHANGESET, CHUNK, MANIFEST, Conn, changeset_encode, \
        changeset_id, chunk_id, file_objects
    repo(ep, "create", "lost")
    a = str(tmp_path / "a")
    repo(ep, "clone", "lost", a)
    write(os.path.join(a, "f"), b"data")
    state = read(os.path.join(a, ".cairn/state")).decode()
    field = lambda k: bytes.fromhex(re.search(r"^%s (\w+)$" % k, state, re.M).group(1))
    # The submit the CLI would have sent, accepted by the server, its reply lost.
    op = os.urandom(16)
    host, port = ep.rsplit(":", 1)
    with Conn((host, int(port))) as c:
        chunks, menc, mid = file_objects(b"data")
        cs = changeset_encode([(ADD, "f", mid, 0, None)])
        c.put_objects(field("repo_id"), [(CHUNK, chunk_id(b"data"), b"data"),
                                         (MANIFEST, mid, menc), (CHANGESET, changeset_id(cs), cs)])
        o = c.submit(field("repo_id"), field("incarnation"), op, field("branch"),
                     field("workspace"), 0, changeset_id(cs), "ann", "lost reply")
        assert o["outcome"] == 1 and o["change"] == 1
    with open(os.path.join(a, ".cairn/state"), "a") as f:
        f.write("pending %s\n" % op.hex())
    out = repo(ep, "submit", a, "-m", "retry").stdout
    assert "accepted as change 1" in out and "nothing to submit at change 1" in out
    assert "clean at change 1" in repo(ep, "status", a).stdout
    # an unknown pending id is simply dropped
    with open(os.path.join(a, ".cairn/state"), "a") as f:
        f.write("pending %s\n" % ("ab" * 16))
    assert "up to date at change 1" in repo(ep, "sync", a).stdout
    assert "pending" not in read(os.path.join(a, ".cairn/state")).decode()


def test_ten_thousand_files(ep, tmp_path):
    """A 10,000-file workspace round trip.  How fast status answers an
    unchanged tree is bench/scribe.py's figure (d), not a test's."""
    repo(ep, "create", "many")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "clone", "many", a)
    for i in range(10000):
        write(os.path.join(a, "d%03d" % (i % 100), "f%05d.txt" % i), b"%d\n" % i * 20)
    # Bounded by minutes, not the default 2: on the fleet engines (make
    # test-fleet) each of the 10,000 blobs is an object PUT to Ceph's RGW.
    slow = 600
    assert "change 1: 10000 path(s)" in repo(ep, "submit", a, "-m", "ten thousand",
                                             timeout=slow).stdout
    assert "clean at change 1" in repo(ep, "status", a).stdout
    repo(ep, "clone", "many", b, timeout=slow)
    assert tree(a) == tree(b)
    # one edit among them: one path goes up
    write(os.path.join(b, "d042", "f00042.txt"), b"changed\n")
    assert "change 2: 1 path(s)" in repo(ep, "submit", b, "-m", "one").stdout
    assert "1 file(s) fetched" in repo(ep, "sync", a).stdout
    assert read(os.path.join(a, "d042", "f00042.txt")) == b"changed\n"


def test_repository_urls(ep, tmp_path):
    """A repository argument may name its server: HOST:PORT/NAME or
    scribe://HOST:PORT/NAME. The URL's endpoint beats the environment's (here
    one where nothing listens) and is what the workspace keeps."""
    def plain(*args, cwd=None):
        return run([binary("cairn"), "repo"] + list(args), cwd=cwd, timeout=120,
                   env={"CAIRN_SCRIBE_ENDPOINT": "127.0.0.1:1"})

    r = plain("create", "scribe://%s/urls" % ep)
    assert r.returncode == 0, r.stderr
    r = plain("info", "%s/urls" % ep)
    assert r.returncode == 0 and "head 0" in r.stdout, r.stderr
    ws = str(tmp_path / "ws")
    r = plain("clone", "scribe://%s/urls" % ep, ws)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(ws, ".cairn", "state")) as f:
        assert ("endpoint %s\n" % ep) in f.read()
    write(os.path.join(ws, "a.bin"), b"url" * 1000)
    r = plain("submit", "-m", "one", cwd=ws)
    assert r.returncode == 0, r.stderr
    # one positional: the workspace is named after the repository, in cwd
    r = plain("clone", "%s/urls" % ep, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert read(str(tmp_path / "urls" / "a.bin")) == b"url" * 1000
    # the URL and a different --endpoint disagree; other schemes are refused;
    # scribes:// (protocol 4, TLS) to this plaintext listener fails its handshake
    r = plain("info", "scribe://%s/urls" % ep, "--endpoint", "127.0.0.1:1")
    assert r.returncode == 2 and "differ" in r.stderr
    r = plain("info", "scribes://%s/urls" % ep)
    assert r.returncode not in (0, 2) and "TLS handshake" in r.stderr, r.stderr
    r = plain("info", "http://%s/urls" % ep)
    assert r.returncode == 2 and "scheme" in r.stderr
    r = plain("info", "scribe://%s/" % ep)
    assert r.returncode == 2

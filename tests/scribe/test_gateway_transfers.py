"""Big transfers and merges through the gateway (docs/protocol/
scribe-gateway.md, "Forwarding"), with the real `cairn` client against a
gateway in front of two real storage servers: a 1 GiB file of distinct bytes
submitted and cloned (the client's data connections bound to the gateway's
session, the bodies relayed through a 256 KiB buffer per connection or
spliced: the gateway's peak memory must stay far below the body), and
`cairn repo merge` — a clean merge of text and binary files and a binary
conflict resolved with --theirs — with every
merge request (merge_read, merge_submit at payload offset 4) forwarded to
the owning server.

The 1 GiB test runs only with CAIRN_SLOW_TESTS=1 (`make test-slow`): about
45 s on the development machine at load 10-15, release and ASan builds alike
(submit 19-26 s, clone 6-12 s, the rest writing and hashing the file)."""
import hashlib
import os
import re
import sys
import time

import pytest

from conftest import assert_no_sanitizer, binary, run
from test_gateway import Fleet, ep

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cmd"))
from test_repo_cli import tree, write  # noqa: E402 (tests/cmd's workspace helpers)

SLOW = pytest.mark.skipif(os.environ.get("CAIRN_SLOW_TESTS") != "1",
                          reason="1 GiB through the gateway: CAIRN_SLOW_TESTS=1 (make test-slow)")
CONFLICT = 6


@pytest.fixture
def fleet(tmp_path):
    f = Fleet(tmp_path)
    yield f
    f.stop()


def cairn(gw, *args, check=True, timeout=600):
    r = run([binary("cairn")] + list(args) + ["--endpoint", gw], timeout=timeout)
    assert_no_sanitizer(r.stderr)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def hwm(pid):
    """The peak resident memory of process pid so far (bytes)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


@SLOW
def test_one_gib_submit_and_clone_through_the_gateway(fleet, tmp_path):
    gw = ep(fleet.gw)
    cairn(gw, "repo", "create", "huge")
    ws = str(tmp_path / "ws")
    cairn(gw, "clone", "huge", ws)
    path = os.path.join(ws, "huge.bin")
    with open(path, "wb") as f:  # distinct bytes: no chunk repeats, all 1 GiB moves
        for _ in range(16):
            f.write(os.urandom(64 << 20))
    want = digest(path)
    base = hwm(fleet.gw.proc.pid)
    t0 = time.time()
    out = cairn(gw, "submit", ws, "-m", "one GiB").stdout
    t_put = time.time() - t0
    sent = re.search(r"(\d+) bytes sent", out)
    assert sent and int(sent.group(1)) >= 1 << 30, out
    os.unlink(path)  # the disk holds the workspace's copy once
    clone = str(tmp_path / "clone")
    t0 = time.time()
    cairn(gw, "clone", "huge", clone, "--quiet")
    t_get = time.time() - t0
    assert digest(os.path.join(clone, "huge.bin")) == want
    grew = hwm(fleet.gw.proc.pid) - base
    print("1 GiB through the gateway: submit %.1f s, clone %.1f s, gateway peak %d KiB "
          "(+%d KiB)" % (t_put, t_get, hwm(fleet.gw.proc.pid) >> 10, grew >> 10))
    # streamed: the gateway never holds a body (1 GiB) or a large part of it
    assert grew < 48 << 20, grew
    assert len(fleet.where("huge")) == 1


def two_sides(gw, tmp_path, name, files):
    """Repository name whose main holds files; a workspace on main (a) and
    one on branch feature made from it (b)."""
    cairn(gw, "repo", "create", name)
    a, b = str(tmp_path / (name + "-a")), str(tmp_path / (name + "-b"))
    cairn(gw, "repo", "clone", name, a)
    commit(gw, a, files, "import")
    cairn(gw, "repo", "branch", "create", "feature", "-C", a)
    cairn(gw, "repo", "clone", name, b, "--branch", "feature")
    return a, b


def commit(gw, ws, files, msg, deletes=()):
    for p, data in files.items():
        write(os.path.join(ws, p), data)
    for p in deletes:
        os.unlink(os.path.join(ws, p))
    cairn(gw, "repo", "submit", ws, "-m", msg)


TEXT = b"".join(b"line %d\n" % i for i in range(40))


def edit_line(text, i, new):
    lines = text.split(b"\n")
    lines[i] = new
    return b"\n".join(lines)


def test_merge_through_the_gateway(fleet, tmp_path):
    gw = ep(fleet.gw)
    blob = os.urandom(300000)
    a, b = two_sides(gw, tmp_path, "merged", {"doc.txt": TEXT, "art/hero.bin": blob,
                                             "old.txt": b"old\n"})
    new_blob = os.urandom(400000)
    theirs = edit_line(TEXT, 30, b"feature edit")
    commit(gw, b, {"doc.txt": theirs, "art/hero.bin": new_blob}, "feature", deletes=["old.txt"])
    commit(gw, a, {"doc.txt": edit_line(TEXT, 3, b"main edit"), "main.txt": b"main\n"}, "main")
    r = cairn(gw, "repo", "merge", "feature", "-m", "feature in", "-C", a)
    assert re.search(r"merged feature@\d+ into main as change \d+", r.stdout), r.stdout
    want = {"doc.txt": edit_line(theirs, 3, b"main edit"), "art/hero.bin": new_blob,
            "main.txt": b"main\n"}
    assert tree(a) == want
    check = str(tmp_path / "check")
    cairn(gw, "repo", "clone", "merged", check)
    assert tree(check) == want
    assert "feature in" in cairn(gw, "repo", "log", a).stdout
    assert "already up to date" in cairn(gw, "repo", "merge", "feature", "-C", a).stdout
    # the repository and its merge live on one server only
    assert len(fleet.where("merged")) == 1


def test_merge_conflict_resolved_through_the_gateway(fleet, tmp_path):
    gw = ep(fleet.gw)
    a, b = two_sides(gw, tmp_path, "clash", {"tex.png": b"\x89PNG base" + bytes(1000)})
    theirs, ours = b"\x89PNG theirs" + os.urandom(5000), b"\x89PNG ours" + os.urandom(7000)
    commit(gw, b, {"tex.png": theirs}, "feature art")
    commit(gw, a, {"tex.png": ours}, "main art")
    r = cairn(gw, "repo", "merge", "feature", "-C", a, check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert "CONFLICT (binary) tex.png" in r.stdout
    with open(os.path.join(a, ".cairn/merge/theirs/tex.png"), "rb") as f:
        assert f.read() == theirs
    cairn(gw, "repo", "resolve", "tex.png", "--theirs", "-C", a)
    cairn(gw, "repo", "merge", "--continue", "-C", a)
    assert tree(a) == {"tex.png": theirs}
    check = str(tmp_path / "check")
    cairn(gw, "repo", "clone", "clash", check)
    assert tree(check) == {"tex.png": theirs}

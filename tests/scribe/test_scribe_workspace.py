"""Workspaces through the real cairnd: sparse clones (`cairn clone --path`,
more prefixes added by `sync --path`), `cairn status` on many unchanged
files from the state file alone, an interrupted upload that resumes where
it stopped, and a 1 MiB edit inside a 1 GiB file moving under 4 MiB."""
import functools
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import binary
from cairnutil import SCRIBE_ONLY, cairn_at, read, scribe_ep, write
from scribe_wire import Conn


@pytest.fixture
def srv(server_factory):
    return server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))


# `cairn SCRIBE_ONLY --endpoint EP`, with room for the 1 GiB file's transfers
cairn = functools.partial(cairn_at, timeout=300)


def files_of(d):
    out = set()
    for root, dirs, files in os.walk(d):
        if ".cairn" in dirs:
            dirs.remove(".cairn")
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), d))
    return out


def sent_of(out):
    m = re.search(r"(\d+) bytes sent", out)
    assert m, out
    return int(m.group(1))


def test_sparse_workspace(srv, tmp_path):
    ep = scribe_ep(srv)
    cairn(ep, "repo", "create", "game")
    full = str(tmp_path / "full")
    cairn(ep, "clone", "game", full)
    content = {"art/hero.png": b"h" * 5000, "art/maps/one.map": b"m1", "audio/theme.ogg": b"ogg",
               "code/main.c": b"int main;", "artifact.txt": b"not under art/"}
    for p, d in content.items():
        write(os.path.join(full, p), d)
    cairn(ep, "submit", full, "-m", "all")

    sp = str(tmp_path / "sparse")
    cairn(ep, "clone", "game", sp, "--path", "art")
    assert files_of(sp) == {"art/hero.png", "art/maps/one.map"}
    assert "clean" in cairn(ep, "status", sp).stdout
    # files outside the prefixes are not the workspace's business
    write(os.path.join(sp, "code/local.c"), b"untracked")
    write(os.path.join(sp, "art/new.png"), b"new")
    write(os.path.join(sp, "art/hero.png"), b"H" * 5000)
    st = cairn(ep, "status", sp).stdout
    assert "A art/new.png" in st and "M art/hero.png" in st and "code" not in st
    cairn(ep, "submit", sp, "-m", "art only")
    # the submit touched only the prefix: everything else is still there
    cairn(ep, "sync", full)
    assert read(os.path.join(full, "art/new.png")) == b"new"
    assert read(os.path.join(full, "art/hero.png")) == b"H" * 5000
    assert read(os.path.join(full, "audio/theme.ogg")) == b"ogg"
    assert not os.path.exists(os.path.join(full, "code/local.c"))

    # another prefix, later
    cairn(ep, "sync", sp, "--path", "audio")
    assert files_of(sp) == {"art/hero.png", "art/maps/one.map", "art/new.png",
                            "audio/theme.ogg", "code/local.c"}
    # a change outside the prefixes does not reach the sparse workspace
    write(os.path.join(full, "code/main.c"), b"int main(void);")
    write(os.path.join(full, "audio/theme.ogg"), b"ogg2")
    cairn(ep, "submit", full, "-m", "code and audio")
    cairn(ep, "sync", sp)
    assert read(os.path.join(sp, "audio/theme.ogg")) == b"ogg2"
    assert read(os.path.join(sp, "code/local.c")) == b"untracked"
    assert cairn(ep, "sync", full, "--path", "art", check=False).returncode == 2
    assert cairn(ep, "clone", "game", str(tmp_path / "x"), "--path", "../up",
                 check=False).returncode == 2


def test_status_trusts_the_state_file(srv, tmp_path):
    """cairn status compares size, mtime and mode with the state file and
    reads a file only when they differ: a same-size rewrite with its mtime
    put back goes unseen (as with git), a touch without a change is clean,
    a real change among thousands is found.  Its speed on 100,000 files is
    a benchmark figure (bench/scribe.py, docs/performance.md)."""
    ep = scribe_ep(srv)
    cairn(ep, "repo", "create", "many")
    ws = str(tmp_path / "ws")
    cairn(ep, "clone", "many", ws)
    for d in range(5):
        os.makedirs(os.path.join(ws, "d%03d" % d))
        for i in range(1000):
            with open(os.path.join(ws, "d%03d" % d, "f%04d" % i), "wb") as f:
                f.write(b"%d/%04d" % (d, i))
    cairn(ep, "submit", ws, "-m", "many", "--quiet")
    assert "clean" in cairn(ep, "status", ws).stdout
    p = os.path.join(ws, "d001/f0042")
    st = os.stat(p)
    write(p, b"X/XXXX")                          # same size, different bytes
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "clean" in cairn(ep, "status", ws).stdout, "status read an unchanged-looking file"
    q = os.path.join(ws, "d002/f0007")
    os.utime(q, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))   # touched, not changed
    assert "clean" in cairn(ep, "status", ws).stdout
    write(os.path.join(ws, "d003/f0123"), b"changed")
    assert cairn(ep, "status", ws).stdout.strip() == "M d003/f0123"


def usage(ep, rid):
    host, port = ep.rsplit(":", 1)
    with Conn((host, int(port))) as c:
        return c.repo_usage(rid)


def test_interrupted_upload_resumes(srv, tmp_path):
    ep = scribe_ep(srv)
    cairn(ep, "repo", "create", "big")
    rid = bytes.fromhex([l.split()[1] for l in cairn(ep, "repo", "info", "big").stdout.splitlines()
                         if l.startswith("id ")][0])
    ws = str(tmp_path / "ws")
    cairn(ep, "clone", "big", ws)
    size = 160 << 20
    write(os.path.join(ws, "blob.bin"), os.urandom(size))
    p = subprocess.Popen([binary("cairn"), "submit", ws, "-m", "big", "--conns", "0",
                          "--endpoint", ep], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and usage(ep, rid) < (40 << 20):
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait()
    done = usage(ep, rid)
    assert (16 << 20) <= done < size, done
    out = cairn(ep, "submit", ws, "-m", "big").stdout
    m = re.search(r"\((\d+) bytes\)", out)
    assert m, out
    uploaded = int(m.group(1))
    # only what was not published before the kill goes up again
    assert uploaded <= size - done + (1 << 20), (uploaded, done)
    ws2 = str(tmp_path / "ws2")
    cairn(ep, "clone", "big", ws2)
    assert read(os.path.join(ws2, "blob.bin")) == read(os.path.join(ws, "blob.bin"))


def test_edit_inside_large_file_moves_little(srv, tmp_path):
    gib = 1
    ep = scribe_ep(srv)
    cairn(ep, "repo", "create", "huge")
    ws = str(tmp_path / "ws")
    cairn(ep, "clone", "huge", ws)
    path = os.path.join(ws, "disk.img")
    size = int(gib * (1 << 30))
    block = os.urandom(32 << 20)        # fast to generate: a random 32 MiB block, repeated
    with open(path, "wb") as f:
        for off in range(0, size, len(block)):
            f.write(block[:size - off])
    cairn(ep, "submit", ws, "-m", "image")
    # rewrite 1 MiB in the middle of the file
    with open(path, "r+b") as f:
        f.seek(size // 2 + 12345)
        f.write(os.urandom(1 << 20))
    out = cairn(ep, "submit", ws, "-m", "edit").stdout
    sent = sent_of(out)
    print("a 1 MiB edit inside %g GiB: %d bytes sent" % (gib, sent))
    assert sent < (4 << 20), out
    ws2 = str(tmp_path / "ws2")
    cairn(ep, "clone", "huge", ws2)
    assert os.path.getsize(os.path.join(ws2, "disk.img")) == size
    with open(path, "rb") as a, open(os.path.join(ws2, "disk.img"), "rb") as b:
        a.seek(size // 2)
        b.seek(size // 2)
        assert a.read(4 << 20) == b.read(4 << 20)

"""`cairn repo merge`, `cairn repo resolve` and the merge lines of `cairn repo
status` through the real cairnd and the real `cairn` binary, as a team uses
them: branch from main, edit on both sides, merge; judged by the files in the
workspace, by what a fresh clone of main holds after the merge, and by exit
codes (6 while paths are unresolved).  Covers a clean merge of text and
binary files submitted at once, texts edited apart merged by lines, an
overlapping text (markers, exit 6, resolve --file), a conflicting binary
resolved --theirs, --abort restoring the workspace, and a `cairn` killed with
SIGKILL in the middle of a merge, after which --continue or --abort still
finish the job."""
import os
import re
import signal
import subprocess
import time

from conftest import binary
from cairnutil import ep, read, repo, tree, write  # noqa: F401 (ep: the server fixture)

CONFLICT = 6

BASE_TEXT = b"".join(b"line %d\n" % i for i in range(40))


def edit_line(text, i, new):
    lines = text.split(b"\n")
    lines[i] = new
    return b"\n".join(lines)


def two_sides(ep, tmp_path, name, files):
    """Repository `name` whose main holds files; a workspace on main (a) and
    one on branch feature made from it (b)."""
    repo(ep, "create", name)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "clone", name, a)
    for p, data in files.items():
        write(os.path.join(a, p), data)
    repo(ep, "submit", a, "-m", "import")
    repo(ep, "branch", "create", "feature", "-C", a)
    repo(ep, "clone", name, b, "--branch", "feature")
    return a, b


def commit(ep, ws, files, msg, deletes=()):
    for p, data in files.items():
        write(os.path.join(ws, p), data)
    for p in deletes:
        os.unlink(os.path.join(ws, p))
    repo(ep, "submit", ws, "-m", msg)


def merge(ep, ws, *args, check=True):
    return repo(ep, "merge", *args, "-C", ws, check=check)


def clone_main(ep, tmp_path, name, where="check"):
    d = str(tmp_path / where)
    repo(ep, "clone", name, d)
    return tree(d)


def test_clean_merge_text_and_binary(ep, tmp_path):
    blob = os.urandom(200000)
    a, b = two_sides(ep, tmp_path, "clean", {"doc.txt": BASE_TEXT, "art/hero.bin": blob,
                                           "old.txt": b"old\n", "keep.txt": b"keep\n"})
    new_blob = os.urandom(300000)
    theirs_text = edit_line(BASE_TEXT, 30, b"feature edit")
    commit(ep, b, {"doc.txt": theirs_text, "art/hero.bin": new_blob,
                   "art/new.bin": b"\x00\x01new"}, "feature work", deletes=["old.txt"])
    ours_text = edit_line(BASE_TEXT, 3, b"main edit")
    commit(ep, a, {"doc.txt": ours_text, "main.txt": b"main only\n"}, "main work")

    r = merge(ep, a, "feature", "-m", "bring feature in")
    m = re.search(r"merged feature@\d+ into main as change (\d+)", r.stdout)
    assert m, r.stdout
    want = {"doc.txt": edit_line(theirs_text, 3, b"main edit"), "art/hero.bin": new_blob,
            "art/new.bin": b"\x00\x01new", "keep.txt": b"keep\n", "main.txt": b"main only\n"}
    assert tree(a) == want
    assert repo(ep, "status", a).stdout.startswith("clean at change %s" % m.group(1))
    assert clone_main(ep, tmp_path, "clean") == want
    assert "bring feature in" in repo(ep, "log", a).stdout
    # merging again finds nothing new
    assert "already up to date" in merge(ep, a, "feature").stdout


def test_overlapping_text_markers_then_resolve_file(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "lines", {"doc.txt": BASE_TEXT, "other.txt": b"x\n"})
    commit(ep, b, {"doc.txt": edit_line(BASE_TEXT, 10, b"theirs 10"),
                   "other.txt": b"feature\n"}, "feature")
    commit(ep, a, {"doc.txt": edit_line(BASE_TEXT, 10, b"ours 10")}, "main")

    r = merge(ep, a, "feature", check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert "CONFLICT (text) doc.txt" in r.stdout
    text = read(os.path.join(a, "doc.txt"))
    assert b"<<<<<<< ours (main)\nours 10\n||||||| base\nline 10\n=======\ntheirs 10\n" \
           b">>>>>>> theirs (feature)\n" in text
    assert read(os.path.join(a, "other.txt")) == b"feature\n"  # the clean part applied
    st = repo(ep, "status", a, check=False)
    assert st.returncode == CONFLICT and "U doc.txt (text)" in st.stdout
    # continuing with an unresolved path still stops
    assert merge(ep, a, "--continue", check=False).returncode == CONFLICT

    fixed = str(tmp_path / "fixed.txt")
    write(fixed, edit_line(BASE_TEXT, 10, b"both 10"))
    repo(ep, "resolve", "doc.txt", "--file", fixed, "-C", a)
    st = repo(ep, "status", a)
    assert "0 unresolved" in st.stdout and "R doc.txt" in st.stdout
    r = merge(ep, a, "--continue", "-m", "merged by hand")
    assert "into main as change" in r.stdout
    want = {"doc.txt": edit_line(BASE_TEXT, 10, b"both 10"), "other.txt": b"feature\n"}
    assert tree(a) == want and clone_main(ep, tmp_path, "lines") == want
    assert not os.path.exists(os.path.join(a, ".cairn", "merge"))
    assert repo(ep, "status", a).returncode == 0


def test_binary_conflict_resolved_theirs(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "bin", {"tex.png": b"\x89PNG base" + bytes(1000)})
    theirs, ours = b"\x89PNG theirs" + os.urandom(5000), b"\x89PNG ours" + os.urandom(7000)
    commit(ep, b, {"tex.png": theirs}, "feature art")
    commit(ep, a, {"tex.png": ours}, "main art")
    r = merge(ep, a, "feature", check=False)
    assert r.returncode == CONFLICT
    assert "CONFLICT (binary) tex.png" in r.stdout
    assert re.search(r"theirs change \d+ by \S+: %d bytes" % len(theirs), r.stdout), r.stdout
    # ours stays; theirs and base wait under .cairn/merge
    assert read(os.path.join(a, "tex.png")) == ours
    assert read(os.path.join(a, ".cairn/merge/theirs/tex.png")) == theirs
    assert read(os.path.join(a, ".cairn/merge/base/tex.png")).startswith(b"\x89PNG base")
    assert repo(ep, "resolve", "nothere.png", "--ours", "-C", a, check=False).returncode == 2
    repo(ep, "resolve", "tex.png", "--theirs", "-C", a)
    merge(ep, a, "--continue")
    assert tree(a) == {"tex.png": theirs}
    assert clone_main(ep, tmp_path, "bin") == {"tex.png": theirs}


def test_abort_restores_workspace(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "abort", {"doc.txt": BASE_TEXT, "gone.txt": b"gone\n"})
    commit(ep, b, {"doc.txt": edit_line(BASE_TEXT, 5, b"theirs"), "added.txt": b"new\n"},
           "feature", deletes=["gone.txt"])
    commit(ep, a, {"doc.txt": edit_line(BASE_TEXT, 5, b"ours")}, "main")
    before = tree(a)
    assert merge(ep, a, "feature", check=False).returncode == CONFLICT
    assert tree(a) != before
    # a second merge cannot start over an unfinished one
    assert merge(ep, a, "feature", check=False).returncode == CONFLICT
    merge(ep, a, "--abort")
    assert tree(a) == before
    st = repo(ep, "status", a)
    assert st.returncode == 0 and st.stdout.startswith("clean at change")
    assert merge(ep, a, "--continue", check=False).returncode != 0  # nothing to continue


def killed_merge(ep, a):
    """Starts `cairn repo merge feature` on a and kills it with SIGKILL as
    soon as its merge state exists (or lets it end, if it is faster)."""
    p = subprocess.Popen([binary("cairn"), "repo", "merge", "feature", "-C", a,
                          "--endpoint", ep], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = os.path.join(a, ".cairn", "merge", "state")
    while p.poll() is None and not os.path.exists(state):
        time.sleep(0.001)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    p.wait()


def plant_leftovers(a):
    """Leaves in workspace a what a cairn killed mid-fetch leaves (temporary
    files of a dead process, beside their targets) and names the cleanup must
    keep: a live writer's file and names outside the client's pattern.
    Returns (the dead writer's files, the kept ones)."""
    p = subprocess.Popen(["true"])
    p.wait()  # its pid is a dead writer's
    os.makedirs(os.path.join(a, "sub"), exist_ok=True)
    dead = [".cairn-tmp-%d-0" % p.pid, "sub/.cairn-tmp-%d-3" % p.pid,
            ".cairn-tmp-merge-%d" % p.pid]
    kept = [".cairn-tmp-%d-1" % os.getpid(), ".cairn-tmp-notes.txt",
            "sub/.cairn-tmp-%d-x" % p.pid, ".cairn/.cairn-tmp-%d-2" % p.pid]
    for n in dead + kept:
        write(os.path.join(a, n), b"partial")
    return dead, kept


def assert_swept(a, dead, kept):
    """The dead writer's files are gone, the rest kept (and then removed, so
    the workspace compares as before)."""
    assert [n for n in dead if os.path.exists(os.path.join(a, n))] == []
    for n in kept:
        assert read(os.path.join(a, n)) == b"partial"
        os.unlink(os.path.join(a, n))
    os.rmdir(os.path.join(a, "sub"))


def kill_setup(ep, tmp_path, name):
    a, b = two_sides(ep, tmp_path, name, {"doc.txt": BASE_TEXT})
    big = os.urandom(48 << 20)  # keeps the apply busy long enough to be cut short
    commit(ep, b, {"doc.txt": edit_line(BASE_TEXT, 7, b"theirs"), "big.bin": big}, "feature")
    commit(ep, a, {"doc.txt": edit_line(BASE_TEXT, 7, b"ours")}, "main")
    return a, big


def test_killed_merge_then_continue(ep, tmp_path):
    a, big = kill_setup(ep, tmp_path, "killc")
    killed_merge(ep, a)
    dead, kept = plant_leftovers(a)
    r = merge(ep, a, "--continue", check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert_swept(a, dead, kept)
    assert "CONFLICT (text) doc.txt" in r.stdout
    assert read(os.path.join(a, "big.bin")) == big
    repo(ep, "resolve", "doc.txt", "--ours", "-C", a)
    merge(ep, a, "--continue")
    want = {"doc.txt": edit_line(BASE_TEXT, 7, b"ours"), "big.bin": big}
    assert tree(a) == want
    assert clone_main(ep, tmp_path, "killc") == want


def test_killed_merge_then_abort(ep, tmp_path):
    a, _ = kill_setup(ep, tmp_path, "killa")
    before = tree(a)
    killed_merge(ep, a)
    dead, kept = plant_leftovers(a)
    merge(ep, a, "--abort")
    # none of the temporary files the kill (or a crash before it) left remains
    assert_swept(a, dead, kept)
    assert [f for f in tree(a) if os.path.basename(f).startswith(".cairn-tmp-")] == []
    assert tree(a) == before
    assert repo(ep, "status", a).returncode == 0


def test_lost_merge_reply_resolved(ep, tmp_path):
    """A merge submit (24) whose reply is lost is settled through
    operation_outcome (kind 1) like any submit: inside the command when the
    server can be asked, else by `merge --continue`, never merged twice."""
    from test_repo_branch_cli import LossyProxy
    a, b = two_sides(ep, tmp_path, "lost", {"a.txt": b"a\n", "b.txt": b"b\n", "c.txt": b"c\n"})
    commit(ep, b, {}, "drop a", deletes=["a.txt"])  # no object transfer: replies are frames
    p = LossyProxy(ep, ops={24}, times=1)
    r = repo(p.ep, "merge", "feature", "-C", a)
    p.close()
    assert p.lost == [24] and "into main as change" in r.stdout
    assert tree(a) == {"b.txt": b"b\n", "c.txt": b"c\n"}
    assert repo(ep, "status", a).returncode == 0

    commit(ep, b, {}, "drop b", deletes=["b.txt"])
    p = LossyProxy(ep, ops={24, 10}, times=100)
    r = repo(p.ep, "merge", "feature", "-C", a, check=False)
    p.close()
    assert r.returncode == 5 and p.lost[0] == 24 and 10 in p.lost, (r.stderr, p.lost)
    st = repo(ep, "status", a, check=False)
    assert "merging feature" in st.stdout and st.returncode == 0  # nothing unresolved
    r = merge(ep, a, "--continue")
    assert "previous merge submit was accepted as change" in r.stdout
    assert tree(a) == {"c.txt": b"c\n"} and clone_main(ep, tmp_path, "lost") == {"c.txt": b"c\n"}
    assert "merging" not in repo(ep, "status", a).stdout
    log = repo(ep, "log", a).stdout
    assert log.count("Merge feature into main") == 2, log

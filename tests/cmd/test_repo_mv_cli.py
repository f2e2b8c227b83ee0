"""`cairn repo mv` through the real cairnd and the real `cairn` binary: a
tracked file moved in the workspace is listed by `status` as a move, the next
submit sends one move entry (the log of the new path shows the move and,
before it, the file's history under its old path), an edit after the move
travels with it, a chain of moves is one move from the original path, and
the refusals (untracked source, existing destination) leave the workspace
untouched."""
import os

from cairnutil import ep, read, repo, tree, write  # noqa: F401 (ep: the server fixture)


def workspace(ep, tmp_path, name, files):
    repo(ep, "create", name)
    a = str(tmp_path / "a")
    repo(ep, "clone", name, a)
    for p, data in files.items():
        write(os.path.join(a, p), data)
    repo(ep, "submit", a, "-m", "import")
    return a


def test_mv_is_submitted_as_a_move(ep, tmp_path):
    a = workspace(ep, tmp_path, "mv1", {"src/old.txt": b"v1\n", "other.txt": b"x\n"})
    r = repo(ep, "mv", "src/old.txt", "lib/new.txt", "-C", a)
    assert "moved src/old.txt -> lib/new.txt" in r.stdout
    assert not os.path.exists(os.path.join(a, "src/old.txt"))
    assert read(os.path.join(a, "lib/new.txt")) == b"v1\n"
    write(os.path.join(a, "lib/new.txt"), b"v2\n")  # edited after the move
    st = repo(ep, "status", a).stdout
    assert st.splitlines() == ["R src/old.txt -> lib/new.txt"], st

    repo(ep, "submit", a, "-m", "move it")
    assert repo(ep, "status", a).stdout.startswith("clean at change")
    log = repo(ep, "log", a, "lib/new.txt").stdout
    assert "move lib/new.txt" in log, log
    assert "add src/old.txt" in log, log  # the history before the move, under its old path
    assert "delete" not in repo(ep, "log", a).stdout
    check = str(tmp_path / "check")
    repo(ep, "clone", "mv1", check)
    assert tree(check) == {"lib/new.txt": b"v2\n", "other.txt": b"x\n"}


def test_mv_chain_and_refusals(ep, tmp_path):
    a = workspace(ep, tmp_path, "mv2", {"a.txt": b"a\n", "b.txt": b"b\n"})
    r = repo(ep, "mv", "nope.txt", "c.txt", "-C", a, check=False)
    assert r.returncode != 0 and "not a tracked file" in r.stderr
    r = repo(ep, "mv", "a.txt", "b.txt", "-C", a, check=False)
    assert r.returncode != 0 and "tracked" in r.stderr
    assert tree(a) == {"a.txt": b"a\n", "b.txt": b"b\n"}
    assert repo(ep, "status", a).stdout.startswith("clean at change")

    repo(ep, "mv", "a.txt", "c.txt", "-C", a)
    repo(ep, "mv", "c.txt", "d/e.txt", "-C", a)
    assert repo(ep, "status", a).stdout.splitlines() == ["R a.txt -> d/e.txt"]
    # moved back: no move at all
    repo(ep, "mv", "d/e.txt", "a.txt", "-C", a)
    assert repo(ep, "status", a).stdout.startswith("clean at change")
    repo(ep, "mv", "a.txt", "z.txt", "-C", a)
    repo(ep, "submit", a, "-m", "chain")
    log = repo(ep, "log", a, "z.txt").stdout
    assert "move z.txt" in log and "add a.txt" in log, log


def test_directory_log_follows_files_moved_in(ep, tmp_path):
    a = workspace(ep, tmp_path, "mv3", {"src/a.txt": b"1\n", "lib/keep.txt": b"k\n"})
    write(os.path.join(a, "src/a.txt"), b"2\n")
    repo(ep, "submit", a, "-m", "second edit")
    repo(ep, "mv", "src/a.txt", "lib/a.txt", "-C", a)
    repo(ep, "submit", a, "-m", "into lib")
    log = repo(ep, "log", a, "lib").stdout
    # the move, then the moved-in file's history under its old path
    assert "move lib/a.txt" in log, log
    assert "modify src/a.txt" in log and "second edit" in log, log
    assert "add src/a.txt" in log and "add lib/keep.txt" in log, log
    assert "delete" not in log  # the source's delete is outside the directory's history
    # a limit cuts the same union: the first n rows, each once
    rows = [ln for ln in log.splitlines() if ln.startswith("change ")]
    for n in range(1, len(rows) + 1):
        out = repo(ep, "log", a, "lib", "-n", str(n)).stdout
        assert [ln for ln in out.splitlines() if ln.startswith("change ")] == rows[:n]

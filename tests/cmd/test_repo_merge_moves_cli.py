"""Renames in `cairn repo merge`, through the real cairnd and the real `cairn`
binary: files moved with `cairn repo mv` on one branch are lined up with
their base file by recorded lineage (MergeRead 4, origin kind 1), so an edit
on the other side lands in the moved file at its new path; both sides moving
a file to different paths, or one moving it while the other deletes it, is a
conflict that `cairn repo resolve` settles.  Judged by the files of the
workspace, of a fresh clone of main after the merge, and by exit codes."""
import os

from cairnutil import ep, repo, tree, write  # noqa: F401 (ep: the server fixture)
from test_repo_merge_cli import BASE_TEXT, CONFLICT, clone_main, commit, edit_line, merge, two_sides


def mv(ep, ws, src, dst):
    repo(ep, "mv", src, dst, "-C", ws)


def test_theirs_moved_ours_edited(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "mvt", {"doc.txt": BASE_TEXT, "other.txt": b"o\n"})
    mv(ep, b, "doc.txt", "docs/doc.txt")
    commit(ep, b, {"docs/doc.txt": edit_line(BASE_TEXT, 30, b"feature edit")}, "move and edit")
    commit(ep, a, {"doc.txt": edit_line(BASE_TEXT, 3, b"main edit")}, "main edit")

    r = merge(ep, a, "feature", "-m", "bring the move in")
    assert "into main as change" in r.stdout, (r.stdout, r.stderr)
    want = {"docs/doc.txt": edit_line(edit_line(BASE_TEXT, 30, b"feature edit"), 3, b"main edit"),
            "other.txt": b"o\n"}
    assert tree(a) == want
    assert clone_main(ep, tmp_path, "mvt") == want
    # the merge submitted a move: the file's log on main goes on past it
    log = repo(ep, "log", a, "docs/doc.txt").stdout
    assert "move docs/doc.txt" in log and "main edit" in log, log


def test_ours_moved_theirs_edited(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "mvo", {"doc.txt": BASE_TEXT})
    commit(ep, b, {"doc.txt": edit_line(BASE_TEXT, 30, b"feature edit")}, "feature edit")
    mv(ep, a, "doc.txt", "lib/doc.txt")
    commit(ep, a, {"lib/doc.txt": edit_line(BASE_TEXT, 3, b"main edit")}, "move on main")

    r = merge(ep, a, "feature")
    assert "into main as change" in r.stdout, (r.stdout, r.stderr)
    want = {"lib/doc.txt": edit_line(edit_line(BASE_TEXT, 30, b"feature edit"), 3, b"main edit")}
    assert tree(a) == want
    assert clone_main(ep, tmp_path, "mvo") == want


def test_moved_to_different_paths_resolved_theirs(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "mvv", {"a.txt": b"one\n", "k.txt": b"k\n"})
    mv(ep, b, "a.txt", "b.txt")
    repo(ep, "submit", b, "-m", "to b")
    mv(ep, a, "a.txt", "c.txt")
    repo(ep, "submit", a, "-m", "to c")

    r = merge(ep, a, "feature", check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert "CONFLICT (moved to different paths) b.txt" in r.stdout, r.stdout
    assert "ours moved it to c.txt" in r.stdout
    assert tree(a) == {"c.txt": b"one\n", "k.txt": b"k\n"}  # ours stays until resolved
    st = repo(ep, "status", a, check=False)
    assert st.returncode == CONFLICT and "U b.txt (moved to different paths)" in st.stdout

    repo(ep, "resolve", "b.txt", "--theirs", "-C", a)
    assert tree(a) == {"b.txt": b"one\n", "k.txt": b"k\n"}
    r = merge(ep, a, "--continue")
    assert "into main as change" in r.stdout
    assert clone_main(ep, tmp_path, "mvv") == {"b.txt": b"one\n", "k.txt": b"k\n"}


def test_moved_to_different_paths_ours_refused_file_taken(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "mvw", {"a.txt": b"one\n"})
    mv(ep, b, "a.txt", "b.txt")
    repo(ep, "submit", b, "-m", "to b")
    mv(ep, a, "a.txt", "c.txt")
    repo(ep, "submit", a, "-m", "to c")
    assert merge(ep, a, "feature", check=False).returncode == CONFLICT
    # a merge must name theirs' new path: keeping ours' place alone is refused
    r = repo(ep, "resolve", "b.txt", "--ours", "-C", a, check=False)
    assert r.returncode != 0 and "cannot leave out" in r.stderr, r.stderr
    assert tree(a) == {"c.txt": b"one\n"}
    fixed = str(tmp_path / "fixed.txt")
    write(fixed, b"one, merged\n")
    repo(ep, "resolve", "b.txt", "--file", fixed, "-C", a)
    merge(ep, a, "--continue")
    assert tree(a) == {"b.txt": b"one, merged\n"}
    assert clone_main(ep, tmp_path, "mvw") == {"b.txt": b"one, merged\n"}
    log = repo(ep, "log", a, "b.txt").stdout
    assert "move b.txt" in log, log  # ours' file moved from c.txt by the merge


def test_move_against_delete_is_a_conflict(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "mvd", {"a.txt": b"one\n", "k.txt": b"k\n"})
    mv(ep, b, "a.txt", "moved/a.txt")
    repo(ep, "submit", b, "-m", "move")
    commit(ep, a, {}, "delete", deletes=["a.txt"])

    r = merge(ep, a, "feature", check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert "CONFLICT (deleted on one side) moved/a.txt" in r.stdout, r.stdout
    repo(ep, "resolve", "moved/a.txt", "--theirs", "-C", a)
    merge(ep, a, "--continue")
    want = {"moved/a.txt": b"one\n", "k.txt": b"k\n"}
    assert tree(a) == want and clone_main(ep, tmp_path, "mvd") == want


def test_abort_after_a_lined_up_move(ep, tmp_path):
    a, b = two_sides(ep, tmp_path, "mva", {"doc.txt": BASE_TEXT})
    mv(ep, b, "doc.txt", "docs/doc.txt")
    commit(ep, b, {"docs/doc.txt": edit_line(BASE_TEXT, 10, b"theirs 10")}, "move and edit")
    commit(ep, a, {"doc.txt": edit_line(BASE_TEXT, 10, b"ours 10")}, "main edit")
    r = merge(ep, a, "feature", check=False)
    assert r.returncode == CONFLICT and "CONFLICT (text) docs/doc.txt" in r.stdout, r.stdout
    assert not os.path.exists(os.path.join(a, "doc.txt"))
    merge(ep, a, "--abort")
    assert tree(a) == {"doc.txt": edit_line(BASE_TEXT, 10, b"ours 10")}
    assert repo(ep, "status", a).stdout.startswith("clean at change")

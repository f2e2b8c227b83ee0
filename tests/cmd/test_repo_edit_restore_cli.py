"""Read-only files after a workspace is put back, and after main's lock
policy changes, through the real cairnd and the real `cairn` binary: a
`merge --abort` and a cherry-pick the server rejects write files back
from the server, and every one under a `required` rule that the
workspace does not hold is read-only again (one it holds stays writable);
a policy change on main that adds a rule makes the matching unlocked
files read-only at the next sync, one that removes it makes them
writable.  Modes are read with stat (the tests may run as root)."""
import os

from cairnutil import ep, read, repo, write  # noqa: F401 (ep: the server fixture)
from test_repo_branch_cli import submitted_change
from test_repo_edit_cli import with_policy, writable

CONFLICT = 6


def feature_changes(ep, tmp_path, a):
    """On the repository of with_policy: branch feature, where workspace f
    changes art/hero.psd and adds art/more.psd (each locked first, as the
    rules require); returns (f, the change)."""
    repo(ep, "branch", "create", "feature", "-C", a)
    f = str(tmp_path / "f")
    repo(ep, "clone", "game", f, "--branch", "feature")
    write(os.path.join(f, "art/more.psd"), b"more\n")
    repo(ep, "edit", "art/hero.psd", "art/more.psd", "-C", f)
    write(os.path.join(f, "art/hero.psd"), b"hero from feature\n")
    return f, submitted_change(repo(ep, "submit", f, "-m", "feature art").stdout)


def hero_on_both_sides(ep, tmp_path):
    """feature_changes, and main changing art/hero.psd too (with its lock),
    so that merging feature into main stops on it; workspace a (on main,
    holding no lock) synced to main's head: returns a."""
    a, b = with_policy(ep, tmp_path)
    feature_changes(ep, tmp_path, a)
    repo(ep, "edit", "art/hero.psd", "-C", b)
    write(os.path.join(b, "art/hero.psd"), b"hero on main\n")
    repo(ep, "submit", b, "-m", "main hero")
    repo(ep, "sync", a)
    return a


def test_merge_abort_marks_required_files_read_only(ep, tmp_path):
    a = hero_on_both_sides(ep, tmp_path)
    hero, readme = os.path.join(a, "art/hero.psd"), os.path.join(a, "README")
    assert not writable(hero)
    r = repo(ep, "merge", "feature", "-C", a, check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert os.path.exists(os.path.join(a, "art/more.psd"))
    repo(ep, "merge", "--abort", "-C", a)
    assert read(hero) == b"hero on main\n"
    assert not os.path.exists(os.path.join(a, "art/more.psd"))
    assert not writable(hero)
    assert writable(readme)


def test_merge_abort_keeps_held_files_writable(ep, tmp_path):
    a = hero_on_both_sides(ep, tmp_path)
    repo(ep, "lock", "art/hero.psd", "-C", a)
    assert repo(ep, "merge", "feature", "-C", a, check=False).returncode == CONFLICT
    repo(ep, "merge", "--abort", "-C", a)
    assert writable(os.path.join(a, "art/hero.psd"))


def test_rejected_pick_marks_required_files_read_only(ep, tmp_path):
    a, b = with_policy(ep, tmp_path)
    _, change = feature_changes(ep, tmp_path, a)
    hero = os.path.join(b, "art/hero.psd")
    assert not writable(hero)
    # b holds no lock: the server refuses the pick (lock_required) and the
    # picked files are put back
    r = repo(ep, "cherry-pick", "feature@%d" % change, "-C", b, check=False)
    assert r.returncode == CONFLICT, (r.stdout, r.stderr)
    assert "art/hero.psd" in r.stderr
    assert read(hero) == b"hero\n"
    assert not os.path.exists(os.path.join(b, "art/more.psd"))
    assert not writable(hero)
    assert repo(ep, "status", b).stdout.startswith("clean at change")


def test_sync_follows_rules_added_and_removed(ep, tmp_path):
    a, b = with_policy(ep, tmp_path)
    readme, notes = os.path.join(b, "README"), os.path.join(b, "docs/notes.txt")
    write(os.path.join(a, "docs/notes.txt"), b"notes\n")
    repo(ep, "submit", a, "-m", "notes")
    repo(ep, "sync", b)
    repo(ep, "lock", "docs/notes.txt", "-C", b)
    assert writable(readme) and writable(notes)
    # rules added on main (README, docs/**) and one removed (**/*.psd):
    # after sync the unlocked README is read-only, the locked notes stay
    # writable, hero is writable
    write(os.path.join(a, ".scribe/config.toml"),
          b'version = 1\n[locks]\nrules = [{ pattern = "README", mode = "required" },'
          b' { pattern = "docs/**", mode = "required" }]\n')
    repo(ep, "submit", a, "-m", "readme and docs locked")
    repo(ep, "sync", b)
    assert not writable(readme)
    assert writable(notes)
    assert writable(os.path.join(b, "art/hero.psd"))
    # README's rule removed: writable after the next sync
    write(os.path.join(a, ".scribe/config.toml"),
          b'version = 1\n[locks]\nrules = [{ pattern = "docs/**", mode = "required" }]\n')
    repo(ep, "submit", a, "-m", "readme free")
    repo(ep, "sync", b)
    assert writable(readme)
    assert writable(notes)

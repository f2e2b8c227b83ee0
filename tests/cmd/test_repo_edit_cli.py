"""`cairn repo edit` and read-only files through the real cairnd and the
real `cairn` binary: a file under a `required` lock rule of main's
`.scribe/config.toml` is read-only in a workspace that does not hold its
lock (after clone, sync, a submit that released it, unlock) and writable
once locked (edit, lock); files under no required rule keep their mode;
a policy change on main is picked up by the next edit or sync; an edit of
a path another workspace holds exits 6 naming the holder; status lists the
workspace's locks, the changed files that need one and the files made
writable by hand.  Modes are read with stat, never by writing: the tests
may run as root, whom a mode does not stop."""
import os
import stat

from conftest import binary, run
from cairnutil import ep, repo, seeded, write  # noqa: F401 (ep: the server fixture)

PSD_RULES = (b'version = 1\n[locks]\nrules = [\n'
             b'  { pattern = "art/scratch/**", mode = "none" },\n'
             b'  { pattern = "**/*.psd", mode = "required" },\n]\n')


def writable(path):
    return bool(os.stat(path).st_mode & 0o222)


def with_policy(ep, tmp_path, name="game", rules=PSD_RULES):
    """A repository whose main holds a lock policy and three files, and two
    workspaces cloned after it: returns (a, b)."""
    files = {".scribe/config.toml": rules, "art/hero.psd": b"hero\n",
             "art/scratch/doodle.psd": b"doodle\n", "README": b"readme\n"}
    # the first submit adds the rules and the files together: the rules in
    # force are main's before it, which has none
    return seeded(ep, tmp_path, name, files, "policy and art")


def test_clone_edit_submit_unlock(ep, tmp_path):
    a, b = with_policy(ep, tmp_path)
    hero, doodle, readme = (os.path.join(b, p) for p in
                            ("art/hero.psd", "art/scratch/doodle.psd", "README"))
    # after clone: the required file read-only, the others writable
    assert not writable(hero)
    assert writable(doodle) and writable(readme)
    assert stat.S_IMODE(os.stat(readme).st_mode) & 0o444 == 0o444
    # edit: locked and writable; a path under no required rule only writable
    r = repo(ep, "edit", "art/hero.psd", "README", "-C", b)
    assert r.stdout.strip() == "editing 2 paths: 1 needs a lock (1 newly locked)"
    assert writable(hero)
    mine = repo(ep, "locks", "--mine", "-C", b).stdout.splitlines()
    assert [x.split("\t")[0] for x in mine] == ["art/hero.psd"]
    # editing again changes nothing on the server
    assert "(0 newly locked)" in repo(ep, "edit", "art/hero.psd", "-C", b).stdout
    # --keep-locks keeps it writable
    write(hero, b"hero 2\n")
    repo(ep, "submit", b, "-m", "hero 2", "--keep-locks")
    assert writable(hero)
    assert len(repo(ep, "locks", "--mine", "-C", b).stdout.splitlines()) == 1
    # a submit that releases the lock makes it read-only again
    write(hero, b"hero 3\n")
    repo(ep, "submit", b, "-m", "hero 3")
    assert repo(ep, "locks", "--mine", "-C", b).stdout == ""
    assert not writable(hero)
    assert writable(readme)
    # lock makes it writable, unlock read-only
    repo(ep, "lock", "art/hero.psd", "-C", b)
    assert writable(hero)
    repo(ep, "unlock", "art/hero.psd", "-C", b)
    assert not writable(hero)
    # the other workspace syncs hero 3: still read-only there
    repo(ep, "sync", a)
    assert not writable(os.path.join(a, "art/hero.psd"))


def test_edit_held_elsewhere_exits_6(ep, tmp_path):
    a, b = with_policy(ep, tmp_path)
    repo(ep, "edit", "art/hero.psd", "-C", a)
    r = repo(ep, "edit", "art/hero.psd", "README", "-C", b, check=False)
    assert r.returncode == 6, (r.stdout, r.stderr)
    assert "art/hero.psd is locked by workspace" in r.stderr
    # all or nothing: nothing locked, nothing made writable
    assert not writable(os.path.join(b, "art/hero.psd"))
    assert repo(ep, "locks", "--mine", "-C", b).stdout == ""
    # the holder's workspace id, as `locks` prints it, is named
    holder = repo(ep, "locks", "-C", a).stdout.split("\t")[2]
    assert holder in r.stderr
    # usage
    assert repo(ep, "edit", "-C", b, check=False).returncode == 2
    assert repo(ep, "edit", "/abs", "-C", b, check=False).returncode == 2


def test_policy_change_picked_up(ep, tmp_path):
    a, b = with_policy(ep, tmp_path)
    readme = os.path.join(b, "README")
    assert writable(readme)
    # a Maintainer (plaintext: every caller) makes every file need a lock
    write(os.path.join(a, ".scribe/config.toml"),
          b'version = 1\n[locks]\nrules = [{ pattern = "**", mode = "required" }]\n')
    repo(ep, "submit", a, "-m", "lock everything")
    repo(ep, "sync", b)
    assert not writable(readme)
    assert not writable(os.path.join(b, "art/scratch/doodle.psd"))
    # the rules go away: the next edit (of anything) re-marks every file
    write(os.path.join(a, ".scribe/config.toml"), b"version = 1\n")
    repo(ep, "lock", ".scribe/config.toml", "-C", a)
    repo(ep, "submit", a, "-m", "no rules")
    r = repo(ep, "edit", "art/scratch/doodle.psd", "-C", b)
    assert "0 need a lock" in r.stdout
    assert writable(readme) and writable(os.path.join(b, "art/hero.psd"))
    # and back: edit picks a new policy up too (README now required)
    write(os.path.join(a, ".scribe/config.toml"),
          b'version = 1\n[locks]\nrules = [{ pattern = "README", mode = "required" }]\n')
    repo(ep, "submit", a, "-m", "readme locked")
    r = repo(ep, "edit", "README", "-C", b)
    assert "1 needs a lock (1 newly locked)" in r.stdout
    assert writable(readme)
    mine = repo(ep, "locks", "--mine", "-C", b).stdout.splitlines()
    assert [x.split("\t")[0] for x in mine] == ["README"]


def test_status_lists_locks_and_needs(ep, tmp_path):
    a, b = with_policy(ep, tmp_path)
    # no lock held, nothing changed: the status of before
    st = repo(ep, "status", b).stdout
    assert st.splitlines() == ["clean at change 1 on branch main"]
    repo(ep, "edit", "art/hero.psd", "-C", b)
    write(os.path.join(b, "art/new.psd"), b"new\n")           # needs a lock
    write(os.path.join(b, "README"), b"readme 2\n")           # needs none
    doodle = os.path.join(b, "art/scratch/doodle.psd")
    lines = repo(ep, "status", b).stdout.splitlines()
    # the existing lines first, unchanged
    assert lines[:2] == ["M README", "A art/new.psd"]
    assert lines[2:] == ["locked by this workspace:", "  art/hero.psd",
                         "changed without the lock they need (cairn repo edit PATH):",
                         "  art/new.psd"]
    # a required file made writable by hand is named; a sync makes it
    # read-only again (it is unedited)
    repo(ep, "unlock", "art/hero.psd", "-C", b)
    hero = os.path.join(b, "art/hero.psd")
    os.chmod(hero, 0o644)
    lines = repo(ep, "status", b).stdout.splitlines()
    assert lines[-2:] == ["writable without their lock (made writable by hand):",
                          "  art/hero.psd"]
    assert writable(doodle)
    os.remove(os.path.join(b, "art/new.psd"))
    repo(ep, "sync", b)
    assert not writable(hero)
    assert "writable without" not in repo(ep, "status", b).stdout
    # the submit is refused for the missing lock, naming it (exit 6)
    write(os.path.join(b, "art/new.psd"), b"new\n")
    r = repo(ep, "submit", b, "-m", "new", check=False)
    assert r.returncode == 6 and "art/new.psd" in r.stderr


def test_status_without_server(ep, tmp_path):
    """Status's lock sections need the server; without it the other lines
    stand, a note goes to stderr and the exit status is unchanged."""
    _, b = with_policy(ep, tmp_path)
    repo(ep, "edit", "art/hero.psd", "-C", b)
    r = run([binary("cairn"), "repo", "status", b, "--endpoint", "127.0.0.1:1"], timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.splitlines() == ["clean at change 1 on branch main"]
    assert "locks not shown" in r.stderr

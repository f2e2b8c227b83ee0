"""`cairn repo lock|unlock|locks` and `cairn repo submit --keep-locks`
through the real cairnd and the real `cairn` binary: two artists' workspaces
on one repository; a path locked by one exits 6 for the other naming the
holder; listings by prefix and --mine; unlock --force (plaintext: every
caller is trusted); a submit releases the submitter's locks on what it
submitted unless --keep-locks; a submit refused for a missing required lock
exits 6 naming the path."""
import os

from cairnutil import ep, repo, seeded, write  # noqa: F401 (ep: the server fixture)


def two_workspaces(ep, tmp_path, name="game"):
    files = {"art/hero.psd": b"hero\n", "art/sky.psd": b"sky\n"}
    return seeded(ep, tmp_path, name, files, "art")


def test_lock_unlock_locks(ep, tmp_path):
    a, b = two_workspaces(ep, tmp_path)
    r = repo(ep, "lock", "art/hero.psd", "art/sky.psd", "-C", a)
    assert r.stdout.strip() == "locked 2 paths"
    # the other workspace: exit 6 naming the holder's workspace and branch
    r = repo(ep, "lock", "art/hero.psd", "-C", b, check=False)
    assert r.returncode == 6, (r.stdout, r.stderr)
    assert "art/hero.psd is locked by workspace" in r.stderr and "main" in r.stderr
    rows = [line.split("\t") for line in repo(ep, "locks", "-C", b).stdout.splitlines()]
    assert [(x[0], x[3]) for x in rows] == [("art/hero.psd", "main"), ("art/sky.psd", "main")]
    assert repo(ep, "locks", "--mine", "-C", b).stdout == ""
    assert len(repo(ep, "locks", "art/sky.psd", "--mine", "-C", a).stdout.splitlines()) == 1
    r = repo(ep, "unlock", "art/hero.psd", "-C", b, check=False)
    assert r.returncode == 6
    assert repo(ep, "unlock", "art/hero.psd", "--force", "-C", b).stdout.strip() == \
        "unlocked 1 path"
    assert repo(ep, "lock", "art/hero.psd", "-C", b).stdout.strip() == "locked 1 path"
    # usage errors
    assert repo(ep, "lock", "-C", a, check=False).returncode == 2
    assert repo(ep, "lock", "/abs", "-C", a, check=False).returncode != 0


def test_submit_releases_unless_keep_locks(ep, tmp_path):
    a, _ = two_workspaces(ep, tmp_path)
    repo(ep, "lock", "art/hero.psd", "art/sky.psd", "-C", a)
    write(os.path.join(a, "art/hero.psd"), b"hero 2\n")
    repo(ep, "submit", a, "-m", "hero", "--keep-locks")
    assert len(repo(ep, "locks", "--mine", "-C", a).stdout.splitlines()) == 2
    write(os.path.join(a, "art/hero.psd"), b"hero 3\n")
    repo(ep, "submit", a, "-m", "hero again")
    mine = repo(ep, "locks", "--mine", "-C", a).stdout.splitlines()
    assert [x.split("\t")[0] for x in mine] == ["art/sky.psd"]


def test_submit_without_required_lock(ep, tmp_path):
    a, _ = two_workspaces(ep, tmp_path)
    write(os.path.join(a, ".scribe/config.toml"),
          b'version = 1\n[locks]\nrules = [{ pattern = "**/*.psd", mode = "required" }]\n')
    repo(ep, "submit", a, "-m", "policy")
    write(os.path.join(a, "art/sky.psd"), b"sky 2\n")
    write(os.path.join(a, "art/sea.psd"), b"sea 1\n")
    r = repo(ep, "submit", a, "-m", "sky", check=False)
    assert r.returncode == 6, (r.stdout, r.stderr)
    # Every path the rejection records is named, not only the first.
    assert "art/sea.psd" in r.stderr and "art/sky.psd" in r.stderr and "lock" in r.stderr
    repo(ep, "lock", "art/sky.psd", "art/sea.psd", "-C", a)
    repo(ep, "submit", a, "-m", "sky")
    assert repo(ep, "locks", "-C", a).stdout == ""

"""Verified sync against a repository put back with cairn's own restore
(issue 22, "Rollback: restoring a repository to an older backup makes sync
refuse until `anchor reset`").  tests/cmd/test_repo_verified_sync.py copies
the whole data directory back (same incarnation: the anchor catches it,
exit 9, until anchor reset); here the server's operator uses the commands:
`cairn admin --data DIR repo backup NAME FILE` at change 1, more changes,
then `repo restore FILE --replace`.  As docs/workspace.md ("Limits") decides,
such a restore gives the repository a new incarnation, which sync refuses
before anchors are consulted: exit 6 "restored (new incarnation); clone it
again", nothing applied, and `anchor reset` refuses it the same way; a
new clone gets the restored head."""
import os
import sys

from conftest import binary, run

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cmd"))
from cairnutil import SCRIBE_ONLY, admin_repo, scribe_ep, seeded, write  # noqa: E402
from test_repo_verified_sync import anchors, repo, snapshot  # noqa: E402


def test_restore_of_an_older_backup_refused_until_clone(server_factory, tmp_path):
    data = tmp_path / "data"
    s = server_factory(args=SCRIBE_ONLY, data=data, wait_for=("scribe",))
    ep = scribe_ep(s)
    (a,) = seeded(ep, tmp_path, "game", {"f.txt": b"v1\n"}, "v1", more=())  # change 1
    b = str(tmp_path / "b")
    s.stop()
    backup = tmp_path / "game-at-1.backup"
    admin_repo(data, "backup", "game", str(backup), check=True)
    s.start(wait_for=("scribe",))
    ep = scribe_ep(s)
    write(os.path.join(a, "f.txt"), b"v2\n")
    write(os.path.join(a, "g.txt"), b"new\n")
    repo(ep, "submit", a, "-m", "v2")  # change 2
    repo(ep, "clone", "game", b)
    assert anchors(b)[0][2] == "2"
    before = snapshot(b)

    s.stop()
    admin_repo(data, "restore", str(backup), "--replace", check=True)
    s.start(wait_for=("scribe",))
    ep = scribe_ep(s)
    r = repo(ep, "sync", b, check=False)
    assert r.returncode == 6, (r.stdout, r.stderr)
    assert "restored (new incarnation)" in r.stderr and "clone it again" in r.stderr, r.stderr
    assert snapshot(b) == before  # nothing applied
    # anchor reset does not re-admit a restored repository (it says why): that
    # is a new clone
    r = run([binary("cairn"), "repo", "anchor", "reset", "-C", b, "--endpoint", ep])
    assert r.returncode == 6 and "clone it again" in r.stderr, (r.stdout, r.stderr)
    r = repo(ep, "sync", b, check=False)
    assert r.returncode == 6 and snapshot(b)["f.txt"] == b"v2\n", (r.stdout, r.stderr)
    c = str(tmp_path / "c")
    repo(ep, "clone", "game", c)
    got = snapshot(c)
    assert got["f.txt"] == b"v1\n" and "g.txt" not in got
    assert anchors(c)[0][2] == "1"

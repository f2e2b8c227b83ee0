"""`cairn repo clone --tag`, `cairn repo workspace list [--all]` and
`cairn repo workspace remove [ID]` through the real cairnd and the real
`cairn` binary: clone registers the workspace (label host:DIR, tags); a
workspace whose registration is missing registers at its next contact;
removing a workspace that holds locks exits 6; a removal retires the
workspace (its files stay, its verbs are refused) and repeating it answers
the recorded outcome with exit 0; another workspace can be removed by id."""
import os
import socket

from test_repo_cli import ep, write  # noqa: F401 (ep: the server fixture)
from test_repo_branch_cli import repo


def rows_of(out):
    return [line.split("\t") for line in out.splitlines()]


def test_clone_registers_list_and_remove(ep, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "create", "game")
    repo(ep, "clone", "game", a, "--tag", "os=linux", "--tag", "gpu")
    write(os.path.join(a, "hero.psd"), b"hero\n")
    repo(ep, "submit", a, "-m", "art")
    repo(ep, "clone", "game", b)
    rows = rows_of(repo(ep, "workspace", "list", "-C", a).stdout)
    assert len(rows) == 2
    mine = [x for x in rows if x[-1] == "(this workspace)"][0]
    host = socket.gethostname()
    assert mine[1] == "main" and mine[2] == "%s:%s" % (host, os.path.realpath(a))
    assert mine[3] == "gpu,os=linux"
    assert mine[4] == "-"  # the owner: plaintext rows have none
    other = [x for x in rows if x[-1] != "(this workspace)"][0]
    assert other[2].endswith(":" + os.path.realpath(b)) and other[3] == "-"
    assert rows_of(repo(ep, "workspace", "list", "--all", "-C", b).stdout)[0][0] == rows[0][0]
    # a bad tag is a usage error before anything is created
    r = repo(ep, "clone", "game", str(tmp_path / "c"), "--tag", "Bad Tag", check=False)
    assert r.returncode != 0
    # a workspace holding locks cannot be removed: exit 6, and it stays
    repo(ep, "lock", "hero.psd", "-C", a)
    r = repo(ep, "workspace", "remove", "-C", a, check=False)
    assert r.returncode == 6 and "lock" in r.stderr, (r.stdout, r.stderr)
    assert len(rows_of(repo(ep, "workspace", "list", "-C", b).stdout)) == 2
    repo(ep, "unlock", "hero.psd", "-C", a)
    # removed: listed no more, the files stay, the verbs refuse it
    first = repo(ep, "workspace", "remove", "-C", a).stdout
    assert "removed" in first
    assert os.path.exists(os.path.join(a, "hero.psd"))
    assert [x[-1] for x in rows_of(repo(ep, "workspace", "list", "-C", b).stdout)] == [
        "(this workspace)"]
    r = repo(ep, "sync", a, check=False)
    assert r.returncode != 0 and "no longer a workspace" in r.stderr
    # repeating the removal answers the recorded outcome
    assert repo(ep, "workspace", "remove", "-C", a).stdout == first


def test_remove_by_id_and_late_registration(ep, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "create", "film")
    repo(ep, "clone", "film", a)
    repo(ep, "clone", "film", b)
    # a workspace that lost its registration marker registers at its next contact
    os.unlink(os.path.join(b, ".cairn", "registered"))
    repo(ep, "sync", b)
    assert os.path.exists(os.path.join(b, ".cairn", "registered"))
    bid = [x[0] for x in rows_of(repo(ep, "workspace", "list", "-C", b).stdout)
           if x[-1] == "(this workspace)"][0]
    # removed from the other workspace by id; b's next contact learns it
    out = repo(ep, "workspace", "remove", bid, "-C", a).stdout
    assert bid in out
    assert repo(ep, "workspace", "remove", bid, "-C", a).stdout == out
    os.unlink(os.path.join(b, ".cairn", "registered"))
    r = repo(ep, "sync", b, check=False)
    assert r.returncode == 6 and "removed" in r.stderr, (r.stdout, r.stderr)
    r = repo(ep, "sync", b, check=False)
    assert r.returncode != 0 and "no longer a workspace" in r.stderr
    assert repo(ep, "workspace", "remove", "zz", "-C", a, check=False).returncode != 0
    assert repo(ep, "workspace", "frob", "-C", a, check=False).returncode == 2

"""`cairn repo cherry-pick BRANCH@CHANGE` through the real cairnd and the real
`cairn` binary, as a team uses it: branch from main, fix something on the
branch, pick that one change onto main (its files arrive, main's own work
stays), the log showing where the change came from; then the exit statuses
of a change already on main (6), a path changed on both sides (6, nothing
written), a change the branch did not make itself (1), an unknown branch
(3), a ref without a change (2) and local changes in the way (6)."""
import os
import re

from test_repo_cli import ep, read, tree, write  # noqa: F401 (ep: the server fixture)
from test_repo_branch_cli import repo, submitted_change


def submit(ep, ws, message):
    return submitted_change(repo(ep, "submit", ws, "-m", message).stdout)


def test_cherry_pick_workflow(ep, tmp_path):
    repo(ep, "create", "game")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "clone", "game", a)
    write(os.path.join(a, "README"), b"readme\n")
    write(os.path.join(a, "src/lib.txt"), b"lib with a bug\n")
    write(os.path.join(a, "old.txt"), b"old\n")
    assert submit(ep, a, "start") == 1

    # on a branch: one fix (modify, delete, add), then a README edit
    repo(ep, "branch", "create", "feature", "-C", a)
    repo(ep, "switch", "feature", "-C", a)
    write(os.path.join(a, "src/lib.txt"), b"lib fixed\n")
    os.remove(os.path.join(a, "old.txt"))
    blob = os.urandom(200000)
    write(os.path.join(a, "assets/new.bin"), blob)
    fix = submit(ep, a, "fix lib")
    write(os.path.join(a, "README"), b"readme from feature\n")
    readme = submit(ep, a, "feature readme")

    # main moves on meanwhile
    repo(ep, "clone", "game", b)
    write(os.path.join(b, "README"), b"readme on main\n")
    main_change = submit(ep, b, "main readme")

    r = repo(ep, "cherry-pick", "feature@%d" % fix, "-C", b)
    m = re.match(r"change (\d+): picked feature@%d \(3 paths applied\)" % fix, r.stdout)
    assert m, r.stdout
    picked = int(m.group(1))
    assert tree(b) == {"README": b"readme on main\n", "src/lib.txt": b"lib fixed\n",
                       "assets/new.bin": blob}
    assert repo(ep, "status", b).stdout.startswith("clean at change %d" % picked)
    log = repo(ep, "log", b, "-n", "1").stdout
    assert log.startswith("change %d " % picked)
    assert "fix lib" in log and "(cherry picked from feature@%d)" % fix in log
    assert "picked from change %d of branch " % fix in log
    # the branch's own log has no provenance; main's earlier rows neither
    assert "picked from" not in repo(ep, "log", a).stdout
    assert repo(ep, "log", b).stdout.count("picked from change") == 1

    # already on main: a second pick is a conflict, nothing changes
    r = repo(ep, "cherry-pick", "feature@%d" % fix, "-C", b, check=False)
    assert r.returncode == 6, r.stderr
    assert "already" in r.stderr
    # README changed on both sides: exit 6, the workspace untouched
    r = repo(ep, "cherry-pick", "feature@%d" % readme, "-C", b, check=False)
    assert r.returncode == 6, r.stderr
    assert "README" in r.stderr
    assert read(os.path.join(b, "README")) == b"readme on main\n"
    assert repo(ep, "status", b).stdout.startswith("clean at change %d" % picked)
    # change 1 is main's, inherited by feature: not pickable from it
    r = repo(ep, "cherry-pick", "feature@1", "-C", b, check=False)
    assert r.returncode == 1, r.stderr
    assert "not an ordinary commit" in r.stderr
    assert repo(ep, "cherry-pick", "nosuch@%d" % fix, "-C", b, check=False).returncode == 3
    assert repo(ep, "cherry-pick", "feature", "-C", b, check=False).returncode == 2
    assert main_change < picked

    # a message of one's own, and local changes in the way
    write(os.path.join(a, "docs/guide.txt"), b"guide\n")
    guide = submit(ep, a, "add a guide")
    write(os.path.join(b, "scratch.txt"), b"local\n")
    write(os.path.join(b, "src/lib.txt"), b"local edit\n")
    r = repo(ep, "cherry-pick", "feature@%d" % guide, "-C", b, check=False)
    assert r.returncode == 6 and "local changes" in r.stderr
    write(os.path.join(b, "src/lib.txt"), b"lib fixed\n")
    os.remove(os.path.join(b, "scratch.txt"))
    r = repo(ep, "cherry-pick", "feature@%d" % guide, "-m", "guide for main", "-C", b)
    assert read(os.path.join(b, "docs/guide.txt")) == b"guide\n"
    log = repo(ep, "log", b, "-n", "1").stdout
    assert "guide for main" in log and "cherry picked" not in log
    assert "picked from change %d" % guide in log

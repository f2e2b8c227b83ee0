"""The principal on protocol 4 (issues 19 and 21, docs/protocol/scribe.md
15.6 "The principal in the service"): one real cairnd serving --auth,
--scribe (plaintext, protocol 2) and --scribe-tls on one data directory,
access certificates from the SAU2 access-certificate verb, raw frames
through the pq-only relay.

What each test proves: a submit's author is the session's principal whatever
the request claims (and stays the claimed one on plaintext); a workspace
registered by a principal is its own: pins, submits, lock requests,
re-registration and removal naming it are refused (forbidden) for another
principal and for an unregistered id, while plaintext keeps today's
behaviour; an ownerless row (registered over plaintext) is adopted by a
principal's registration; own listings show only the principal's rows, all
needs Maintainer, anonymous callers can neither list nor remove, a removal's
outcome is read by its principal only; breaking another's lock and changing
the lock rules need Maintainer on protocol 4; describe_change lets a Writer
describe its own commits only, a Maintainer any, and attributes the revision
to the principal; `cairn repo` with CAIRN_AUTH_CREDENTIAL (an automation
credential file) and no sign-in is that file's principal."""
import os

import pytest

from conftest import binary, run
from scribe_wire import (ADD, CHANGESET, CHUNK, ERR, FLAG_ERROR, FLAG_STREAM, MANIFEST, MODIFY,
                         OP, Conn, changeset_encode, changeset_id, chunk_id, file_objects)
from test_scribe_locks import acquire, all_locks, release
from test_scribe_lock_policy import CONFIG, RULES
from test_scribe_v4_auth import NS, code, roles, world  # noqa: F401 (the fixtures)
from test_scribe_workspaces import register, remove, removal_outcome, ws_page

ERR_NAME = {v: k for k, v in ERR.items()}


def put4(c, repo, objs):
    """put_objects over protocol 4: the request, the admission response,
    then the stream and the final reply."""
    e = c.enc().raw(repo).u32(len(objs))
    for kind, oid, data in objs:
        e.u8(kind).raw(oid).u64(len(data))
    rid = c.send_frame(OP["put_objects"], e.bytes(), FLAG_STREAM)
    _, flags, rrid, body = c.recv_frame()
    assert rrid == rid and not flags & FLAG_ERROR, ERR_NAME.get(c.error_of(body).code)
    c.send(b"".join(o[2] for o in objs))
    _, flags, rrid, body = c.recv_frame()
    assert rrid == rid and not flags & FLAG_ERROR, c.error_of(body)


class Repo4:
    """A repository seen through one protocol-4 session (c) and one
    plaintext connection (p) on the same data directory."""

    def __init__(self, c, p, rid):
        info = p.repo_info(rid)
        self.c, self.p, self.id = c, p, rid
        self.main, self.inc = info["main"], info["incarnation"]

    def upload(self, files):
        objs, mids = [], {}
        for path, data in files.items():
            chunks, enc, mid = file_objects(data)
            objs += [(CHUNK, chunk_id(ch), ch) for ch in chunks] + [(MANIFEST, mid, enc)]
            mids[path] = mid
        put4(self.c, self.id, objs)
        return mids

    def changeset(self, entries):
        enc = changeset_encode(entries)
        cid = changeset_id(enc)
        put4(self.c, self.id, [(CHANGESET, cid, enc)])
        return cid

    def submit(self, ws, entries, author="mallory", c=None, op=None):
        cid = self.changeset(entries)
        head = self.p.repo_info(self.id)["head"]
        return (c or self.c).submit(self.id, self.inc, op or os.urandom(16), self.main, ws, head,
                                    cid, author, "msg")


@pytest.fixture
def team(world, roles):
    """wes and wanda (writers), mia (maintainer) on top of the role fixture;
    sessions for each, a plaintext connection, and the private repository."""
    acc, repos = roles
    for name in ("wanda", "mia"):
        world.user(name)
    world.admin_call("grants-set", "wanda", NS, "writer")
    world.admin_call("grants-set", "mia", NS, "maintainer")
    for name in ("wanda", "mia"):
        acc[name] = world.access(world.credential(name))
    s = {n: world.session(acc[n]) for n in ("wes", "wanda", "mia", "rita")}
    s["anon"] = world.session()
    p = Conn(world.srv.addrs["scribe"])
    return s, p, repos


def account_of(s, p, repo):
    """The principal's name as the server records it (a lock row's)."""
    r = Repo4(s, p, repo)
    ws = os.urandom(16)
    register(s, repo, ws, r.main)
    acquire(s, repo, ws, r.main, ["probe/" + ws.hex()])
    row = [x for x in all_locks(p, repo) if x["workspace"] == ws][0]
    release(s, repo, ws, ["probe/" + ws.hex()])
    return row["principal"]


def test_submit_author_is_the_principal(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    wes = account_of(s["wes"], p, r.id)
    assert wes == "wes"  # the account auth confirmed
    ws = os.urandom(16)
    register(s["wes"], r.id, ws, r.main)
    m = r.upload({"a": b"alpha"})
    op = os.urandom(16)
    o = r.submit(ws, [(ADD, "a.txt", m["a"], 0, None)], author="mallory", op=op)
    assert o["outcome"] == 1, o
    row = p.log(r.id, r.main)[0]
    assert row["change"] == o["change"] and row["author"] == wes
    # the author is no intent: a replay claiming another resolves to the same change
    cid = r.changeset([(ADD, "a.txt", m["a"], 0, None)])
    again = s["wes"].submit(r.id, r.inc, op, r.main, ws, 0, cid, "someone else", "msg")
    assert again == o
    # plaintext keeps the claimed author (every caller trusted, no principal)
    o = r.submit(ws, [(MODIFY, "a.txt", m["a"], 0, None)], author="ann", c=p)
    assert o["outcome"] == 1 and p.log(r.id, r.main)[0]["author"] == "ann"


def test_workspace_ownership(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    wes, wanda = s["wes"], s["wanda"]
    ws = os.urandom(16)
    row = register(wes, r.id, ws, r.main, tags=("team=art",))
    assert row["owner"] is not None
    m = r.upload({"a": b"owned"})
    refs = [(MANIFEST, m["a"])]
    # the owner pins, locks and submits
    assert wes.pin(r.id, ws, os.urandom(16), refs) == [True]
    assert acquire(wes, r.id, ws, r.main, ["art/a.psd"]) == 1
    assert r.submit(ws, [(ADD, "a.txt", m["a"], 0, None)])["outcome"] == 1
    # another principal naming it: every request refused, nothing recorded
    assert code(wanda.pin, r.id, ws, os.urandom(16), refs) == "forbidden"
    assert code(acquire, wanda, r.id, ws, r.main, ["art/b.psd"]) == "forbidden"
    assert code(release, wanda, r.id, ws, ["art/a.psd"]) == "forbidden"
    op = os.urandom(16)
    assert code(r.submit, ws, [(ADD, "b.txt", m["a"], 0, None)], "x", wanda, op) == "forbidden"
    assert wes.operation_outcome(r.id, op) == (0, None)
    assert code(register, wanda, r.id, ws, r.main, "x", ("team=art",)) == "forbidden"
    rop = os.urandom(16)
    assert code(remove, wanda, r, ws, rop) == "forbidden"
    assert code(removal_outcome, wes, r.id, rop) == "change_not_found"  # nothing recorded
    # an id nobody registered cannot be used on protocol 4
    loose = os.urandom(16)
    assert code(wes.pin, r.id, loose, os.urandom(16), refs) == "forbidden"
    assert code(acquire, wes, r.id, loose, r.main, ["art/c.psd"]) == "forbidden"
    # plaintext keeps today's behaviour: any workspace, registered or not
    assert p.pin(r.id, ws, os.urandom(16), refs) == [True]
    assert acquire(p, r.id, loose, r.main, ["art/c.psd"]) == 1
    assert release(p, r.id, loose, ["art/c.psd"]) == 1
    # the owner still holds its lock, and removes its workspace once it is free
    assert [x["path"] for x in all_locks(p, r.id)] == ["art/a.psd"]
    assert release(wes, r.id, ws, ["art/a.psd"]) == 1
    op = os.urandom(16)
    assert remove(wes, r, ws, op)["code"] == 0
    # its outcome is read by the principal that issued the removal only
    assert removal_outcome(wes, r.id, op)["code"] == 0
    assert code(removal_outcome, wanda, r.id, op) == "forbidden"
    assert removal_outcome(p, r.id, op)["code"] == 0  # plaintext: everyone trusted


def test_ownerless_row_is_adopted_by_registration(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    ws = os.urandom(16)
    assert register(p, r.id, ws, r.main)["owner"] is None  # plaintext: no owner
    m = r.upload({"a": b"adopted"})
    refs = [(MANIFEST, m["a"])]
    assert code(s["wes"].pin, r.id, ws, os.urandom(16), refs) == "forbidden"
    owner = register(s["wes"], r.id, ws, r.main)["owner"]
    assert owner is not None
    assert s["wes"].pin(r.id, ws, os.urandom(16), refs) == [True]
    assert code(register, s["wanda"], r.id, ws, r.main) == "forbidden"
    # the owner id is the account's, whichever of its credentials asks
    assert register(s["wes"], r.id, os.urandom(16), r.main)["owner"] == owner


def test_listing_and_removal_by_principal(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    mine = {os.urandom(16) for _ in range(3)}
    theirs = os.urandom(16)
    for ws in mine:
        register(s["wes"], r.id, ws, r.main)
    register(s["wanda"], r.id, theirs, r.main)
    rows, _ = ws_page(s["wes"], r.id)
    assert {x["workspace"] for x in rows} == mine
    assert {x["workspace"] for x in ws_page(s["wanda"], r.id)[0]} == {theirs}
    assert code(ws_page, s["wes"], r.id, 1) == "forbidden"
    assert {x["workspace"] for x in ws_page(s["mia"], r.id, 1)[0]} == mine | {theirs}
    # plaintext lists every registration
    assert {x["workspace"] for x in ws_page(p, r.id, 0)[0]} >= mine | {theirs}
    # anonymous callers (on the public-read repository) neither list nor remove
    pub = Repo4(s["anon"], p, repos["pub"])
    assert code(ws_page, s["anon"], pub.id) == "forbidden"
    assert code(remove, s["anon"], pub, os.urandom(16)) == "forbidden"


def test_breaking_locks_and_lock_rules_need_maintainer(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    ws = {n: os.urandom(16) for n in ("wes", "wanda", "mia")}
    for n, w in ws.items():
        register(s[n], r.id, w, r.main)
    assert acquire(s["wes"], r.id, ws["wes"], r.main, ["art/hero.psd"]) == 1
    # a Writer cannot break another's lock on protocol 4; a Maintainer may
    assert code(release, s["wanda"], r.id, ws["wanda"], ["art/hero.psd"], True) == "forbidden"
    assert release(s["mia"], r.id, ws["mia"], ["art/hero.psd"], True) == 1
    # changing locks.rules on main: a Writer's submit is a recorded forbidden
    m = r.upload({CONFIG: RULES.encode()})
    o = r.submit(ws["wanda"], [(ADD, CONFIG, m[CONFIG], 0, None)], c=s["wanda"])
    assert o["outcome"] == 2 and ERR_NAME.get(o["code"]) == "forbidden", o
    o = r.submit(ws["mia"], [(ADD, CONFIG, m[CONFIG], 0, None)], c=s["mia"])
    assert o["outcome"] == 1, o


def test_describe_change_own_commit_rule(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    wes = account_of(s["wes"], p, r.id)
    ws = os.urandom(16)
    register(s["wes"], r.id, ws, r.main)
    m = r.upload({"a": b"described"})
    mine = r.submit(ws, [(ADD, "d.txt", m["a"], 0, None)])["change"]
    other = r.submit(ws, [(MODIFY, "d.txt", m["a"], 0, None)], author="ann", c=p)["change"]
    # a Writer describes its own commit; the revision is the principal's
    n = s["wes"].describe(r.id, mine, 0, "mallory", "what it really did")
    assert n["revision"] == 1 and n["author"] == wes
    # not another's (a plaintext commit by ann), nor one another principal made
    assert code(s["wes"].describe, r.id, other, 0, "ann", "x") == "forbidden"
    assert code(s["wanda"].describe, r.id, mine, 1, "wanda", "x") == "forbidden"
    assert code(s["rita"].describe, r.id, mine, 1, "rita", "x") == "forbidden"
    # a Maintainer describes any; the journal names who wrote each revision
    n = s["mia"].describe(r.id, other, 0, "nobody", "described by a maintainer")
    assert n["author"] == "mia"
    assert s["mia"].describe(r.id, mine, 1, "", "again")["revision"] == 2
    hist, _ = p.note_history(r.id, mine)
    assert [h["author"] for h in hist] == [wes, n["author"]]
    # plaintext keeps the claimed author and no rule
    assert p.describe(r.id, mine, 2, "ann", "plain")["author"] == "ann"



def test_cli_runs_as_cairn_auth_credential(world, roles):
    """`cairn repo` over scribes:// with CAIRN_AUTH_CREDENTIAL=FILE (an
    automation credential file) and no sign-in on that machine is the file's
    principal: it clones a private repository and its submit is authored by
    the account; without the variable it is anonymous."""
    from test_scribe_v4_auth import cli
    url = "scribes://127.0.0.1:%d/priv" % world.srv.addrs["scribes"][1]
    cli(world, "wes", "login", world.srv.addr, "--user", "wes")
    cred = str(world.tmp / "runner.cred")
    cli(world, "wes", "automation", "create", "--role", "writer", "--expires", "1d",
        "--out", cred)
    env = {"XDG_CONFIG_HOME": str(world.tmp / "runner"), "CAIRN_SCRIBE_CA": world.cert[0],
           "CAIRN_AUTH_CREDENTIAL": cred}
    w = str(world.tmp / "w-runner")
    r = run([binary("cairn"), "repo", "clone", url, w], env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(w, "ci.txt"), "w") as f:
        f.write("built by the runner\n")
    r = run([binary("cairn"), "repo", "submit", "-m", "ci"], env=env, cwd=w, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    p = Conn(world.srv.addrs["scribe"])
    info = p.repo_info(None, "priv")
    assert p.log(info["id"], info["main"])[0]["author"] == "wes"
    # the access certificate stays in memory: nothing is written beside the file
    assert not [n for n in os.listdir(world.tmp) if n.startswith("runner.cred.")]
    # without the variable the same machine is anonymous: priv looks absent
    del env["CAIRN_AUTH_CREDENTIAL"]
    r = run([binary("cairn"), "repo", "clone", url, w + "2"], env=env, timeout=120)
    assert r.returncode != 0 and "not found" in r.stderr, r.stderr
    # a file that is not a credential file is refused, not ignored
    env["CAIRN_AUTH_CREDENTIAL"] = str(world.tmp / "cairnd.toml")
    r = run([binary("cairn"), "repo", "clone", url, w + "3"], env=env, timeout=120)
    assert r.returncode != 0 and "not a cairn credential file" in r.stderr, r.stderr

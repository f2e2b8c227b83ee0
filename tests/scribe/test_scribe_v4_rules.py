"""The lock rules, the role table's lock and workspace rows, and a disabled
account on protocol 4 (issues 19 and 21; docs/protocol/scribe.md 7.10,
7.11, 15.6) through one real cairnd serving --auth, --scribe (plaintext) and
--scribe-tls on one data directory.

What each test proves: a Writer may change main's `.scribe/config.toml` when
the decoded `locks.rules` stay the same (a profile-only edit, which advances
lock_policy's change; a reformatting), and any route that changes them —
deleting the file, moving it away, merging a branch that changed them — is a
recorded `forbidden` for a Writer and accepted for a Maintainer; a Reader
registers, lists and removes its own workspace and reads the locks and the
policy but cannot lock (forbidden), an anonymous caller registers an
ownerless row on a public-read repository and is asked to sign in to lock;
a disabled account is refused at its next session (after the confirmation
cache) and let in again once enabled; a workspace cloned anonymously is
registered again, and so owned, by the first command run signed in (the
client's re-registration), so its submit is accepted, and `workspace list`
shows the owner id; a storage server's own `server` credential cannot open
a storage session, neither with its credential certificate nor with the
access certificate auth hands it."""
import os
import secrets
import struct
import time

from scribe_wire import ADD, DELETE, ERR, MODIFY, MOVE, OP, Conn
from test_scribe_lock_policy import CONFIG, OP_POLICY, RULES
from test_scribe_locks import acquire, all_locks, lock_page
from test_scribe_v4 import hello4, hello_reply, raw_conn
from test_scribe_v4_auth import NS, cli, cli_in, code, roles, world  # noqa: F401 (fixtures)
from test_scribe_v4_principal import Repo4, team  # noqa: F401 (the fixture)
from test_scribe_workspaces import register, remove, ws_page
from test_sau2_listener import call, code_of, device_key, rows_of  # (path: test_scribe_v4_auth)

ERR_NAME = {v: k for k, v in ERR.items()}
PROFILE = RULES + '\n[profiles.art]\nowner = "mia"\n'
# the same three rules, written as [[locks.rules]] tables with a comment
REFORMATTED = ('version = 1\n# reformatted, same rules\n'
               '[[locks.rules]]\nmode = "required"\npattern = "**/*.psd"\n'
               '[[locks.rules]]\npattern = "art/free/**"\nmode = "none"\n'
               '[[locks.rules]]\npattern = "art/**"\nmode = "required"\n'
               '[profiles.art]\nowner = "mia"\n')
FEWER = 'version = 1\n[locks]\nrules = [{ pattern = "**/*.psd", mode = "required" }]\n'


def policy(c, repo):
    d = c.dec(c.call(OP_POLICY, repo))
    change, text = d.u64(), d.str32()
    d.end()
    return change, text


def forbidden(o):
    return o["outcome"] == 2 and ERR_NAME.get(o["code"]) == "forbidden"


def merge(c, r, ws, source, source_head, base, op=None):
    """merge_submit of source@source_head into main at base (main's head,
    where source branched), the change set rewriting CONFIG as the source
    has it."""
    head = base
    cid = r.changeset([(MODIFY, CONFIG, r.m["fewer"], 0, None)])
    sub = c.submit_payload(r.id, r.inc, op or os.urandom(16), r.main, ws, head, cid, "x", "merge")
    body = (c.enc().u32(len(sub)).raw(sub).u64(head).raw(source).u64(source_head).raw(r.main)
            .u64(base).bytes())
    d = c.dec(c.call(OP["merge_submit"], body))
    o = c.outcome_dec(d)
    d.end()
    return o


def test_lock_rules_on_main_need_maintainer_by_every_route(team):
    s, p, repos = team
    r = Repo4(s["wes"], p, repos["priv"])
    ws = {n: os.urandom(16) for n in ("wes", "mia")}
    for n, w in ws.items():
        register(s[n], r.id, w, r.main)
    r.m = r.upload({"rules": RULES.encode(), "profile": PROFILE.encode(),
                    "reformatted": REFORMATTED.encode(), "fewer": FEWER.encode()})
    assert r.submit(ws["mia"], [(ADD, CONFIG, r.m["rules"], 0, None)], c=s["mia"])["outcome"] == 1
    # a Writer's profile-only edit keeps the rules: accepted, and 29 advances
    o = r.submit(ws["wes"], [(MODIFY, CONFIG, r.m["profile"], 0, None)], c=s["wes"])
    assert o["outcome"] == 1, o
    assert policy(s["rita"], r.id) == (o["change"], PROFILE.encode())
    # a reformatting (inline -> [[locks.rules]], key order, a comment) too
    o = r.submit(ws["wes"], [(MODIFY, CONFIG, r.m["reformatted"], 0, None)], c=s["wes"])
    assert o["outcome"] == 1, o
    assert policy(p, r.id)[0] == o["change"]
    # deleting the file, or moving it away, drops the rules: recorded forbidden
    op = os.urandom(16)
    o = r.submit(ws["wes"], [(DELETE, CONFIG, None, 0, None)], c=s["wes"], op=op)
    assert forbidden(o), o
    assert s["wes"].operation_outcome(r.id, op) == (1, o)
    o = r.submit(ws["wes"], [(MOVE, "config.toml.old", r.m["reformatted"], 0, CONFIG)],
                 c=s["wes"])
    assert forbidden(o), o
    assert policy(p, r.id)[1] == REFORMATTED.encode()
    # a branch may carry other rules (only main's decide); merging them into
    # main is forbidden for the Writer, accepted for the Maintainer
    head = p.repo_info(r.id)["head"]
    feat = os.urandom(16)
    assert s["wes"].branch_create(r.id, r.inc, os.urandom(16), feat, "rules-change", r.main,
                                  head)["outcome"] == 1
    cid = r.changeset([(MODIFY, CONFIG, r.m["fewer"], 0, None)])
    o = s["wes"].submit(r.id, r.inc, os.urandom(16), feat, ws["wes"], head, cid, "x", "fewer")
    assert o["outcome"] == 1, o
    fhead = o["change"]
    op = os.urandom(16)
    o = merge(s["wes"], r, ws["wes"], feat, fhead, head, op)
    assert forbidden(o), o
    assert s["wes"].operation_outcome(r.id, op) == (1, o)
    assert policy(p, r.id)[1] == REFORMATTED.encode()
    o = merge(s["mia"], r, ws["mia"], feat, fhead, head)
    assert o["outcome"] == 1, o
    assert policy(p, r.id) == (o["change"], FEWER.encode())


def test_reader_and_anonymous_rows_of_the_role_table(team):
    s, p, repos = team
    rid = repos["priv"]
    r = Repo4(s["rita"], p, rid)
    ws = os.urandom(16)
    # workspace_register / remove (12, 35): Reader; the row is the Reader's own
    row = register(s["rita"], rid, ws, r.main, "h:/reader")
    assert row["owner"] is not None and row["label"] == "h:/reader"
    assert [x["workspace"] for x in ws_page(s["rita"], rid)[0]] == [ws]
    # lock_list and lock_policy (17, 29): Reader; lock_acquire (14): Writer
    assert lock_page(s["rita"], rid)[0] == []
    assert policy(s["rita"], rid) == (0, b"version = 1\n")
    assert code(acquire, s["rita"], rid, ws, r.main, ["a.psd"]) == "forbidden"
    assert remove(s["rita"], r, ws)["code"] == 0
    # anonymous on a public-read repository: an ownerless registration and
    # reads; a lock asks to sign in
    pub = repos["pub"]
    main = p.repo_info(pub)["main"]
    anon_ws = os.urandom(16)
    assert register(s["anon"], pub, anon_ws, main)["owner"] is None
    assert lock_page(s["anon"], pub)[0] == []
    assert code(acquire, s["anon"], pub, anon_ws, main, ["a.psd"]) == "unauthenticated"
    assert all_locks(p, pub) == []


def test_disabled_account_refused_at_next_session(world, roles):
    acc, _ = roles
    world.session(acc["wes"]).repo_list()
    world.admin_call("users-disable", "wes")
    time.sleep(0.7)  # past auth_cache_ms (500): the next session asks auth again
    c = raw_conn(world.proxy(acc["wes"]).addr)
    assert hello_reply(c, hello4(caller=1)) == ("error", ERR["unauthenticated"])
    assert c.closed_by_peer()
    # the others are untouched; enabled again, the same certificate works
    world.session(acc["rita"]).repo_list()
    world.admin_call("users-enable", "wes")
    time.sleep(0.7)
    kind, body = hello_reply(raw_conn(world.proxy(acc["wes"]).addr), hello4(caller=1))
    assert kind == "ok" and struct.unpack("<HBQIB", body[:16])[0] == 4


def test_anonymous_clone_is_registered_again_once_signed_in(world, roles):
    """`cairn repo clone` of a public-read repository without a sign-in
    registers an ownerless workspace; the first command run signed in
    registers it again, which adopts it, so the Writer's submit is
    accepted (before, it was forbidden: "the workspace has no owner")."""
    acc, repos = roles
    url = "scribes://127.0.0.1:%d/pub" % world.srv.addrs["scribes"][1]
    w = str(world.tmp / "w-anon")
    cli_in(world, "nobody", None, "clone", url, w)
    p = Conn(world.srv.addrs["scribe"])

    def row():
        rows, _ = ws_page(p, repos["pub"], 1)
        return [x for x in rows if x["label"].endswith(":" + os.path.realpath(w))][0]

    assert row()["owner"] is None
    cli(world, "wes", "login", world.srv.addr, "--user", "wes")
    with open(os.path.join(w, "a.txt"), "w") as f:
        f.write("signed in now\n")
    cli_in(world, "wes", w, "submit", "-m", "first signed-in change")
    owner = row()["owner"]
    assert owner is not None
    # `workspace list` shows the owner id's first 16 hex digits
    listed = cli_in(world, "wes", w, "workspace", "list").stdout.split("\t")
    assert listed[4] == owner.hex()[:16] and listed[-1].strip() == "(this workspace)", listed
    # a later anonymous command leaves the adopted row alone
    cli_in(world, "nobody", w, "status")
    assert row()["owner"] is not None


def test_a_server_identity_cannot_call_storage(world, roles, tmp_path):
    """A storage server's own `server` credential (servers-add,
    credentials-add server) cannot open a storage session: neither the
    access certificate auth hands it (SAU2's access-certificate answers any
    live credential) nor its credential certificate is accepted by storage
    (unauthenticated, then the close)."""
    world.admin_call("servers-add", "store3", NS, "id-store3")
    key, spki = device_key(tmp_path, "store3")
    expires = str(int(time.time() * 1000) + 86400000)
    rows = world.admin_call("credentials-add", "server", "store3", secrets.token_hex(16), spki,
                            expires, "storage 3")
    cred = str(tmp_path / "store3-credential.pem")
    with open(cred, "w") as f:
        f.write(rows[0][0])
    certs = [cred]
    rc, out = call(world.srv, "access-certificate", cert=cred, key=key)
    if code_of(out) == 0:
        certs.append(str(tmp_path / "store3-access.pem"))
        with open(certs[1], "w") as f:
            f.write(rows_of(out)[0][0])
    for cert in certs:
        c = raw_conn(world.proxy((cert, key)).addr)
        assert hello_reply(c, hello4(caller=1)) == ("error", ERR["unauthenticated"]), cert
        assert c.closed_by_peer()

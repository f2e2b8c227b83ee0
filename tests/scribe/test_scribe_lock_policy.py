"""The lock policy through the real cairnd (docs/protocol/scribe.md 7.10):
lock_policy (29) answers main's `.scribe/config.toml` (change 0 and exactly
"version = 1\\n" without one; the text byte for byte, non-ASCII included,
and the change that last wrote it); every submit is judged against main's
current rules in its acceptance transaction: a path under a required rule
whose lock the workspace does not hold is a recorded lock_required
rejection naming the paths, returned again by operation_outcome; with the
lock the submit is accepted and the lock released; an invalid submitted
config is invalid_repository_config."""
import os
import struct

from scribe_fixtures import repo, srv  # noqa: F401 (the fixtures)
from scribe_wire import ADD, DELETE, MODIFY, MOVE
from test_scribe_locks import acquire, all_locks, release

OP_POLICY = 29
CONFIG = ".scribe/config.toml"
RULES = ('version = 1\n\n[locks]\nrules = [\n'
         '  { pattern = "**/*.psd", mode = "required" },\n'
         '  { pattern = "art/free/**", mode = "none" },\n'
         '  { pattern = "art/**", mode = "required" },\n]\n')


def policy_raw(c, repo):
    return c.call(OP_POLICY, repo)


def policy(c, repo):
    d = c.dec(policy_raw(c, repo))
    change, text = d.u64(), d.str32()
    d.end()
    return change, text


def put_config(r, text, kind=None):
    mid = r.upload({CONFIG: text.encode() if isinstance(text, str) else text})[CONFIG]
    return r.submit([(kind or ADD, CONFIG, mid, 0, None)])


def test_default_and_utf8_snapshot(repo):
    r, c = repo, repo.c
    # golden: change 0, exactly "version = 1\n" (lock_fixtures.txt, lock_policy_default)
    assert policy_raw(c, r.id) == bytes.fromhex("0000000000000000 0c000000") + b"version = 1\n"
    text = 'version = 1\n\n[profiles.art]\nowner = "Zoë"\n'.encode()
    o = put_config(r, text)
    assert o["outcome"] == 1, o
    assert policy_raw(c, r.id) == struct.pack("<QI", o["change"], len(text)) + text
    # a profile-only edit advances the change; deleting the file restores the default
    text2 = text.replace("Zoë".encode(), "Zoé".encode())
    o2 = put_config(r, text2, MODIFY)
    assert o2["outcome"] == 1 and policy(c, r.id) == (o2["change"], text2)
    assert r.submit([(DELETE, CONFIG, None, 0, None)])["outcome"] == 1
    assert policy(c, r.id) == (0, b"version = 1\n")


def test_required_lock_enforced(repo):
    r, c = repo, repo.c
    m = r.upload({"one": b"one", "two": b"two"})
    assert put_config(r, RULES)["outcome"] == 1
    assert r.submit([(ADD, p, m["one"], 0, None) for p in
                     ("art/free/a.txt", "docs/b.txt")])["outcome"] == 1
    # none-rule and unmatched paths need nothing; a required path does
    op = os.urandom(16)
    o = r.submit([(ADD, "x/hero.psd", m["one"], 0, None), (ADD, "art/tex.png", m["one"], 0, None),
                  (MODIFY, "docs/b.txt", m["two"], 0, None)], op=op)
    assert o["outcome"] == 2 and o["code"] == 205, o
    assert sorted(o["paths"]) == ["art/tex.png", "x/hero.psd"]
    assert c.operation_outcome(r.id, op) == (1, o)
    # another workspace's lock does not count
    ws2 = os.urandom(16)
    assert acquire(c, r.id, ws2, r.main, ["art/tex.png"]) == 1
    assert acquire(c, r.id, r.ws, r.main, ["X/Hero.psd"]) == 1
    o = r.submit([(ADD, "x/hero.psd", m["one"], 0, None), (ADD, "art/tex.png", m["one"], 0, None)])
    assert o["outcome"] == 2 and o["paths"] == ["art/tex.png"], o
    # holding both: accepted, and the submitting workspace's locks released
    assert release(c, r.id, ws2, ["art/tex.png"]) == 1
    assert acquire(c, r.id, r.ws, r.main, ["art/tex.png"]) == 1
    o = r.submit([(ADD, "x/hero.psd", m["one"], 0, None), (ADD, "art/tex.png", m["one"], 0, None)])
    assert o["outcome"] == 1, o
    assert all_locks(c, r.id) == []
    # a move needs both ends' locks
    o = r.submit([(MOVE, "art/tex2.png", m["one"], 0, "art/tex.png")])
    assert o["outcome"] == 2 and sorted(o["paths"]) == ["art/tex.png", "art/tex2.png"], o


def test_invalid_config_refused(repo):
    r, c = repo, repo.c
    o = put_config(r, "version = 1\n[locks\n")
    assert o["outcome"] == 2 and o["code"] == 207, o
    o = put_config(r, "version = 2\n")
    assert o["outcome"] == 2 and o["code"] == 207, o
    assert policy(c, r.id) == (0, b"version = 1\n")


def test_rules_follow_each_config_change(repo):
    """The rules in force are always main's current config, whichever was
    read before: requiring, relaxing, requiring again (the same text as the
    first, so the same content), and deleting the file."""
    r = repo
    m = r.upload({"one": b"one"})
    required = 'version = 1\n[locks]\nrules = [{ pattern = "**/*.psd", mode = "required" }]\n'
    relaxed = 'version = 1\n[locks]\nrules = [{ pattern = "**/*.psd", mode = "none" }]\n'

    def psd(name):
        return r.submit([(ADD, "x/%s.psd" % name, m["one"], 0, None)])

    assert put_config(r, required)["outcome"] == 1
    assert psd("a")["code"] == 205
    assert put_config(r, relaxed, MODIFY)["outcome"] == 1
    assert psd("b")["outcome"] == 1
    assert put_config(r, required, MODIFY)["outcome"] == 1
    assert psd("c")["code"] == 205
    assert r.submit([(DELETE, CONFIG, None, 0, None)])["outcome"] == 1
    assert psd("d")["outcome"] == 1

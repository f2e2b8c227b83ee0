"""Locks over Scribe through the real cairnd (docs/protocol/scribe.md 7.10):
lock_acquire (14), lock_release (16) and lock_list (17).  Acquire is all or
nothing; a path or a case-fold alias held by another workspace is lock_held
naming the holder; the owner releases, another workspace only with force
(plaintext: every caller is trusted, so force works); listings page by path
under a prefix or an owner; locks are shared by every connection and
survive a restart (each change is durable before its reply).  The client is
tests/scribe/scribe_wire.py plus the lock layouts written here from the
document."""
import os

import pytest

from scribe_wire import OP, Conn
from test_scribe_server import ARGS, Repo, addr, raises


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


def acquire(c, repo, ws, branch, paths):
    return c.lock_acquire(repo, ws, branch, paths)


def release(c, repo, ws, paths, force=False):
    return c.lock_release(repo, ws, paths, force)


def lock_page(c, repo, prefix="", owner=None, after=None, limit=100):
    e = c.enc().raw(repo).str16(prefix).bool(owner is not None)
    if owner is not None:
        e.raw(owner)
    e.bool(after is not None)
    if after is not None:
        e.str16(after)
    d = c.dec(c.call(OP["lock_list"], e.u32(limit).bytes()))
    rows = []
    for _ in range(d.u32()):
        rows.append(dict(path=d.str16().decode(), workspace=d.raw(16),
                         principal=d.str16().decode(), branch=d.raw(16), since=d.u64()))
    more = d.bool()
    d.end()
    return rows, more


def all_locks(c, repo, **kw):
    rows, after = [], None
    while True:
        page, more = lock_page(c, repo, after=after, **kw)
        rows += page
        if not more:
            return rows
        after = page[-1]["path"]


@pytest.fixture
def repo(srv):
    c = Conn(addr(srv))
    r = Repo(c)
    r.ws2 = os.urandom(16)
    yield r
    c.close()


def test_acquire_list_release(repo):
    r, c = repo, repo.c
    assert acquire(c, r.id, r.ws, r.main, ["art/a.png", "art/b.png"]) == 2
    # already held: nothing new, its since unchanged
    before = all_locks(c, r.id)
    assert acquire(c, r.id, r.ws, r.main, ["art/a.png"]) == 0
    assert all_locks(c, r.id) == before
    assert [(x["path"], x["workspace"], x["branch"], x["principal"]) for x in before] == [
        ("art/a.png", r.ws, r.main, ""), ("art/b.png", r.ws, r.main, "")]
    assert all(x["since"] > 1_600_000_000_000 for x in before)
    assert release(c, r.id, r.ws, ["art/a.png", "art/never.png"]) == 1
    assert [x["path"] for x in all_locks(c, r.id)] == ["art/b.png"]


def test_held_names_the_holder_all_or_nothing(repo):
    r, c = repo, repo.c
    assert acquire(c, r.id, r.ws, r.main, ["Art/Hero.PSD"]) == 1
    # another workspace: the case-fold alias collides, and the free path in
    # the same request is not taken either
    e = raises("lock_held", acquire, c, r.id, r.ws2, r.main, ["free.txt", "art/hero.psd"])
    assert r.ws.hex() in e.message and "main" in e.message and "Art/Hero.PSD" in e.message
    assert [x["path"] for x in all_locks(c, r.id)] == ["Art/Hero.PSD"]
    # releasing another's lock without force is refused and changes nothing
    raises("lock_held", release, c, r.id, r.ws2, ["art/hero.psd"])
    assert len(all_locks(c, r.id)) == 1
    # a plaintext caller is trusted: force breaks it
    assert release(c, r.id, r.ws2, ["art/hero.psd"], force=True) == 1
    assert all_locks(c, r.id) == []
    assert acquire(c, r.id, r.ws2, r.main, ["free.txt", "art/hero.psd"]) == 2


def test_aliases_in_one_request(repo):
    """Paths of one request that fold alike are one lock: the first spelling
    takes it, the later ones find it theirs (the request reads every path's
    lock in one statement, so the repeat is the service's to see)."""
    r, c = repo, repo.c
    assert acquire(c, r.id, r.ws, r.main, ["x/Read.me", "x/READ.ME", "y.txt", "x/read.me"]) == 2
    assert [x["path"] for x in all_locks(c, r.id)] == ["x/Read.me", "y.txt"]
    raises("lock_held", acquire, c, r.id, r.ws2, r.main, ["z.txt", "X/READ.me", "X/read.ME"])
    assert release(c, r.id, r.ws, ["x/read.me", "X/READ.ME", "y.txt"]) == 2
    assert all_locks(c, r.id) == []


def test_list_paging_prefix_owner(repo):
    r, c = repo, repo.c
    mine = ["art/%d.png" % i for i in range(5)] + ["art"]
    theirs = ["artwork/x.png", "docs/readme.md"]
    assert acquire(c, r.id, r.ws, r.main, mine) == 6
    assert acquire(c, r.id, r.ws2, r.main, theirs) == 2
    page, more = lock_page(c, r.id, limit=3)
    assert [x["path"] for x in page] == ["art", "art/0.png", "art/1.png"] and more
    page, more = lock_page(c, r.id, after="art/1.png", limit=3)
    assert [x["path"] for x in page] == ["art/2.png", "art/3.png", "art/4.png"] and more
    page, more = lock_page(c, r.id, after="art/4.png", limit=3)
    assert [x["path"] for x in page] == ["artwork/x.png", "docs/readme.md"] and not more
    # a prefix is the path itself and the paths under it, never "artwork"
    assert [x["path"] for x in all_locks(c, r.id, prefix="art")] == sorted(mine)
    assert [x["path"] for x in all_locks(c, r.id, owner=r.ws2)] == theirs
    assert all_locks(c, r.id, prefix="art", owner=r.ws2) == []
    # limit 0 is clamped to 1
    page, more = lock_page(c, r.id, limit=0)
    assert len(page) == 1 and more


def test_refusals(repo):
    r, c = repo, repo.c
    raises("malformed", acquire, c, r.id, r.ws, r.main, ["/abs"])
    raises("malformed", acquire, c, r.id, r.ws, r.main, ["a/../b"])
    raises("malformed", acquire, c, r.id, r.ws, r.main, [])
    raises("branch_not_found", acquire, c, r.id, r.ws, os.urandom(16), ["a"])
    raises("repository_not_found", acquire, c, os.urandom(16), r.ws, r.main, ["a"])
    raises("malformed", lock_page, c, r.id, prefix="a//b")
    # trailing bytes
    body = c.lock_paths(c.enc().raw(r.id).raw(r.ws).raw(r.main), ["a"]) + b"\0"
    raises("malformed", c.call, OP["lock_acquire"], body)
    assert all_locks(c, r.id) == []


def test_shared_across_connections_and_restart(server_factory, tmp_path):
    data = tmp_path / "shared"
    s = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    c1, c2 = Conn(addr(s)), Conn(addr(s))
    r = Repo(c1)
    assert acquire(c1, r.id, r.ws, r.main, ["a.bin"]) == 1
    raises("lock_held", acquire, c2, r.id, os.urandom(16), r.main, ["A.BIN"])
    assert [x["path"] for x in all_locks(c2, r.id)] == ["a.bin"]
    c1.close()
    c2.close()
    s.stop()
    # durable before the reply: a new server on the same data sees it
    s2 = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    with Conn(addr(s2)) as c3:
        assert [(x["path"], x["workspace"]) for x in all_locks(c3, r.id)] == [("a.bin", r.ws)]


def test_ten_thousand_paths_in_one_request(repo):
    r, c = repo, repo.c
    paths = ["lvl/%05d.uasset" % i for i in range(10000)]
    assert acquire(c, r.id, r.ws, r.main, paths) == 10000
    assert len(all_locks(c, r.id, owner=r.ws)) == 10000
    e = raises("lock_held", acquire, c, r.id, r.ws2, r.main, ["new.txt", paths[-1]])
    assert paths[-1] in e.message
    assert release(c, r.id, r.ws, paths) == 10000
    raises("malformed", acquire, c, r.id, r.ws, r.main, paths + ["one-more"])

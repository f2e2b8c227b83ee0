"""Public-only reads on protocol 4 (issue 22, docs/protocol/scribe.md 16.1)
through one real cairnd serving --auth, --scribe (plaintext, where the
writer's objects are put and submitted: every plaintext caller is trusted)
and --scribe-tls on one auth-initialised data directory.

What each test proves: an anonymous caller of a public-read repository gets,
from get_objects, only the repository's commits and its accepted manifests
(named by an accepted commit's change set, a later modify included) — a
chunk, a change set and a staged-only manifest come back as absent items
inline, never an error frame, and presence answers the same; the chunks
still come by get_chunks with a witness; a signed-in Reader keeps
raw-object access (chunks, change sets, staged objects) on the same
repository; a private repository stays repository_not_found for the
anonymous caller."""
import pytest

from scribe_wire import ADD, CHANGESET, CHUNK, COMMIT, MANIFEST, MODIFY, Conn, chunk_id
from test_scribe_public import get_chunks
from test_scribe_server import Repo
from test_scribe_v4_auth import NS, code, world  # noqa: F401 (the fixture)


@pytest.fixture
def published(world):
    """pub (public-read) and priv, each with f.txt submitted twice (v1 then
    v2) and a staged-only file, over plaintext; rita holds a reader grant."""
    world.user("rita")
    world.admin_call("grants-set", "rita", NS, "reader")
    world.admin_call("visibility-set", NS, "pub", "public-read")
    c = Conn(world.srv.addrs["scribe"])
    out = {}
    for name in ("pub", "priv"):
        r = Repo(c, name)
        m1 = r.upload({"f.txt": b"version one of f\n"})["f.txt"]
        o1 = r.submit([(ADD, "f.txt", m1, 0, None)])
        m2 = r.upload({"f.txt": b"version two of f\n"})["f.txt"]
        o2 = r.submit([(MODIFY, "f.txt", m2, 0, None)])
        cs2 = r.changeset([(ADD, "g.txt", m2, 0, None)])  # a change set never submitted
        ms = r.upload({"staged.txt": b"staged, never submitted\n"})["staged.txt"]
        assert o1["outcome"] == 1 and o2["outcome"] == 1
        out[name] = dict(id=r.id, m1=m1, m2=m2, ms=ms, c1=o1["commit"], c2=o2["commit"],
                         cs2=cs2, k1=chunk_id(b"version one of f\n"),
                         ks=chunk_id(b"staged, never submitted\n"))
    c.close()
    return world, out


def session(w, who=None):
    """w.session with the hello-ok's compression too (the streamed items need it)."""
    c = w.session(who)
    c.hello_ok["compression"] = 0  # hello4 offers no LZ4
    return c


def refs_of(p):
    return [(CHUNK, p["k1"]), (MANIFEST, p["m1"]), (MANIFEST, p["m2"]), (COMMIT, p["c1"]),
            (COMMIT, p["c2"]), (CHANGESET, p["cs2"]), (MANIFEST, p["ms"]), (CHUNK, p["ks"])]


def test_anonymous_get_objects_serves_only_commits_and_accepted_manifests(published):
    w, repos = published
    p = repos["pub"]
    anon = session(w)
    items = anon.get_objects(p["id"], refs_of(p))
    assert [(k, i) for k, i, _ in items] == refs_of(p)  # request order, every item answered
    served = [d is not None for _, _, d in items]
    #        chunk  m1(old) m2    c1    c2    changeset staged chunk(staged)
    assert served == [False, True, True, True, True, False, False, False]
    assert len(items[3][2]) > 0 and len(items[1][2]) > 0
    # presence says what get_objects serves
    assert anon.presence(p["id"], refs_of(p)) == served
    # the file's bytes come by get_chunks with its accepted manifest as witness
    assert get_chunks(anon, p["id"], [(p["k1"], p["m1"])]) == [b"version one of f\n"]
    # the connection is still in step after the absent items
    assert anon.get_objects(p["id"], [(CHUNK, p["k1"])])[0][2] is None
    # a private repository is not found, as before
    assert code(anon.get_objects, repos["priv"]["id"], [(COMMIT, repos["priv"]["c1"])]) == \
        "repository_not_found"


def test_signed_in_reader_keeps_raw_object_access(published):
    w, repos = published
    p = repos["pub"]
    rita = session(w, w.access(w.credential("rita")))
    items = rita.get_objects(p["id"], refs_of(p))
    assert all(d is not None for _, _, d in items), [(k, d is None) for k, _, d in items]
    assert items[0][2] == b"version one of f\n"
    assert rita.presence(p["id"], refs_of(p)) == [True] * len(refs_of(p))

"""repo_list on protocol 4 paged by a caller who may read only some of the
repositories (issue 22, "repo_list (secured)"; docs/protocol/scribe.md 15.6):
candidate pages are filtered with authorize-batch, a page may come back empty
and still continue, and following the continuation to its end gives exactly
the readable repositories, in name order, once each, at every page size.

The issue also asks for an opaque continuation that reveals nothing a caller
may not read: the page continues after the last *candidate*, which may be a
private repository, so with auth the token is a random one naming this
connection's cursor, and any other request between pages ends it (list
again)."""
import pytest

from scribe_wire import ERR, ScribeError
from test_scribe_v4_auth import NS, roles, world  # noqa: F401  (fixtures)

PRIVATE = ["a-hidden", "c-hidden", "d-hidden", "f-hidden", "g-hidden"]
PUBLIC = ["b-open", "e-open", "h-open"]


@pytest.fixture
def listing(world, roles):  # noqa: F811
    """Beside the roles fixture's priv and pub: five more private and three
    more public-read repositories, interleaved in name order."""
    acc, repos = roles
    boss = world.session(acc["boss"])
    for name in PRIVATE + PUBLIC:
        repos[name] = boss.repo_create(name)["id"]
    for name in PUBLIC:
        world.admin_call("visibility-set", NS, name, "public-read")
    return acc, repos


def walk(c, limit):
    """Every row and every token of a full pagination at limit."""
    names, tokens, token = [], [], None
    for _ in range(100):
        rows, token = c.repo_list(limit=limit, token=token)
        names += [r["name"] for r in rows]
        if token is None:
            return names, tokens
        tokens.append(token)
    raise AssertionError("repo_list never finished at limit %d" % limit)


def test_paging_gives_exactly_the_readable_repositories(world, listing):
    acc, _ = listing
    readable_anon = sorted(PUBLIC + ["pub"])
    readable_all = sorted(PUBLIC + PRIVATE + ["priv", "pub"])
    for limit in (1, 2, 3, 100):  # one server for every page size
        anon_names, anon_tokens = walk(world.session(), limit)
        assert anon_names == readable_anon, limit
        olga_names, _ = walk(world.session(acc["olga"]), limit)  # signed in, no grant
        assert olga_names == readable_anon, limit
        rita_names, _ = walk(world.session(acc["rita"]), limit)  # reader of the namespace
        assert rita_names == readable_all, limit
        if limit == 1:
            # a page whose single candidate was filtered out comes back empty
            # and still continues: more tokens than readable rows
            assert len(anon_tokens) > len(anon_names)


def test_continuations_reveal_no_private_name(world, listing):
    _, tokens = walk(world.session(), 1)
    hidden = set(PRIVATE + ["priv"])
    text = [t.decode() if isinstance(t, bytes) else t for t in tokens]
    leaked = sorted(h for h in hidden if any(h in t for t in text))
    assert leaked == [], "continuation tokens name private repositories: %s" % leaked
    assert len(set(text)) == len(text), "each page gets a fresh token"


def test_cursor_is_the_connections_and_ends_at_another_request(world, listing):
    acc, repos = listing
    c = world.session(acc["rita"])
    rows, token = c.repo_list(limit=2)
    assert token is not None
    # another connection cannot use it
    other = world.session(acc["rita"])
    with pytest.raises(ScribeError) as e:
        other.repo_list(limit=2, token=token)
    assert e.value.code == ERR["malformed"] and "list again" in e.value.message
    # a request between pages ends it
    c.repo_info(name="pub")
    with pytest.raises(ScribeError) as e:
        c.repo_list(limit=2, token=token)
    assert e.value.code == ERR["malformed"]
    # and a token is good once
    rows, token = c.repo_list(limit=2)
    rows2, token2 = c.repo_list(limit=2, token=token)
    assert [r["name"] for r in rows2] and token2 != token
    with pytest.raises(ScribeError):
        c.repo_list(limit=2, token=token)

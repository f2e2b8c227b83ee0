"""The Scribe gateway over protocol 4 (issue 23, docs/protocol/scribe-gateway.md
"Protocol 4"): a real SAU2 auth service (the `world` cairnd, which is also
storage server 1, namespace "default"), a second TLS storage server asking
that auth remotely (namespace "publishing"), and a gateway cairnd with
`scribes://` backends, its own service-writer credential (--auth-credential)
and a --scribe-tls listener, all on loopback.  Clients speak raw protocol-4
frames through the pq-only relay (tests/scribe/scribe_tls_proxy), which
presents their access certificates to the gateway.

What each test proves: the gateway reaches both backends over TLS with its
own access certificate and forwards each client's session as a delegated one
(caller 2 carrying the user's certificate), so storage applies the *user's*
role (a reader cannot upload through the gateway, a writer can; a user
without a grant sees a private repository as absent, as a direct caller
would); anonymous clients read public-read repositories only, repo_list is
filtered by each backend and merged under `<namespace>/<name>`; a create is
asked of storage with the user as principal (a writer is refused there,
clearly; a namespace administrator's create lands on its namespace's storage
server, since a service-writer gateway relays its user's role); a gateway whose
delegate grant is revoked gets storage's refusal, passed to the client with
its code and reason, and so is storage's refusal of a repo_list page (its
code, never "does not answer"); a listing longer than storage's page stays
whole with other requests, and another listing, between its pages; an
anonymous get_chunks (30) of a public-read repository answers as storage
answers it directly; `cairn repo discover` through the gateway lists both
namespaces with a storage server stopped; configurations a protocol-4
gateway cannot start with are refused with exit status 2."""
import os
import re
import secrets
import sys
import time

import pytest

from conftest import binary, run
from scribe_wire import (ADD, CHANGESET, CHUNK, ERR, FLAG_ERROR, FLAG_STREAM, MANIFEST, OP,
                         ScribeError, b3, changeset_encode, changeset_id, chunk_id, file_objects)
from test_scribe_public import OP_CHUNKS, chunks_payload, get_chunks
from test_scribe_workspaces import register
from test_scribe_v4 import hello4, hello_reply, raw_conn
from test_scribe_v4_auth import NS, code, put_admission, world  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sau2"))
from test_sau2_listener import call, device_key, rows_of  # noqa: E402

NS2 = "publishing"
ERR_NAME = {v: k for k, v in ERR.items()}


def credential_file(world, kind, account, tmp, note):
    """A credential of `kind` for account, certificate and key in one PEM
    file (what --auth-credential takes): (path, credential id)."""
    key, spki = device_key(tmp, account + "-" + secrets.token_hex(4))
    cid = secrets.token_hex(16)
    expires = str(int(time.time() * 1000) + 86400000)
    rows = world.admin_call("credentials-add", kind, account, cid, spki, expires, note)
    path = tmp / (account + "-" + cid[:6] + ".pem")
    path.write_text(rows[0][0] + open(key).read())
    return str(path), cid


class Setup:
    pass


@pytest.fixture
def gw(world, server_factory, cert, tmp_path):  # noqa: F811
    s = Setup()
    s.world = world
    rc, out = call(world.srv, "trust-bundle")
    s.trust = tmp_path / "trust.pem"
    s.trust.write_text("".join(r[1] for r in rows_of(out)))
    # people: boss administers both namespaces, wes writes and rita reads
    # "default", olga has no grant
    for name in ("boss", "rita", "wes", "olga"):
        world.user(name)
    world.admin_call("namespace-admins-set", "boss", NS)
    world.admin_call("grants-set", "rita", NS, "reader")
    world.admin_call("grants-set", "wes", NS, "writer")
    world.admin_call("visibility-set", NS, "pub", "public-read")
    s.acc = {n: world.access(world.credential(n)) for n in ("boss", "rita", "wes", "olga")}
    boss1 = world.session(s.acc["boss"])
    s.art, s.pub = boss1.repo_create("art")["id"], boss1.repo_create("pub")["id"]
    # storage 2: namespace "publishing", asking the world's auth remotely
    world.admin_call("servers-add", "store2", NS2, "id-store2")
    world.admin_call("namespace-admins-set", "boss", NS2)
    world.admin_call("grants-set", "wes", NS2, "reader")
    cred2, _ = credential_file(world, "server", "store2", tmp_path, "storage 2")
    conf = tmp_path / "store2.toml"
    conf.write_text("[scribe-tls]\nnamespace = \"%s\"\nauth_cache_ms = 500\n" % NS2)
    s.store2 = server_factory(
        args=["--jay", "off", "--http", "off", "--scribe", "off", "--scribe-tls", "127.0.0.1:0",
              "--scribe-tls-cert", cert[0], "--scribe-tls-key", cert[1], "--config", str(conf),
              "--auth-server", world.srv.addr, "--auth-trust", str(s.trust),
              "--auth-credential", cred2],
        data=tmp_path / "store2", wait_for=("scribes",))
    s.news = world.session(s.acc["boss"], s.store2).repo_create("news")["id"]
    # the gateway: a service user with a service-writer credential and a
    # delegate grant for both namespaces
    world.admin_call("users-add", "gate", "id-gate", "0", "service")
    for ns in (NS, NS2):
        world.admin_call("delegates-set", "gate", ns)
    s.gate_cred, s.gate_cid = credential_file(world, "service-writer", "gate", tmp_path, "gw")
    gconf = tmp_path / "gateway.toml"
    # users' upstream sessions reused no longer than the storages confirm
    # identities (auth_cache_ms 500), as docs/protocol/scribe-gateway.md asks
    gconf.write_text(
        "storage_ca = \"%s\"\ninventory_interval_ms = 200\nupstream_reuse_ms = 500\n"
        "[[storage]]\naddress = \"scribes://%s:%d\"\nnamespace = \"%s\"\n"
        "[[storage]]\naddress = \"scribes://%s:%d\"\nnamespace = \"%s\"\n"
        % (cert[0], *world.srv.addrs["scribes"], NS, *s.store2.addrs["scribes"], NS2))
    s.gconf = gconf
    s.gw = server_factory(
        args=["--gateway", str(gconf), "--scribe", "off", "--scribe-tls", "127.0.0.1:0",
              "--scribe-tls-cert", cert[0], "--scribe-tls-key", cert[1],
              "--auth-server", world.srv.addr, "--auth-trust", str(s.trust),
              "--auth-credential", s.gate_cred],
        data=tmp_path / "gwdata", wait_for=("scribes",))
    return s


def via(s, who=None):
    """A protocol-4 session through the gateway, anonymous or as `who`."""
    c = s.world.session(s.acc[who] if who else None, s.gw)
    c.hello_ok["compression"] = 0
    return c


def test_discover_and_names_over_tls(gw):
    c = via(gw, "wes")
    d = c.dec(c.discover())
    assert (d.u8(), d.u8()) == (2, 1)  # a gateway, with authentication
    assert [d.str16().decode() for _ in range(d.u32())] == [NS, NS2]
    d.end()
    info = c.repo_info(name="%s/art" % NS)
    assert info["id"] == gw.art and info["name"] == "%s/art" % NS
    assert code(c.repo_info, None, "art") == "malformed"  # two namespaces, no default


def test_the_user_is_the_principal_at_storage(gw):
    rita, wes, olga = via(gw, "rita"), via(gw, "wes"), via(gw, "olga")
    # the same gateway credential, three users: storage applies each one's role
    assert rita.repo_info(gw.art)["name"] == "%s/art" % NS
    assert put_admission(rita, gw.art) == "forbidden"
    data = b"uploaded through the gateway " + secrets.token_bytes(64)
    assert put_admission(wes, gw.art, data) is None
    # and read back through it, by the reader, over the same delegated path
    assert rita.get_objects(gw.art, [(CHUNK, b3(data))]) == [(CHUNK, b3(data), data)]
    # no grant: the private repository looks absent, as to a direct caller
    assert code(olga.repo_info, gw.art) == "repository_not_found"
    assert code(olga.repo_info, None, "%s/art" % NS) == "repository_not_found"
    # wes reads "publishing" only: the upload there is the storage's refusal
    assert wes.repo_info(gw.news)["name"] == "%s/news" % NS2
    assert put_admission(wes, gw.news) == "forbidden"
    # repo_list: each backend filters for the user, the gateway merges
    names = sorted(r["name"] for r in wes.repo_list()[0])
    assert names == ["%s/art" % NS, "%s/pub" % NS, "%s/news" % NS2], names
    assert sorted(r["name"] for r in olga.repo_list()[0]) == ["%s/pub" % NS]
    # a create is asked of storage as the user: a writer is refused there,
    # with storage's reason, and nothing is placed
    with pytest.raises(ScribeError) as e:
        wes.repo_create("%s/made-by-wes" % NS)
    assert ERR_NAME[e.value.code] == "forbidden", e.value
    assert "namespace administrator" in str(e.value), e.value
    assert code(wes.repo_info, None, "%s/made-by-wes" % NS) == "repository_not_found"


def test_an_administrator_creates_through_the_gateway(gw):
    # a service-writer gateway relays its user's own role: boss administers
    # "publishing", so the create lands on that namespace's storage server
    boss = via(gw, "boss")
    made = boss.repo_create("%s/made-via-gateway" % NS2)
    assert made["name"] == "%s/made-via-gateway" % NS2, made
    direct = gw.world.session(gw.acc["boss"], gw.store2)
    assert direct.repo_info(made["id"])["name"] == "made-via-gateway"
    # the new repository is usable through the gateway at once, by its writer
    assert boss.repo_info(None, "%s/made-via-gateway" % NS2)["id"] == made["id"]
    assert put_admission(boss, made["id"]) is None
    # rita reads "default" only: the new repository is absent to her
    assert code(via(gw, "rita").repo_info, made["id"]) == "repository_not_found"


def test_inventory_over_tls_needs_a_namespace_readers_grant(gw):
    # the gateway walks storage with its own certificate, as a direct
    # caller: a namespace-readers grant for its account lets it read the
    # inventory of "default" (art and pub), and the walk is reported
    pattern = r"inventory: storage server 1 of 2: 2 repositories in 1 page\(s\)"
    time.sleep(1.0)  # five walks' intervals: refused without the grant
    assert not re.search(pattern, gw.gw.output(gw.gw.log_offset))
    gw.world.admin_call("namespace-readers-set", "gate", NS)
    deadline = time.time() + 30
    while not re.search(pattern, gw.gw.output(gw.gw.log_offset)):
        assert time.time() < deadline, gw.gw.output(gw.gw.log_offset)
        time.sleep(0.1)


def test_anonymous_reads_public_only(gw):
    anon = via(gw)
    assert [r["name"] for r in anon.repo_list()[0]] == ["%s/pub" % NS]
    assert anon.repo_info(gw.pub)["name"] == "%s/pub" % NS
    assert code(anon.repo_info, gw.art) == "repository_not_found"
    assert put_admission(anon, gw.pub) == "unauthenticated"


def bulk(gw, n=256):
    """More than the 256 rows the gateway asks of a server at a time, so its
    second page of "default" carries storage's secured cursor."""
    boss = gw.world.session(gw.acc["boss"])
    for i in range(n):
        boss.repo_create("bulk-%03d" % i)


def test_repo_list_passes_storage_refusal_on(gw):
    # storage refuses a later page of a listing once the gateway's delegate
    # grant for its namespace is revoked (authorize-batch is asked per page):
    # the client must read storage's refusal, never "does not answer; retry
    # later"
    bulk(gw)
    wes = via(gw, "wes")
    rows, tok = wes.repo_list(limit=1)
    assert rows[0]["name"] == "%s/art" % NS and tok is not None
    gw.world.admin_call("delegates-revoke", "gate", NS)
    time.sleep(0.7)  # the storage's confirmation cache (500 ms)
    with pytest.raises(ScribeError) as e:
        while tok is not None:
            rows, tok = wes.repo_list(limit=256, token=tok)
    # storage's answer to a delegate it no longer trusts: forbidden, with
    # SAU2's words (it read auth_unavailable, "cannot authorize now", before
    # 2026-12-07: an outage the client would retry for ever)
    assert ERR_NAME[e.value.code] == "forbidden", e.value
    assert "delegate may not act for users in this namespace" in str(e.value), e.value
    # granted again, a new listing is whole: 258 rows of "default" and one
    # of "publishing"
    gw.world.admin_call("delegates-set", "gate", NS)
    rows, tok = via(gw, "wes").repo_list(limit=1000)
    assert tok is None and len(rows) == 259, (len(rows), tok)


def test_repo_list_with_requests_between_pages(gw):
    # storage's secured cursor lives on its connection until that
    # connection's next request: the gateway keeps a listing's pages on a
    # session nothing else uses, so the client's other requests to the same
    # servers between pages, and a second listing interleaved with the
    # first, leave both listings whole, as a direct client's would be
    bulk(gw)
    wes = via(gw, "wes")
    want = sorted(["%s/art" % NS, "%s/pub" % NS, "%s/news" % NS2] +
                  ["%s/bulk-%03d" % (NS, i) for i in range(256)])
    got = {"a": [], "b": []}
    toks = {"a": None, "b": None}
    for who in ("a", "b"):
        rows, toks[who] = wes.repo_list(limit=1)
        got[who] += [r["name"] for r in rows]
    while toks["a"] is not None or toks["b"] is not None:
        for who in ("a", "b"):
            if toks[who] is None:
                continue
            assert wes.repo_info(gw.art)["name"] == "%s/art" % NS
            assert wes.repo_info(gw.news)["name"] == "%s/news" % NS2
            rows, toks[who] = wes.repo_list(limit=50 if who == "a" else 97, token=toks[who])
            got[who] += [r["name"] for r in rows]
    assert got["a"] == want and got["b"] == want, (len(got["a"]), len(got["b"]))


def test_cli_discover_through_the_gateway_with_a_server_stopped(gw):
    # configuration, not health: storage 2 stopped is still its namespace's
    # server; asked by a machine that never signed in
    gw.store2.stop()
    env = {"XDG_CONFIG_HOME": str(gw.world.tmp / "nobody"), "CAIRN_SCRIBE_CA": gw.world.cert[0]}
    url = "scribes://127.0.0.1:%d" % gw.gw.addrs["scribes"][1]
    r = run([binary("cairn"), "repo", "discover", url], env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ("role gateway\nauthentication yes\nservers 2\n"
                        "namespace %s\tservers 1\nnamespace %s\tservers 1\n" % (NS, NS2)), r.stdout


def put4(c, repo, objs):
    """put_objects over protocol 4: admission, then the raw stream."""
    e = c.enc().raw(repo).u32(len(objs))
    for kind, oid, data in objs:
        e.u8(kind).raw(oid).u64(len(data))
    rid = c.send_frame(OP["put_objects"], e.bytes(), FLAG_STREAM)
    _, flags, rrid, body = c.recv_frame()
    assert rrid == rid and not flags & FLAG_ERROR, c.error_of(body)
    c.send(b"".join(d for _, _, d in objs))
    _, flags, rrid, body = c.recv_frame()
    assert rrid == rid and not flags & FLAG_ERROR, c.error_of(body)


def test_anonymous_get_chunks_through_the_gateway(gw):
    # get_chunks (30) is the public read: storage decides it for the
    # anonymous user, through the gateway as directly
    wes = via(gw, "wes")
    info = wes.repo_info(gw.pub)
    data = b"public bytes, read by anyone " + secrets.token_bytes(32)
    chunks, enc, mid = file_objects(data)
    cs = changeset_encode([(ADD, "p.txt", mid, 0, None)])
    put4(wes, gw.pub, [(CHUNK, chunk_id(chunks[0]), chunks[0]), (MANIFEST, mid, enc),
                       (CHANGESET, changeset_id(cs), cs)])
    ws = os.urandom(16)
    register(wes, gw.pub, ws, info["main"])
    o = wes.submit(gw.pub, info["incarnation"], os.urandom(16), info["main"], ws, info["head"],
                   changeset_id(cs), "wes", "public file")
    assert o["outcome"] == 1, o
    anon, direct = via(gw), gw.world.session(None)
    direct.hello_ok["compression"] = 0
    for c in (anon, direct):
        assert get_chunks(c, gw.pub, [(chunk_id(data), mid), (os.urandom(32), mid)]) == [
            data, None]
    # a private repository: the same answer as storage's own to an anonymous caller
    got = []
    for c in (anon, direct):
        with pytest.raises(ScribeError) as e:
            c.call(OP_CHUNKS, chunks_payload(c, gw.art, [(chunk_id(data), mid)]))
        got.append(e.value.code)
    assert got[0] == got[1], [ERR_NAME.get(x, x) for x in got]


def test_delegate_grant_revoked_reaches_the_client(gw):
    via(gw, "wes").repo_info(gw.art)
    gw.world.admin_call("delegates-revoke", "gate", NS)
    time.sleep(0.7)  # the storage's confirmation cache (500 ms)
    with pytest.raises(ScribeError) as e:
        via(gw, "wes").repo_info(gw.art)
    assert ERR_NAME[e.value.code] == "unauthenticated", e.value
    assert "refused the session" in str(e.value), e.value
    assert "delegate may not act" in str(e.value), e.value


def test_a_delegated_caller_is_refused_by_the_gateway(gw):
    c = raw_conn(gw.world.proxy(gw.acc["wes"], gw.gw).addr)
    kind, body = hello_reply(c, hello4(caller=2))
    assert kind == "error"


def test_protocol4_configurations_refused(gw, tmp_path, cert):
    base = ["--data", str(tmp_path / "bad"), "--jay", "off", "--http", "off",
            "--gateway", str(gw.gconf)]
    cred = ["--auth-server", gw.world.srv.addr, "--auth-trust", str(gw.trust),
            "--auth-credential", gw.gate_cred]
    tls = ["--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert", cert[0],
           "--scribe-tls-key", cert[1]]
    # no credential for the gateway
    r = run([binary("cairnd")] + base + ["--scribe", "off"] + tls, timeout=60)
    assert r.returncode == 2 and "--auth-credential" in r.stderr, r.stderr
    # a plaintext listener in front of scribes:// storage
    r = run([binary("cairnd")] + base + ["--scribe", "127.0.0.1:0"] + tls + cred, timeout=60)
    assert r.returncode == 2 and "not --scribe" in r.stderr, r.stderr
    # mixed plaintext and TLS storage
    mixed = tmp_path / "mixed.toml"
    mixed.write_text("[[storage]]\naddress = \"scribes://127.0.0.1:1\"\nnamespace = \"a\"\n"
                     "[[storage]]\naddress = \"127.0.0.1:2\"\n")
    r = run([binary("cairnd"), "--data", str(tmp_path / "bad2"), "--gateway", str(mixed),
             "--scribe", "off"] + tls + cred, timeout=60)
    assert r.returncode == 2 and "mix plaintext" in r.stderr, r.stderr


def test_data_connection_binds_with_the_same_certificate(gw):
    c = via(gw, "wes")
    sid = c.hello_ok["session"]

    def bind(who, binding):
        d = raw_conn(gw.world.proxy(gw.acc[who], gw.gw).addr)
        return hello_reply(d, hello4(caller=1, bind=sid, binding=binding))[0]

    assert bind("wes", c.binding) == "ok"
    assert bind("rita", c.binding) == "error"  # another subject
    assert bind("wes", bytes(32)) == "error"  # not the session's secret

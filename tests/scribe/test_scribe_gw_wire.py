"""The storage side of the gateway wire (docs/protocol/scribe-gateway.md,
"Wire") through a real cairnd over real sockets: instance_status (26) now
carries available_bytes (the data directory's statvfs), authorize_upload
(27) and authorize_repo_create (28) on plaintext protocol 2, and on
protocol 4 with auth, where storage asks Writer for 27 and the namespace
administrator for 28; discover's storage form; `cairn repo discover`.
The raw client is tests/scribe/scribe_wire.py; the protocol-4 world (auth,
users, grants, the pq-only relay) is test_scribe_v4_auth.py's."""
import os
import struct

import pytest

from conftest import assert_no_sanitizer, binary, run
from scribe_wire import ERR, OP, Conn, ScribeError, header
from test_scribe_v4_auth import code, roles, world  # noqa: F401 (fixtures)

ARGS = ["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0"]
AUTHORIZE_UPLOAD, AUTHORIZE_REPO_CREATE = OP["authorize_upload"], OP["authorize_repo_create"]


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


def raises(name, fn, *a):
    with pytest.raises(ScribeError) as ei:
        fn(*a)
    assert ei.value.code == ERR[name], ei.value
    return ei.value


def create_req(ns=None):
    if ns is None:
        return b"\x00"
    return b"\x01" + struct.pack("<H", len(ns)) + ns.encode()


def statvfs_free(path):
    v = os.statvfs(path)
    return v.f_bavail * v.f_frsize


# ---- plaintext (protocol 2) ---------------------------------------------------------------
def test_instance_status_reports_available_bytes(srv):
    with Conn(srv.addrs["scribe"]) as c:
        made = [c.repo_create("inv%d" % i)["id"] for i in range(3)]
        before = statvfs_free(srv.data_dir)
        h = c.instance_status()
        after = statvfs_free(srv.data_dir)
        assert h["total"] == 3 and [r[0]["id"] for r in h["rows"]] == sorted(made)
        # the same file system's free space, sampled between our two looks
        # (other processes write to it meanwhile: a band, not an equality)
        slack = 256 << 20
        assert h["available"] is not None
        assert min(before, after) - slack <= h["available"] <= max(before, after) + slack
        # a later page samples it again; used_bytes stays first-page only
        h2 = c.instance_status(after=sorted(made)[0])
        assert h2["available"] is not None and h2["used"] == 0 and len(h2["rows"]) == 2


def test_authorize_upload_plaintext(srv):
    with Conn(srv.addrs["scribe"]) as c:
        rid = c.repo_create("up")["id"]
        assert c.call(AUTHORIZE_UPLOAD, rid) == b""
        # the repository must exist, as put_objects' admission would find
        e = raises("repository_not_found", c.call, AUTHORIZE_UPLOAD, b"\x5a" * 16)
        assert e.message
        raises("malformed", c.call, AUTHORIZE_UPLOAD, rid[:15])
        # the connection is still usable after refusals
        assert c.call(AUTHORIZE_UPLOAD, rid) == b""
    with Conn(srv.addrs["scribe"]) as c:
        # a header announcing more than the exact bound (16) closes unread
        c.send(header(AUTHORIZE_UPLOAD, 0, 1, 17))
        assert c.closed_by_peer()


def test_authorize_repo_create_plaintext(srv):
    with Conn(srv.addrs["scribe"]) as c:
        assert c.call(AUTHORIZE_REPO_CREATE, create_req()) == b""
        # plaintext storage serves no namespace: an explicit one is malformed
        e = raises("malformed", c.call, AUTHORIZE_REPO_CREATE, create_req("studio"))
        assert "studio" in e.message and "no namespace" in e.message
        for bad in (b"", b"\x02", b"\x00\x00", b"\x01\x00\x00", create_req("a/b"),
                    b"\x01\x06\x00stu"):
            raises("malformed", c.call, AUTHORIZE_REPO_CREATE, bad)
        assert c.call(AUTHORIZE_REPO_CREATE, create_req()) == b""
    with Conn(srv.addrs["scribe"]) as c:
        c.send(header(AUTHORIZE_REPO_CREATE, 0, 1, 1 + 2 + 64 + 1))  # over 67
        assert c.closed_by_peer()


def test_discover_storage_form(srv):
    with Conn(srv.addrs["scribe"]) as c:
        assert c.discover() == bytes.fromhex("01 00 01000000 0000")
        # discover takes no payload: its exact bound is 0, a byte closes unread
        c.send(header(OP["discover"], 0, 9, 1) + b"\x00")
        assert c.closed_by_peer()


def test_cli_discover(srv):
    ep = "%s:%d" % srv.addrs["scribe"]
    r = run([binary("cairn"), "repo", "discover", "scribe://%s/" % ep], timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "role storage\nauthentication no\nservers 1\nnamespace -\tservers 1\n"
    r = run([binary("cairn"), "repo", "discover", "--endpoint", ep], timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("role storage\n"), r.stderr
    # a name is not an endpoint; nothing listening is a network failure
    assert run([binary("cairn"), "repo", "discover", "studio/art"], timeout=60).returncode == 2
    r = run([binary("cairn"), "repo", "discover", "127.0.0.1:1"], timeout=60)
    assert r.returncode == 5, r.stderr


def test_cli_namespaced_names(srv):
    """`cairn repo` reads NS/NAME as a namespace and a name (a plaintext
    storage server refuses the '/' as it refuses any storage name with one),
    and HOST:PORT/NAME still as an endpoint."""
    ep = "%s:%d" % srv.addrs["scribe"]
    env = {"CAIRN_SCRIBE_ENDPOINT": ep}
    r = run([binary("cairn"), "repo", "create", "%s/plain" % ep], timeout=60,
            env={"CAIRN_SCRIBE_ENDPOINT": "127.0.0.1:1"})
    assert r.returncode == 0, r.stderr
    r = run([binary("cairn"), "repo", "info", "studio/plain"], timeout=60, env=env)
    assert r.returncode != 0 and "studio/plain" in r.stderr, (r.stdout, r.stderr)
    r = run([binary("cairn"), "repo", "info", "bad label/x"], timeout=60, env=env)
    assert r.returncode == 2 and "NS" in r.stderr


# ---- protocol 4 with auth ------------------------------------------------------------------
def test_v4_authorize_repo_create(world, roles):  # noqa: F811
    acc, _ = roles
    boss = world.session(acc["boss"])
    assert boss.call(AUTHORIZE_REPO_CREATE, create_req()) == b""
    assert boss.call(AUTHORIZE_REPO_CREATE, create_req("default")) == b""
    e = raises("malformed", boss.call, AUTHORIZE_REPO_CREATE, create_req("publishing"))
    assert "publishing" in e.message and "default" in e.message
    # namespace administrator only: a writer is forbidden, anonymous must sign in
    assert code(world.session(acc["wes"]).call, AUTHORIZE_REPO_CREATE,
                create_req()) == "forbidden"
    assert code(world.session().call, AUTHORIZE_REPO_CREATE, create_req()) == "unauthenticated"


def test_v4_authorize_upload(world, roles):  # noqa: F811
    acc, repos = roles
    assert world.session(acc["wes"]).call(AUTHORIZE_UPLOAD, repos["priv"]) == b""
    assert world.session(acc["boss"]).call(AUTHORIZE_UPLOAD, repos["pub"]) == b""
    # upload admission's rule: a reader is forbidden; a private repository
    # looks absent to a user without a grant; public-read is read-only
    assert code(world.session(acc["rita"]).call, AUTHORIZE_UPLOAD,
                repos["priv"]) == "forbidden"
    assert code(world.session(acc["olga"]).call, AUTHORIZE_UPLOAD,
                repos["priv"]) == "repository_not_found"
    assert code(world.session().call, AUTHORIZE_UPLOAD, repos["pub"]) == "unauthenticated"
    assert code(world.session(acc["wes"]).call, AUTHORIZE_UPLOAD,
                b"\x77" * 16) == "repository_not_found"


def test_v4_instance_status_available(world, roles):  # noqa: F811
    acc, _ = roles
    h = world.session(acc["boss"]).instance_status()
    assert h["total"] == 2 and h["available"] is not None and h["available"] > 0


# ---- a tiered store: no available_bytes -------------------------------------------------------
def test_instance_status_tiered_store_reports_no_available_bytes(tmp_path):
    """With its blobs in the S3 tier the local disk says nothing of the room
    left, so available_bytes is absent rather than a guess."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fleet"))
    from conftest import Server
    from test_blob_tier import BUCKET, PREFIX, Tier

    t = Tier(tmp_path)
    t.start_backend()
    srv = None
    try:
        t.backend.client().create_bucket(Bucket=BUCKET)
        srv = Server(t.node_data, args=ARGS + [
            "--blob-store", "s3://%s/%s" % (BUCKET, PREFIX),
            "--blob-endpoint", t.backend_endpoint(), "--blob-credentials", str(t.creds)])
        srv.start(wait_for=("scribe",))
        with Conn(srv.addrs["scribe"]) as c:
            c.repo_create("tiered")
            h = c.instance_status()
            assert h["total"] == 1 and h["available"] is None
    finally:
        if srv:
            srv.stop()
            out = srv.output()
            assert_no_sanitizer(out)
        t.stop()

"""Security checks against the real server:

  * secrets never reach the logs, nor any file of the data dir except the one
    meant to hold the first credential (admin.token): not the administrator
    secret, not a token created later, not a wrong secret someone tried;
  * tight modes: the data dir 0700, admin.token / identity.key / meta.db 0600,
    and the database's side files closed to group and others;
  * no path traversal through object keys: whatever the key ("..", NUL,
    overlong UTF-8, absolute paths, backslashes, very long), no file appears
    outside the data dir, blob files are named by their digest only, and an
    accepted key reads back exactly.
"""
import hashlib
import os
import socket
import stat

from conftest import binary, run
from proofutil import (all_files, jay, jayclient, no_secret_in_files, node_factory,  # noqa: F401
                       tag_stays_inside)


def test_secrets_never_reach_logs_or_data_files(node_factory, tmp_path):
    admin_secret = "S3cr3t-admin-" + os.urandom(12).hex()
    wrong_secret = "Wr0ng-guess-" + os.urandom(12).hex()
    cred = "cnadmin:" + admin_secret
    node = node_factory(env={"CAIRN_ADMIN_TOKEN": cred}, args=[
        "--jay", "127.0.0.1:0", "--scribe", "off", "--http", "off", "--log-level", "debug"])
    with jay(node, cred=cred) as c:
        c.create_bucket("sec")
        c.put_object("sec", "k", b"hello")
        try:
            c.get_object("sec", "missing")
        except jayclient.JayError:
            pass
    # Failed authentication, in several shapes.
    for bad in ("cnadmin:" + wrong_secret, "nosuchtoken:" + wrong_secret, wrong_secret,
                "cnadmin:" + admin_secret[:-1]):
        s = socket.create_connection(node.jay, timeout=10)
        s.sendall(jayclient.handshake_bytes(bad))
        status, _ = jayclient.read_handshake_reply(s)
        assert status == jayclient.HS_AUTH_FAILED, (bad, status)
        s.close()
    # A token made later, used, and mistyped.
    r = run([binary("cairn"), "admin", "--data", node.data_dir, "token", "create",
             "--account", "admin"], timeout=60)
    assert r.returncode == 0, r.stderr
    new_cred = r.stdout.strip()
    new_secret = new_cred.split(":", 1)[1]
    assert new_secret not in r.stderr
    with jay(node, cred=new_cred) as c:
        c.list_buckets()
    s = socket.create_connection(node.jay, timeout=10)
    s.sendall(jayclient.handshake_bytes(new_cred + "x"))
    assert jayclient.read_handshake_reply(s)[0] == jayclient.HS_AUTH_FAILED
    s.close()
    node.stop()

    secrets = [admin_secret, wrong_secret, new_secret]
    logs = "".join(p.output() for p in node.procs)
    assert "AuthFailed" in logs or "auth" in logs.lower(), "failed logins left no trace at all"
    for sec in secrets:
        assert sec not in logs, "a secret is in the server log"
    no_secret_in_files(node.data_dir, secrets)


def test_modes_of_data_dir_and_credentials(node_factory):
    # No CAIRN_ADMIN_TOKEN: the first credential is generated into admin.token.
    node = node_factory(env={"CAIRN_ADMIN_TOKEN": ""})
    with open(os.path.join(node.data_dir, "admin.token")) as f:
        cred = f.read().strip()
    with jay(node, cred=cred) as c:
        c.create_bucket("modes")
        c.put_object("modes", "k", os.urandom(10000))
    secret = cred.split(":", 1)[1]
    assert secret not in node.server.output(), "the generated secret was logged"
    assert "admin.token" in node.server.output(), "the log does not say where the credential is"

    def mode(p):
        return stat.S_IMODE(os.stat(os.path.join(node.data_dir, p)).st_mode)

    assert mode("") == 0o700
    for name in ("admin.token", "identity.key", "meta.db"):
        assert mode(name) == 0o600, "%s has mode %03o" % (name, mode(name))
    # The metadata engine's side files hold the same rows (WAL, shared memory).
    for name in os.listdir(node.data_dir):
        if name.startswith("meta.db"):
            assert mode(name) & 0o077 == 0, "%s has mode %03o" % (name, mode(name))
    # Blobs are read-only (0444) and their fan-out dirs 0755: what keeps
    # others out of them is the data dir's 0700, checked above.


HOSTILE_KEYS = [
    "..", ".", "../escape-{tag}", "../../escape-{tag}", "a/../../../escape-{tag}",
    "/tmp/escape-{tag}", "//escape-{tag}", "blobs/../../escape-{tag}",
    "..\\..\\escape-{tag}", "%2e%2e%2fescape-{tag}", "staging/../escape-{tag}",
    "key\0with-nul-{tag}", "\0", "./././x", "a" * 1024, "deep/" * 100 + "x",
    "\u202eevil-{tag}", "emoji-\U0001F600-{tag}",
]
# Not valid UTF-8: overlong encodings of '/' and '.', a lone surrogate, 0xFF.
HOSTILE_RAW = [b"\xc0\xaf\xc0\xafescape", b"\xe0\x80\xae\xe0\x80\xae/escape",
               b"\xed\xa0\x80", b"\xff\xfe", b"..\xc0\xaf..\xc0\xafescape"]


def test_object_keys_cannot_traverse(node_factory, tmp_path):
    tag = os.urandom(6).hex()
    node = node_factory()
    outside_before = all_files(str(tmp_path)) - all_files(node.data_dir)
    cwd_before = set(os.listdir(os.getcwd()))
    accepted, rejected = {}, []
    with jay(node) as c:
        c.create_bucket("trav")
        for i, k in enumerate(HOSTILE_KEYS):
            key = k.format(tag=tag)
            data = ("body %d %s" % (i, tag)).encode()
            try:
                c.put_object("trav", key, data)
                accepted[key.encode()] = data
            except jayclient.JayError as e:
                assert e.status == jayclient.ST_BAD_REQUEST and e.code == "InvalidArgument", e
                rejected.append(key)
        for raw in HOSTILE_RAW:
            meta = (jayclient.s("trav") + jayclient.s(raw) + jayclient.s("") + jayclient.smap({}))
            c.send_frame(jayclient.OP["PutObject"], meta, b"raw")
            r = c.read_response()
            if r.status == jayclient.ST_OK:
                accepted[raw] = b"raw"
            else:
                rd = jayclient.Reader(r.meta)
                rd.str()
                assert (r.status, rd.str()) == (jayclient.ST_BAD_REQUEST, "InvalidArgument")
                rejected.append(raw)
        # Bucket names are no way out either.
        for b in ("..", "../x", "/abs", "a/b", "a\0b"):
            try:
                c.create_bucket(b)
                raise AssertionError("bucket %r was created" % b)
            except jayclient.JayError as e:
                assert e.code == "InvalidBucketName", e
        # Every accepted key reads back exactly, and lists as itself.
        for key, data in accepted.items():
            meta = jayclient.s("trav") + jayclient.s(key)
            c.send_frame(jayclient.OP["GetObject"], meta)
            r = c.read_response()
            assert r.status == jayclient.ST_OK, key
            assert r.body == data, key
        listed, after = set(), ""
        while True:
            meta = (jayclient.s("trav") + jayclient.s("") + jayclient.s("") + jayclient.s(after)
                    + jayclient.i32(1000))
            c.send_frame(jayclient.OP["ListObjects"], meta)
            rd = jayclient.Reader(c.read_response().meta)
            for _ in range(rd.u16()):
                listed.add(rd.take(rd.u16()))
                rd.i64(), rd.str(), rd.str(), rd.str(), rd.str()
            rd.slist()
            trunc = rd.bool()
            after = rd.str()
            if not trunc:
                break
        assert listed == set(accepted)
    node.stop()

    # Nothing was made outside the data dir, not even in the server's cwd.
    outside_after = all_files(str(tmp_path)) - all_files(node.data_dir)
    assert outside_after == outside_before, outside_after - outside_before
    assert set(os.listdir(os.getcwd())) == cwd_before
    # Inside it, bytes are content-addressed: no path is derived from a key.
    digests = {hashlib.sha256(d).hexdigest() for d in accepted.values()}
    assert digests
    tag_stays_inside(node, tag, "key")
    print("security: %d hostile keys accepted as opaque names, %d refused as InvalidArgument"
          % (len(accepted), len(rejected)))

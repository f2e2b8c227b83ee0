"""The read path's caches, observed through a real cairnd: the store's open
descriptors of small blobs (src/store/fdcache.c) serve each key its own bytes
across a working set far larger than the old 64 slots, and a blob removed by a
delete and the sweeper is neither served nor held open afterwards."""
import os
import resource
import time

import requests

from s3fixtures import S3Server, s3_args

SWEEP_ENV = {"CAIRN_SWEEP_INTERVAL_SECONDS": "1", "CAIRN_SWEEP_GRACE_SECONDS": "1"}


def start(server_factory, env=None):
    # Blobs as files: these tests watch the descriptor cache of blob files,
    # which packed blobs (the default since issue 17) do not use.
    env = dict(env or {}, CAIRN_TEST_PACK_MAX="0")
    srv = server_factory(args=s3_args(), env=env, wait_for=("jay", "http"))
    s3srv = S3Server(srv)
    s3srv.client().create_bucket(Bucket="rcache", ACL="public-read-write")
    return srv, s3srv


def blob_fds(srv):
    """The server's descriptors that name a file under its blobs directory
    (a removed file's link ends in " (deleted)")."""
    root = os.path.join(os.path.realpath(srv.data_dir), "blobs") + os.sep
    fds = {}
    d = "/proc/%d/fd" % srv.proc.pid
    for name in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, name))
        except OSError:
            continue  # closed while listing
        if target.startswith(root):
            fds[name] = target
    return fds


def put(sess, s3srv, key, body):
    r = sess.put("%s/rcache/%s" % (s3srv.endpoint, key), data=body,
                 headers={"x-amz-acl": "public-read"})
    assert r.status_code == 200, r.text


def get(sess, s3srv, key):
    return sess.get("%s/rcache/%s" % (s3srv.endpoint, key))


def test_two_thousand_keys_each_served_its_own_bytes(server_factory):
    srv, s3srv = start(server_factory)
    sess = requests.Session()
    bodies = {}
    for i in range(2000):
        key = "k%04d" % i
        bodies[key] = os.urandom(1024 + i % 2048)
        put(sess, s3srv, key, bodies[key])
    for rnd in range(2):  # the second round reads through kept descriptors
        for key in sorted(bodies, reverse=bool(rnd)):
            r = get(sess, s3srv, key)
            assert r.status_code == 200 and r.content == bodies[key], (rnd, key)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft >= 4 * 2000:
        # The cache holds a quarter of the descriptor limit: most of the
        # working set stays open (the old cache kept 64).
        assert len(blob_fds(srv)) > 1000


def test_deleted_and_swept_blob_is_not_served_nor_held(server_factory):
    srv, s3srv = start(server_factory, env=SWEEP_ENV)
    sess = requests.Session()
    old, new = os.urandom(3000), os.urandom(3000)
    put(sess, s3srv, "k", old)
    for _ in range(2):
        assert get(sess, s3srv, "k").content == old
    held = blob_fds(srv)
    assert len(held) == 1, held  # kept open by the GETs
    path = next(iter(held.values()))
    assert sess.delete("%s/rcache/k" % s3srv.endpoint).status_code == 204
    deadline = time.time() + 20
    while (os.path.exists(path) or blob_fds(srv)) and time.time() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(path), "the sweeper kept a blob nothing holds"
    assert blob_fds(srv) == {}, "a swept blob's descriptor is still open"
    assert get(sess, s3srv, "k").status_code == 404
    put(sess, s3srv, "k", new)
    assert get(sess, s3srv, "k").content == new


def test_revoked_token_refused_within_a_second(server_factory):
    """Token states are cached (src/identity/identity.c) by the data
    directory's identity write-generation, with 60 s only as an upper bound
    on a state's age: a token revoked by another process (cairn admin on the
    same data directory) moves the generation before the revocation is
    acknowledged, so the next lookup refuses it."""
    srv, s3srv = start(server_factory)
    cred = s3srv.admin("token", "create", "--account", "admin")
    key, secret = cred.split(":", 1)
    c = s3srv.client(key=key, secret=secret)
    c.put_object(Bucket="rcache", Key="t", Body=b"v")
    url = c.generate_presigned_url("get_object", Params={"Bucket": "rcache", "Key": "t"})
    assert requests.get(url).status_code == 200
    assert requests.get(url).status_code == 200  # the token's state is now cached
    s3srv.admin("token", "revoke", key)
    deadline = time.time() + 5  # the next lookup refuses; slack for a loaded machine
    status = 200
    while time.time() < deadline:
        status = requests.get(url).status_code
        if status != 200:
            break
        time.sleep(0.05)
    assert status == 403

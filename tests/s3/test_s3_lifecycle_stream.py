"""Bucket settings changed while anonymous PUTs stream into the bucket (issue
17; src/objects/gen.c, invariant 6): a PUT answers its x-amz-expiration and
its owner from the bucket's owner and rules cached under the bucket's
settings word, which object writes do not move.  So the cache must still
follow a settings change at once: every PUT sent after a
PutBucketLifecycleConfiguration (or a DeleteBucketLifecycle) was
acknowledged answers by the new configuration, and none answered before the
change was sent does; an anonymous PUT's object belongs to the bucket's
owner of the moment, also after the bucket was deleted and made again by
another account."""
import threading
import time

import requests

from conftest import ADMIN_TOKEN, binary, run
from s3fixtures import s3, s3srv, unique  # noqa: F401

WRITERS = 12


def rule(rid, days):
    return {"ID": rid, "Filter": {"Prefix": "p/"}, "Status": "Enabled",
            "Expiration": {"Days": days}}


def rule_id(header):
    """The rule-id of an x-amz-expiration header, or None without one."""
    if header is None:
        return None
    assert header.startswith('expiry-date="') and 'rule-id="' in header, header
    return header.split('rule-id="', 1)[1].rstrip('"')


class Stream:
    """WRITERS threads PUTting new keys under p/ anonymously until stopped,
    each PUT recorded as (sent, answered, rule-id) on one monotonic clock."""

    def __init__(self, endpoint, bucket):
        self.url = "%s/%s/p/" % (endpoint, bucket)
        self.stop = threading.Event()
        self.done = []
        self.errors = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(WRITERS)]

    def run(self, tid):
        sess = requests.Session()
        n = 0
        while not self.stop.is_set():
            n += 1
            t0 = time.monotonic()
            r = sess.put(self.url + "%d-%d" % (tid, n), data=b"x" * 64)
            t1 = time.monotonic()
            with self.lock:
                if r.status_code != 200:
                    self.errors.append((r.status_code, r.text[:200]))
                else:
                    self.done.append((t0, t1, rule_id(r.headers.get("x-amz-expiration"))))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()
        assert not self.errors, self.errors[:3]


def settled(stream, pred, want=20, timeout=60.0):
    """Waits until want PUTs recorded by stream satisfy pred; returns them all."""
    end = time.monotonic() + timeout
    while True:
        with stream.lock:
            done = list(stream.done)
        if sum(1 for d in done if pred(d)) >= want or time.monotonic() > end:
            return done
        time.sleep(0.05)


def change_during(stream, change):
    """Runs change() with PUTs streaming before and after; returns the PUTs
    answered before it was sent and those sent after it was acknowledged."""
    start = time.monotonic()
    settled(stream, lambda d: d[0] > start)
    sent = time.monotonic()
    change()
    acked = time.monotonic()
    done = settled(stream, lambda d: d[0] > acked)
    before = [d for d in done if d[1] < sent]
    after = [d for d in done if d[0] > acked]
    assert len(before) >= 20 and len(after) >= 20, (len(before), len(after))
    return before, after


def test_lifecycle_change_seen_by_every_later_put(s3srv, s3):
    b = unique("lcs")
    s3.create_bucket(Bucket=b, ACL="public-read-write")
    put_rules = lambda rid: s3.put_bucket_lifecycle_configuration(  # noqa: E731
        Bucket=b, LifecycleConfiguration={"Rules": [rule(rid, 30)]})
    put_rules("r-old")
    with Stream(s3srv.endpoint, b) as st:
        before, after = change_during(st, lambda: put_rules("r-new"))
        assert {d[2] for d in before} == {"r-old"}
        assert {d[2] for d in after} == {"r-new"}
        mark = time.monotonic()
        before, after = change_during(st, lambda: s3.delete_bucket_lifecycle(Bucket=b))
        assert {d[2] for d in before if d[0] > mark} == {"r-new"}
        assert {d[2] for d in after} == {None}
        mark = time.monotonic()
        before, after = change_during(st, lambda: put_rules("r-back"))
        assert {d[2] for d in before if d[0] > mark} == {None}
        assert {d[2] for d in after} == {"r-back"}
    # What the PUTs stored answers the same on a read.
    h = s3.head_object(Bucket=b, Key="p/0-1")
    assert rule_id(h["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")) == "r-back"


def full_control(acl):
    return {g["Grantee"].get("ID") for g in acl["Grants"] if g["Permission"] == "FULL_CONTROL"}


def test_anonymous_put_owner_follows_bucket_made_again(s3srv, s3):
    """The owner an anonymous PUT's canned ACL grants FULL_CONTROL to is the
    bucket's owner as cached for the PUT's headers (src/s3/router.c)."""
    b = unique("own")
    s3.create_bucket(Bucket=b, ACL="public-read-write")
    url = "%s/%s/" % (s3srv.endpoint, b)
    hdr = {"x-amz-acl": "public-read"}
    for i in range(3):  # the first fills the cache, the others answer from it
        assert requests.put(url + "a%d" % i, data=b"1", headers=hdr).status_code == 200
    acl = s3.get_object_acl(Bucket=b, Key="a2")
    assert acl["Owner"]["ID"] == "admin" and full_control(acl) == {"admin"}
    for i in range(3):
        s3.delete_object(Bucket=b, Key="a%d" % i)
    s3.delete_bucket(Bucket=b)
    name = unique("carol")
    r = run([binary("cairn"), "admin", "--data", s3srv.data_dir, "account", "create", name],
            env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    cred = s3srv.admin("token", "create", "--account", name).splitlines()[-1].strip()
    key, secret = cred.split(":", 1)
    carol = s3srv.client(key, secret)
    carol.create_bucket(Bucket=b, ACL="public-read-write")
    assert requests.put(url + "b", data=b"2", headers=hdr).status_code == 200
    acl = carol.get_object_acl(Bucket=b, Key="b")
    assert acl["Owner"]["ID"] == name and full_control(acl) == {name}

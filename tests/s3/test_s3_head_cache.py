"""Object heads cached by cairnd (src/objects/head.c) and trusted, with no SQL
on a hit, only while the bucket's slot of the data directory's write-generation
table (src/objects/gen.c) is unchanged.  Every write must be honoured by the
very next GET: one made through the same server, and one made by another
process on the same data directory while the server runs.

A second cairnd cannot open a data directory a cairnd holds (the store's
lock, store.lock, refuses it), so the other process is objects_admin: it
writes through the objects service with its own mapping of the table, as a
second cairnd would.  The hit counter proves the GET before each write was
answered from the cache, so the answer after it cannot be a cold read."""
import json
import os

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import BUILD, run
from s3fixtures import bucket, s3, s3srv  # noqa: F401

HITS = "cairn_objects_head_cache_hits_total"


def metric(srv, name):
    text = requests.get(srv.endpoint + "/_cairn/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def objects_admin(srv, *args):
    path = os.path.join(BUILD, "tests", "objects", "objects_admin")
    r = run([path, srv.data_dir, "admin"] + list(args))
    assert r.returncode == 0, r.stderr


def body(s3, b, key):
    return s3.get_object(Bucket=b, Key=key)["Body"].read()


def cached(srv, s3, b, key, want):
    """GETs key until one is a hit (the first may file the head), checking
    the bytes each time."""
    assert body(s3, b, key) == want
    before = metric(srv, HITS)
    assert body(s3, b, key) == want
    assert metric(srv, HITS) > before


def anon_status(srv, b, key):
    return requests.get("%s/%s/%s" % (srv.endpoint, b, key), timeout=30).status_code


def test_writes_through_the_same_server(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"one")
    cached(s3srv, s3, bucket, "k", b"one")
    s3.put_object(Bucket=bucket, Key="k", Body=b"two")
    assert body(s3, bucket, "k") == b"two"
    cached(s3srv, s3, bucket, "k", b"two")
    head = s3.head_object(Bucket=bucket, Key="k")
    assert head["ContentLength"] == 3
    s3.delete_object(Bucket=bucket, Key="k")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_overwrite_and_delete_by_another_process(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"old bytes")
    s3.put_object(Bucket=bucket, Key="n", Body=b"new bytes!")
    cached(s3srv, s3, bucket, "k", b"old bytes")
    objects_admin(s3srv, "copy", bucket, "n", "k")
    assert body(s3, bucket, "k") == b"new bytes!"
    assert s3.head_object(Bucket=bucket, Key="k")["ContentLength"] == 10
    cached(s3srv, s3, bucket, "k", b"new bytes!")
    objects_admin(s3srv, "delete", bucket, "k")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="k")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_policy_by_another_process(s3srv, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    cached(s3srv, s3, bucket, "k", b"v")
    before = metric(s3srv, HITS)
    assert anon_status(s3srv, bucket, "k") == 403
    assert metric(s3srv, HITS) > before  # refused on a hit: authorization still ran
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::%s/*" % bucket}]}))
    objects_admin(s3srv, "policy", bucket, str(policy))
    assert anon_status(s3srv, bucket, "k") == 200
    assert anon_status(s3srv, bucket, "k") == 200
    objects_admin(s3srv, "policy", bucket, "-")
    assert anon_status(s3srv, bucket, "k") == 403
    objects_admin(s3srv, "policy", bucket, str(policy))
    assert anon_status(s3srv, bucket, "k") == 200
    objects_admin(s3srv, "pab", bucket, "8")  # RestrictPublicBuckets
    assert anon_status(s3srv, bucket, "k") == 403

"""The S3 blob tier on a real Ceph RGW (issue 24): cairnd keeps its blobs in
a bucket of a single-node Ceph cluster (tests/fleet/cephharness.py) instead
of a second cairnd, so every request of the tier's client (SigV4 PUT with
If-None-Match, HEAD, GET, the self-copy of a re-put, ListObjectsV2 and
DELETE of the sweeper) is answered by Ceph's own S3 implementation.

Skipped unless CAIRN_TEST_CEPH_ENDPOINT names the RGW (and
CAIRN_TEST_CEPH_CREDS its ACCESS:SECRET file): run it as
    tests/fleet/ceph.sh env CAIRN_BUILD=build-asan /usr/bin/python3 -m pytest -q \\
        tests/fleet/test_fleet_ceph.py
Metadata stays on the node's SQLite: only the blob tier is under test.

Each test checks the bytes on RGW itself (listing and reading the bucket
through boto3 at the RGW endpoint), not only through cairnd."""
import hashlib
import os
import secrets
import shutil
import sys
import time

import pytest

from conftest import Server, assert_no_sanitizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
from fleetutil import list_keys  # noqa: E402
from s3fixtures import S3Server, s3_args  # noqa: E402
from blobsclient import Ops, b3  # noqa: E402

ENDPOINT = os.environ.get("CAIRN_TEST_CEPH_ENDPOINT", "")
CREDS = os.environ.get("CAIRN_TEST_CEPH_CREDS", "")

pytestmark = pytest.mark.skipif(
    not ENDPOINT or not CREDS,
    reason="needs a Ceph RGW: CAIRN_TEST_CEPH_ENDPOINT and CAIRN_TEST_CEPH_CREDS unset "
           "(run under tests/fleet/ceph.sh, which starts one)")


class Rgw:
    """The RGW through boto3, with the harness's credentials, and one
    fresh bucket for this module (the cluster may outlive it)."""

    def __init__(self):
        import boto3
        from botocore.config import Config
        with open(CREDS) as f:
            self.creds = CREDS
            self.key, self.secret = f.read().strip().split(":", 1)
        self.client = boto3.client("s3", endpoint_url=ENDPOINT, aws_access_key_id=self.key,
                                   aws_secret_access_key=self.secret, region_name="us-east-1",
                                   config=Config(s3={"addressing_style": "path"},
                                                 signature_version="s3v4",
                                                 retries={"max_attempts": 0}))
        self.bucket = "cairn-" + secrets.token_hex(6)
        self.client.create_bucket(Bucket=self.bucket)


@pytest.fixture(scope="module")
def rgw():
    return Rgw()


class Node:
    """One cairnd (SQLite metadata) with --blob-store on the RGW bucket,
    under a key prefix of its own (a node's sweeper owns its prefix), and
    what RGW holds there."""

    def __init__(self, rgw, data, env=None):
        self.rgw, self.data, self.env = rgw, data, env
        self.prefix = "blobs-" + secrets.token_hex(4)
        self.s3 = None

    def start(self):
        args = s3_args() + ["--blob-store", "s3://%s/%s" % (self.rgw.bucket, self.prefix),
                            "--blob-endpoint", ENDPOINT, "--blob-credentials", self.rgw.creds]
        self.s3 = S3Server(Server(self.data, args=args, env=self.env)
                           .start(wait_for=("http", "jay")))
        return self

    def stop(self):
        self.s3.server.stop()
        out = self.s3.server.output()
        assert_no_sanitizer(out)

    def put(self, key, data):
        return self.s3.client().put_object(Bucket="front", Key=key, Body=data)

    def get(self, key):
        return self.s3.client().get_object(Bucket="front", Key=key)["Body"].read()

    def keys(self):
        """Every RGW object under the node's prefix."""
        return list_keys(self.rgw.client, self.rgw.bucket, self.prefix + "/")

    def blob_key(self, data):
        return "%s/%s" % (self.prefix, b3(data))

    def head(self, data):
        """RGW's HEAD of data's blob object."""
        return self.rgw.client.head_object(Bucket=self.rgw.bucket, Key=self.blob_key(data))

    def read(self, data):
        """The bytes RGW holds for data's blob."""
        return self.rgw.client.get_object(Bucket=self.rgw.bucket,
                                          Key=self.blob_key(data))["Body"].read()


@pytest.fixture
def node(rgw, tmp_path):
    n = Node(rgw, tmp_path / "node").start()
    n.s3.client().create_bucket(Bucket="front")
    yield n
    n.stop()


def test_s3_round_trips_land_in_rgw(node, rgw):
    """4 KiB and 20 MiB through the S3 face: each blob is one RGW object
    named by its digest, holding exactly the bytes, with its form in its
    metadata; then read back cold, from RGW, after the cache is gone."""
    small = os.urandom(4096)
    big = os.urandom(20 << 20)
    node.put("small", small)
    node.put("big", big)
    assert node.get("small") == small
    assert hashlib.sha256(node.get("big")).digest() == hashlib.sha256(big).digest()
    keys = node.keys()
    for data in (small, big):
        assert keys.count(node.blob_key(data)) == 1, keys
        head = node.head(data)
        assert head["ContentLength"] == len(data)
        assert head["Metadata"].get("cairn-form") == "raw"
        assert node.read(data) == data
    node.stop()
    shutil.rmtree(node.data / "cache")
    node.start()
    assert node.get("small") == small
    assert hashlib.sha256(node.get("big")).digest() == hashlib.sha256(big).digest()
    assert (node.data / "cache" / b3(small)).read_bytes() == small


@pytest.mark.skipif(os.environ.get("CAIRN_SLOW_TESTS") != "1",
                    reason="80 MiB through RGW (about 20 s under ASan): CAIRN_SLOW_TESTS=1")
def test_multipart_upload_to_rgw(node, rgw):
    """A blob of 64 MiB or more goes to RGW as a multipart upload (80 MiB:
    five parts of 16 MiB, completed under If-None-Match) and nothing of the
    upload is left behind."""
    big = os.urandom(80 << 20)
    node.put("big", big)
    head = node.head(big)
    assert head["ContentLength"] == len(big)
    assert head["ETag"].strip('"').endswith("-5"), head["ETag"]
    assert head["Metadata"].get("cairn-form") == "raw"
    assert not rgw.client.list_multipart_uploads(Bucket=rgw.bucket).get("Uploads")
    assert hashlib.sha256(node.read(big)).digest() == hashlib.sha256(big).digest()
    node.stop()
    shutil.rmtree(node.data / "cache")
    node.start()
    assert hashlib.sha256(node.get("big")).digest() == hashlib.sha256(big).digest()


def test_blob_ops_and_jay_puts_dedup_in_rgw(node, rgw):
    """A blob-operations put and a Jay PutObject land in RGW; the same bytes
    again through the other faces make no second object."""
    ops = Ops(node.s3.server)
    data = os.urandom(200000)
    st, body = ops.put("fleet/a", data)
    assert st == 200, body
    assert body["digest"] == b3(data)
    assert node.read(data) == data
    before = node.keys()
    node.put("same", data)
    with node.s3.jay() as j:
        j.create_bucket("jayfront")
        j.put_object("jayfront", "same", data)
        jay_only = os.urandom(300000)
        j.put_object("jayfront", "own", jay_only)
        _, got = j.get_object("jayfront", "own")
        assert got == jay_only
    assert node.read(jay_only) == jay_only
    after = node.keys()
    assert after.count(node.blob_key(data)) == 1
    assert sorted(set(after) - set(before)) == [node.blob_key(jay_only)]
    r = ops.fetch("fleet/a", b3(data))
    assert r.status_code == 200 and r.content == data


def test_re_put_refreshes_rgw_last_modified(node, rgw):
    """A dedup put copies the RGW object onto itself (metadata REPLACE),
    which restarts its LastModified: the sweeper's grace window."""
    data = os.urandom(5000)
    node.put("one", data)
    first = node.head(data)["LastModified"]
    time.sleep(1.2)
    node.put("two", data)
    head = node.head(data)
    assert head["LastModified"] > first
    assert head["Metadata"].get("cairn-form") == "raw"
    assert node.keys().count(node.blob_key(data)) == 1


def test_sweeper_deletes_unreferenced_rgw_objects(rgw, tmp_path):
    """The sweeper lists the RGW bucket (ListObjectsV2) and deletes only
    the blob no object refers to."""
    n = Node(rgw, tmp_path / "node", env={"CAIRN_SWEEP_INTERVAL_SECONDS": "1",
                                           "CAIRN_SWEEP_GRACE_SECONDS": "1"}).start()
    try:
        n.s3.client().create_bucket(Bucket="front")
        kept, dropped = os.urandom(7000), os.urandom(8000)
        n.put("kept", kept)
        n.put("dropped", dropped)
        n.s3.client().delete_object(Bucket="front", Key="dropped")
        deadline = time.time() + 30
        while n.blob_key(dropped) in n.keys() and time.time() < deadline:
            time.sleep(0.5)
        keys = n.keys()
        assert n.blob_key(dropped) not in keys
        assert n.blob_key(kept) in keys
        assert n.get("kept") == kept
    finally:
        n.stop()

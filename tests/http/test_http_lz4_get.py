"""An S3 GET of an object whose bytes the store keeps in the LZ4 envelope:
the body is decoded piece by piece on a worker of the framework, each
piece from the reader's position (cn_objects_reader_read_at through
cn_http_respond_stream), never through a thread of its own.

The LZ4 blob comes from Scribe: a repository created with LZ4 storage keeps
its chunks compressed, and an S3 PUT of the same bytes refers to that blob
(the store keeps one form of each digest)."""
import os
import subprocess

import boto3
import pytest
from botocore.config import Config

from conftest import ADMIN_TOKEN
from cairnutil import repo as cairn_repo

ADMIN_KEY, ADMIN_SECRET = ADMIN_TOKEN.split(":", 1)


def b3(data):
    r = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True, check=True)
    return r.stdout.decode().strip()


@pytest.fixture
def srv(server_factory):
    return server_factory(args=["--jay", "off", "--scribe", "127.0.0.1:0", "--http",
                                "127.0.0.1:0"], wait_for=("scribe", "http"))


def repo(ep, *args):
    return cairn_repo(ep, *args, env={"CAIRN_TOKEN": ADMIN_TOKEN})


def test_get_of_an_lz4_stored_object(srv, tmp_path):
    # One chunk (between the chunker's minimum and the first cut point),
    # compressible, and larger than what is answered inline (16 KiB).
    data = b"".join(b"line %06d of a compressible object body\n" % i for i in range(500))
    assert 16 << 10 < len(data) < 24 << 10
    ep = "%s:%d" % srv.addrs["scribe"]
    repo(ep, "create", "packed", "--lz4-storage")
    ws = tmp_path / "ws"
    repo(ep, "clone", "packed", str(ws))
    (ws / "f.txt").write_bytes(data)
    repo(ep, "submit", str(ws), "-m", "one chunk")
    digest = b3(data)
    lz4 = os.path.join(srv.data_dir, "blobs", digest[:2], digest[2:4], digest + ".lz4")
    assert os.path.exists(lz4), "the chunk is not stored in the LZ4 envelope"

    host, port = srv.addrs["http"]
    s3 = boto3.client("s3", endpoint_url="http://%s:%d" % (host, port),
                      aws_access_key_id=ADMIN_KEY, aws_secret_access_key=ADMIN_SECRET,
                      region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                    retries={"max_attempts": 0}))
    s3.create_bucket(Bucket="lz4")
    s3.put_object(Bucket="lz4", Key="same-bytes", Body=data)
    assert os.path.exists(lz4)  # still the one form of the digest
    for _ in range(3):  # the connection stays usable after each pushed body
        got = s3.get_object(Bucket="lz4", Key="same-bytes")
        assert got["ContentLength"] == len(data) and got["Body"].read() == data
    got = s3.get_object(Bucket="lz4", Key="same-bytes", Range="bytes=20000-20099")
    assert got["Body"].read() == data[20000:20100]
    head = s3.head_object(Bucket="lz4", Key="same-bytes")
    assert head["ContentLength"] == len(data)

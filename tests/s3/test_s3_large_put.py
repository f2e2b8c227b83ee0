"""Large PUTs through the real cairnd (issue 17): a body of a megabyte or more
is read in large pieces and hashed beside the write (MD5 and SHA-256 on the hashing pool),
and a multipart object references its parts' blobs instead of copying them.

Observed through the S3 face and the data directory: the bytes and the
digests a large PUT answers with, Content-MD5 and x-amz-checksum-* still
refused on mismatch with nothing stored, a Complete that adds no blob, GETs and
ranged GETs across part boundaries byte-exact, a part re-uploaded before
Complete, and an abort whose part blobs the sweeper frees."""
import base64
import hashlib
import os
import time
import zlib

import pytest
import requests
from botocore.exceptions import ClientError

from s3fixtures import S3Server, s3_args

MiB = 1 << 20
SWEEP_ENV = {"CAIRN_SWEEP_INTERVAL_SECONDS": "1", "CAIRN_SWEEP_GRACE_SECONDS": "1"}


@pytest.fixture(scope="module")
def big():
    """12 MiB of random bytes: large enough to hash beside the write (1 MiB)
    and for the 256 KiB body buffer to fill many times over."""
    return os.urandom(12 * MiB + 12345)


def start(server_factory, env=None):
    srv = server_factory(args=s3_args(), env=env, wait_for=("jay", "http"))
    s3srv = S3Server(srv)
    s3srv.client().create_bucket(Bucket="large", ACL="public-read-write")
    return srv, s3srv


def blob_files(srv):
    """Path -> size of every file under the data directory's blobs."""
    root = os.path.join(srv.data_dir, "blobs")
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            try:
                out[p] = os.path.getsize(p)
            except OSError:
                pass  # removed while listing
    return out


def url(s3srv, key):
    return "%s/large/%s" % (s3srv.endpoint, key)


def code(exc):
    return exc.value.response["Error"]["Code"]


def test_large_single_put_digests_and_bytes(server_factory, big):
    srv, s3srv = start(server_factory)
    sess = requests.Session()
    md5 = hashlib.md5(big)
    r = sess.put(url(s3srv, "one"), data=big,
                 headers={"x-amz-acl": "public-read",
                          "Content-MD5": base64.b64encode(md5.digest()).decode()})
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == '"%s"' % md5.hexdigest()
    g = sess.get(url(s3srv, "one"))
    assert g.status_code == 200 and g.content == big
    # The SHA-256 the service stored (hashed on the caller's thread while
    # MD5 ran beside it) is the body's, as the Jay face reports it.
    c = s3srv.client()
    a = c.get_object_attributes(Bucket="large", Key="one", ObjectAttributes=["ETag", "ObjectSize"])
    assert a["ObjectSize"] == len(big) and a["ETag"] == md5.hexdigest()
    # Chunked transfer encoding (no length): the helper starts once 1 MiB is in.
    def gen():
        for off in range(0, len(big), 100000):
            yield big[off:off + 100000]
    r = sess.put(url(s3srv, "chunked"), data=gen(), headers={"x-amz-acl": "public-read"})
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == '"%s"' % md5.hexdigest()
    assert sess.get(url(s3srv, "chunked")).content == big


@pytest.mark.parametrize("header", ["Content-MD5", "x-amz-checksum-sha256", "x-amz-checksum-crc32"])
def test_large_put_with_a_wrong_digest_stores_nothing(server_factory, big, header):
    srv, s3srv = start(server_factory)
    before = blob_files(srv)
    wrong = bytearray(big)
    wrong[len(wrong) // 2] ^= 1  # the digest is of other bytes
    if header == "Content-MD5":
        val = base64.b64encode(hashlib.md5(wrong).digest()).decode()
    elif header == "x-amz-checksum-sha256":
        val = base64.b64encode(hashlib.sha256(wrong).digest()).decode()
    else:
        val = base64.b64encode((zlib.crc32(wrong) & 0xffffffff).to_bytes(4, "big")).decode()
    sess = requests.Session()
    r = sess.put(url(s3srv, "bad"), data=big, headers={"x-amz-acl": "public-read", header: val})
    assert r.status_code == 400, r.text
    assert "BadDigest" in r.text or "InvalidDigest" in r.text or "XAmzContentChecksumMismatch" in r.text or \
        "InvalidRequest" in r.text, r.text
    assert sess.get(url(s3srv, "bad")).status_code == 404
    # Nothing of the body was kept under a blob name.
    assert blob_files(srv) == before


def test_multipart_complete_by_reference(server_factory, big):
    srv, s3srv = start(server_factory)
    c = s3srv.client()
    parts = [big[:5 * MiB], big[5 * MiB:10 * MiB], big[10 * MiB:]]
    uid = c.create_multipart_upload(Bucket="large", Key="mp")["UploadId"]
    etags = [c.upload_part(Bucket="large", Key="mp", UploadId=uid, PartNumber=i + 1,
                           Body=p)["ETag"] for i, p in enumerate(parts)]
    stored = blob_files(srv)
    assert sum(stored.values()) >= len(big)  # the parts' blobs
    r = c.complete_multipart_upload(Bucket="large", Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    want = '"%s-3"' % hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    assert r["ETag"] == want
    # By reference: Complete wrote no blob and copied no byte.
    assert blob_files(srv) == stored
    g = c.get_object(Bucket="large", Key="mp")
    assert g["Body"].read() == big and g["ETag"] == want
    b1, b2 = len(parts[0]), len(parts[0]) + len(parts[1])
    for lo, hi in ((b1 - 1, b1), (b1 - 4096, b1 + 4095), (b2 - 1, b2 + 1), (b1 - 7, b2 + 7),
                   (0, len(big) - 1), (b2, len(big) - 1), (len(big) - 3, len(big) - 1)):
        g = c.get_object(Bucket="large", Key="mp", Range="bytes=%d-%d" % (lo, hi))
        assert g["Body"].read() == big[lo:hi + 1], (lo, hi)
        assert g["ContentRange"] == "bytes %d-%d/%d" % (lo, hi, len(big))


def test_part_reuploaded_before_complete(server_factory, big):
    srv, s3srv = start(server_factory)
    c = s3srv.client()
    first, second, tail = big[:5 * MiB], big[5 * MiB:10 * MiB], big[10 * MiB:]
    uid = c.create_multipart_upload(Bucket="large", Key="re")["UploadId"]
    old = c.upload_part(Bucket="large", Key="re", UploadId=uid, PartNumber=1, Body=first)["ETag"]
    new = c.upload_part(Bucket="large", Key="re", UploadId=uid, PartNumber=1, Body=second)["ETag"]
    e2 = c.upload_part(Bucket="large", Key="re", UploadId=uid, PartNumber=2, Body=tail)["ETag"]
    assert old != new
    listed = c.list_parts(Bucket="large", Key="re", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ETag"]) for p in listed] == [(1, new), (2, e2)]
    with pytest.raises(ClientError) as e:
        c.complete_multipart_upload(Bucket="large", Key="re", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": old}, {"PartNumber": 2, "ETag": e2}]})
    assert code(e) == "InvalidPart"
    c.complete_multipart_upload(Bucket="large", Key="re", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": new}, {"PartNumber": 2, "ETag": e2}]})
    body = c.get_object(Bucket="large", Key="re")["Body"].read()
    assert body == second + tail
    lo = len(second) - 100
    g = c.get_object(Bucket="large", Key="re", Range="bytes=%d-%d" % (lo, lo + 199))
    assert g["Body"].read() == (second + tail)[lo:lo + 200]


def test_abort_frees_part_blobs(server_factory, big):
    srv, s3srv = start(server_factory, env=SWEEP_ENV)
    c = s3srv.client()
    before = blob_files(srv)
    uid = c.create_multipart_upload(Bucket="large", Key="ab")["UploadId"]
    for i, p in enumerate((big[:5 * MiB], big[5 * MiB:])):
        c.upload_part(Bucket="large", Key="ab", UploadId=uid, PartNumber=i + 1, Body=p)
    added = set(blob_files(srv)) - set(before)
    assert sum(os.path.getsize(p) for p in added) >= len(big)
    c.abort_multipart_upload(Bucket="large", Key="ab", UploadId=uid)
    deadline = time.time() + 30
    while any(os.path.exists(p) for p in added) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(os.path.exists(p) for p in added), "the sweeper kept an aborted upload's parts"
    with pytest.raises(ClientError) as e:
        c.list_parts(Bucket="large", Key="ab", UploadId=uid)
    assert code(e) == "NoSuchUpload"

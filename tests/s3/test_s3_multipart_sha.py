"""The whole-object SHA-256 of a multipart upload, and of signed PUTs, through
the real cairnd (issue 17).  Completion takes the SHA-256 from the upload's
running hash when the parts came in order and reads only the parts it did not
cover, so every way of uploading parts must still give the SHA-256 of exactly
the listed parts' bytes: in order, in parallel, out of order, re-uploaded
with other bytes, a subset listed, parts copied.  A signed PUT or part hashes
its bytes once (the framework's check stands for the service's): a body that
does not match its x-amz-content-sha256 or x-amz-checksum-sha256 is refused
and nothing is stored, and a matching one keeps its SHA-256."""
import base64
import hashlib
import threading

import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from s3fixtures import ADMIN_KEY, ADMIN_SECRET, REGION, bucket, s3, s3srv  # noqa: F401

MiB = 1 << 20


def body(tag, n=5 * MiB):
    """n bytes of their own: no part equals another."""
    seed = hashlib.sha256(tag.encode()).digest()
    return (seed * (n // len(seed) + 1))[:n]


def b64sha(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def signed_for_other(srv, path, signed_body, sent, params=None):
    """A PUT signed with signed_body's payload hash that sends other bytes
    of the same length (the signature holds; the payload hash does not)."""
    req = AWSRequest(method="PUT", url=srv.endpoint + path, data=signed_body, params=params or {})
    S3SigV4Auth(Credentials(ADMIN_KEY, ADMIN_SECRET), "s3", REGION).add_auth(req)
    prepared = req.prepare()
    return requests.put(prepared.url, data=sent, headers=dict(prepared.headers))


def stored_sha(s3, bucket, key):
    """The object's SHA-256 as the server stored it (FULL_OBJECT checksum)."""
    h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    return h.get("ChecksumSHA256")


def put_part(s3, bucket, key, uid, n, data):
    return s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n, Body=data)["ETag"]


def complete(s3, bucket, key, uid, etags):
    return s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in sorted(etags.items())]})


def check(s3, bucket, key, parts):
    whole = b"".join(parts)
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == whole
    assert stored_sha(s3, bucket, key) == b64sha(whole)


def test_in_order_and_parallel(s3, bucket):
    parts = [body("seq-%d" % i) for i in range(3)] + [b"tail"]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="seq")["UploadId"]
    etags = {i + 1: put_part(s3, bucket, "seq", uid, i + 1, p) for i, p in enumerate(parts)}
    complete(s3, bucket, "seq", uid, etags)
    check(s3, bucket, "seq", parts)

    parts = [body("par-%d" % i) for i in range(8)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="par")["UploadId"]
    etags, errors = {}, []

    def send(i):
        try:
            etags[i + 1] = put_part(s3, bucket, "par", uid, i + 1, parts[i])
        except Exception as e:  # reported after the join
            errors.append(e)

    ths = [threading.Thread(target=send, args=(i,)) for i in range(len(parts))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors
    complete(s3, bucket, "par", uid, etags)
    check(s3, bucket, "par", parts)


def test_out_of_order_reuploaded_and_subset(s3, bucket):
    p = {n: body("ooo-%d" % n) for n in (1, 2, 3, 4)}
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ooo")["UploadId"]
    etags = {n: put_part(s3, bucket, "ooo", uid, n, p[n]) for n in (3, 1, 4, 2)}
    # Part 2 again with other bytes, after the running hash went past it.
    p[2] = body("ooo-2-again")
    etags[2] = put_part(s3, bucket, "ooo", uid, 2, p[2])
    complete(s3, bucket, "ooo", uid, etags)
    check(s3, bucket, "ooo", [p[1], p[2], p[3], p[4]])

    # Only some of the parts listed: 1 and 3 of 1..3 (a hole), and the
    # first part alone of an upload hashed past it.
    q = {n: body("sub-%d" % n) for n in (1, 2, 3)}
    uid = s3.create_multipart_upload(Bucket=bucket, Key="sub")["UploadId"]
    etags = {n: put_part(s3, bucket, "sub", uid, n, q[n]) for n in (1, 2, 3)}
    complete(s3, bucket, "sub", uid, {1: etags[1], 3: etags[3]})
    check(s3, bucket, "sub", [q[1], q[3]])
    uid = s3.create_multipart_upload(Bucket=bucket, Key="one")["UploadId"]
    etags = {n: put_part(s3, bucket, "one", uid, n, q[n]) for n in (1, 2, 3)}
    complete(s3, bucket, "one", uid, {1: etags[1]})
    check(s3, bucket, "one", [q[1]])


def test_same_bytes_twice_and_copied_part(s3, bucket):
    src = body("copy-src", 6 * MiB)
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    same = body("same")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mix")["UploadId"]
    etags = {1: put_part(s3, bucket, "mix", uid, 1, same)}
    c = s3.upload_part_copy(Bucket=bucket, Key="mix", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceRange="bytes=0-%d" % (5 * MiB - 1))
    etags[2] = c["CopyPartResult"]["ETag"]
    etags[3] = put_part(s3, bucket, "mix", uid, 3, same)   # the same blob as part 1
    etags[1] = put_part(s3, bucket, "mix", uid, 1, same)   # re-sent, same bytes
    complete(s3, bucket, "mix", uid, etags)
    check(s3, bucket, "mix", [same, src[:5 * MiB], same])


def test_aborted_then_new_upload(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ab")["UploadId"]
    put_part(s3, bucket, "ab", uid, 1, body("ab-1"))
    s3.abort_multipart_upload(Bucket=bucket, Key="ab", UploadId=uid)
    parts = [body("ab2-1"), body("ab2-2")]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="ab")["UploadId"]
    etags = {n + 1: put_part(s3, bucket, "ab", uid, n + 1, d) for n, d in enumerate(parts)}
    complete(s3, bucket, "ab", uid, etags)
    check(s3, bucket, "ab", parts)


def test_signed_put_hashes_checked(s3srv, s3, bucket):
    data = body("signed", 3 * MiB)
    path = "/%s/signed" % bucket
    # The payload hash of other bytes: refused, nothing stored.
    other = body("other", len(data))
    r = signed_for_other(s3srv, path, other, data)
    assert r.status_code == 400 and b"XAmzContentSHA256Mismatch" in r.content
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="signed")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")
    # x-amz-checksum-sha256 of other bytes (payload signed): BadDigest.
    r = s3srv.signed("PUT", path, data, headers={"x-amz-checksum-sha256": b64sha(b"other")})
    assert r.status_code == 400 and b"BadDigest" in r.content
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="signed")
    # Matching: stored, with the SHA-256 the client computed.
    r = s3srv.signed("PUT", path, data)
    assert r.status_code == 200, r.content
    assert r.headers["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    check(s3, bucket, "signed", [data])
    data = body("signed-2", 3 * MiB)
    r = s3srv.signed("PUT", path, data, headers={"x-amz-checksum-sha256": b64sha(data)})
    assert r.status_code == 200, r.content
    check(s3, bucket, "signed", [data])


def test_signed_parts_and_a_bad_part(s3srv, s3, bucket):
    parts = [body("sp-1"), body("sp-2")]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="sp")["UploadId"]
    path = "/%s/sp" % bucket
    r = signed_for_other(s3srv, path, parts[1], parts[0],
                         params={"partNumber": "1", "uploadId": uid})
    assert r.status_code == 400 and b"XAmzContentSHA256Mismatch" in r.content
    assert s3.list_parts(Bucket=bucket, Key="sp", UploadId=uid).get("Parts", []) == []
    etags = {}
    for n, d in enumerate(parts, 1):
        r = s3srv.signed("PUT", path, d, params={"partNumber": str(n), "uploadId": uid})
        assert r.status_code == 200, r.content
        etags[n] = r.headers["ETag"]
    listed = s3.list_parts(Bucket=bucket, Key="sp", UploadId=uid)["Parts"]
    assert [p["ETag"] for p in listed] == [etags[1], etags[2]]
    complete(s3, bucket, "sp", uid, etags)
    check(s3, bucket, "sp", parts)

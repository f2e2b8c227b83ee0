"""The digests of a PUT across the size at which it hashes beside the write
(issue 17), through the real cairnd.  From 1 MiB a body's MD5 and SHA-256
run on the objects service's shared hashing pool (as many as it has idle
threads) while the request's thread copies and hashes BLAKE3, and a signed
payload hash is the session's SHA-256 reported to the framework's check
instead of a second pass; below it every hash runs inline.  Either way the ETag must be the body's MD5 and
the stored SHA-256 the body's, for bodies one byte either side of the
threshold and for a body that arrives in odd-sized pieces; a wrong signed
payload hash must still be refused with nothing stored; and a client that
hangs up mid-body must leave no object and no staged file, with the server
serving on (the sanitizers watch the log)."""
import base64
import hashlib
import os
import socket
import time

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from conftest import assert_no_sanitizer
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, REGION, S3Server, s3_args

MiB = 1 << 20
THRESHOLD = MiB  # put.c's SIDE_MIN_BODY


# The pool as the machine sizes it (one thread fewer than its cores: on two
# cores MD5 goes beside and SHA-256 stays inline), and with two threads, so
# that both hash beside the write on any machine.
@pytest.fixture(scope="module", params=["cores", "two"])
def srv(tmp_path_factory, request):
    from conftest import Server
    env = {"CAIRN_TEST_HASH_THREADS": "2"} if request.param == "two" else None
    s = Server(tmp_path_factory.mktemp("hash") / "data", args=s3_args(), env=env)
    s.start(wait_for=("jay", "http"))
    try:
        s3srv = S3Server(s)
        s3srv.client().create_bucket(Bucket="hashb")
        yield s3srv
    finally:
        s.stop()
    out = s.output()
    assert_no_sanitizer(out)


def signed_headers(srv, method, path, signed_body, params=""):
    """SigV4 headers (payload hash of signed_body) for a raw request."""
    url = srv.endpoint + path + ("?" + params if params else "")
    req = AWSRequest(method=method, url=url, data=signed_body)
    S3SigV4Auth(Credentials(ADMIN_KEY, ADMIN_SECRET), "s3", REGION).add_auth(req)
    return {k: v for k, v in req.prepare().headers.items() if k.lower() != "content-length"}


def raw_put(srv, path, headers, length, pieces, params="", read=True):
    """Sends the head and then each piece of the body on its own send (no
    delay between them is needed for correctness: they only make reads of
    odd sizes likely).  Returns (status, body text), or None when read is
    false (the socket is then closed mid-body by the caller's choice)."""
    host, port = srv.endpoint.rsplit("/", 1)[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    target = path + ("?" + params if params else "")
    head = "PUT %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Length: %d\r\n" % (target, host, port, length)
    head += "".join("%s: %s\r\n" % kv for kv in headers.items() if kv[0].lower() != "host")
    s.sendall((head + "\r\n").encode())
    for p in pieces:
        s.sendall(p)
    if not read:
        s.close()
        return None
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.decode("latin-1")


def stored_sha(c, key):
    return c.head_object(Bucket="hashb", Key=key, ChecksumMode="ENABLED").get("ChecksumSHA256")


def b64sha(data):
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def check(srv, key, data):
    c = srv.client()
    g = c.get_object(Bucket="hashb", Key=key)
    assert g["Body"].read() == data
    assert g["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert stored_sha(c, key) == b64sha(data)


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_digests_across_the_threshold(srv, delta):
    data = os.urandom(THRESHOLD + delta)
    c = srv.client()
    # boto3 over plain HTTP signs the payload's SHA-256 (x-amz-content-sha256).
    r = c.put_object(Bucket="hashb", Key="signed%d" % delta, Body=data)
    assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    check(srv, "signed%d" % delta, data)
    # With Content-MD5 and an x-amz-checksum-sha256 the framework verifies.
    r = c.put_object(Bucket="hashb", Key="ck%d" % delta, Body=data,
                     ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode(),
                     ChecksumSHA256=b64sha(data))
    check(srv, "ck%d" % delta, data)


def test_odd_sized_pieces(srv):
    data = os.urandom(5 * MiB + 4097)
    sizes = [1, 7, 16383, 16384, 16385, 65537, 262143, 262145, 999, 300001]
    pieces, off, i = [], 0, 0
    while off < len(data):
        n = sizes[i % len(sizes)]
        pieces.append(data[off:off + n])
        off += n
        i += 1
    path = "/hashb/odd"
    status, text = raw_put(srv, path, signed_headers(srv, "PUT", path, data), len(data), pieces)
    assert status == 200, text
    assert '"%s"' % hashlib.md5(data).hexdigest() in text
    check(srv, "odd", data)
    # A part in odd pieces, then Complete: the part's ETag and the object's
    # SHA-256 (part 1's state seeds the upload's running SHA-256).
    c = srv.client()
    uid = c.create_multipart_upload(Bucket="hashb", Key="oddmp")["UploadId"]
    q = "partNumber=1&uploadId=" + uid
    status, text = raw_put(srv, "/hashb/oddmp", signed_headers(srv, "PUT", "/hashb/oddmp", data, q),
                           len(data), pieces, params=q)
    assert status == 200, text
    e1 = '"%s"' % hashlib.md5(data).hexdigest()
    assert e1 in text
    tail = os.urandom(MiB + 1)
    e2 = c.upload_part(Bucket="hashb", Key="oddmp", UploadId=uid, PartNumber=2, Body=tail)["ETag"]
    c.complete_multipart_upload(Bucket="hashb", Key="oddmp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert c.get_object(Bucket="hashb", Key="oddmp")["Body"].read() == data + tail
    assert stored_sha(c, "oddmp") == b64sha(data + tail)


@pytest.mark.parametrize("delta", [-1, 1])
def test_wrong_signed_payload_hash_stores_nothing(srv, delta):
    data = os.urandom(THRESHOLD + delta)
    other = bytearray(data)
    other[len(other) // 2] ^= 1
    path = "/hashb/bad%d" % delta
    # Signed for other bytes of the same length: the signature holds, the
    # payload hash does not.
    status, text = raw_put(srv, path, signed_headers(srv, "PUT", path, bytes(other)), len(data),
                           [data])
    assert status == 400 and "XAmzContentSHA256Mismatch" in text, text
    with pytest.raises(ClientError) as e:
        srv.client().head_object(Bucket="hashb", Key="bad%d" % delta)
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")
    # The same for a part: refused, and not listed.
    c = srv.client()
    uid = c.create_multipart_upload(Bucket="hashb", Key="badp%d" % delta)["UploadId"]
    q = "partNumber=1&uploadId=" + uid
    p = "/hashb/badp%d" % delta
    status, text = raw_put(srv, p, signed_headers(srv, "PUT", p, bytes(other), q), len(data),
                           [data], params=q)
    assert status == 400 and "XAmzContentSHA256Mismatch" in text, text
    assert c.list_parts(Bucket="hashb", Key="badp%d" % delta, UploadId=uid).get("Parts", []) == []


def staged(srv):
    d = os.path.join(srv.data_dir, "staging")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_client_aborts_mid_body(srv):
    data = os.urandom(8 * MiB)
    before = staged(srv)
    path = "/hashb/gone"
    hdrs = signed_headers(srv, "PUT", path, data)
    # Hang up a third of the way in, when the pool is hashing this body.
    raw_put(srv, path, hdrs, len(data), [data[:3 * MiB + 12345]], read=False)
    c = srv.client()
    uid = c.create_multipart_upload(Bucket="hashb", Key="gonep")["UploadId"]
    q = "partNumber=1&uploadId=" + uid
    raw_put(srv, "/hashb/gonep", signed_headers(srv, "PUT", "/hashb/gonep", data, q), len(data),
            [data[:5 * MiB]], params=q, read=False)
    # The server lets go of both: no staged file stays, nothing is visible.
    deadline = time.time() + 60
    while staged(srv) != before and time.time() < deadline:
        time.sleep(0.1)
    assert staged(srv) == before
    with pytest.raises(ClientError):
        c.head_object(Bucket="hashb", Key="gone")
    assert c.list_parts(Bucket="hashb", Key="gonep", UploadId=uid).get("Parts", []) == []
    # And serves on: large and small PUTs with the right digests.
    c.put_object(Bucket="hashb", Key="after", Body=data)
    check(srv, "after", data)
    c.put_object(Bucket="hashb", Key="small", Body=b"x" * 4096)
    check(srv, "small", b"x" * 4096)

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
import time

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


def put_parts_at_once(s3, bucket, key, uid, parts):
    """Sends every part of parts (part i+1 = parts[i]) on its own thread at
    once; returns {part number: etag} once all answered, raising the first
    error any of them met."""
    etags, errors = {}, []

    def send(i):
        try:
            etags[i + 1] = put_part(s3, bucket, key, uid, i + 1, parts[i])
        except Exception as e:  # reported after the join
            errors.append(e)

    ths = [threading.Thread(target=send, args=(i,)) for i in range(len(parts))]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errors:
        raise errors[0]
    return etags


def test_in_order_and_parallel(s3, bucket):
    parts = [body("seq-%d" % i) for i in range(3)] + [b"tail"]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="seq")["UploadId"]
    etags = {i + 1: put_part(s3, bucket, "seq", uid, i + 1, p) for i, p in enumerate(parts)}
    complete(s3, bucket, "seq", uid, etags)
    check(s3, bucket, "seq", parts)

    parts = [body("par-%d" % i) for i in range(8)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="par")["UploadId"]
    etags = put_parts_at_once(s3, bucket, "par", uid, parts)
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


# A part that begins when the upload's running SHA-256 covers every part
# before it feeds a copy of that chain as it streams; the chain takes it at
# commit and reads nothing back (mpu_chain.c, feeds).  Observed through the
# objects service's counters.
READS = "cairn_objects_mpu_sha_reads_total"
STREAMED = "cairn_objects_mpu_sha_streamed_total"
DROPPED = "cairn_objects_mpu_sha_feeds_dropped_total"


def counters(srv):
    """{(name, labels): value} of the chain counters."""
    text = requests.get(srv.endpoint + "/_cairn/metrics", timeout=30).text
    out = {}
    for line in text.splitlines():
        if line.startswith((READS, STREAMED, DROPPED)):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def moved(srv, before):
    """What each counter rose by since before: chain reads, completion
    reads, parts streamed, feeds dropped."""
    now = counters(srv)
    d = {k: now.get(k, 0) - before.get(k, 0) for k in set(now) | set(before)}
    return (d.get(READS + '{by="chain"}', 0), d.get(READS + '{by="complete"}', 0),
            d.get(STREAMED, 0), d.get(DROPPED, 0))


def test_sequential_parts_are_not_read_back(s3srv, s3, bucket):
    parts = [body("feed-%d" % i) for i in range(3)] + [b"tail"]
    before = counters(s3srv)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="feed")["UploadId"]
    etags = {i + 1: put_part(s3, bucket, "feed", uid, i + 1, p) for i, p in enumerate(parts)}
    complete(s3, bucket, "feed", uid, etags)
    check(s3, bucket, "feed", parts)
    assert moved(s3srv, before) == (0, 0, 4, 0)


def test_feeds_out_of_order_and_reuploaded(s3srv, s3, bucket):
    # 3 and 4 begin ahead of the chain (read back when it reaches them);
    # 1 and 2 stream into it.
    p = {n: body("fo-%d" % n) for n in (1, 2, 3, 4)}
    before = counters(s3srv)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="fo")["UploadId"]
    etags = {n: put_part(s3, bucket, "fo", uid, n, p[n]) for n in (3, 1, 4, 2)}
    complete(s3, bucket, "fo", uid, etags)
    check(s3, bucket, "fo", [p[1], p[2], p[3], p[4]])
    assert moved(s3srv, before) == (2, 0, 2, 0)
    # Part 2 again with other bytes after the chain went past it: no feed
    # (the chain does not end at part 1), and completion reads every part.
    before = counters(s3srv)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="fr")["UploadId"]
    etags = {n: put_part(s3, bucket, "fr", uid, n, p[n]) for n in (1, 2, 3)}
    p[2] = body("fr-2-again")
    etags[2] = put_part(s3, bucket, "fr", uid, 2, p[2])
    complete(s3, bucket, "fr", uid, etags)
    check(s3, bucket, "fr", [p[1], p[2], p[3]])
    assert moved(s3srv, before) == (0, 3, 3, 0)


def test_aborted_and_refused_parts_leave_the_chain(s3srv, s3, bucket):
    from test_s3_put_hashing import raw_put, signed_headers
    parts = [body("fa-%d" % n) for n in (1, 2, 3)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="fa")["UploadId"]
    etags = {1: put_part(s3, bucket, "fa", uid, 1, parts[0])}
    path = "/%s/fa" % bucket
    q = "partNumber=2&uploadId=" + uid
    before = counters(s3srv)
    # Part 2 hangs up mid-body: its feed is dropped, the chain untouched.
    raw_put(s3srv, path, signed_headers(s3srv, "PUT", path, parts[1], q), len(parts[1]),
            [parts[1][:2 * MiB + 777]], params=q, read=False)
    deadline = time.time() + 120
    while moved(s3srv, before)[3] < 1 and time.time() < deadline:
        time.sleep(0.1)
    assert moved(s3srv, before) == (0, 0, 0, 1)
    # Part 2 whose bytes fail its signed payload hash: refused, dropped.
    r = signed_for_other(s3srv, path, body("fa-other"), parts[1],
                         params={"partNumber": "2", "uploadId": uid})
    assert r.status_code == 400 and b"XAmzContentSHA256Mismatch" in r.content
    # The feed is dropped by the session's cleanup, which may end after the answer.
    deadline = time.time() + 120
    while moved(s3srv, before)[3] < 2 and time.time() < deadline:
        time.sleep(0.1)
    assert moved(s3srv, before) == (0, 0, 0, 2)
    # Sent again whole, parts 2 and 3 still stream into the chain.
    etags[2] = put_part(s3, bucket, "fa", uid, 2, parts[1])
    etags[3] = put_part(s3, bucket, "fa", uid, 3, parts[2])
    complete(s3, bucket, "fa", uid, etags)
    check(s3, bucket, "fa", parts)
    assert moved(s3srv, before) == (0, 0, 2, 2)


def test_parallel_parts_with_feeds(s3srv, s3, bucket):
    # However the parts interleave, no part reaches the chain twice, at
    # most one feed runs per part, and the digest is right.
    parts = [body("fp-%d" % i) for i in range(6)]
    before = counters(s3srv)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="fp")["UploadId"]
    etags = put_parts_at_once(s3, bucket, "fp", uid, parts)
    complete(s3, bucket, "fp", uid, etags)
    check(s3, bucket, "fp", parts)
    chain, whole, fed, dropped = moved(s3srv, before)
    assert chain + fed <= len(parts) and fed + dropped <= len(parts) and whole <= len(parts)

    # Two part 2s at once (other bytes each) after part 1: at most one
    # feeds; the one listed last is the one completed, whichever it is.
    twos = [body("fk-a"), body("fk-b")]
    one = body("fk-1")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="fk")["UploadId"]
    put_part(s3, bucket, "fk", uid, 1, one)
    ths = [threading.Thread(target=put_part, args=(s3, bucket, "fk", uid, 2, d)) for d in twos]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    listed = s3.list_parts(Bucket=bucket, Key="fk", UploadId=uid)["Parts"]
    etags = {p["PartNumber"]: p["ETag"] for p in listed}
    won = [d for d in twos if '"%s"' % hashlib.md5(d).hexdigest() == etags[2]]
    assert len(won) == 1
    complete(s3, bucket, "fk", uid, etags)
    check(s3, bucket, "fk", [one, won[0]])


def multipart_etag(parts):
    """The S3 ETag of a multipart object made of parts."""
    md5s = b"".join(hashlib.md5(p).digest() for p in parts)
    return '"%s-%d"' % (hashlib.md5(md5s).hexdigest(), len(parts))


def copy_part(s3, bucket, key, uid, n, src, rng=None, **extra):
    kw = dict(Bucket=bucket, Key=key, UploadId=uid, PartNumber=n,
              CopySource={"Bucket": bucket, "Key": src}, **extra)
    if rng:
        kw["CopySourceRange"] = "bytes=%d-%d" % rng
    return s3.upload_part_copy(**kw)["CopyPartResult"]["ETag"]


def test_copied_parts_stream_into_the_chain(s3srv, s3, bucket):
    # UploadPartCopy reads its source anyway: those bytes feed the chain as
    # a streamed part's do (part 1 seeds it, later ones continue it).
    src = body("cp-src", 11 * MiB)
    s3.put_object(Bucket=bucket, Key="cp-src", Body=src)
    own = body("cp-own")
    before = counters(s3srv)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cp")["UploadId"]
    etags = {1: copy_part(s3, bucket, "cp", uid, 1, "cp-src", (0, 5 * MiB - 1)),
             2: put_part(s3, bucket, "cp", uid, 2, own),
             3: copy_part(s3, bucket, "cp", uid, 3, "cp-src", (5 * MiB, 10 * MiB - 1)),
             4: copy_part(s3, bucket, "cp", uid, 4, "cp-src")}
    done = complete(s3, bucket, "cp", uid, etags)
    parts = [src[:5 * MiB], own, src[5 * MiB:10 * MiB], src]
    check(s3, bucket, "cp", parts)
    assert done["ETag"] == multipart_etag(parts)
    assert moved(s3srv, before) == (0, 0, 4, 0)


def test_copied_parts_refused_out_of_order_or_aborted(s3srv, s3, bucket):
    src = body("cw-src", 10 * MiB)
    s3.put_object(Bucket=bucket, Key="cw-src", Body=src)
    a, b = src[:5 * MiB], src[5 * MiB:]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cw")["UploadId"]
    etags = {1: put_part(s3, bucket, "cw", uid, 1, body("cw-1"))}
    before = counters(s3srv)
    # A copy refused by its source condition never reaches the chain.
    with pytest.raises(ClientError) as e:
        copy_part(s3, bucket, "cw", uid, 2, "cw-src", (0, 5 * MiB - 1),
                  CopySourceIfMatch='"0123456789abcdef0123456789abcdef"')
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"
    # A range past the source's end: refused, nothing fed.
    with pytest.raises(ClientError):
        copy_part(s3, bucket, "cw", uid, 2, "cw-src", (0, 11 * MiB))
    assert moved(s3srv, before) == (0, 0, 0, 0)
    # Copied ahead of the chain (3 before 2): 3 is read back when the chain
    # reaches it, 2 streams.
    etags[3] = copy_part(s3, bucket, "cw", uid, 3, "cw-src", (5 * MiB, 10 * MiB - 1))
    etags[2] = copy_part(s3, bucket, "cw", uid, 2, "cw-src", (0, 5 * MiB - 1))
    done = complete(s3, bucket, "cw", uid, etags)
    parts = [body("cw-1"), a, b]
    check(s3, bucket, "cw", parts)
    assert done["ETag"] == multipart_etag(parts)
    assert moved(s3srv, before) == (1, 0, 1, 0)
    # Copied into an upload then aborted: a new upload of the same key
    # starts its own chain and completes right.
    before = counters(s3srv)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cw")["UploadId"]
    copy_part(s3, bucket, "cw", uid, 1, "cw-src", (0, 5 * MiB - 1))
    s3.abort_multipart_upload(Bucket=bucket, Key="cw", UploadId=uid)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cw")["UploadId"]
    etags = {1: copy_part(s3, bucket, "cw", uid, 1, "cw-src", (5 * MiB, 10 * MiB - 1)),
             2: copy_part(s3, bucket, "cw", uid, 2, "cw-src", (0, 5 * MiB - 1))}
    done = complete(s3, bucket, "cw", uid, etags)
    check(s3, bucket, "cw", [b, a])
    assert done["ETag"] == multipart_etag([b, a])
    assert moved(s3srv, before) == (0, 0, 3, 0)


def test_restart_between_parts(server_factory):
    # The chain lives in memory only (docs/performance.md: OpenSSL 3.0 has
    # no way to save a SHA-256 midstate): after a restart completion reads
    # back exactly the parts the new chain does not cover, and the digest
    # and ETag stay right.
    from s3fixtures import S3Server, s3_args
    srv = server_factory(args=s3_args(), wait_for=("jay", "http"))
    s3 = S3Server(srv).client()
    s3.create_bucket(Bucket="rsb")
    src = body("rs-src", 5 * MiB)
    s3.put_object(Bucket="rsb", Key="src", Body=src)
    p = {n: body("rs-%d" % n) for n in (1, 2, 3)}
    uids, etags = {}, {}
    for key in ("plain", "resent"):
        uids[key] = s3.create_multipart_upload(Bucket="rsb", Key=key)["UploadId"]
        etags[key] = {n: put_part(s3, "rsb", key, uids[key], n, p[n]) for n in (1, 2)}
    srv.stop()
    srv.start(wait_for=("jay", "http"))
    s3srv = S3Server(srv)
    s3 = s3srv.client()
    before = counters(s3srv)
    # plain: part 3 copied after the restart, nothing re-sent: completion
    # reads all three parts.
    etags["plain"][3] = copy_part(s3, "rsb", "plain", uids["plain"], 3, "src")
    done = complete(s3, "rsb", "plain", uids["plain"], etags["plain"])
    parts = [p[1], p[2], src]
    check(s3, "rsb", "plain", parts)
    assert done["ETag"] == multipart_etag(parts)
    assert moved(s3srv, before) == (0, 3, 0, 0)
    # resent: part 1 sent again seeds a new chain; part 2 (from before the
    # restart) and part 3 are read back.
    before = counters(s3srv)
    etags["resent"][1] = put_part(s3, "rsb", "resent", uids["resent"], 1, p[1])
    etags["resent"][3] = put_part(s3, "rsb", "resent", uids["resent"], 3, p[3])
    done = complete(s3, "rsb", "resent", uids["resent"], etags["resent"])
    parts = [p[1], p[2], p[3]]
    check(s3, "rsb", "resent", parts)
    assert done["ETag"] == multipart_etag(parts)
    assert moved(s3srv, before) == (0, 2, 1, 0)

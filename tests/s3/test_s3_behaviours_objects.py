"""S3 behaviours real clients rely on (issue 14), for objects and multipart
uploads, each checked against a real cairnd from the AWS S3 API Reference's
wording (https://docs.aws.amazon.com/AmazonS3/latest/API/):

  API_CompleteMultipartUpload.html   a completion answers Location, Bucket, Key,
      ETag and, for an upload created with a checksum algorithm, the object's
      checksum with ChecksumType; a client that lost the reply retries it
      (docs/s3.md records how long cairn keeps a completed upload for that);
      "Each CompletedPart ... ChecksumCRC32: the Base64 encoded, 32-bit CRC32
      checksum of the part"; a checksum that does not match -> BadDigest.
  ErrorResponses.html                InvalidPartNumber: "The requested partnumber
      is not satisfiable", 416.
  API_GetObject.html / API_HeadObject.html   partNumber: "Part number of the
      object being read ... Effectively performs a 'ranged' GET request for the
      part specified."
  API_GetObjectAttributes.html, API_Checksum.html, API_ObjectPart.html
      Checksum of a multipart object is "a calculation based on the checksum
      values of each individual part"; ObjectParts' Part carries "ChecksumCRC32:
      the Base64 encoded, 32-bit CRC32 checksum of the part ... present if the
      multipart upload request was created with the CRC32 checksum algorithm".
  Checking object integrity (user guide): a composite checksum is the checksum
      of the concatenated part checksums, then "-" and the number of parts.
  API_PutObject.html                 x-amz-meta-* user metadata; Content-Encoding.
"""
import base64
import hashlib
import re
import xml.etree.ElementTree as ET
import zlib

import pytest
from botocore.exceptions import ClientError

from s3fixtures import bucket, checksum_b64, crc32c, s3, s3srv, unique  # noqa: F401

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MIB5 = 5 << 20


def raw_checksum(alg, data):
    if alg == "CRC32":
        return zlib.crc32(data).to_bytes(4, "big")
    if alg == "CRC32C":
        return crc32c(data).to_bytes(4, "big")
    if alg == "SHA1":
        return hashlib.sha1(data).digest()
    return hashlib.sha256(data).digest()


def composite(alg, parts):
    """S3's composite checksum: the algorithm over the parts' raw checksums, "-N"."""
    whole = raw_checksum(alg, b"".join(raw_checksum(alg, p) for p in parts))
    return "%s-%d" % (base64.b64encode(whole).decode(), len(parts))


def b64(alg, data):
    return base64.b64encode(raw_checksum(alg, data)).decode()


def code_of(exc):
    return exc.value.response["Error"]["Code"], exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def xml_code(resp):
    m = re.search(r"<Code>([^<]*)</Code>", resp.text)
    return m.group(1) if m else None


def complete_xml(parts, checksums=None):
    """parts: [(number, etag)]; checksums: {number: (alg, value)}."""
    out = "<CompleteMultipartUpload>"
    for n, e in parts:
        ck = ""
        if checksums and n in checksums:
            alg, v = checksums[n]
            ck = "<Checksum%s>%s</Checksum%s>" % (alg, v, alg)
        out += "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag>%s</Part>" % (n, e, ck)
    return (out + "</CompleteMultipartUpload>").encode()


def two_parts(tag=b"a"):
    return [tag * MIB5, b"tail " + tag * 1000]


def upload(s3, bucket, key, parts, alg=None):
    """Creates an upload and uploads parts (with the algorithm's checksum when
    given); returns (upload id, [(number, etag)], [part responses])."""
    kw = {"ChecksumAlgorithm": alg} if alg else {}
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key, **kw)["UploadId"]
    listed, resps = [], []
    for i, p in enumerate(parts, 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=i, Body=p, **kw)
        listed.append((i, r["ETag"]))
        resps.append(r)
    return uid, listed, resps


# ---- 1. a repeated CompleteMultipartUpload ---------------------------------------------

def test_repeated_complete_answers_the_completed_object(s3srv, s3, bucket):
    parts = two_parts()
    uid, listed, _ = upload(s3, bucket, "retried", parts)
    path = "/%s/retried?uploadId=%s" % (bucket, uid)
    first = s3srv.signed("POST", path, complete_xml(listed))
    assert first.status_code == 200, first.text
    again = s3srv.signed("POST", path, complete_xml(listed))
    assert again.status_code == 200, again.text
    a, b = ET.fromstring(first.content), ET.fromstring(again.content)
    for field in ("Location", "Bucket", "Key", "ETag"):
        assert a.find(NS + field).text == b.find(NS + field).text, field
    assert b.find(NS + "Bucket").text == bucket and b.find(NS + "Key").text == "retried"
    assert b.find(NS + "ETag").text.strip('"').endswith("-2")
    # boto3's own retry path sees the same success, and the object is whole.
    r = s3.complete_multipart_upload(Bucket=bucket, Key="retried", UploadId=uid,
                                     MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e}
                                                                for n, e in listed]})
    assert r["ETag"] == a.find(NS + "ETag").text
    assert s3.get_object(Bucket=bucket, Key="retried")["Body"].read() == b"".join(parts)


def test_repeated_complete_with_another_part_list_finds_no_upload(s3, bucket):
    parts = two_parts(b"b")
    uid, listed, _ = upload(s3, bucket, "other-list", parts)
    mpu = {"Parts": [{"PartNumber": n, "ETag": e} for n, e in listed]}
    done = s3.complete_multipart_upload(Bucket=bucket, Key="other-list", UploadId=uid,
                                        MultipartUpload=mpu)
    for other in ({"Parts": mpu["Parts"][:1]},
                  {"Parts": [mpu["Parts"][0], {"PartNumber": 2, "ETag": mpu["Parts"][0]["ETag"]}]}):
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket=bucket, Key="other-list", UploadId=uid,
                                         MultipartUpload=other)
        assert code_of(e) == ("NoSuchUpload", 404)
    # Nothing was lost: the completed object is as it was.
    got = s3.get_object(Bucket=bucket, Key="other-list")
    assert got["ETag"] == done["ETag"] and got["Body"].read() == b"".join(parts)


def test_completed_upload_takes_no_more_operations(s3, bucket):
    uid, listed, _ = upload(s3, bucket, "closed", [b"only part"])
    s3.complete_multipart_upload(Bucket=bucket, Key="closed", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": listed[0][1]}]})
    for call in (lambda: s3.upload_part(Bucket=bucket, Key="closed", UploadId=uid, PartNumber=2,
                                        Body=b"late"),
                 lambda: s3.list_parts(Bucket=bucket, Key="closed", UploadId=uid),
                 lambda: s3.abort_multipart_upload(Bucket=bucket, Key="closed", UploadId=uid)):
        with pytest.raises(ClientError) as e:
            call()
        assert code_of(e) == ("NoSuchUpload", 404)
    ups = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert uid not in [u["UploadId"] for u in ups]
    assert s3.get_object(Bucket=bucket, Key="closed")["Body"].read() == b"only part"


def test_repeated_complete_of_another_key_is_no_such_upload(s3, bucket):
    uid, listed, _ = upload(s3, bucket, "mine", [b"x"])
    mpu = {"Parts": [{"PartNumber": 1, "ETag": listed[0][1]}]}
    s3.complete_multipart_upload(Bucket=bucket, Key="mine", UploadId=uid, MultipartUpload=mpu)
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="theirs", UploadId=uid, MultipartUpload=mpu)
    assert code_of(e) == ("NoSuchUpload", 404)


# ---- 2. partNumber beyond the last part -------------------------------------------------

def test_part_number_beyond_the_last_part_is_invalid_part_number(s3srv, s3, bucket):
    uid, listed, _ = upload(s3, bucket, "mp3", two_parts(b"c"))
    s3.complete_multipart_upload(Bucket=bucket, Key="mp3", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e}
                                                            for n, e in listed]})
    s3.put_object(Bucket=bucket, Key="single", Body=b"one piece")
    for key, n in (("mp3", 3), ("mp3", 10000), ("single", 2)):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=bucket, Key=key, PartNumber=n)
        assert code_of(e) == ("InvalidPartNumber", 416)
        r = s3srv.signed("GET", "/%s/%s?partNumber=%d" % (bucket, key, n))
        assert r.status_code == 416 and xml_code(r) == "InvalidPartNumber"
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket=bucket, Key=key, PartNumber=n)
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416
    # The parts that exist are still served.
    assert s3.get_object(Bucket=bucket, Key="mp3", PartNumber=2)["Body"].read() == two_parts(b"c")[1]
    assert s3.get_object(Bucket=bucket, Key="single", PartNumber=1)["Body"].read() == b"one piece"


# ---- 3. the checksum of a multipart upload created with an algorithm --------------------

@pytest.mark.parametrize("alg", ["CRC32", "SHA256"])
def test_object_attributes_of_a_checksummed_multipart_upload(s3srv, s3, bucket, alg):
    parts = two_parts(alg.encode())
    key = "ck-" + alg
    uid, listed, resps = upload(s3, bucket, key, parts, alg=alg)
    for p, r in zip(parts, resps):
        assert r["Checksum" + alg] == b64(alg, p)
    want = composite(alg, parts)
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e, "Checksum" + alg: b64(alg, p)}
                                   for (n, e), p in zip(listed, parts)]})
    assert done["Checksum" + alg] == want
    attrs = s3.get_object_attributes(Bucket=bucket, Key=key,
                                     ObjectAttributes=["Checksum", "ObjectParts", "ObjectSize"])
    assert attrs["Checksum"]["Checksum" + alg] == want
    raw = s3srv.signed("GET", "/%s/%s?attributes" % (bucket, key),
                       headers={"x-amz-object-attributes": "Checksum,ObjectParts"})
    doc = ET.fromstring(raw.content)
    assert doc.find(NS + "Checksum/" + NS + "ChecksumType").text == "COMPOSITE"
    got = [(p["PartNumber"], p["Size"], p["Checksum" + alg]) for p in attrs["ObjectParts"]["Parts"]]
    assert got == [(i, len(p), b64(alg, p)) for i, p in enumerate(parts, 1)]
    assert attrs["ObjectParts"]["TotalPartsCount"] == 2
    assert attrs["ObjectSize"] == sum(map(len, parts))
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert head["Checksum" + alg] == want
    assert head["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-type"] == "COMPOSITE"
    # A retried completion answers the same checksum.
    again = s3srv.signed("POST", "/%s/%s?uploadId=%s" % (bucket, key, uid), complete_xml(listed))
    assert again.status_code == 200, again.text
    assert ET.fromstring(again.content).find(NS + "Checksum" + alg).text == want


def test_parts_sent_without_a_checksum_get_the_uploads_algorithm(s3srv, s3, bucket):
    parts = [b"p" * MIB5, b"q" * 10]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="computed",
                                     ChecksumAlgorithm="CRC32")["UploadId"]
    listed = []
    for i, p in enumerate(parts, 1):
        r = s3srv.signed("PUT", "/%s/computed?partNumber=%d&uploadId=%s" % (bucket, i, uid), p)
        assert r.status_code == 200, r.text
        assert r.headers["x-amz-checksum-crc32"] == b64("CRC32", p)
        listed.append((i, r.headers["ETag"]))
    r = s3srv.signed("POST", "/%s/computed?uploadId=%s" % (bucket, uid), complete_xml(listed))
    assert r.status_code == 200, r.text
    attrs = s3.get_object_attributes(Bucket=bucket, Key="computed", ObjectAttributes=["Checksum"])
    assert attrs["Checksum"]["ChecksumCRC32"] == composite("CRC32", parts)


def test_upload_without_an_algorithm_keeps_the_full_object_sha256(s3, bucket):
    parts = two_parts(b"n")
    uid, listed, _ = upload(s3, bucket, "plain-mp", parts)
    s3.complete_multipart_upload(Bucket=bucket, Key="plain-mp", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e}
                                                            for n, e in listed]})
    attrs = s3.get_object_attributes(Bucket=bucket, Key="plain-mp", ObjectAttributes=["Checksum"])
    assert attrs["Checksum"] == {"ChecksumSHA256": b64("SHA256", b"".join(parts))}


# ---- 4. a well-formed but wrong checksum --------------------------------------------------

def test_wrong_checksum_on_put_and_upload_part_is_bad_digest(s3srv, s3, bucket):
    wrong = b64("CRC32", b"something else")
    r = s3srv.signed("PUT", "/%s/bad-put" % bucket, b"payload",
                     headers={"x-amz-checksum-crc32": wrong})
    assert r.status_code == 400 and xml_code(r) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="bad-put")
    assert code_of(e)[1] == 404
    uid = s3.create_multipart_upload(Bucket=bucket, Key="bad-part",
                                     ChecksumAlgorithm="CRC32")["UploadId"]
    r = s3srv.signed("PUT", "/%s/bad-part?partNumber=1&uploadId=%s" % (bucket, uid), b"payload",
                     headers={"x-amz-checksum-crc32": wrong})
    assert r.status_code == 400 and xml_code(r) == "BadDigest"
    assert "Parts" not in s3.list_parts(Bucket=bucket, Key="bad-part", UploadId=uid)
    # Another algorithm than the upload's is refused before the body counts.
    r = s3srv.signed("PUT", "/%s/bad-part?partNumber=1&uploadId=%s" % (bucket, uid), b"payload",
                     headers={"x-amz-checksum-sha256": b64("SHA256", b"payload")})
    assert r.status_code == 400 and xml_code(r) == "InvalidRequest"
    assert "Parts" not in s3.list_parts(Bucket=bucket, Key="bad-part", UploadId=uid)


def test_wrong_part_checksum_on_complete_is_bad_digest(s3srv, s3, bucket):
    parts = two_parts(b"w")
    uid, listed, _ = upload(s3, bucket, "bad-list", parts, alg="CRC32")
    path = "/%s/bad-list?uploadId=%s" % (bucket, uid)
    checks = {1: ("CRC32", b64("CRC32", parts[0])), 2: ("CRC32", b64("CRC32", parts[0]))}
    r = s3srv.signed("POST", path, complete_xml(listed, checks))
    assert r.status_code == 400 and xml_code(r) == "BadDigest", r.text
    # Nothing happened: no object, the upload still holds both parts.
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="bad-list")
    assert code_of(e)[1] == 404
    assert len(s3.list_parts(Bucket=bucket, Key="bad-list", UploadId=uid)["Parts"]) == 2
    checks[2] = ("CRC32", b64("CRC32", parts[1]))
    r = s3srv.signed("POST", path, complete_xml(listed, checks))
    assert r.status_code == 200, r.text


def test_object_checksum_header_on_complete_must_match_the_composite(s3srv, s3, bucket):
    parts = two_parts(b"h")
    uid, listed, _ = upload(s3, bucket, "hdr", parts, alg="CRC32")
    path = "/%s/hdr?uploadId=%s" % (bucket, uid)
    want = composite("CRC32", parts)
    for wrong in (b64("CRC32", b"".join(parts)), "AAAAAA==-2"):
        r = s3srv.signed("POST", path, complete_xml(listed), headers={"x-amz-checksum-crc32": wrong})
        assert r.status_code == 400 and xml_code(r) == "BadDigest", r.text
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="hdr")
    r = s3srv.signed("POST", path, complete_xml(listed), headers={"x-amz-checksum-crc32": want})
    assert r.status_code == 200, r.text
    assert ET.fromstring(r.content).find(NS + "ChecksumCRC32").text == want
    # A retry with a wrong one is refused as well; a right one (without -N) answers.
    r = s3srv.signed("POST", path, complete_xml(listed),
                     headers={"x-amz-checksum-crc32": b64("CRC32", b"no")})
    assert r.status_code == 400 and xml_code(r) == "BadDigest"
    r = s3srv.signed("POST", path, complete_xml(listed),
                     headers={"x-amz-checksum-crc32": want.rsplit("-", 1)[0]})
    assert r.status_code == 200, r.text


# ---- 5. an empty metadata value --------------------------------------------------------------

def test_empty_metadata_value_is_kept(s3srv, s3, bucket):
    r = s3srv.signed("PUT", "/%s/empty-meta" % bucket, b"body",
                     headers={"x-amz-meta-k": "", "x-amz-meta-other": "v"})
    assert r.status_code == 200, r.text
    head = s3.head_object(Bucket=bucket, Key="empty-meta")
    assert head["Metadata"] == {"k": "", "other": "v"}
    assert "x-amz-meta-k" in s3srv.signed("HEAD", "/%s/empty-meta" % bucket).headers
    with s3srv.jay() as j:
        info = j.head_object(bucket, "empty-meta")
        assert info["metadata"] == {"k": "", "other": "v"}
        j.put_object(bucket, "jay-empty", b"x", metadata={"e": ""})
    assert s3.head_object(Bucket=bucket, Key="jay-empty")["Metadata"] == {"e": ""}
    # boto3 sends it too, and a multipart upload keeps it.
    s3.put_object(Bucket=bucket, Key="boto-empty", Body=b"x", Metadata={"blank": ""})
    assert s3.head_object(Bucket=bucket, Key="boto-empty")["Metadata"] == {"blank": ""}
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp-empty", Metadata={"blank": ""})["UploadId"]
    e = s3.upload_part(Bucket=bucket, Key="mp-empty", UploadId=uid, PartNumber=1, Body=b"x")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp-empty", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
    assert s3.head_object(Bucket=bucket, Key="mp-empty")["Metadata"] == {"blank": ""}


# ---- 6. Content-Encoding without aws-chunked -------------------------------------------------

@pytest.mark.parametrize("sent,kept", [
    ("aws-chunked, deflate, gzip", "deflate, gzip"),
    ("deflate, aws-chunked, gzip", "deflate, gzip"),
    ("gzip,aws-chunked", "gzip"),
    ("deflate,gzip", "deflate,gzip"),
])
def test_content_encoding_keeps_the_rest_verbatim(s3srv, s3, bucket, sent, kept):
    key = unique("ce")
    r = s3srv.signed("PUT", "/%s/%s" % (bucket, key), b"data", headers={"Content-Encoding": sent})
    assert r.status_code == 200, r.text
    assert s3.head_object(Bucket=bucket, Key=key)["ContentEncoding"] == kept
    g = s3.get_object(Bucket=bucket, Key=key)
    assert g["ContentEncoding"] == kept and g["Body"].read() == b"data"
    assert s3srv.signed("HEAD", "/%s/%s" % (bucket, key)).headers["Content-Encoding"] == kept


def test_content_encoding_of_a_streamed_put(s3srv, s3, bucket):
    import s3fixtures
    real = s3fixtures.AWSRequest

    def with_encoding(*a, **kw):
        req = real(*a, **kw)
        if req.headers.get("Content-Encoding") == "aws-chunked":
            del req.headers["Content-Encoding"]
            req.headers["Content-Encoding"] = "aws-chunked, deflate, gzip"
        return req
    s3fixtures.AWSRequest = with_encoding
    try:
        r = s3fixtures.streaming_put(s3srv, "/%s/streamed-ce" % bucket, b"z" * 70000)
    finally:
        s3fixtures.AWSRequest = real
    assert r.status_code == 200, r.text
    assert s3.head_object(Bucket=bucket, Key="streamed-ce")["ContentEncoding"] == "deflate, gzip"
    assert s3.get_object(Bucket=bucket, Key="streamed-ce")["Body"].read() == b"z" * 70000


def test_min_part_size_is_configurable(server_factory, tmp_path):
    """CompleteMultipartUpload refuses a non-last part under 5 MiB
    (EntityTooSmall); CAIRN_S3_MIN_PART_SIZE lowers that minimum, as Ceph
    RGW's rgw_multipart_min_part_size does, and a bad value stops cairnd from
    starting rather than serving with a guess."""
    from conftest import Server
    from s3fixtures import own_server, s3_args
    s3c = own_server(server_factory, env={"CAIRN_S3_MIN_PART_SIZE": "4"}).client()
    s3c.create_bucket(Bucket="small")
    uid = s3c.create_multipart_upload(Bucket="small", Key="k")["UploadId"]
    done = []
    for n, body in ((1, b"abcd"), (2, b"xy")):
        up = s3c.upload_part(Bucket="small", Key="k", UploadId=uid, PartNumber=n, Body=body)
        done.append({"PartNumber": n, "ETag": up["ETag"]})
    s3c.complete_multipart_upload(Bucket="small", Key="k", UploadId=uid,
                                  MultipartUpload={"Parts": done})
    assert s3c.get_object(Bucket="small", Key="k")["Body"].read() == b"abcdxy"
    uid = s3c.create_multipart_upload(Bucket="small", Key="k2")["UploadId"]
    done = []
    for n, body in ((1, b"abc"), (2, b"xy")):
        up = s3c.upload_part(Bucket="small", Key="k2", UploadId=uid, PartNumber=n, Body=body)
        done.append({"PartNumber": n, "ETag": up["ETag"]})
    with pytest.raises(ClientError) as e:
        s3c.complete_multipart_upload(Bucket="small", Key="k2", UploadId=uid,
                                      MultipartUpload={"Parts": done})
    assert code_of(e) == ("EntityTooSmall", 400)
    bad = Server(tmp_path / "bad", args=s3_args(), env={"CAIRN_S3_MIN_PART_SIZE": "5MiB"})
    with pytest.raises(RuntimeError) as e:
        bad.start(wait_for=("jay", "http"), timeout=20)
    assert "CAIRN_S3_MIN_PART_SIZE" in str(e.value)
